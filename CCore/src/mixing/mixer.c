#include "mixing/mixer.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "mq_err.h"

/// The mixer (mixer.h). Per process call: take the commands sent since the last call, work out
/// the frame each is due at, then mix piece by piece between those frames: inputs × gain into a
/// float sum, × master, limiter, conversion. Loops run over chunks of MQ_CHUNK floats so that
/// compilers vectorise them even at -O2 (no remainder or aliasing check needed per chunk).

#define MQ_CHUNK 8
#define MQ_MASTER_RAMP_S 0.010 // every master volume/mute change ramps this long
#define MQ_RELEASE_S 0.050     // limiter release time constant
#define MQ_NOT_DUE INT32_MAX   // a pending command not due in this call
#define MQ_HALF_PI 1.57079632679489661923

enum { MQ_CMD_GAIN, MQ_CMD_MASTER };

typedef struct mq_mixer_cmd {
    double at;           // timeline position; NAN: untimed (the next call's first frame)
    float value;         // target gain or master level
    int32_t ramp;        // frames
    int16_t input;       // MQ_CMD_GAIN
    uint8_t kind, shape; // MQ_CMD_*, mq_ramp_shape
    uint32_t cancel_gen; // cancel generation it was sent in: a timed command of an older one is dropped
} mq_mixer_cmd;

/// A gain and its ramp: frame `pos` of `len` has g(pos / len); settled at g1 when pos >= len.
typedef struct mq_ramp {
    float g0, g1;
    int32_t len, pos;
    int32_t shape;
    double cos_d, sin_d; // equal-power: rotation by π/(2·len) per frame
} mq_ramp;

struct mq_mixer {
    // immutable after create
    int32_t inputs, channels, sample_rate, max_frames;
    int32_t master_ramp; // frames
    double release;      // limiter: fraction of the way back to unity gain per frame
    float *sum;          // max_frames × channels (audio thread's scratch)
    float *curve;        // max_frames × channels gains, one per sample (audio thread's scratch)

    // command queue: SPSC ring, controlling thread → audio thread
    mq_mixer_cmd ring[MQ_MIXER_QUEUE_CAPACITY];
    _Atomic uint32_t head;       // commands sent (controlling thread stores, release)
    _Atomic uint32_t retired;    // commands applied or dropped (audio thread stores, release)
    _Atomic uint32_t cancel_gen; // mq_mixer_cancel_timed calls (controlling thread adds)

    // audio thread only
    uint32_t tail;                                 // commands taken from the ring
    uint32_t n_retired;                            // published as `retired`
    int32_t npending;                              // taken, not yet applied, in send order
    mq_mixer_cmd pending[MQ_MIXER_QUEUE_CAPACITY]; // head - retired ≤ capacity: never overflows
    int32_t due[MQ_MIXER_QUEUE_CAPACITY];          // frame of this call, or MQ_NOT_DUE
    mq_ramp gain[MQ_MIXER_MAX_INPUTS];
    mq_ramp master;
    double limit;    // limiter gain (1: not limiting)
    int64_t limited; // frames with limit < 1

    // written by the audio thread once per call, read by any thread
    _Atomic float gain_reached[MQ_MIXER_MAX_INPUTS];
    _Atomic int64_t limited_frames;
};

// ---- ramps ----

static void ramp_init(mq_ramp *r, float g)
{
    *r = (mq_ramp){.g0 = g, .g1 = g};
}

static bool ramping(const mq_ramp *r)
{
    return r->pos < r->len;
}

/// The gain at the ramp's current frame.
static float ramp_value(const mq_ramp *r)
{
    if (!ramping(r))
        return r->g1;
    double x = (double)r->pos / r->len, d = (double)r->g1 - r->g0;
    if (r->shape == MQ_RAMP_LINEAR)
        return (float)(r->g0 + d * x);
    return (float)(d > 0 ? r->g0 + d * sin(x * MQ_HALF_PI) : r->g1 - d * cos(x * MQ_HALF_PI));
}

