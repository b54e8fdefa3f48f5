/*
 * registry.c — every policy the daemon and the simulator offer, read from
 * list.h (one line per policy).
 */
#include "policies/policy.h"

#include <string.h>

#define POLICY(sym) extern const struct policy_ops sym;
#include "policies/list.h"
#undef POLICY

static const struct policy_ops *const registry[] = {
#define POLICY(sym) &(sym),
#include "policies/list.h"
#undef POLICY
    NULL,
};

const struct policy_ops *const *policy_all(void)
{
    return registry;
}

const struct policy_ops *policy_find(const char *name)
{
    for (size_t i = 0; registry[i] != NULL; i++)
        if (strcmp(registry[i]->name, name) == 0)
            return registry[i];
    return NULL;
}
