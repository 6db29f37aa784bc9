#include "MarqueeFuzzDriver.h"

#include <stddef.h>
#include <stdint.h>

// libFuzzer's (compiler-rt) driver, and the target the Swift module defines (@_cdecl).
int LLVMFuzzerRunDriver(int *argc, char ***argv, int (*callback)(const uint8_t *data, size_t size));
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int MarqueeFuzz_main(int argc, char **argv)
{
    return LLVMFuzzerRunDriver(&argc, &argv, LLVMFuzzerTestOneInput);
}
