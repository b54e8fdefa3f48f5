/*
 * guard.h — admission and deadlines of connections, inside the transport
 * (http.c uses it; nothing outside http/ does).
 *
 * libmicrohttpd's own limits are not enough against slow clients: its
 * timeout measures inactivity, so a client sending a byte every few seconds
 * keeps a connection forever, and at its connection limit it stops
 * accepting, so every other client waits in the listen backlog. The guard
 * tracks every connection (MHD's connection notifications) and
 *  - admits at most max_connections at once and max_per_ip from one client
 *    address; a connection past either is marked refused at once: its
 *    first request is answered 503 or 429 (http.c) and it is closed, and
 *    if that request does not come within HTTP_REFUSE_GRACE_MS it is closed
 *    unanswered. While many refused connections are waiting so (a burst,
 *    max_connections / 2 + 32), the next ones are closed at once: a burst
 *    must not fill libmicrohttpd's own limit and leave newcomers in the
 *    listen backlog;
 *  - gives every request a deadline: from the moment its connection is
 *    ready for it (accepted, or the previous answer sent) to the moment it
 *    has arrived in full. A thread of its own closes (shutdown(2)) the
 *    connections past their deadline; MHD then sees the end of the stream
 *    and frees them. A request being served (in a handler, waiting for a
 *    commit, or sending its answer) has no deadline.
 *
 * MHD closes a socket only after its "closed" notification, which takes the
 * guard's lock, so the reaper never shuts down a descriptor that was
 * closed and reused.
 */
#ifndef BANDITD_HTTP_GUARD_H
#define BANDITD_HTTP_GUARD_H

#include <microhttpd.h>
#include <stdint.h>

struct guard_config {
    unsigned max_connections;   /* admitted at once */
    unsigned max_per_ip;        /* admitted from one address; 0: no cap */
    unsigned request_timeout_s; /* 0: no deadline */
};

enum guard_verdict {
    GUARD_ADMITTED = 0,
    GUARD_FULL = 503,   /* over max_connections */
    GUARD_PER_IP = 429, /* over max_per_ip */
};

/* Start the reaper. 0, or −1 (no thread). */
int guard_start(const struct guard_config *c);
/* Stop the reaper; call after MHD_stop_daemon (every connection closed). */
void guard_stop(void);

/* MHD_OPTION_NOTIFY_CONNECTION's callback. */
void guard_notify(void *cls, struct MHD_Connection *conn, void **socket_context,
                  enum MHD_ConnectionNotificationCode code);

/* What admission decided for conn's connection. */
enum guard_verdict guard_verdict(struct MHD_Connection *conn);
/* conn's request has arrived in full: no deadline while it is served. */
void guard_request_in(struct MHD_Connection *conn);
/* conn's answer was sent: the next request's deadline starts now. */
void guard_request_done(struct MHD_Connection *conn);
/* The client address of conn, 16 bytes (IPv4 mapped into IPv6); all zero
 * when it has none we know. */
void guard_addr_key(struct MHD_Connection *conn, uint8_t key[16]);

#endif
