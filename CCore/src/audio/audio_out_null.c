#include "audio/audio_out.h"

#include "mq_err.h"

/// Discards the audio. Does not pace: the audio thread keeps a virtual device.

static int null_open(mq_audio_out *ao, const char *arg, int buffer_ms)
{
    (void)arg;
    (void)buffer_ms;
    ao->paced = false;
    return MQ_OK;
}

static int null_write(mq_audio_out *ao, const int16_t *data, int frames)
{
    (void)ao;
    (void)data;
    return frames;
}

static void null_close(mq_audio_out *ao, bool drain)
{
    (void)ao;
    (void)drain;
}

const mq_audio_out_driver mq_audio_out_null = {
    .name = "null",
    .open = null_open,
    .write = null_write,
    .close = null_close,
};
