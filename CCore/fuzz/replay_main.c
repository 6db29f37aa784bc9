// Replays inputs through a fuzz target's LLVMFuzzerTestOneInput without libFuzzer: ctest runs
// every input the segment target found crashing (fuzz/regressions/segment/) this way, under
// the normal build and under scripts/sanitize's ASan + UBSan.
//
//   segment_fuzz_replay <input>...

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int main(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        FILE *f = fopen(argv[i], "rb");
        if (!f) {
            fprintf(stderr, "replay: cannot open %s\n", argv[i]);
            return 1;
        }
        fseek(f, 0, SEEK_END);
        long size = ftell(f);
        fseek(f, 0, SEEK_SET);
        uint8_t *data = malloc(size > 0 ? (size_t)size : 1);
        size_t got = data ? fread(data, 1, (size_t)size, f) : 0;
        fclose(f);
        if (!data || got != (size_t)size) {
            fprintf(stderr, "replay: cannot read %s\n", argv[i]);
            free(data);
            return 1;
        }
        LLVMFuzzerTestOneInput(data, got);
        free(data);
        printf("replay: %s ok\n", argv[i]);
    }
    return 0;
}
