#ifndef MQ_MIXER_INTERNAL_H
#define MQ_MIXER_INTERNAL_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "mixing/mixer.h"

/// The mixer's insides, shared by mixer.c (commands, the process call, the controlling thread's
/// calls, create/destroy) and mixer_dsp.c (ramps and the mixing arithmetic).

#define MQ_NOT_DUE INT32_MAX // a pending command not due in this call

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

/// mixer_dsp.c
void mq_ramp_init(mq_ramp *r, float g);
float mq_ramp_value(const mq_ramp *r);
void mq_ramp_start(mq_ramp *r, float to, int32_t len, int32_t shape);
void mq_mixer_mix_span(mq_mixer *m, const float *const *in, int32_t from, int32_t n, void *out, mq_sample_format fmt);

#endif
