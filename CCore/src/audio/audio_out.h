#ifndef MQ_AUDIO_OUT_H
#define MQ_AUDIO_OUT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/// An audio output: S16 interleaved frames at `rate` × `channels`. After open, every call but
/// close is made from the audio thread only, so drivers must not allocate, lock or log there.
typedef struct mq_audio_out mq_audio_out;

typedef struct mq_audio_out_driver {
    const char *name;
    size_t priv_size;
    /// Opens `arg` (the part of the spec after "name:", or NULL) at ao->rate/channels; may
    /// change ao->rate, and sets ao->paced when the device consumes audio in real time.
    int (*open)(mq_audio_out *ao, const char *arg, int buffer_ms);
    /// Paced devices: blocks (up to timeout_ms) until `frames` can be written at once.
    int (*wait)(mq_audio_out *ao, int frames, int timeout_ms);
    /// Paced devices: frames written but not yet heard. Sets ao->paced = false when it finds
    /// the device does not pace after all (it accepts everything and reports no delay).
    int (*delay)(mq_audio_out *ao, int64_t *frames);
    /// Writes all `frames`; recovers an xrun itself (counting it in ao->xruns).
    int (*write)(mq_audio_out *ao, const int16_t *data, int frames);
    /// Drains what is queued when `drain`, then releases everything (finalises files).
    void (*close)(mq_audio_out *ao, bool drain);
} mq_audio_out_driver;

struct mq_audio_out {
    // immutable after open (paced: audio thread after start)
    const mq_audio_out_driver *driver;
    void *priv;
    int rate, channels;
    bool paced;
    // audio thread only
    uint32_t xruns;
};

/// Chooses a driver by spec: `alsa[:<pcm>]`, `wav:<path>`, `null` (NULL spec: null).
int mq_audio_out_create(const char *spec, int rate, int channels, int buffer_ms, mq_audio_out **out);
void mq_audio_out_destroy(mq_audio_out **ao);

extern const mq_audio_out_driver mq_audio_out_alsa;
extern const mq_audio_out_driver mq_audio_out_wav;
extern const mq_audio_out_driver mq_audio_out_null;

#endif
