#include "mixing/mixer.h"

#include <float.h>
#include <math.h>
#include <string.h>

#include "mixing/mixer_internal.h"

/// The mixer's arithmetic (mixer.c takes the commands and calls it piece by piece): gain ramps,
/// and a piece of frames mixed: inputs × gain into a float sum, × master, limiter, conversion.
/// Loops run over chunks of MQ_CHUNK floats so that compilers vectorise them even at -O2 (no
/// remainder or aliasing check needed per chunk).

#define MQ_CHUNK 8
#define MQ_HALF_PI 1.57079632679489661923

// ---- ramps ----

void mq_ramp_init(mq_ramp *r, float g)
{
    *r = (mq_ramp){.g0 = g, .g1 = g};
}

static bool ramping(const mq_ramp *r)
{
    return r->pos < r->len;
}

/// The gain at the ramp's current frame.
float mq_ramp_value(const mq_ramp *r)
{
    if (!ramping(r))
        return r->g1;
    double x = (double)r->pos / r->len, d = (double)r->g1 - r->g0;
    if (r->shape == MQ_RAMP_LINEAR)
        return (float)(r->g0 + d * x);
    return (float)(d > 0 ? r->g0 + d * sin(x * MQ_HALF_PI) : r->g1 - d * cos(x * MQ_HALF_PI));
}

/// Starts a ramp to `to` from the gain reached (no jump).
void mq_ramp_start(mq_ramp *r, float to, int32_t len, int32_t shape)
{
    float from = mq_ramp_value(r);
    *r = (mq_ramp){.g0 = from, .g1 = to, .len = from == to ? 0 : len, .shape = shape};
    if (r->len > 0 && shape == MQ_RAMP_EQUAL_POWER) {
        r->cos_d = cos(MQ_HALF_PI / r->len);
        r->sin_d = sin(MQ_HALF_PI / r->len);
    }
}

/// Writes the gains of the ramp's next `n` frames (n ≤ len − pos) to `curve`, `ch` copies of
/// each (one per sample, so the mixing loops stay flat), and advances it. Equal-power: cos/sin
/// exact at the first frame, then a rotation per frame (in double: ~1e-10 off after a million).
static void ramp_fill(mq_ramp *r, float *restrict curve, int32_t n, int32_t ch)
{
    double g0 = r->g0, g1 = r->g1, d = g1 - g0;
    if (r->shape == MQ_RAMP_LINEAR) {
        double step = d / r->len;
        for (int32_t i = 0; i < n; i++)
            for (int32_t c = 0; c < ch; c++)
                curve[i * ch + c] = (float)(g0 + step * (r->pos + i));
    } else {
        double a = r->pos * (MQ_HALF_PI / r->len), co = cos(a), si = sin(a), cd = r->cos_d, sd = r->sin_d;
        for (int32_t i = 0; i < n; i++) {
            float g = (float)(d > 0 ? g0 + d * si : g1 - d * co);
            for (int32_t c = 0; c < ch; c++)
                curve[i * ch + c] = g;
            double co2 = co * cd - si * sd;
            si = si * cd + co * sd;
            co = co2;
        }
    }
    r->pos += n;
}

// ---- vectorisable loops ----

/// acc (+)= g × src over n floats (`add` false: acc = g × src).
static void mix_const(float *restrict acc, const float *restrict src, float g, size_t n, bool add)
{
    size_t i = 0;
    if (add) {
        for (; i + MQ_CHUNK <= n; i += MQ_CHUNK)
            for (size_t j = 0; j < MQ_CHUNK; j++)
                acc[i + j] += g * src[i + j];
        for (; i < n; i++)
            acc[i] += g * src[i];
    } else {
        for (; i + MQ_CHUNK <= n; i += MQ_CHUNK)
            for (size_t j = 0; j < MQ_CHUNK; j++)
                acc[i + j] = g * src[i + j];
        for (; i < n; i++)
            acc[i] = g * src[i];
    }
}

