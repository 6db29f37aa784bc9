// The PCM mixer (mixer.h), checked on its output samples. Constant inputs make the output the
// gain curve itself (input A only on the left channel, input B only on the right): linear and
// equal-power ramps frame by frame, a constant-power cross-fade, timed commands starting on the
// exact frame (across process calls, dt ≠ 1/rate, several in one call, send order), the
// pending list (nothing lost or early, a full queue refused), cancel_timed, a ramp interrupted
// from the gain it reached, master volume/mute ramps; the limiter on four full-scale inputs in
// phase (ceiling, sign, no wrap in s16, instant attack keeping the channels' ratio, release
// time), s16/s32/f32 values (rounding ties to even), NaN/∞ input coming out as silence, and
// invalid arguments.
//
//   mixer_test        exit 0 when every check passed

#include <stdbool.h>

#include "mixing/mixer.h"
#include "mq_err.h"
#include "test_util.h"

#define SR 48000
#define CH 2
#define MAXF 1024
#define TOTAL 4096 // frames of output a test records at most

static float dc_a[MAXF * CH], dc_b[MAXF * CH]; // input A: (va, 0), input B: (0, vb)
static float rec[TOTAL * CH];                  // f32 output of run()

static void fill(float *buf, float left, float right)
{
    for (int i = 0; i < MAXF; i++) {
        buf[i * CH] = left;
        buf[i * CH + 1] = right;
    }
}

static mq_mixer *make(int inputs, int rate)
{
    mq_mixer *m = NULL;
    int ret = mq_mixer_create(inputs, CH, rate, MAXF, &m);
    CHECK(ret == MQ_OK && m, "create: %d", ret);
    return m;
}

/// Mixes frames [from, to) of the recording in calls of `period` frames; call c starts at
/// frame f and timeline position t0 + f·dt (t0 NAN: no timeline).
static void run(mq_mixer *m, const float *const *in, int from, int to, int period, double t0, double dt)
{
    for (int f = from; f < to; f += period) {
        int n = to - f < period ? to - f : period;
        mq_mixer_process(m, in, n, t0 + (double)f * dt, dt, rec + (size_t)f * CH, MQ_SAMPLE_F32);
    }
}

/// The frame a command at `at` is due at, by brute force over the same calls as run().
static int due_frame(double at, int total, int period, double t0, double dt)
{
    for (int f = 0; f < total; f += period)
        for (int k = 0; k < period && f + k < total; k++)
            if (t0 + (double)f * dt + (double)k * dt >= at)
                return f + k;
    return -1;
}

/// The larger of an error so far and a new one; a NaN is the worst (fmax would drop it).
/// (Also keeps gcc 12's aarch64 vectoriser off fmax reductions, which crash it.)
static double worse(double worst, double e)
{
    return e > worst || isnan(e) ? e : worst;
}

/// Largest |rec[k·CH + ch] − scale·gain(k)| over [from, to).
static double max_error(int ch, int from, int to, float scale, double (*gain)(int))
{
    double worst = 0;
    for (int k = from; k < to; k++)
        worst = worse(worst, fabs(rec[k * CH + ch] - scale * gain(k)));
    return worst;
}

/// Largest |rec[k] − rec[k − 1]| of channel `ch` over [from, to).
static double max_step(int ch, int from, int to)
{
    double worst = 0;
    for (int k = from + 1; k < to; k++)
        worst = worse(worst, fabs(rec[k * CH + ch] - rec[(k - 1) * CH + ch]));
    return worst;
}

