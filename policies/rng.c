/*
 * rng.c — xoshiro256** as a GSL generator type (see rng.h).
 */
#include "policies/rng.h"
#include "base/ser.h"

struct xoshiro {
    uint64_t s[4];
};

size_t rng_index(gsl_rng *rng, size_t n)
{
    if (n <= 1)
        return 0;
    return (size_t)gsl_rng_uniform_int(rng, (unsigned long)n);
}

uint64_t rng_mix64(uint64_t z)
{
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

uint64_t rng_splitmix64(uint64_t *x)
{
    return rng_mix64(*x += 0x9e3779b97f4a7c15ULL);
}

static uint64_t rotl(uint64_t x, int k)
{
    return (x << k) | (x >> (64 - k));
}

static uint64_t next(struct xoshiro *x)
{
    uint64_t *s = x->s;
    uint64_t r = rotl(s[1] * 5, 7) * 9;
    uint64_t t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    return r;
}

static void seed(struct xoshiro *x, uint64_t key)
{
    uint64_t z = key;
    for (int i = 0; i < 4; i++)
        x->s[i] = rng_splitmix64(&z);
}

static void xo_set(void *state, unsigned long s)
{
    seed(state, (uint64_t)s);
}

static unsigned long xo_get(void *state)
{
    return (unsigned long)(next(state) >> 32);
}

static double xo_get_double(void *state)
{
    return (double)(next(state) >> 11) * 0x1.0p-53;
}

static const gsl_rng_type xoshiro_type = {
    .name = "xoshiro256**",
    .max = 0xffffffffUL,
    .min = 0,
    .size = sizeof(struct xoshiro),
    .set = xo_set,
    .get = xo_get,
    .get_double = xo_get_double,
};

const gsl_rng_type *const rng_xoshiro256ss = &xoshiro_type;

void rng_seed64(gsl_rng *r, uint64_t key)
{
    seed(gsl_rng_state(r), key);
}

void rng_snap(gsl_rng *r, struct ser *s)
{
    if (r->type != rng_xoshiro256ss) {
        ser_fail(s);
        return;
    }
    struct xoshiro *x = gsl_rng_state(r);
    for (int i = 0; i < 4; i++)
        ser_u64(s, &x->s[i]);
    if (s->reading && ser_ok(s) && (x->s[0] | x->s[1] | x->s[2] | x->s[3]) == 0)
        ser_fail(s); /* xoshiro's one forbidden state */
}
