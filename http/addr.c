/*
 * addr.c — the listening address (http.h): --listen's host resolved, with
 * IPv6 and host names ("[::1]", "localhost"), whether it is loopback (the
 * daemon refuses a non-loopback address while its API is open), and its
 * text form for the "listening on" line.
 */
#include "http/http.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>

int http_addr_resolve(const char *host, uint16_t port, struct http_addr *out, char *err,
                      size_t errlen)
{
    char name[256];
    size_t n = strlen(host);
    /* "[::1]" as well as "::1": the brackets are URL syntax, not the address's */
    if (n >= 2 && host[0] == '[' && host[n - 1] == ']') {
        host++;
        n -= 2;
    }
    if (n == 0 || n >= sizeof name) {
        snprintf(err, errlen, "--listen: bad host \"%s\"", host);
        return -1;
    }
    memcpy(name, host, n);
    name[n] = '\0';
    struct addrinfo hints, *res = NULL;
    memset(&hints, 0, sizeof hints);
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_ADDRCONFIG;
    int rc = getaddrinfo(name, NULL, &hints, &res);
    if (rc == EAI_NONAME || rc == EAI_ADDRFAMILY || rc == EAI_NODATA) {
        /* AI_ADDRCONFIG hides ::1 on a host whose only IPv6 is loopback */
        hints.ai_flags = 0;
        rc = getaddrinfo(name, NULL, &hints, &res);
    }
    if (rc != 0) {
        snprintf(err, errlen, "--listen: cannot resolve %s: %s", name, gai_strerror(rc));
        return -1;
    }
    memset(out, 0, sizeof *out);
    int found = 0;
    for (const struct addrinfo *a = res; a != NULL && !found; a = a->ai_next) {
        if ((a->ai_family != AF_INET && a->ai_family != AF_INET6) || a->ai_addrlen > sizeof out->ss)
            continue;
        memcpy(&out->ss, a->ai_addr, a->ai_addrlen);
        out->len = (socklen_t)a->ai_addrlen;
        found = 1;
    }
    freeaddrinfo(res);
    if (!found) {
        snprintf(err, errlen, "--listen: %s has no IPv4 or IPv6 address", name);
        return -1;
    }
    if (out->ss.ss_family == AF_INET)
        ((struct sockaddr_in *)&out->ss)->sin_port = htons(port);
    else
        ((struct sockaddr_in6 *)&out->ss)->sin6_port = htons(port);
    return 0;
}

int http_addr_is_loopback(const struct http_addr *a)
{
    if (a->ss.ss_family == AF_INET) {
        const struct sockaddr_in *s4 = (const struct sockaddr_in *)&a->ss;
        return (ntohl(s4->sin_addr.s_addr) >> 24) == 127;
    }
    if (a->ss.ss_family == AF_INET6) {
        const struct in6_addr *s6 = &((const struct sockaddr_in6 *)&a->ss)->sin6_addr;
        if (IN6_IS_ADDR_LOOPBACK(s6))
            return 1;
        return IN6_IS_ADDR_V4MAPPED(s6) && s6->s6_addr[12] == 127;
    }
    return 0;
}

void http_addr_format(const struct http_addr *a, char *buf, size_t len)
{
    char ip[INET6_ADDRSTRLEN] = "?";
    if (a->ss.ss_family == AF_INET) {
        const struct sockaddr_in *s4 = (const struct sockaddr_in *)&a->ss;
        inet_ntop(AF_INET, &s4->sin_addr, ip, sizeof ip);
        snprintf(buf, len, "%s:%u", ip, (unsigned)ntohs(s4->sin_port));
    } else if (a->ss.ss_family == AF_INET6) {
        const struct sockaddr_in6 *s6 = (const struct sockaddr_in6 *)&a->ss;
        inet_ntop(AF_INET6, &s6->sin6_addr, ip, sizeof ip);
        snprintf(buf, len, "[%s]:%u", ip, (unsigned)ntohs(s6->sin6_port));
    } else {
        snprintf(buf, len, "?");
    }
}