static void test_arguments(void)
{
    mq_mixer *m = (mq_mixer *)&m; // not NULL: create must clear it
    CHECK(mq_mixer_create(0, CH, SR, MAXF, &m) == MQ_ERR_INVALID_ARGUMENT && !m, "0 inputs");
    CHECK(mq_mixer_create(MQ_MIXER_MAX_INPUTS + 1, CH, SR, MAXF, &m) == MQ_ERR_INVALID_ARGUMENT, "5 inputs");
    CHECK(mq_mixer_create(2, 0, SR, MAXF, &m) == MQ_ERR_INVALID_ARGUMENT, "0 channels");
    CHECK(mq_mixer_create(2, 33, SR, MAXF, &m) == MQ_ERR_INVALID_ARGUMENT, "33 channels");
    CHECK(mq_mixer_create(2, CH, 0, MAXF, &m) == MQ_ERR_INVALID_ARGUMENT, "rate 0");
    CHECK(mq_mixer_create(2, CH, SR, 0, &m) == MQ_ERR_INVALID_ARGUMENT, "0 frames");
    CHECK(mq_mixer_create(2, CH, SR, (1 << 20) + 1, &m) == MQ_ERR_INVALID_ARGUMENT, "too many frames");
    CHECK(mq_mixer_create(2, CH, SR, MAXF, NULL) == MQ_ERR_INVALID_ARGUMENT, "NULL out");
    CHECK(m == NULL, "no mixer on failure");
    mq_mixer_destroy(&m); // NULL-safe
    mq_mixer_destroy(NULL);

    m = make(2, SR);
    if (!m)
        return;
    const int bad = MQ_ERR_INVALID_ARGUMENT;
    CHECK(mq_mixer_set_gain(NULL, 0, 1, 0, MQ_RAMP_LINEAR, NAN) == bad, "NULL mixer");
    CHECK(mq_mixer_set_gain(m, -1, 1, 0, MQ_RAMP_LINEAR, NAN) == bad, "input -1");
    CHECK(mq_mixer_set_gain(m, 2, 1, 0, MQ_RAMP_LINEAR, NAN) == bad, "input 2 of 2");
    CHECK(mq_mixer_set_gain(m, 0, -0.01f, 0, MQ_RAMP_LINEAR, NAN) == bad, "gain < 0");
    CHECK(mq_mixer_set_gain(m, 0, 4.01f, 0, MQ_RAMP_LINEAR, NAN) == bad, "gain > 4");
    CHECK(mq_mixer_set_gain(m, 0, NAN, 0, MQ_RAMP_LINEAR, NAN) == bad, "gain NAN");
    CHECK(mq_mixer_set_gain(m, 0, 1, -1, MQ_RAMP_LINEAR, NAN) == bad, "ramp -1");
    CHECK(mq_mixer_set_gain(m, 0, 1, 0, (mq_ramp_shape)2, NAN) == bad, "shape 2");
    CHECK(mq_mixer_set_gain(m, 0, 1, 0, MQ_RAMP_LINEAR, INFINITY) == bad, "at +inf");
    CHECK(mq_mixer_set_gain(m, 0, 1, 0, MQ_RAMP_LINEAR, -INFINITY) == bad, "at -inf");
    CHECK(mq_mixer_set_master(NULL, 1, false) == bad, "NULL mixer");
    CHECK(mq_mixer_set_master(m, -0.01f, false) == bad, "volume < 0");
    CHECK(mq_mixer_set_master(m, 1.01f, false) == bad, "volume > 1");
    CHECK(mq_mixer_set_master(m, NAN, true) == bad, "volume NAN");
    CHECK(mq_mixer_cancel_timed(NULL) == bad, "NULL mixer");
    CHECK(isnan(mq_mixer_gain(m, 2)) && isnan(mq_mixer_gain(m, -1)) && isnan(mq_mixer_gain(NULL, 0)), "bad input");
    CHECK(mq_mixer_limited_frames(NULL) == 0, "NULL mixer");
    // The edges are valid.
    CHECK(mq_mixer_set_gain(m, 1, 4, 0, MQ_RAMP_EQUAL_POWER, 1e9) == MQ_OK, "gain 4");
    CHECK(mq_mixer_set_gain(m, 1, 0, 0, MQ_RAMP_LINEAR, -1e9) == MQ_OK, "gain 0");
    CHECK(mq_mixer_set_master(m, 0, true) == MQ_OK && mq_mixer_set_master(m, 1, false) == MQ_OK, "volume 0, 1");
    CHECK(mq_mixer_gain(m, 0) == 1.0f && mq_mixer_gain(m, 1) == 1.0f, "inputs start at unity");

    // process with bad arguments writes nothing.
    int16_t out[(MAXF + 1) * CH];
    for (int i = 0; i < (MAXF + 1) * CH; i++)
        out[i] = 1234;
    const float *in[2] = {dc_a, dc_b};
    fill(dc_a, 0.5f, 0);
    mq_mixer_process(m, in, MAXF + 1, 0, 1.0 / SR, out, MQ_SAMPLE_S16);
    mq_mixer_process(m, in, -1, 0, 1.0 / SR, out, MQ_SAMPLE_S16);
    mq_mixer_process(m, in, 16, 0, 1.0 / SR, out, (mq_sample_format)3);
    mq_mixer_process(m, in, 16, 0, 1.0 / SR, NULL, MQ_SAMPLE_S16);
    mq_mixer_process(NULL, in, 16, 0, 1.0 / SR, out, MQ_SAMPLE_S16);
    bool untouched = true;
    for (int i = 0; i < (MAXF + 1) * CH; i++)
        untouched &= out[i] == 1234;
    CHECK(untouched, "process with bad arguments wrote");
    mq_mixer_destroy(&m);
    CHECK(m == NULL, "destroy clears the pointer");
}

static double steps_gain(int k)
{
    return (k < 630 ? k / 10 + 1 : 64) / 64.0;
} // command i at frame 10·i

static void test_queue(void)
{
    mq_mixer *m = make(1, SR);
    if (!m)
        return;
    int sent = 0;
    while (sent < 100 && mq_mixer_set_gain(m, 0, 1, 0, MQ_RAMP_LINEAR, NAN) == MQ_OK)
        sent++;
    CHECK(sent == MQ_MIXER_QUEUE_CAPACITY, "queue took %d commands, want %d", sent, MQ_MIXER_QUEUE_CAPACITY);
    CHECK(mq_mixer_set_gain(m, 0, 1, 0, MQ_RAMP_LINEAR, NAN) == MQ_ERR_STATE, "full queue: set_gain");
    CHECK(mq_mixer_set_master(m, 1, false) == MQ_ERR_STATE, "full queue: set_master");
    CHECK(mq_mixer_cancel_timed(m) == MQ_OK, "cancel_timed needs no slot");
    const float *in[1] = {dc_a};
    fill(dc_a, 0.5f, 0.5f);
    run(m, in, 0, 16, 16, NAN, 0);
    CHECK(mq_mixer_set_gain(m, 0, 1, 0, MQ_RAMP_LINEAR, NAN) == MQ_OK, "the queue drained");
    run(m, in, 0, 16, 16, NAN, 0);

    // 64 timed steps, one every 10 frames, sent out of time order: all wait in the pending
    // list (the queue stays full meanwhile), each applies on its frame, none early, none lost.
    const double t0 = 50.0, dt = 1.0 / SR;
    for (int j = 0; j < MQ_MIXER_QUEUE_CAPACITY; j++) {
        int i = (j * 37) % MQ_MIXER_QUEUE_CAPACITY; // a permutation
        int ret = mq_mixer_set_gain(m, 0, (float)((i + 1) / 64.0), 0, MQ_RAMP_LINEAR, t0 + (10 * i - 0.5) * dt);
        CHECK(ret == MQ_OK, "timed command %d: %d", i, ret);
    }
    CHECK(mq_mixer_set_gain(m, 0, 1, 0, MQ_RAMP_LINEAR, NAN) == MQ_ERR_STATE, "full of timed commands");
    run(m, in, 0, 64, 64, t0, dt); // frames 0…63: the commands at 0, 10, …, 60 applied
    int more = 0;
    while (more < 100 && mq_mixer_set_gain(m, 0, 0, 0, MQ_RAMP_LINEAR, t0 + 1e6) == MQ_OK)
        more++;
    CHECK(more == 7, "7 commands applied → 7 free slots, got %d", more);
    run(m, in, 64, 700, 64, t0, dt);
    double err = max_error(0, 0, 700, 0.5f, steps_gain);
    CHECK(err < 1e-6, "timed steps off by %g", err);
    CHECK(mq_mixer_cancel_timed(m) == MQ_OK, "cancel");
    run(m, in, 700, 764, 64, t0, dt);
    CHECK(mq_mixer_set_gain(m, 0, 1, 0, MQ_RAMP_LINEAR, NAN) == MQ_OK, "cancel freed the slots");
    mq_mixer_destroy(&m);
}

