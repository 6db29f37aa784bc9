#ifndef MQ_CLIP_H
#define MQ_CLIP_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "audio/pcm_ring.h"
#include "mq_player.h"

/// A clip: an audio file (anything libavformat reads: the mute music, an ad creative) decoded
/// on its own thread ("mq-clip") into float PCM at the player's rate and channel count, into a
/// ring the audio thread plays from. A looping clip restarts at its end with a short linear
/// cross-fade of its last and first `crossfade` seconds, so the loop point never clicks (the
/// loop is then `crossfade` shorter than the file).
///
/// Public as an opaque `mq_clip` (mq_player.h): `mq_clip_open` and `mq_clip_destroy` are the
/// public API; `mq_player_set_clip` hands one to a player.
struct mq_clip {
    // immutable after open
    mq_pcm_ring *ring;      ///< decoded audio: clip thread → audio thread
    int32_t rate, channels; ///< the format it decodes to (must be the player's)
    double start_at;        ///< presentation time it is heard from (NAN: as soon as it is installed)
    double duration;        ///< seconds, 0 when unknown
    // clip thread → anyone
    _Atomic int error; ///< mq_err of a decode failure, 0 none
    // audio thread only, once installed on a player (a fresh clip starts false: kept here, not
    // in the slot, so a clip allocated where a freed one was never inherits its state)
    bool started;    ///< reached its start time
    bool ended_seen; ///< its end was counted in the slot
    // controlling thread only, once retired by the player (see player.c, retire)
    uint64_t retired_epoch; ///< `audio_periods` right after it was swapped out
    struct mq_clip_priv *priv;
};

/// Asks the clip thread to stop (no wait): a retired clip stops decoding at once, and its later
/// `mq_clip_destroy` joins a thread that has already ended. The ring stays readable.
void mq_clip_stop(mq_clip *c);
/// True once the clip thread has ended (or never ran): `mq_clip_destroy` will not wait for it.
bool mq_clip_stopped(mq_clip *c);

#endif