/// acc (+)= g[i] × src[i] over n floats.
static void mix_curve(float *restrict acc, const float *restrict src, const float *restrict g, size_t n, bool add)
{
    size_t i = 0;
    if (add) {
        for (; i + MQ_CHUNK <= n; i += MQ_CHUNK)
            for (size_t j = 0; j < MQ_CHUNK; j++)
                acc[i + j] += g[i + j] * src[i + j];
        for (; i < n; i++)
            acc[i] += g[i] * src[i];
    } else {
        for (; i + MQ_CHUNK <= n; i += MQ_CHUNK)
            for (size_t j = 0; j < MQ_CHUNK; j++)
                acc[i + j] = g[i + j] * src[i + j];
        for (; i < n; i++)
            acc[i] = g[i] * src[i];
    }
}

static void scale_const(float *restrict x, float g, size_t n)
{
    size_t i = 0;
    for (; i + MQ_CHUNK <= n; i += MQ_CHUNK)
        for (size_t j = 0; j < MQ_CHUNK; j++)
            x[i + j] *= g;
    for (; i < n; i++)
        x[i] *= g;
}

static void scale_curve(float *restrict x, const float *restrict g, size_t n)
{
    size_t i = 0;
    for (; i + MQ_CHUNK <= n; i += MQ_CHUNK)
        for (size_t j = 0; j < MQ_CHUNK; j++)
            x[i + j] *= g[i + j];
    for (; i < n; i++)
        x[i] *= g[i];
}

/// The largest |x|, NAN if there is a NaN: compared as bits, where |NaN| sorts above infinity
/// (a float max would drop a NaN or not depending on the order).
static float peak(const float *restrict x, size_t n)
{
    uint32_t p8[MQ_CHUNK] = {0}, p = 0, b;
    size_t i = 0;
    for (; i + MQ_CHUNK <= n; i += MQ_CHUNK)
        for (size_t j = 0; j < MQ_CHUNK; j++) {
            memcpy(&b, &x[i + j], sizeof b);
            b &= 0x7fffffffu;
            p8[j] = p8[j] > b ? p8[j] : b;
        }
    for (; i < n; i++) {
        memcpy(&b, &x[i], sizeof b);
        b &= 0x7fffffffu;
        p = p > b ? p : b;
    }
    for (size_t j = 0; j < MQ_CHUNK; j++)
        p = p > p8[j] ? p : p8[j];
    float f;
    memcpy(&f, &p, sizeof f);
    return f;
}

// Rounding to nearest, ties to even (lrintf's result in the default mode) without a libm call
// (clang calls rintf on x86-64) and vectorisable: adding 1.5·2^23 (2^52 in double) leaves no
// fraction bits in the sum, for |v| ≤ 2^22 (2^51). Needs strict float evaluation (not x87).
#if FLT_EVAL_METHOD == 0
static inline float round_even(float v)
{
    return (v + 12582912.0f) - 12582912.0f;
}
static inline double round_even_d(double v)
{
    return (v + 6755399441055744.0) - 6755399441055744.0;
}
#else
static inline float round_even(float v)
{
    return rintf(v);
}
static inline double round_even_d(double v)
{
    return rint(v);
}
#endif

static inline float clamp(float v, float lo, float hi)
{
    v = v < hi ? v : hi;
    return v > lo ? v : lo;
}

static inline int32_t to_s32(float x)
{
    double v = (double)x * 2147483648.0; // exact
    v = v < 2147483647.0 ? v : 2147483647.0;
    v = v > -2147483648.0 ? v : -2147483648.0;
    return (int32_t)round_even_d(v);
}

static void convert(const float *restrict x, size_t n, void *restrict out, size_t offset, mq_sample_format fmt)
{
    if (fmt == MQ_SAMPLE_F32) {
        memcpy((float *)out + offset, x, n * sizeof *x);
    } else if (fmt == MQ_SAMPLE_S16) {
        int16_t *restrict o = (int16_t *)out + offset;
        size_t i = 0;
        for (; i + MQ_CHUNK <= n; i += MQ_CHUNK) { // two inner loops: gcc -O2 vectorises both
            float v[MQ_CHUNK];
            for (size_t j = 0; j < MQ_CHUNK; j++)
                v[j] = clamp(x[i + j] * 32768.0f, -32768.0f, 32767.0f);
            for (size_t j = 0; j < MQ_CHUNK; j++)
                o[i + j] = (int16_t)round_even(v[j]);
        }
        for (; i < n; i++)
            o[i] = (int16_t)round_even(clamp(x[i] * 32768.0f, -32768.0f, 32767.0f));
    } else {
        int32_t *restrict o = (int32_t *)out + offset;
        for (size_t i = 0; i < n; i++)
            o[i] = to_s32(x[i]);
    }
}