static double linear_down(int k)
{
    return k < 480 ? 1.0 - k / 480.0 : 0.0;
}
static double linear_up(int k)
{
    return 1.8 * k / 1000.0;
}
static double zero(int k)
{
    return 0 * k;
}

static void test_linear(void)
{
    mq_mixer *m = make(2, SR);
    if (!m)
        return;
    const float *in[2] = {dc_a, NULL}; // input B silent
    fill(dc_a, 0.5f, 0);
    CHECK(mq_mixer_set_gain(m, 0, 0, 480, MQ_RAMP_LINEAR, NAN) == MQ_OK, "ramp");
    run(m, in, 0, 1024, 100, NAN, 0); // untimed commands need no timeline
    int ks[] = {0, 1, 2, 100, 240, 479, 480, 481, 1000};
    for (size_t i = 0; i < sizeof ks / sizeof *ks; i++) {
        int k = ks[i];
        CHECK(fabs(rec[k * CH] - 0.5 * linear_down(k)) < 1e-7, "frame %d: %.9f, want %.9f", k, rec[k * CH],
              0.5 * linear_down(k));
    }
    CHECK(max_error(0, 0, 1024, 0.5f, linear_down) < 1e-7, "linear ramp off by %g",
          max_error(0, 0, 1024, 0.5f, linear_down));
    CHECK(max_error(1, 0, 1024, 0, zero) == 0, "right channel not silent");
    CHECK(mq_mixer_gain(m, 0) == 0.0f, "gain reached %g, want 0", mq_mixer_gain(m, 0));

    // Up to 1.8 over 1000 frames, read back half-way (600 frames, in uneven calls).
    CHECK(mq_mixer_set_gain(m, 0, 1.8f, 1000, MQ_RAMP_LINEAR, NAN) == MQ_OK, "ramp");
    run(m, in, 0, 600, 256, NAN, 0);
    CHECK(fabs(mq_mixer_gain(m, 0) - 1.08) < 1e-6, "gain after 600 of 1000 frames %g, want 1.08", mq_mixer_gain(m, 0));
    CHECK(max_error(0, 0, 600, 0.5f, linear_up) < 1e-6, "ramp across calls off by %g",
          max_error(0, 0, 600, 0.5f, linear_up));
    // A ramp goes on while its input is absent (NULL): back to 0, then up to 1 over 1000
    // frames, the first 500 without input.
    mq_mixer_set_gain(m, 0, 0, 0, MQ_RAMP_LINEAR, NAN);
    run(m, in, 0, 1, 1, NAN, 0);
    mq_mixer_set_gain(m, 0, 1, 1000, MQ_RAMP_LINEAR, NAN);
    const float *none[2] = {NULL, NULL};
    run(m, none, 0, 500, 256, NAN, 0);
    CHECK(max_error(0, 0, 500, 0, zero) == 0 && fabs(mq_mixer_gain(m, 0) - 0.5) < 1e-6, "silent input: %g, gain %g",
          max_error(0, 0, 500, 0, zero), mq_mixer_gain(m, 0));
    run(m, in, 500, 600, 100, NAN, 0);
    CHECK(fabs(rec[500 * CH] - 0.25) < 1e-6 && fabs(rec[599 * CH] - 0.5 * 0.599) < 1e-6, "after the gap: %g %g",
          rec[500 * CH], rec[599 * CH]);
    mq_mixer_destroy(&m);
}

static double ep_down(int k)
{
    return k < 1000 ? cos(k * M_PI / 2000) : 0;
}
static double ep_up(int k)
{
    return k < 1000 ? sin(k * M_PI / 2000) : 1;
}
static double ep_rise(int k)
{
    return k < 700 ? 1 + 2 * sin(k * M_PI / 1400) : 3;
}
static double ep_fall(int k)
{
    return k < 700 ? 3 - 2.5 * (1 - cos(k * M_PI / 1400)) : 0.5;
}

