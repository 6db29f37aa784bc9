// Small helpers shared by the pure-C tests (ctest, cmake/tests.cmake): checks that report
// file:line and count failures, file reading, a WAV reader and tone analysis.
// Header-only: every test is one .c file plus this.
#ifndef MQ_TEST_UTIL_H
#define MQ_TEST_UTIL_H

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static int mqt_failures;

#define CHECK(cond, ...)                                                                                               \
    do {                                                                                                               \
        if (!(cond)) {                                                                                                 \
            mqt_failures++;                                                                                            \
            fprintf(stderr, "%s:%d: CHECK(%s) failed: ", __FILE__, __LINE__, #cond);                                   \
            fprintf(stderr, __VA_ARGS__);                                                                              \
            fputc('\n', stderr);                                                                                       \
        }                                                                                                              \
    } while (0)

/// Ends a test: prints the verdict and returns the exit status.
static inline int mqt_done(const char *name)
{
    printf("%s: %s (%d failed checks)\n", name, mqt_failures ? "FAIL" : "ok", mqt_failures);
    return mqt_failures ? 1 : 0;
}

static inline void mqt_sleep(double s)
{
    struct timespec ts = {(time_t)s, (long)((s - (double)(time_t)s) * 1e9)};
    nanosleep(&ts, NULL);
}

/// Reads a whole file (malloc'ed, caller frees); NULL on failure.
static inline uint8_t *mqt_read_file(const char *path, size_t *size)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    uint8_t *buf = NULL;
    size_t cap = 0, n = 0, got;
    do {
        if (n == cap) {
            cap = cap ? cap * 2 : 1 << 16;
            uint8_t *nb = realloc(buf, cap);
            if (!nb) {
                free(buf);
                fclose(f);
                return NULL;
            }
            buf = nb;
        }
        got = fread(buf + n, 1, cap - n, f);
        n += got;
    } while (got > 0);
    fclose(f);
    *size = n;
    return buf;
}

/// Offset of the `n`th (0-based) top-level ISO BMFF box of `type` in `b`, or -1.
static inline long mqt_box_offset(const uint8_t *b, size_t size, const char *type, int n)
{
    for (size_t at = 0; at + 8 <= size;) {
        uint32_t len = (uint32_t)b[at] << 24 | (uint32_t)b[at + 1] << 16 | (uint32_t)b[at + 2] << 8 | b[at + 3];
        if (memcmp(b + at + 4, type, 4) == 0 && n-- == 0)
            return (long)at;
        if (len < 8)
            return -1;
        at += len;
    }
    return -1;
}

/// 16-bit PCM from a canonical 44-byte-header WAV, as audio_out_wav.c writes it.
typedef struct mqt_wav {
    int channels, rate;
    uint32_t data_bytes; // from the header
    size_t frames;       // from the file size
    int16_t *samples;    // interleaved, points into `file`
    uint8_t *file;
} mqt_wav;

static inline int mqt_wav_read(const char *path, mqt_wav *w)
{
    size_t size = 0;
    memset(w, 0, sizeof *w);
    w->file = mqt_read_file(path, &size);
    if (!w->file || size < 44 || memcmp(w->file, "RIFF", 4) || memcmp(w->file + 8, "WAVE", 4))
        return -1;
    const uint8_t *h = w->file;
    w->channels = h[22] | h[23] << 8;
    w->rate = (int)(h[24] | h[25] << 8 | h[26] << 16 | (uint32_t)h[27] << 24);
    w->data_bytes = h[40] | h[41] << 8 | h[42] << 16 | (uint32_t)h[43] << 24;
    if (w->channels < 1 || (h[34] | h[35] << 8) != 16)
        return -1;
    w->frames = (size - 44) / (2 * (size_t)w->channels);
    w->samples = (int16_t *)(void *)(w->file + 44);
    return 0;
}

/// First and one-past-last frame of channel `ch` whose magnitude exceeds `level` (0..1).
static inline int mqt_sound_span(const mqt_wav *w, int ch, double level, size_t *begin, size_t *end)
{
    size_t b = w->frames, e = 0;
    for (size_t i = 0; i < w->frames; i++) {
        if (fabs(w->samples[i * (size_t)w->channels + (size_t)ch] / 32768.0) > level) {
            if (b == w->frames)
                b = i;
            e = i + 1;
        }
    }
    *begin = b;
    *end = e;
    return b < e ? 0 : -1;
}

/// Frequency of channel `ch` over [begin, end) from upward zero crossings, interpolated.
static inline double mqt_frequency(const mqt_wav *w, int ch, size_t begin, size_t end)
{
    double first = -1, last = -1;
    int n = 0;
    for (size_t i = begin + 1; i < end; i++) {
        double a = w->samples[(i - 1) * (size_t)w->channels + (size_t)ch];
        double b = w->samples[i * (size_t)w->channels + (size_t)ch];
        if (a < 0 && b >= 0) {
            double t = (double)(i - 1) + a / (a - b);
            if (first < 0)
                first = t;
            else
                n++;
            last = t;
        }
    }
    return n > 0 ? n * (double)w->rate / (last - first) : 0;
}

/// Longest run of frames of channel `ch` in [begin, end) whose magnitude stays under `level`.
static inline size_t mqt_longest_quiet(const mqt_wav *w, int ch, double level, size_t begin, size_t end)
{
    size_t run = 0, best = 0;
    for (size_t i = begin; i < end; i++) {
        run = fabs(w->samples[i * (size_t)w->channels + (size_t)ch] / 32768.0) < level ? run + 1 : 0;
        best = run > best ? run : best;
    }
    return best;
}

#endif
