/*
 * rate.c — token buckets per caller (rate.h): one table, one mutex. A
 * request costs a hash of 17 bytes and a probe or two under the lock.
 */
#include "http/rate.h"

#include <math.h>
#include <pthread.h>
#include <string.h>

#include "base/hash.h"

struct bucket {
    uint8_t kind; /* 0: free */
    uint8_t id[16];
    double tokens;
    uint64_t last_ns; /* when tokens was computed */
};

static struct {
    pthread_mutex_t mu;
    double per_s, burst;
    struct bucket slots[RATE_SLOTS];
} g = {.mu = PTHREAD_MUTEX_INITIALIZER};

void rate_configure(unsigned per_s, unsigned burst)
{
    pthread_mutex_lock(&g.mu);
    g.per_s = per_s;
    g.burst = burst > 0 ? burst : (per_s > 0 ? per_s : 1);
    memset(g.slots, 0, sizeof g.slots);
    pthread_mutex_unlock(&g.mu);
}

int rate_enabled(void)
{
    pthread_mutex_lock(&g.mu);
    int on = g.per_s > 0;
    pthread_mutex_unlock(&g.mu);
    return on;
}

/* The caller's bucket, taken over from the least recently seen one of its
 * probe window when it has none. Under g.mu. */
static struct bucket *find(enum rate_kind kind, const uint8_t id[16], uint64_t now_ns)
{
    uint8_t k = (uint8_t)kind;
    uint64_t h = hash_fnv1a(hash_fnv1a(HASH_FNV1A_BASIS, &k, 1), id, 16);
    struct bucket *victim = NULL;
    for (size_t i = 0; i < RATE_PROBES; i++) {
        struct bucket *b = &g.slots[(h + i) % RATE_SLOTS];
        if (b->kind == k && memcmp(b->id, id, 16) == 0)
            return b;
        if (victim == NULL || (victim->kind != 0 && (b->kind == 0 || b->last_ns < victim->last_ns)))
            victim = b;
    }
    victim->kind = k;
    memcpy(victim->id, id, 16);
    victim->tokens = g.burst;
    victim->last_ns = now_ns;
    return victim;
}

unsigned rate_take(enum rate_kind kind, const uint8_t id[16], uint64_t now_ns)
{
    unsigned wait = 0;
    pthread_mutex_lock(&g.mu);
    if (g.per_s <= 0)
        goto out;
    struct bucket *b = find(kind, id, now_ns);
    if (now_ns > b->last_ns) {
        b->tokens += (double)(now_ns - b->last_ns) / 1e9 * g.per_s;
        if (b->tokens > g.burst)
            b->tokens = g.burst;
        b->last_ns = now_ns;
    }
    if (b->tokens >= 1.0) {
        b->tokens -= 1.0;
        goto out;
    }
    double secs = ceil((1.0 - b->tokens) / g.per_s);
    wait = secs < 1.0 ? 1 : (unsigned)secs;
out:
    pthread_mutex_unlock(&g.mu);
    return wait;
}
