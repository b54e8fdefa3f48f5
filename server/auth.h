/*
 * auth.h — API keys and scopes (CONTRACT.md, Access). Keys are stored hashed
 * (SHA-256); while no key exists the API is open.
 */
#ifndef BANDITD_SERVER_AUTH_H
#define BANDITD_SERVER_AUTH_H

#include "store/store.h"

/* Load the keys of st (borrowed). */
int auth_init(struct store *st);
/* 1 when at least one unrevoked key exists (the API is then closed). */
int auth_enabled(void);
/* Scopes (enum api_scope bits) of the key in an Authorization header value
 * ("Bearer KEY"); *known = 0 when the key is missing or unknown. */
unsigned auth_scopes(const char *authorization, int *known);

#endif
