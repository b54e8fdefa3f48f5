/*
 * openapi.h — the OpenAPI 3.1 description of the HTTP API, docs/openapi.json
 * compiled into the binary (the Makefile generates the C file with
 * scripts/embed-array.sh) and served at GET /openapi.json. tests/unit/test_openapi.c
 * keeps it true: every route of server/routes.c is in it, and nothing else.
 */
#ifndef BANDITD_API_OPENAPI_H
#define BANDITD_API_OPENAPI_H

#include <stddef.h>

/* The document's bytes, NUL-terminated; api_openapi_json_len excludes the NUL. */
extern const char api_openapi_json[];
extern const size_t api_openapi_json_len;

#endif
