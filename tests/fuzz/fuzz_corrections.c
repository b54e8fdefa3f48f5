/*
 * fuzz_corrections.c — libFuzzer entry point; the body is fuzz_corrections in targets.c.
 */
#include "tests/fuzz/targets.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    return fuzz_corrections(data, size);
}
