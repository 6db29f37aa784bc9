#include "mixing/mixer.h"

#include <math.h>
#include <stdlib.h>

#include "mixing/mixer_internal.h"
#include "mq_err.h"

/// The mixer (mixer.h). Per process call: take the commands sent since the last call, work out
/// the frame each is due at, then mix piece by piece between those frames (mixer_dsp.c: inputs
/// × gain into a float sum, × master, limiter, conversion).

#define MQ_MASTER_RAMP_S 0.010 // every master volume/mute change ramps this long
#define MQ_RELEASE_S 0.050     // limiter release time constant

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
            mq_ramp_start(&m->master, c->value, m->master_ramp, MQ_RAMP_LINEAR);
            m->n_retired++;
        } else {
            mq_ramp_start(&m->gain[c->input], c->value, c->ramp, c->shape);
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
        mq_mixer_mix_span(m, in, from, next - from, out, fmt);
        if (next >= frames)
            break;
        apply_due(m, next);
        from = next;
    }
    for (int32_t i = 0; i < m->inputs; i++)
        atomic_store_explicit(&m->gain_reached[i], mq_ramp_value(&m->gain[i]), memory_order_relaxed);
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
    mq_ramp_init(&m->master, 1.0f);
    for (int32_t i = 0; i < MQ_MIXER_MAX_INPUTS; i++) {
        mq_ramp_init(&m->gain[i], 1.0f);
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
