#ifndef MQ_CLIP_H
#define MQ_CLIP_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "pcm_ring.h"

/// A clip: an audio file (anything libavformat reads: the mute music, an ad creative) decoded
/// on its own thread ("mq-clip") into float PCM at the player's rate and channel count, into a
/// ring the audio thread plays from. A looping clip restarts at its end with a short linear
/// cross-fade of its last and first `crossfade` seconds, so the loop point never clicks (the
/// loop is then `crossfade` shorter than the file).
typedef struct mq_clip {
    // immutable after create
    mq_pcm_ring *ring;   ///< decoded audio: clip thread → audio thread
    double start_at;     ///< presentation time it is heard from (NAN: as soon as it is installed)
    double duration;     ///< seconds, 0 when unknown
    // clip thread → anyone
    _Atomic int error;   ///< mq_err of a decode failure, 0 none
    struct mq_clip_priv *priv;
} mq_clip;

/// Opens `path` and its first audio stream now (so a bad file fails here, with MQ_ERR_IO when it
/// cannot be opened, MQ_ERR_DEMUX when it is not media, MQ_ERR_UNSUPPORTED without a decodable
/// audio stream) and starts decoding from `offset` seconds (modulo the length when looping).
int mq_clip_create(const char *path, int32_t rate, int32_t channels, double offset, bool loop, double crossfade,
                   double start_at, mq_clip **out);
/// Stops the thread and frees everything. The audio thread must no longer read the ring.
void mq_clip_destroy(mq_clip **c);

#endif