static void test_equal_power(void)
{
    mq_mixer *m = make(2, SR);
    if (!m)
        return;
    const float *in[2] = {dc_a, dc_b};
    fill(dc_a, 0.5f, 0);
    fill(dc_b, 0, 0.5f);
    CHECK(mq_mixer_set_gain(m, 1, 0, 0, MQ_RAMP_LINEAR, NAN) == MQ_OK, "B silent");
    run(m, in, 0, 16, 16, NAN, 0);
    // A fades out while B fades in, both equal-power over 1000 frames, in calls of 100 frames.
    CHECK(mq_mixer_set_gain(m, 0, 0, 1000, MQ_RAMP_EQUAL_POWER, NAN) == MQ_OK, "fade out");
    CHECK(mq_mixer_set_gain(m, 1, 1, 1000, MQ_RAMP_EQUAL_POWER, NAN) == MQ_OK, "fade in");
    run(m, in, 0, 1200, 100, NAN, 0);
    double worst_power = 0;
    for (int k = 0; k < 1200; k++) {
        double ga = rec[k * CH] / 0.5, gb = rec[k * CH + 1] / 0.5;
        worst_power = worse(worst_power, fabs(ga * ga + gb * gb - 1));
    }
    CHECK(worst_power < 1e-3, "ga² + gb² off 1 by %g", worst_power);
    CHECK(max_error(0, 0, 1200, 0.5f, ep_down) < 1e-4, "fade-out ≠ cos: %g", max_error(0, 0, 1200, 0.5f, ep_down));
    CHECK(max_error(1, 0, 1200, 0.5f, ep_up) < 1e-4, "fade-in ≠ sin: %g", max_error(1, 0, 1200, 0.5f, ep_up));
    CHECK(fabs(rec[500 * CH] - 0.5 * M_SQRT1_2) < 1e-5 && fabs(rec[500 * CH + 1] - 0.5 * M_SQRT1_2) < 1e-5,
          "mid-point %g %g, want %g", rec[500 * CH], rec[500 * CH + 1], 0.5 * M_SQRT1_2);

    // Not between 0 and 1: rising 1 → 3 is 1 + 2·sin, falling 3 → 0.5 is 3 − 2.5·(1 − cos).
    fill(dc_a, 0.25f, 0);
    CHECK(mq_mixer_set_gain(m, 0, 1, 0, MQ_RAMP_LINEAR, NAN) == MQ_OK, "A at 1");
    run(m, in, 0, 16, 16, NAN, 0);
    CHECK(mq_mixer_set_gain(m, 0, 3, 700, MQ_RAMP_EQUAL_POWER, NAN) == MQ_OK, "rise");
    run(m, in, 0, 800, 64, NAN, 0);
    CHECK(max_error(0, 0, 800, 0.25f, ep_rise) < 1e-4, "rise off by %g", max_error(0, 0, 800, 0.25f, ep_rise));
    CHECK(mq_mixer_set_gain(m, 0, 0.5f, 700, MQ_RAMP_EQUAL_POWER, NAN) == MQ_OK, "fall");
    run(m, in, 0, 800, 333, NAN, 0);
    CHECK(max_error(0, 0, 800, 0.25f, ep_fall) < 1e-4, "fall off by %g", max_error(0, 0, 800, 0.25f, ep_fall));
    mq_mixer_destroy(&m);
}

// test_timed's expected gains (frames 701 and 901 are checked against the brute-force rule).
static double timed_left(int k)
{
    if (k < 701)
        return 1;
    if (k < 901)
        return 0;
    if (k < 1001)
        return (k - 901) / 100.0;
    return k < 1200 ? 1 : k < 1250 ? 0.6 : k < 1300 ? 0.4 : 0.8;
}
static double timed_right(int k)
{
    return k < 255 ? 1 : k == 255 ? 0 : k < 600 ? 1 : 0.5;
}

