// Replays inputs through a fuzz target's LLVMFuzzerTestOneInput without libFuzzer: ctest runs
// every input the segment target found crashing (fuzz/regressions/segment/) this way, under
// the normal build and under scripts/sanitize's ASan + UBSan.
//
//   segment_fuzz_replay <input>...
//
// An input that takes the process past 1 GiB of resident memory fails too: a hostile box made
// libavformat allocate 2 GB at once before av_max_alloc held single allocations to 128 MiB.

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>

/// Peak resident memory allowed, KiB.
#define REPLAY_MAX_RSS_KIB (1L << 20)

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
        struct rusage ru;
        if (getrusage(RUSAGE_SELF, &ru) == 0 && ru.ru_maxrss > REPLAY_MAX_RSS_KIB) {
            fprintf(stderr, "replay: %s: peak resident memory %ld MiB, over %ld\n", argv[i], ru.ru_maxrss >> 10,
                    REPLAY_MAX_RSS_KIB >> 10);
            return 1;
        }
        printf("replay: %s ok\n", argv[i]);
    }
    return 0;
}
