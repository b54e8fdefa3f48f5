/*
 * clock.h — the clocks the daemon reads: monotonic for durations and
 * deadlines, wall-clock for timestamps that are stored or shown, and the
 * one RFC 3339 formatter every shown time goes through.
 */
#ifndef BANDITD_BASE_CLOCK_H
#define BANDITD_BASE_CLOCK_H

#include <stddef.h>
#include <stdint.h>
#include <time.h>

/* Monotonic time in nanoseconds (durations, never shown). */
uint64_t clock_mono_ns(void);
/* Wall-clock time in milliseconds since the epoch (stored, shown). */
int64_t clock_wall_ms(void);
/* Sleep ms milliseconds, resumed after signals. */
void clock_sleep_ms(unsigned ms);
/* The time ms milliseconds from now on `clock` (CLOCK_MONOTONIC for a
 * condition variable set up with it, CLOCK_REALTIME otherwise). */
struct timespec clock_deadline(clockid_t clock, unsigned ms);

/* ms since the epoch as RFC 3339 UTC with milliseconds,
 * "2026-11-24T04:54:03.123Z", into buf (at least CLOCK_RFC3339_LEN bytes
 * for every year from 0 to 9999). */
#define CLOCK_RFC3339_LEN 32
void clock_format_rfc3339(long long ms, char *buf, size_t len);

#endif
