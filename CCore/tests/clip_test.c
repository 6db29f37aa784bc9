// Clips (clip.c): a looping file plays seamlessly — the loop period is the file's length minus
// the cross-fade, and the waveform never jumps at a loop point (its second difference stays
// near that of the tone itself); a start offset lands on the sample; a clip that does not loop
// ends after exactly its length; a bad file is a clear error at create.
//
//   clip_test <music660.m4a> <music660.wav> [dump.raw]

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mixing/clip.h"
#include "mq_err.h"
#include "test_util.h"

#define RATE 48000

/// Reads `frames` frames (left channel) from the clip's ring, waiting for the decoder;
/// returns the frames read (fewer when the clip ended).
static int64_t drain(mq_clip *c, float *dst, int64_t frames)
{
    int64_t got = 0;
    int idle = 0;
    while (got < frames && idle < 2000) {
        mq_pcm_block *b = mq_pcm_ring_peek(c->ring);
        if (!b) {
            if (atomic_load(&c->ring->eof))
                break;
            mqt_sleep(0.001);
            idle++;
            continue;
        }
        idle = 0;
        int32_t k = b->frames - c->ring->read_off;
        if (k > frames - got)
            k = (int32_t)(frames - got);
        for (int32_t i = 0; i < k; i++)
            dst[got + i] = b->data[(size_t)(c->ring->read_off + i) * 2];
        mq_pcm_ring_consume(c->ring, k);
        got += k;
    }
    return got;
}

static double worst_second_difference(const float *x, int64_t n, int64_t *at)
{
    double worst = 0;
    for (int64_t i = 1; i + 1 < n; i++) {
        double d = fabs((double)x[i + 1] - 2.0 * x[i] + x[i - 1]);
        if (d > worst) {
            worst = d;
            *at = i;
        }
    }
    return worst;
}

/// Frames from `x[0]` to where the waveform repeats it (the loop period): the first lag > 1 s
/// whose next 100 samples match x[0..100) best.
static int64_t period_of(const float *x, int64_t n)
{
    int64_t best = -1;
    double best_err = 1e30;
    for (int64_t lag = RATE; lag + 100 < n && lag < 3 * RATE; lag++) {
        double e = 0;
        for (int i = 0; i < 100; i++)
            e += fabs((double)x[lag + 2000 + i] - x[2000 + i]);
        if (e < best_err) {
            best_err = e;
            best = lag;
        }
    }
    return best;
}

static void check_loop(const char *path, double crossfade, const char *dump)
{
    mq_clip *c = NULL;
    int ret = mq_clip_open(path, RATE, 2, 0, true, crossfade, NAN, &c);
    CHECK(ret == MQ_OK, "%s: create %d", path, ret);
    if (ret < 0)
        return;
    int64_t n = (int64_t)(7.5 * RATE);
    float *x = calloc((size_t)n, sizeof *x);
    int64_t got = drain(c, x, n);
    CHECK(got == n, "%s: read %lld of %lld frames", path, (long long)got, (long long)n);
    if (dump) {
        FILE *f = fopen(dump, "wb");
        if (f) {
            fwrite(x, sizeof *x, (size_t)got, f);
            fclose(f);
        }
    }
    // 660 Hz at amplitude 1/8: the tone's own second difference is 0.125·(2π·660/48000)² ≈ 9.3e-4.
    int64_t at = 0;
    double worst = worst_second_difference(x, got, &at);
    printf("%s: crossfade %.3f s: worst second difference %.5f at %.4f s\n", path, crossfade, worst, (double)at / RATE);
    CHECK(worst < 0.004, "%s: a click of %.5f at %.4f s (loop points at k × %.4f s)", path, worst, (double)at / RATE,
          2.31 - crossfade);
    int64_t period = period_of(x, got);
    int64_t want = (int64_t)lround((2.31 - crossfade) * RATE);
    printf("%s: loop period %lld frames (want %lld)\n", path, (long long)period, (long long)want);
    CHECK(llabs(period - want) <= 2, "%s: loop period %lld frames, want %lld", path, (long long)period,
          (long long)want);
    free(x);
    mq_clip_destroy(&c);
    CHECK(c == NULL, "destroy clears the pointer");
}

static void check_once(const char *path)
{
    mq_clip *c = NULL;
    CHECK(mq_clip_open(path, RATE, 2, 1.0, false, 0.03, NAN, &c) == MQ_OK, "create at offset 1 s");
    if (!c)
        return;
    int64_t n = 3 * RATE;
    float *x = calloc((size_t)n, sizeof *x);
    int64_t got = drain(c, x, n);
    // From 1.0 s to the end at 2.31 s: 1.31 s.
    CHECK(llabs(got - (int64_t)(1.31 * RATE)) <= 2, "%s: played %lld frames from 1 s, want %d", path, (long long)got,
          (int)(1.31 * RATE));
    // At 1.0 s a 660 Hz sine of phase 0 at t=0 is at sin(2π·660) = 0 and rising.
    CHECK(fabsf(x[0]) < 0.01f && x[3] > x[0], "%s: the offset does not land on the sample: %f %f", path, x[0], x[3]);
    free(x);
    mq_clip_destroy(&c);
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: clip_test <music660.m4a> <music660.wav> [dump.raw]\n");
        return 2;
    }
    check_loop(argv[2], 0.03, NULL);
    check_loop(argv[1], 0.03, argc > 3 ? argv[3] : NULL);
    check_once(argv[2]);
    check_once(argv[1]);
    mq_clip *c = NULL;
    CHECK(mq_clip_open("/nonexistent.m4a", RATE, 2, 0, true, 0.03, NAN, &c) == MQ_ERR_IO && !c, "missing file");
    CHECK(mq_clip_open(argv[0], RATE, 2, 0, true, 0.03, NAN, &c) == MQ_ERR_DEMUX && !c, "not media (this executable)");
    CHECK(mq_clip_open(argv[1], RATE, 2, -1, true, 0.03, NAN, &c) == MQ_ERR_INVALID_ARGUMENT && !c, "negative offset");
    return mqt_done("clip_test");
}