static void test_timed(void)
{
    mq_mixer *m = make(2, SR);
    if (!m)
        return;
    const float *in[2] = {dc_a, dc_b};
    fill(dc_a, 0.5f, 0);
    fill(dc_b, 0, 0.5f);
    // A timeline running 2 % fast (dt ≠ 1/rate), calls of 256 frames.
    const double t0 = 1000.0, dt = 1.02 / SR;
    const int period = 256, total = 1536;
    double at_701 = t0 + 700.3 * dt, at_901 = t0 + 900.5 * dt;
    CHECK(due_frame(at_701, total, period, t0, dt) == 701, "rule: %d", due_frame(at_701, total, period, t0, dt));
    CHECK(due_frame(at_901, total, period, t0, dt) == 901, "rule: %d", due_frame(at_901, total, period, t0, dt));
    // Right: off on exactly the last frame of call 0, on again on the first frame of call 1
    // (positions computed as the calls compute them), half from frame 600.
    mq_mixer_set_gain(m, 1, 0, 0, MQ_RAMP_LINEAR, t0 + 255.0 * dt);
    mq_mixer_set_gain(m, 1, 1, 0, MQ_RAMP_LINEAR, t0 + 256.0 * dt + 0.0 * dt);
    mq_mixer_set_gain(m, 1, 0.5f, 0, MQ_RAMP_LINEAR, t0 + 599.5 * dt);
    // Left: off at 701, a 100-frame linear ramp back from 901; two commands due at 1200
    // (applied in send order: 0.6 wins); 0.8 at 1300 sent before 0.4 at 1250.
    mq_mixer_set_gain(m, 0, 0, 0, MQ_RAMP_EQUAL_POWER, at_701);
    mq_mixer_set_gain(m, 0, 1, 100, MQ_RAMP_LINEAR, at_901);
    mq_mixer_set_gain(m, 0, 0.2f, 0, MQ_RAMP_LINEAR, t0 + 1199.9 * dt);
    mq_mixer_set_gain(m, 0, 0.6f, 0, MQ_RAMP_LINEAR, t0 + 1199.8 * dt);
    mq_mixer_set_gain(m, 0, 0.8f, 0, MQ_RAMP_LINEAR, t0 + 1299.5 * dt);
    mq_mixer_set_gain(m, 0, 0.4f, 0, MQ_RAMP_LINEAR, t0 + 1249.5 * dt);
    run(m, in, 0, total, period, t0, dt);
    CHECK(rec[700 * CH] == 0.5f && rec[701 * CH] == 0.0f, "step not on frame 701: %g %g", rec[700 * CH], rec[701 * CH]);
    CHECK(rec[901 * CH] == 0.0f && fabs(rec[902 * CH] - 0.005) < 1e-7, "ramp not from frame 901: %g %g", rec[901 * CH],
          rec[902 * CH]);
    CHECK(rec[254 * CH + 1] == 0.5f && rec[255 * CH + 1] == 0.0f && rec[256 * CH + 1] == 0.5f,
          "frames 254…256: %g %g %g", rec[254 * CH + 1], rec[255 * CH + 1], rec[256 * CH + 1]);
    CHECK(max_error(0, 0, total, 0.5f, timed_left) < 1e-6, "left off by %g", max_error(0, 0, total, 0.5f, timed_left));
    CHECK(max_error(1, 0, total, 0.5f, timed_right) < 1e-6, "right off by %g",
          max_error(1, 0, total, 0.5f, timed_right));

    // A position whose division rounds up: ceil((at − t0) / dt) is one frame late for it,
    // yet t0 + k·dt >= at holds at frame k (the rule is the comparison, not the division).
    const double t1 = 1000.1;
    int edge = 0;
    for (int k = 1; k < 256 && !edge; k++)
        edge = ceil((t1 + k * dt - t1) / dt) != k ? k : 0;
    CHECK(edge > 0, "no rounding edge found");
    mq_mixer_set_gain(m, 0, 1, 0, MQ_RAMP_LINEAR, NAN);
    run(m, in, 0, 1, 1, NAN, 0);
    mq_mixer_set_gain(m, 0, 0.2f, 0, MQ_RAMP_LINEAR, t1 + edge * dt);
    run(m, in, 0, 256, 256, t1, dt);
    CHECK(rec[(edge - 1) * CH] == 0.5f && rec[edge * CH] == 0.1f, "rounding edge at frame %d: %g %g", edge,
          rec[(edge - 1) * CH], rec[edge * CH]);
    mq_mixer_set_gain(m, 0, 0.8f, 0, MQ_RAMP_LINEAR, NAN);

    // No timeline (t0 NAN): only untimed commands apply; a timed one already past applies on
    // frame 0 of the first call with a timeline; with dt 0, only those at or before t0.
    mq_mixer_set_gain(m, 0, 0.2f, 0, MQ_RAMP_LINEAR, 5.0);
    mq_mixer_set_gain(m, 1, 0.2f, 0, MQ_RAMP_LINEAR, NAN);
    run(m, in, 0, 64, 64, NAN, dt);
    CHECK(rec[0] == 0.5f * 0.8f && rec[63 * CH] == 0.5f * 0.8f, "timed applied without a timeline: %g", rec[0]);
    CHECK(rec[1] == 0.5f * 0.2f, "untimed not applied without a timeline: %g", rec[1]);
    run(m, in, 0, 64, 64, 10.0, dt);
    CHECK(rec[0] == 0.5f * 0.2f, "overdue command not on frame 0: %g", rec[0]);
    mq_mixer_set_gain(m, 0, 1, 0, MQ_RAMP_LINEAR, 20.0);
    mq_mixer_set_gain(m, 1, 1, 0, MQ_RAMP_LINEAR, 30.0);
    run(m, in, 0, 64, 64, 20.0, 0);
    CHECK(rec[0] == 0.5f && rec[1] == 0.5f * 0.2f, "dt 0: %g %g", rec[0], rec[1]);
    // dt ∞: frame 1 is past any `at` after t0.
    mq_mixer_set_gain(m, 0, 0.2f, 0, MQ_RAMP_LINEAR, 20.5);
    mq_mixer_process(m, in, 64, 20.0, INFINITY, rec, MQ_SAMPLE_F32);
    CHECK(rec[0] == 0.5f && rec[CH] == 0.5f * 0.2f, "dt ∞: %g %g", rec[0], rec[CH]);
    mq_mixer_destroy(&m);
}

static double cancel_gain(int k)
{
    return k < 32 ? 1 : k < 300 ? 1 - 0.5 * (k - 32) / 400.0 : 0.8;
}

static void test_cancel(void)
{
    mq_mixer *m = make(2, SR);
    if (!m)
        return;
    const float *in[2] = {dc_a, dc_b};
    fill(dc_a, 0.5f, 0);
    fill(dc_b, 0, 0.5f);
    const double t0 = 0, dt = 1.0 / SR;
    mq_mixer_set_gain(m, 0, 0.5f, 400, MQ_RAMP_LINEAR, t0 + 32 * dt); // begins in the first call
    mq_mixer_set_gain(m, 0, 0, 0, MQ_RAMP_LINEAR, t0 + 100 * dt);     // pending when cancelled
    mq_mixer_set_gain(m, 0, 0.2f, 0, MQ_RAMP_LINEAR, t0 + 200 * dt);  // pending when cancelled
    run(m, in, 0, 64, 64, t0, dt);
    mq_mixer_set_gain(m, 0, 0.1f, 0, MQ_RAMP_LINEAR, t0 + 350 * dt); // still in the queue
    mq_mixer_set_gain(m, 1, 0.5f, 0, MQ_RAMP_LINEAR, NAN);           // untimed: not cancelled
    CHECK(mq_mixer_cancel_timed(m) == MQ_OK, "cancel");
    mq_mixer_set_gain(m, 0, 0.8f, 0, MQ_RAMP_LINEAR, t0 + 300 * dt); // sent after: kept
    run(m, in, 64, 512, 64, t0, dt);
    CHECK(max_error(0, 0, 512, 0.5f, cancel_gain) < 1e-6, "cancel: off by %g", max_error(0, 0, 512, 0.5f, cancel_gain));
    CHECK(rec[150 * CH] > 0.3f && rec[250 * CH] > 0.3f && rec[400 * CH] > 0.3f, "a cancelled command applied");
    CHECK(rec[63 * CH + 1] == 0.5f && rec[64 * CH + 1] == 0.25f && rec[511 * CH + 1] == 0.25f,
          "the untimed command sent before the cancel: %g %g", rec[63 * CH + 1], rec[64 * CH + 1]);
    mq_mixer_destroy(&m);
}