/// Starts a ramp to `to` from the gain reached (no jump).
static void ramp_start(mq_ramp *r, float to, int32_t len, int32_t shape)
{
    float from = ramp_value(r);
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

static void mix_span(mq_mixer *m, const float *const *in, int32_t from, int32_t n, void *out, mq_sample_format fmt)
{
    if (n <= 0)
        return;
    sum_inputs(m, in, from, n);
    apply_master(m, n);
    limit(m, n);
    convert(m->sum, (size_t)n * (size_t)m->channels, out, (size_t)from * (size_t)m->channels, fmt);
}

// ---- commands ----

/// First k with t0 + k·dt >= at (see mixer.h); MQ_NOT_DUE when not within `frames`.
static int32_t due_frame(double at, double t0, double dt, int32_t frames)
{
    if (isnan(at))
        return 0;
    if (isnan(t0))
        return MQ_NOT_DUE;
    if (t0 >= at)
        return 0;
    if (!(dt > 0))
        return MQ_NOT_DUE;
    double k = ceil((at - t0) / dt);
    if (!(k <= (double)frames + 1.0))
        return MQ_NOT_DUE;
    int32_t i = k > 1.0 ? (int32_t)k : 1; // frame 0 is before `at`; now settle the rounding
    while (i > 1 && t0 + (double)(i - 1) * dt >= at)
        i--;
    while (i < frames && t0 + (double)i * dt < at)
        i++;
    return i < frames ? i : MQ_NOT_DUE;
}

/// Moves the commands sent since the last call to the pending list, drops the cancelled ones
/// and works out when each is due in this call.
static void take_commands(mq_mixer *m, double t0, double dt, int32_t frames)
{
    uint32_t head = atomic_load_explicit(&m->head, memory_order_acquire);
    while (m->tail != head)
        m->pending[m->npending++] = m->ring[m->tail++ % MQ_MIXER_QUEUE_CAPACITY];
    // Loaded after the ring: every command taken carries this generation or an older one.
    uint32_t gen = atomic_load_explicit(&m->cancel_gen, memory_order_acquire);
    int32_t kept = 0;
    for (int32_t i = 0; i < m->npending; i++) {
        mq_mixer_cmd *c = &m->pending[i];
        if (!isnan(c->at) && c->cancel_gen != gen) {
            m->n_retired++;
            continue;
        }
        m->due[kept] = due_frame(c->at, t0, dt, frames);
        m->pending[kept++] = *c;
    }
    m->npending = kept;
}

static int32_t next_due(const mq_mixer *m)
{
    int32_t next = MQ_NOT_DUE;
    for (int32_t i = 0; i < m->npending; i++)
        next = m->due[i] < next ? m->due[i] : next;
    return next;
}

/// Applies, in send order, the pending commands due at `frame`.
static void apply_due(mq_mixer *m, int32_t frame)
{
    int32_t kept = 0;
    for (int32_t i = 0; i < m->npending; i++) {
        const mq_mixer_cmd *c = &m->pending[i];
        if (m->due[i] != frame) {
            m->due[kept] = m->due[i];
            m->pending[kept++] = *c;
        } else if (c->kind == MQ_CMD_MASTER) {
            ramp_start(&m->master, c->value, m->master_ramp, MQ_RAMP_LINEAR);
            m->n_retired++;
        } else {
            ramp_start(&m->gain[c->input], c->value, c->ramp, c->shape);
            m->n_retired++;
        }
    }
    m->npending = kept;
}

void mq_mixer_process(mq_mixer *m, const float *const *in, int32_t frames, double t0, double dt, void *out,
                      mq_sample_format fmt)
{
    if (!m || !out || frames < 0 || frames > m->max_frames ||
        (fmt != MQ_SAMPLE_S16 && fmt != MQ_SAMPLE_S32 && fmt != MQ_SAMPLE_F32))
        return;
    take_commands(m, t0, dt, frames);
    int32_t from = 0;
    for (;;) {
        int32_t next = next_due(m);
        next = next < frames ? next : frames;
        mix_span(m, in, from, next - from, out, fmt);
        if (next >= frames)
            break;
        apply_due(m, next);
        from = next;
    }
    for (int32_t i = 0; i < m->inputs; i++)
        atomic_store_explicit(&m->gain_reached[i], ramp_value(&m->gain[i]), memory_order_relaxed);
    atomic_store_explicit(&m->limited_frames, m->limited, memory_order_relaxed);
    atomic_store_explicit(&m->retired, m->n_retired, memory_order_release);
}

// ---- controlling thread ----

static int push(mq_mixer *m, mq_mixer_cmd c)
{
    uint32_t head = atomic_load_explicit(&m->head, memory_order_relaxed);
    uint32_t retired = atomic_load_explicit(&m->retired, memory_order_acquire);
    if (head - retired >= MQ_MIXER_QUEUE_CAPACITY)
        return MQ_ERR_STATE;
    c.cancel_gen = atomic_load_explicit(&m->cancel_gen, memory_order_relaxed);
    m->ring[head % MQ_MIXER_QUEUE_CAPACITY] = c;
    atomic_store_explicit(&m->head, head + 1, memory_order_release);
    return MQ_OK;
}

int mq_mixer_set_gain(mq_mixer *m, int32_t input, float gain, int32_t ramp_frames, mq_ramp_shape shape, double at)
{
    if (!m || input < 0 || input >= m->inputs || !(gain >= 0.0f && gain <= 4.0f) || ramp_frames < 0 ||
        (shape != MQ_RAMP_LINEAR && shape != MQ_RAMP_EQUAL_POWER) || isinf(at))
        return MQ_ERR_INVALID_ARGUMENT;
    return push(m, (mq_mixer_cmd){.kind = MQ_CMD_GAIN,
                                  .input = (int16_t)input,
                                  .value = gain,
                                  .ramp = ramp_frames,
                                  .shape = (uint8_t)shape,
                                  .at = at});
}

int mq_mixer_set_master(mq_mixer *m, float volume, bool muted)
{
    if (!m || !(volume >= 0.0f && volume <= 1.0f))
        return MQ_ERR_INVALID_ARGUMENT;
    return push(m, (mq_mixer_cmd){.kind = MQ_CMD_MASTER, .value = muted ? 0.0f : volume, .at = NAN});
}

int mq_mixer_cancel_timed(mq_mixer *m)
{
    if (!m)
        return MQ_ERR_INVALID_ARGUMENT;
    atomic_fetch_add_explicit(&m->cancel_gen, 1, memory_order_release);
    return MQ_OK;
}

// ---- any thread ----

float mq_mixer_gain(const mq_mixer *m, int32_t input)
{
    if (!m || input < 0 || input >= m->inputs)
        return NAN;
    return atomic_load_explicit(&m->gain_reached[input], memory_order_relaxed);
}

int64_t mq_mixer_limited_frames(const mq_mixer *m)
{
    return m ? atomic_load_explicit(&m->limited_frames, memory_order_relaxed) : 0;
}

// ---- lifetime ----

int mq_mixer_create(int32_t inputs, int32_t channels, int32_t sample_rate, int32_t max_frames, mq_mixer **out)
{
    if (!out)
        return MQ_ERR_INVALID_ARGUMENT;
    *out = NULL;
    if (inputs < 1 || inputs > MQ_MIXER_MAX_INPUTS || channels < 1 || channels > 32 || sample_rate < 1 ||
        sample_rate > 1000000 || max_frames < 1 || max_frames > (1 << 20))
        return MQ_ERR_INVALID_ARGUMENT;
    mq_mixer *m = calloc(1, sizeof *m);
    if (!m)
        return MQ_ERR_NO_MEMORY;
    m->inputs = inputs;
    m->channels = channels;
    m->sample_rate = sample_rate;
    m->max_frames = max_frames;
    m->master_ramp = (int32_t)lround(MQ_MASTER_RAMP_S * sample_rate);
    m->master_ramp = m->master_ramp > 0 ? m->master_ramp : 1;
    m->release = 1.0 - exp(-1.0 / (MQ_RELEASE_S * sample_rate));
    m->limit = 1.0;
    m->sum = calloc((size_t)max_frames * (size_t)channels, sizeof *m->sum);
    m->curve = calloc((size_t)max_frames * (size_t)channels, sizeof *m->curve);
    if (!m->sum || !m->curve)
        goto fail;
    ramp_init(&m->master, 1.0f);
    for (int32_t i = 0; i < MQ_MIXER_MAX_INPUTS; i++) {
        ramp_init(&m->gain[i], 1.0f);
        atomic_init(&m->gain_reached[i], 1.0f);
    }
    atomic_init(&m->head, 0);
    atomic_init(&m->retired, 0);
    atomic_init(&m->cancel_gen, 0);
    atomic_init(&m->limited_frames, 0);
    *out = m;
    return MQ_OK;
fail:
    mq_mixer_destroy(&m);
    return MQ_ERR_NO_MEMORY;
}

void mq_mixer_destroy(mq_mixer **pm)
{
    mq_mixer *m = pm ? *pm : NULL;
    if (!m)
        return;
    free(m->sum);
    free(m->curve);
    free(m);
    *pm = NULL;
}
