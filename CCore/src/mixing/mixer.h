#ifndef MQ_MIXER_H
#define MQ_MIXER_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

/// The PCM mixer: up to `MQ_MIXER_MAX_INPUTS` float interleaved inputs (the stream, mute music,
/// an ad, a spare) at one rate and channel count, each with a gain ramped sample-accurately,
/// summed in float, then master volume/mute, then a limiter (never wrap-around clipping), then
/// converted to s16, s32 or f32.
///
/// Threads: one controlling thread calls `mq_mixer_set_*` / `mq_mixer_cancel_timed`; they push
/// commands into a preallocated lock-free SPSC queue. One audio thread calls `mq_mixer_process`,
/// which drains the queue and mixes: it never allocates, locks, logs or blocks.
///
/// Timed commands: a command carries a position `at` on the caller's timeline (the player uses
/// presentation time). `mq_mixer_process` is told the timeline position of its first frame and
/// the step per frame; a command takes effect at the first frame whose position is >= `at`
/// (NAN: at the first frame of the next process call). Commands wait in a fixed pending list
/// until due; `mq_mixer_cancel_timed` drops those not yet begun (for a seek or a jump: the caller
/// recomputes and re-sends). A process call with NAN `t0` (no timeline) applies only untimed commands.
/// Exactly: with `t0` and `dt` > 0, a command is due at frame k = the first k ≥ 0 with
/// `t0 + k·dt >= at` (frame 0 when `at` has already passed); with `dt` ≤ 0 or NAN, at frame 0
/// when `at` ≤ `t0`, otherwise not in this call. Commands due at the same frame apply in the
/// order they were sent; a call mixes in pieces so each one starts on its exact frame.
///
/// Capacity: at most `MQ_MIXER_QUEUE_CAPACITY` commands are outstanding (sent and not yet
/// applied or cancelled, timed ones waiting for their time included); beyond that `mq_mixer_set_*`
/// return MQ_ERR_STATE and nothing is lost or applied early. `mq_mixer_cancel_timed` takes no slot
/// and always succeeds.
///
/// After the sum and master volume, a limiter with instant attack (no look-ahead) and a 50 ms
/// release keeps every sample within ±`MQ_MIXER_LIMIT`; s16/s32 conversion also saturates, so the
/// output never wraps. A non-finite sample in the sum (NaN, ∞ in an input) comes out as 0.

#define MQ_MIXER_MAX_INPUTS 4
#define MQ_MIXER_QUEUE_CAPACITY 64 ///< outstanding commands (see Capacity above)
#define MQ_MIXER_LIMIT 0.966f      ///< the limiter's ceiling, −0.3 dBFS (1.0 = full scale)

/// A ramp from g0 to g1 over L frames starting at frame k gives frame k + n the gain g(n / L)
/// for 0 ≤ n ≤ L (frame k keeps g0), and g1 from frame k + L on.
typedef enum mq_ramp_shape {
    MQ_RAMP_LINEAR = 0,      ///< g(x) = g0 + (g1 − g0)·x
    MQ_RAMP_EQUAL_POWER = 1, ///< rising: g0 + (g1 − g0)·sin(xπ/2); falling: g0 + (g1 − g0)·(1 − cos(xπ/2))
                             ///< (a rise and a fall of the same length cross-fade at constant power).
} mq_ramp_shape;

typedef enum mq_sample_format {
    MQ_SAMPLE_S16 = 0,
    MQ_SAMPLE_S32 = 1,
    MQ_SAMPLE_F32 = 2,
} mq_sample_format;

typedef struct mq_mixer mq_mixer;

/// `inputs` 1…MQ_MIXER_MAX_INPUTS; every input starts at gain 1, master volume 1, not muted.
/// `channels` 1…32, `sample_rate` 1…1 000 000 (sets the 10 ms master ramp and the limiter's
/// release), `max_frames` 1…1 048 576: the most frames one `mq_mixer_process` call mixes.
/// MQ_ERR_INVALID_ARGUMENT (and `*out` NULL) for anything else, MQ_ERR_NO_MEMORY.
int mq_mixer_create(int32_t inputs, int32_t channels, int32_t sample_rate, int32_t max_frames, mq_mixer **out);
void mq_mixer_destroy(mq_mixer **m);

/// Ramps input `input`'s gain (0…4; 1 = unity) from wherever it is to `gain` over `ramp_frames`
/// (0: a step) with `shape`, starting at timeline position `at` (NAN: now). A new ramp on an
/// input replaces one in progress from the gain it has reached (no jump).
/// MQ_ERR_INVALID_ARGUMENT for a bad input/gain/ramp/shape or an infinite `at`, MQ_ERR_STATE when
/// the queue is full. Controlling thread.
int mq_mixer_set_gain(mq_mixer *m, int32_t input, float gain, int32_t ramp_frames, mq_ramp_shape shape, double at);
/// Master volume (linear gain 0…1) and mute, applied at the next process call; each change ramps
/// linearly over 10 ms from the level reached, so neither clicks. MQ_ERR_INVALID_ARGUMENT for a
/// volume outside 0…1, MQ_ERR_STATE when the queue is full. Controlling thread.
int mq_mixer_set_master(mq_mixer *m, float volume, bool muted);
/// Drops the timed commands sent before this call and not yet begun (ramps in progress finish,
/// untimed commands still apply, commands sent afterwards are kept); takes effect at the next
/// process call. Controlling thread.
int mq_mixer_cancel_timed(mq_mixer *m);

/// Audio thread. Mixes `frames` (≤ max_frames) frames: `in[i]` is input i's frames × channels
/// floats, or NULL (silent; `in` itself may be NULL: all silent). Ramps advance either way.
/// Writes `frames` × channels samples of `fmt` to `out`.
/// `t0`: timeline position of frame 0, `dt`: timeline step per frame (see timed commands).
/// With a NULL `m` or `out`, `frames` outside 0…max_frames or an unknown `fmt` it does nothing.
/// s16: ×32768, s32: ×2147483648, rounded to nearest (ties to even, as lrintf), saturated.
void mq_mixer_process(mq_mixer *m, const float *const *in, int32_t frames, double t0, double dt, void *out,
                      mq_sample_format fmt);

/// The gain input `input` has reached (any thread; updated once per process call); NAN for a
/// bad input.
float mq_mixer_gain(const mq_mixer *m, int32_t input);
/// Frames the limiter reduced since create, release included (any thread; updated once per
/// process call).
int64_t mq_mixer_limited_frames(const mq_mixer *m);

#endif