// ---- mixing ----

/// Input `src` (NULL: silent) × its gain into `acc` over n frames, advancing the ramp either
/// way; false when nothing was written (silent, or constant gain 0).
static bool mix_input(mq_mixer *m, mq_ramp *r, const float *src, float *acc, int32_t n, bool add)
{
    size_t ch = (size_t)m->channels;
    int32_t rn = ramping(r) ? (r->len - r->pos < n ? r->len - r->pos : n) : 0;
    bool audible = src && (rn > 0 || r->g1 != 0.0f);
    if (rn > 0 && audible) {
        ramp_fill(r, m->curve, rn, m->channels);
        mix_curve(acc, src, m->curve, (size_t)rn * ch, add);
    } else {
        r->pos += rn;
    }
    if (audible && rn < n) {
        size_t off = (size_t)rn * ch, count = (size_t)(n - rn) * ch;
        if (r->g1 != 0.0f)
            mix_const(acc + off, src + off, r->g1, count, add);
        else if (!add)
            memset(acc + off, 0, count * sizeof *acc);
    }
    return audible;
}

/// Frames [from, from + n) of every input into m->sum.
static void sum_inputs(mq_mixer *m, const float *const *in, int32_t from, int32_t n)
{
    size_t off = (size_t)from * (size_t)m->channels;
    bool written = false;
    for (int32_t i = 0; i < m->inputs; i++) {
        const float *src = in && in[i] ? in[i] + off : NULL;
        written |= mix_input(m, &m->gain[i], src, m->sum, n, written);
    }
    if (!written)
        memset(m->sum, 0, (size_t)n * (size_t)m->channels * sizeof *m->sum);
}

static void apply_master(mq_mixer *m, int32_t n)
{
    mq_ramp *r = &m->master;
    size_t ch = (size_t)m->channels;
    int32_t rn = ramping(r) ? (r->len - r->pos < n ? r->len - r->pos : n) : 0;
    if (rn > 0) {
        ramp_fill(r, m->curve, rn, m->channels);
        scale_curve(m->sum, m->curve, (size_t)rn * ch);
    }
    if (r->g1 != 1.0f)
        scale_const(m->sum + (size_t)rn * ch, r->g1, (size_t)(n - rn) * ch);
}

/// Instant attack: a frame whose peak × gain would exceed the ceiling sets the gain to
/// ceiling / peak; release: the gain returns toward 1 with a 50 ms time constant. Skipped for a
/// piece that needs nothing (gain 1, peak within the ceiling, no NaN).
static void limit(mq_mixer *m, int32_t n)
{
    size_t ch = (size_t)m->channels;
    if (m->limit == 1.0 && peak(m->sum, (size_t)n * ch) <= MQ_MIXER_LIMIT)
        return;
    double l = m->limit;
    for (int32_t f = 0; f < n; f++) {
        float *x = m->sum + (size_t)f * ch;
        for (size_t c = 0; c < ch; c++) // garbage in (NaN, ∞): silence out, never full scale
            x[c] = fabsf(x[c]) <= FLT_MAX ? x[c] : 0.0f;
        float p = peak(x, ch);
        l += (1.0 - l) * m->release;
        if (l > 1.0 - 1e-6)
            l = 1.0;
        if (p * l > MQ_MIXER_LIMIT)
            l = MQ_MIXER_LIMIT / p;
        if (l == 1.0)
            continue;
        m->limited++;
        float g = (float)l;
        for (size_t c = 0; c < ch; c++) // the clamp only catches rounding in x × g
            x[c] = clamp(x[c] * g, -MQ_MIXER_LIMIT, MQ_MIXER_LIMIT);
    }
    m->limit = l;
}

void mq_mixer_mix_span(mq_mixer *m, const float *const *in, int32_t from, int32_t n, void *out, mq_sample_format fmt)
{
    if (n <= 0)
        return;
    sum_inputs(m, in, from, n);
    apply_master(m, n);
    limit(m, n);
    convert(m->sum, (size_t)n * (size_t)m->channels, out, (size_t)from * (size_t)m->channels, fmt);
}
