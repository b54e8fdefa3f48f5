/*
 * web_assets.h — the dashboard's files, embedded in the binary. The table is
 * generated at build time from the files in web/dist by scripts/embed.c (into
 * $(BUILD)/gen/web_assets.c); api/web.c serves it.
 */
#ifndef BANDITD_API_WEB_ASSETS_H
#define BANDITD_API_WEB_ASSETS_H

#include <stddef.h>

struct web_asset {
    const char *name;         /* file name in web/dist: "app-1A2B3C4D.js" */
    const char *content_type; /* by extension, chosen in scripts/embed.c */
    const unsigned char *data;
    size_t len;
    const char *etag;        /* quoted strong validator of data */
    const unsigned char *gz; /* gzip-encoded variant, or NULL */
    size_t gz_len;
    const char *gz_etag; /* quoted validator of the gzip variant */
};

/* Sorted by name, ended by an entry whose name is NULL. Static storage:
 * the bytes live as long as the process. */
extern const struct web_asset web_assets[];

#endif
