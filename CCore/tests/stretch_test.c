// The time-stretch (libavfilter atempo behind mq_stretch): a 440 Hz tone played at tempo 0.97,
// 1.03 and through live tempo changes keeps its pitch, comes out shorter or longer by the
// tempo, has no dip in level (start-up and changes included), and a click placed in the input
// comes out where the tempo puts it (how the tempo stage stamps media time). Loading
// libavfilter never waits: a stretch opened while it loads says so (MQ_ERR_STATE).
//
//   stretch_test        exit 0 when every check passed

#include <math.h>
#include <time.h>

#include "audio/stretch.h"
#include "mq_err.h"
#include "mq_player.h"
#include "test_util.h"

#define SR 48000
#define CH 2
#define BLOCK 1024

typedef struct {
    float *data;
    int frames, cap;
} buf;

static void push(buf *b, const float *src, int n)
{
    if (b->frames + n > b->cap) {
        b->cap = (b->frames + n) * 2;
        b->data = realloc(b->data, (size_t)b->cap * CH * sizeof(float));
    }
    memcpy(b->data + (size_t)b->frames * CH, src, (size_t)n * CH * sizeof(float));
    b->frames += n;
}

static void drain(mq_stretch *s, buf *out)
{
    float tmp[BLOCK * CH];
    int n;
    while ((n = mq_stretch_receive(s, tmp, BLOCK)) > 0)
        push(out, tmp, n);
    CHECK(n >= 0, "receive failed: %d", n);
}

/// Plays `seconds` of input (tone, or a click at `click` s when click > 0) with the tempo
/// given by `tempo_at(input seconds)`.
static buf run(double seconds, double (*tempo_at)(double), double click)
{
    mq_stretch s;
    buf out = {0};
    int ret = mq_stretch_open(&s, SR, CH, tempo_at(0));
    CHECK(ret == MQ_OK, "open: %d", ret);
    float in[BLOCK * CH];
    int total = (int)(seconds * SR);
    for (int done = 0; done < total; done += BLOCK) {
        for (int i = 0; i < BLOCK; i++) {
            double t = (double)(done + i) / SR;
            float v =
                click > 0 ? (done + i == (int)(click * SR) ? 0.9f : 0.0f) : (float)(0.5 * sin(2 * M_PI * 440 * t));
            in[i * CH] = in[i * CH + 1] = v;
        }
        CHECK(mq_stretch_set_tempo(&s, tempo_at((double)done / SR)) == MQ_OK, "set tempo");
        CHECK(mq_stretch_feed(&s, in, BLOCK) == MQ_OK, "feed");
        drain(&s, &out);
    }
    CHECK(mq_stretch_feed(&s, NULL, 0) == MQ_OK, "flush");
    drain(&s, &out);
    mq_stretch_close(&s);
    return out;
}

static double rms(const buf *b, int from, int n)
{
    double acc = 0;
    for (int i = from; i < from + n; i++)
        acc += (double)b->data[i * CH] * b->data[i * CH];
    return sqrt(acc / n);
}

/// Zero crossings (rising) over [from, to) → Hz.
static double frequency(const buf *b, int from, int to)
{
    int first = -1, last = -1, count = 0;
    for (int i = from + 1; i < to; i++)
        if (b->data[(i - 1) * CH] < 0 && b->data[i * CH] >= 0) {
            if (first < 0)
                first = i;
            last = i;
            count++;
        }
    return count > 1 ? (double)(count - 1) * SR / (last - first) : 0;
}

/// The lowest 10 ms RMS over [from, to) relative to the median one.
static double min_level(const buf *b, int from, int to)
{
    int w = SR / 100, n = (to - from) / w;
    double lo = 1e9, *all = calloc((size_t)n, sizeof *all);
    for (int k = 0; k < n; k++) {
        all[k] = rms(b, from + k * w, w);
        lo = all[k] < lo ? all[k] : lo;
    }
    // median by selection (n is small)
    double med = 0;
    for (int k = 0; k < n; k++) {
        int below = 0;
        for (int j = 0; j < n; j++)
            below += all[j] < all[k];
        if (below == n / 2)
            med = all[k];
    }
    free(all);
    return med > 0 ? lo / med : 0;
}

static double tempo_097(double t)
{
    (void)t;
    return 0.97;
}
static double tempo_103(double t)
{
    (void)t;
    return 1.03;
}
static double tempo_steps(double t)
{
    return t < 1 ? 1.0 : t < 2 ? 1.03 : t < 3 ? 0.97 : 1.01;
}

static void check_tone(const char *name, double (*tempo)(double), double expect_ratio)
{
    buf out = run(4.0, tempo, 0);
    double ratio = (double)out.frames / (4.0 * SR);
    double hz = frequency(&out, SR / 10, out.frames - SR / 10);
    double level = min_level(&out, 0, out.frames - SR / 20);
    double first = rms(&out, 0, SR / 100) / rms(&out, SR, SR / 100);
    printf("%-6s out/in %.4f (want %.4f)  %.2f Hz  min 10 ms level %.3f of median  first 10 ms %.3f\n", name, ratio,
           expect_ratio, hz, level, first);
    CHECK(fabs(ratio - expect_ratio) < 0.005, "%s: length ratio %.4f, want %.4f", name, ratio, expect_ratio);
    CHECK(fabs(hz - 440) < 1.0, "%s: pitch %.2f Hz", name, hz);
    CHECK(level > 0.8, "%s: level dips to %.3f of the median", name, level);
    free(out.data);
}

int main(void)
{
    mq_stretch s;
    CHECK(mq_stretch_open(&s, SR, CH, 3.0) == MQ_ERR_INVALID_ARGUMENT, "tempo out of range");
    CHECK(mq_stretch_open(&s, 0, CH, 1.0) == MQ_ERR_INVALID_ARGUMENT, "no rate");
    mq_stretch_close(&s);

    // The first open starts the load and does not wait for it; then it loads within seconds.
    int first = mq_stretch_open(&s, SR, CH, 1.03);
    CHECK(first == MQ_ERR_STATE || first == MQ_OK, "first open: %d", first);
    mq_stretch_close(&s);
    double by = mq_clock_now() + 30;
    int ready;
    while ((ready = mq_tempo_prepare()) == MQ_ERR_STATE && mq_clock_now() < by)
        nanosleep(&(struct timespec){0, 5000000}, NULL);
    CHECK(ready == MQ_OK, "libavfilter not loaded in 30 s: %d", ready);

    check_tone("0.97", tempo_097, 1 / 0.97);
    check_tone("1.03", tempo_103, 1 / 1.03);
    // 1 s at 1.00, 1 s at 1.03, 1 s at 0.97, 1 s at 1.01
    check_tone("steps", tempo_steps, (1 + 1 / 1.03 + 1 / 0.97 + 1 / 1.01) / 4);

    // Where a click at input 2.000 s comes out at tempo 1.03: 2/1.03 s if output frame 0 is
    // input frame 0 and the stretch keeps time.
    buf c = run(3.0, tempo_103, 2.0);
    int peak = 0;
    for (int i = 0; i < c.frames; i++)
        if (fabsf(c.data[i * CH]) > fabsf(c.data[peak * CH]))
            peak = i;
    double at = (double)peak / SR, want = 2.0 / 1.03;
    printf("click  in 2.000 s -> out %.4f s (tempo says %.4f, error %+.1f ms)\n", at, want, (at - want) * 1000);
    CHECK(fabs(at - want) < 0.030, "click at %.4f s, want %.4f", at, want);
    free(c.data);
    return mqt_done("stretch_test");
}