static double interrupt_linear(int k)
{
    return k < 400 ? 1 - k / 1000.0 : k < 600 ? 0.6 + 0.4 * (k - 400) / 200.0 : 1;
}
static double interrupt_ep(int k)
{
    double g0 = cos(300 * M_PI / 2000);
    return k < 300 ? cos(k * M_PI / 2000) : k < 800 ? g0 + (1 - g0) * sin((k - 300) * M_PI / 1000) : 1;
}

static void test_interrupt(void)
{
    mq_mixer *m = make(1, SR);
    if (!m)
        return;
    const float *in[1] = {dc_a};
    fill(dc_a, 0.5f, 0.5f);
    const double dt = 1.0 / SR;
    // 1 → 0 over 1000 frames; at frame 400 (gain 0.6) a ramp back to 1 over 200 frames.
    mq_mixer_set_gain(m, 0, 0, 1000, MQ_RAMP_LINEAR, NAN);
    mq_mixer_set_gain(m, 0, 1, 200, MQ_RAMP_LINEAR, 399.5 * dt);
    run(m, in, 0, 1000, 128, 0, dt);
    CHECK(fabs(rec[400 * CH] - 0.3) < 1e-6 && fabs(rec[401 * CH] - 0.5 * 0.602) < 1e-6, "frames 400, 401: %g %g",
          rec[400 * CH], rec[401 * CH]);
    CHECK(max_error(0, 0, 1000, 0.5f, interrupt_linear) < 1e-6, "off by %g",
          max_error(0, 0, 1000, 0.5f, interrupt_linear));
    CHECK(max_step(0, 0, 1000) < 0.5 * 0.4 / 200 + 1e-6, "a jump of %g", max_step(0, 0, 1000));
    // The same with equal-power ramps, interrupted at frame 300.
    mq_mixer_set_gain(m, 0, 0, 1000, MQ_RAMP_EQUAL_POWER, NAN);
    mq_mixer_set_gain(m, 0, 1, 500, MQ_RAMP_EQUAL_POWER, 2.0 + 299.5 * dt);
    run(m, in, 0, 1000, 128, 2.0, dt);
    CHECK(max_error(0, 0, 1000, 0.5f, interrupt_ep) < 1e-4, "off by %g", max_error(0, 0, 1000, 0.5f, interrupt_ep));
    CHECK(max_step(0, 0, 1000) < 0.5 * 0.42 * M_PI / 1000, "a jump of %g", max_step(0, 0, 1000));
    CHECK(fabs(mq_mixer_gain(m, 0) - 1) < 1e-6, "ends at %g", mq_mixer_gain(m, 0));
    mq_mixer_destroy(&m);
}

static double mute_ramp(int k)
{
    return k < 480 ? 1 - k / 480.0 : 0;
}
static double unmute_half(int k)
{
    return k < 480 ? 0.5 * k / 480.0 : 0.5;
}

static void test_master(void)
{
    mq_mixer *m = make(1, SR);
    if (!m)
        return;
    const float *in[1] = {dc_a};
    fill(dc_a, 0.5f, 0.5f);
    // Mute: 10 ms (480 frames) down to silence, linear.
    CHECK(mq_mixer_set_master(m, 1, true) == MQ_OK, "mute");
    run(m, in, 0, 1024, 128, NAN, 0);
    CHECK(max_error(0, 0, 1024, 0.5f, mute_ramp) < 1e-6, "mute ramp off by %g", max_error(0, 0, 1024, 0.5f, mute_ramp));
    CHECK(rec[479 * CH] > 0 && rec[480 * CH] == 0, "not silent at 10 ms exactly: %g %g", rec[479 * CH], rec[480 * CH]);
    CHECK(max_step(0, 0, 1024) <= 0.5 / 480 + 1e-6, "mute step %g > %g", max_step(0, 0, 1024), 0.5 / 480);
    // Unmute at half volume: up to 0.5 over 480 frames.
    CHECK(mq_mixer_set_master(m, 0.5f, false) == MQ_OK, "unmute");
    run(m, in, 0, 1024, 100, NAN, 0);
    CHECK(max_error(0, 0, 1024, 0.5f, unmute_half) < 1e-6, "unmute off by %g",
          max_error(0, 0, 1024, 0.5f, unmute_half));
    // Mute and unmute in the same call: no dip, straight up from 0.5 to 1.
    mq_mixer_set_master(m, 0.5f, true);
    mq_mixer_set_master(m, 1, false);
    run(m, in, 0, 1024, 1024, NAN, 0);
    CHECK(rec[0] == 0.25f && fabs(rec[240 * CH] - 0.375) < 1e-6 && rec[480 * CH] == 0.5f, "0.5 → 1: %g %g %g", rec[0],
          rec[240 * CH], rec[480 * CH]);
    // Mute, then unmute half-way: back up from where it got to.
    mq_mixer_set_master(m, 0.8f, true);
    run(m, in, 0, 240, 240, NAN, 0);
    mq_mixer_set_master(m, 1, false);
    run(m, in, 240, 1024, 256, NAN, 0);
    CHECK(fabs(rec[239 * CH] - 0.5 * (1 - 239 / 480.0)) < 1e-6 && fabs(rec[240 * CH] - 0.25) < 1e-6, "half-way %g %g",
          rec[239 * CH], rec[240 * CH]);
    CHECK(max_step(0, 0, 1024) <= 0.5 / 480 + 1e-6, "step %g", max_step(0, 0, 1024));
    mq_mixer_destroy(&m);
    // At 44.1 kHz the 10 ms ramp is 441 frames.
    m = make(1, 44100);
    if (!m)
        return;
    mq_mixer_set_master(m, 1, true);
    run(m, in, 0, 1024, 512, NAN, 0);
    CHECK(rec[440 * CH] > 0 && rec[441 * CH] == 0, "44.1 kHz: %g %g", rec[440 * CH], rec[441 * CH]);
    mq_mixer_destroy(&m);
}

