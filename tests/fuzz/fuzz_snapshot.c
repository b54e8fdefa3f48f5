/*
 * fuzz_snapshot.c — libFuzzer entry point; the body is fuzz_snapshot in targets.c.
 */
#include "tests/fuzz/targets.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    return fuzz_snapshot(data, size);
}
