/*
 * auth.c — API key checks. Placeholder until keys land: no key exists, so
 * the API is open (CONTRACT.md: "While no key exists the API is open").
 */
#include "server/auth.h"

int auth_init(struct store *st)
{
    (void)st;
    return 0;
}

int auth_enabled(void)
{
    return 0;
}

unsigned auth_scopes(const char *authorization, int *known)
{
    (void)authorization;
    *known = 0;
    return 0;
}