/// Four full-scale 1 kHz sines in phase (sum 4): f32 and s16 mixers side by side.
static void test_limiter_sines(void)
{
    mq_mixer *mf = make(4, SR), *ms = make(4, SR);
    if (!mf || !ms)
        return;
    static float sine[480 * CH], out_f[480 * CH];
    static int16_t out_s[480 * CH];
    const float *in[4] = {sine, sine, sine, sine};
    const float s16_max = rintf(MQ_MIXER_LIMIT * 32768.0f);
    float loudest = 0;
    int sign_errors = 0, over = 0, s16_over = 0, s16_mismatch = 0;
    for (int p = 0; p < 100; p++) { // 1 s
        for (int i = 0; i < 480; i++)
            sine[i * CH] = sine[i * CH + 1] = (float)sin(2 * M_PI * 1000 * (p * 480 + i) / SR);
        mq_mixer_process(mf, in, 480, NAN, 0, out_f, MQ_SAMPLE_F32);
        mq_mixer_process(ms, in, 480, NAN, 0, out_s, MQ_SAMPLE_S16);
        for (int i = 0; i < 480 * CH; i++) {
            float s = sine[i];
            loudest = (float)worse(loudest, fabsf(out_f[i]));
            over += fabsf(out_f[i]) > MQ_MIXER_LIMIT;
            s16_over += fabsf((float)out_s[i]) > s16_max;
            if (fabsf(s) > 1e-3f)
                sign_errors += (out_f[i] > 0) != (s > 0) || (out_s[i] > 0) != (s > 0);
            s16_mismatch += out_s[i] != (int16_t)rintf(out_f[i] * 32768.0f);
        }
    }
    CHECK(over == 0, "%d f32 samples above the ceiling (loudest %.6f)", over, loudest);
    CHECK(loudest > 0.95f * MQ_MIXER_LIMIT, "limited too hard: loudest %g", loudest);
    CHECK(s16_over == 0, "%d s16 samples above %g", s16_over, s16_max);
    CHECK(sign_errors == 0, "%d samples changed sign (wrap-around)", sign_errors);
    CHECK(s16_mismatch == 0, "%d s16 samples ≠ rint(f32 × 32768)", s16_mismatch);
    int64_t limited = mq_mixer_limited_frames(mf);
    CHECK(limited > 40000 && limited <= 48000, "limited frames %lld of 48000", (long long)limited);

    // Quiet again (sum 0.2): after the release the output is the input, and nothing is limited.
    for (int i = 0; i < 4; i++)
        mq_mixer_set_gain(mf, i, 0.05f, 0, MQ_RAMP_LINEAR, NAN);
    double err = 0;
    int64_t limited_at_1s = 0;
    for (int p = 0; p < 150; p++) { // 1.5 s
        for (int i = 0; i < 480; i++)
            sine[i * CH] = sine[i * CH + 1] = (float)sin(2 * M_PI * 1000 * (p * 480 + i) / SR);
        mq_mixer_process(mf, in, 480, NAN, 0, out_f, MQ_SAMPLE_F32);
        for (int i = 0; p >= 100 && i < 480 * CH; i++)
            err = worse(err, fabs(out_f[i] - 0.2 * sine[i]));
        if (p == 99)
            limited_at_1s = mq_mixer_limited_frames(mf);
    }
    CHECK(err < 1e-5, "released output off the input by %g", err);
    CHECK(mq_mixer_limited_frames(mf) == limited_at_1s, "still limiting after 1 s: %lld → %lld",
          (long long)limited_at_1s, (long long)mq_mixer_limited_frames(mf));
    mq_mixer_destroy(&mf);
    mq_mixer_destroy(&ms);
}

