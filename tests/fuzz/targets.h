/*
 * targets.h — the bodies of the libFuzzer targets (tests/fuzz/fuzz_*.c) as
 * plain functions, so that tests/unit/test_fuzz_corpus.c replays the seed
 * corpus and every crash ever found (tests/fuzz/regress/) through exactly
 * the same code under ASan + UBSan in `make test`.
 *
 * Each takes arbitrary bytes, parses them as the daemon parses a request
 * body (json_loadb, duplicates rejected) or a simulator problem file, runs
 * the parser/validator, and frees everything; fuzz_replay writes them as
 * event rows into a real store and replays them, fuzz_etag matches them as
 * an If-None-Match header. Always returns 0.
 */
#ifndef BANDITD_TESTS_FUZZ_TARGETS_H
#define BANDITD_TESTS_FUZZ_TARGETS_H

#include <stddef.h>
#include <stdint.h>

int fuzz_expconfig(const uint8_t *data, size_t size);
int fuzz_assignment(const uint8_t *data, size_t size);
int fuzz_rewards(const uint8_t *data, size_t size);
int fuzz_corrections(const uint8_t *data, size_t size);
int fuzz_observations(const uint8_t *data, size_t size);
int fuzz_patch(const uint8_t *data, size_t size);
int fuzz_simproblem(const uint8_t *data, size_t size);
/* Bytes as rows of a stored event log, replayed by the registry's load. */
int fuzz_replay(const uint8_t *data, size_t size);
/* Bytes as damage to a valid stored snapshot (its checksum redone), which
 * the registry's load then reads. */
int fuzz_snapshot(const uint8_t *data, size_t size);
/* Bytes as an If-None-Match value and an ETag (split at the first NUL). */
int fuzz_etag(const uint8_t *data, size_t size);

#endif