/// A DC step into the limiter: the first loud frame is already at the ceiling; the release
/// back to unity has a ~50 ms time constant and never steps down.
static void test_limiter_release(void)
{
    mq_mixer *m = make(1, SR);
    if (!m)
        return;
    const float *in[1] = {dc_a};
    fill(dc_a, 0.5f, 0.25f);
    run(m, in, 0, 64, 64, NAN, 0);
    CHECK(rec[0] == 0.5f && mq_mixer_limited_frames(m) == 0, "not limited below the ceiling: %g", rec[0]);
    mq_mixer_set_gain(m, 0, 4, 0, MQ_RAMP_LINEAR, NAN); // 2.0 and 1.0: a gain, not a clipper (ratio kept)
    run(m, in, 0, 1024, 256, NAN, 0);
    CHECK(rec[0] == MQ_MIXER_LIMIT && rec[1] == MQ_MIXER_LIMIT / 2 && rec[1023 * CH] == MQ_MIXER_LIMIT,
          "attack: %.7f %.7f %.7f", rec[0], rec[1], rec[1023 * CH]);
    CHECK(mq_mixer_limited_frames(m) == 1024, "limited frames %lld, want 1024", (long long)mq_mixer_limited_frames(m));
    mq_mixer_set_gain(m, 0, 1, 0, MQ_RAMP_LINEAR, NAN); // 0.5 again, limiter gain LIMIT/2 to release
    run(m, in, 0, 4096, 256, NAN, 0);
    double l0 = MQ_MIXER_LIMIT / 2.0, at_50ms = rec[2400 * CH] / 0.5;
    double lo = 1 - (1 - l0) * exp(-0.9), hi = 1 - (1 - l0) * exp(-1.1);
    CHECK(at_50ms > lo && at_50ms < hi, "gain 50 ms into the release %g, want %g…%g", at_50ms, lo, hi);
    CHECK(rec[0] / 0.5 < l0 + 0.01, "released too fast: %g", rec[0] / 0.5);
    bool rising = true;
    for (int k = 1; k < 4096; k++)
        rising &= rec[k * CH] >= rec[(k - 1) * CH];
    CHECK(rising, "the release steps down");
    CHECK(max_step(0, 0, 4096) < 0.5 * (1 - l0) / 2400 * 1.01, "release step %g", max_step(0, 0, 4096));
    mq_mixer_destroy(&m);
}

static void test_formats(void)
{
    // value → s16, s32 (s32 of the float value: v·2³¹ exactly, v being a float)
    static const struct {
        float v;
        int16_t s16;
        int32_t s32;
    } cases[] = {
        {0.5f, 16384, 1073741824},
        {0.25f, 8192, 536870912},
        {0.9f, 29491, 1932735232}, // 29491.2
        {0.1f, 3277, 214748368},   // 3276.8
        {1.0f / 65536, 0, 32768},  // 0.5 LSB: ties to even
        {3.0f / 65536, 2, 98304},  // 1.5 → 2
        {5.0f / 65536, 2, 163840}, // 2.5 → 2
        {0x3p-32f, 0, 2},          // 1.5 LSB of s32 → 2
        {0x5p-32f, 0, 2},          // 2.5 → 2
        {0x7p-34f, 0, 1},          // 0.875 → 1
        {0.0f, 0, 0},
        {1.0f, 31654, 2074469248}, // limited to 0.966f: 31653.89
        {0.966f, 31654, 2074469248},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        float v = cases[i].v, want_f = v < MQ_MIXER_LIMIT ? v : MQ_MIXER_LIMIT;
        fill(dc_a, v, -v);
        const float *in[1] = {dc_a};
        float f[4 * CH];
        int16_t s[4 * CH];
        int32_t l[4 * CH];
        mq_mixer *m = make(1, SR);
        if (!m)
            return;
        mq_mixer_process(m, in, 4, NAN, 0, s, MQ_SAMPLE_S16);
        mq_mixer_process(m, in, 4, NAN, 0, l, MQ_SAMPLE_S32);
        mq_mixer_process(m, in, 4, NAN, 0, f, MQ_SAMPLE_F32);
        CHECK(s[0] == cases[i].s16 && s[1] == -cases[i].s16 && s[7] == -cases[i].s16, "s16(%.9g) = %d %d, want ±%d", v,
              s[0], s[1], cases[i].s16);
        CHECK(l[0] == cases[i].s32 && l[1] == -cases[i].s32 && l[6] == cases[i].s32, "s32(%.9g) = %d %d, want ±%d", v,
              l[0], l[1], cases[i].s32);
        CHECK(f[0] == want_f && f[1] == -want_f && f[7] == -want_f, "f32(%.9g) = %.9g %.9g", v, f[0], f[1]);
        mq_mixer_destroy(&m);
    }
}

/// Garbage in (NaN, ±∞ among normal samples) comes out as silence on those samples, never
/// full scale, and does not upset the rest.
static void test_non_finite(void)
{
    mq_mixer *m = make(1, SR);
    if (!m)
        return;
    static float in0[64 * CH];
    const float *in[1] = {in0};
    int16_t s[64 * CH];
    float f[64 * CH];
    // Two blocks: NaNs alone (each followed by normal samples), then infinities.
    static const int garbage[2][2] = {{10 * CH, 20 * CH + 1}, {30 * CH, 40 * CH + 1}};
    static const float values[2][2] = {{NAN, NAN}, {INFINITY, -INFINITY}};
    for (int b = 0; b < 2; b++) {
        for (int i = 0; i < 64 * CH; i++)
            in0[i] = 0.25f;
        in0[garbage[b][0]] = values[b][0];
        in0[garbage[b][1]] = values[b][1];
        mq_mixer_process(m, in, 64, NAN, 0, s, MQ_SAMPLE_S16);
        mq_mixer_process(m, in, 64, NAN, 0, f, MQ_SAMPLE_F32);
        int bad = 0;
        for (int i = 0; i < 64 * CH; i++)
            bad += i == garbage[b][0] || i == garbage[b][1] ? (s[i] != 0 || f[i] != 0.0f)
                                                            : (s[i] != 8192 || f[i] != 0.25f);
        CHECK(bad == 0, "%s: %d samples wrong (s16 %d %d)", b ? "inf" : "NaN", bad, s[garbage[b][0]], s[garbage[b][1]]);
    }
    mq_mixer_destroy(&m);
}

int main(void)
{
    test_arguments();
    test_queue();
    test_linear();
    test_equal_power();
    test_timed();
    test_cancel();
    test_interrupt();
    test_master();
    test_limiter_sines();
    test_limiter_release();
    test_formats();
    test_non_finite();
    return mqt_done("mixer_test");
}
