#include "audio/audio_out.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include "core/log.h"
#include "mq_err.h"

/// Writes a 16-bit PCM WAV file holding exactly what was sent to the output. Does not pace.
/// The audio thread writes with write(2) (no stdio lock or buffer allocation); the header's
/// sizes are finalised at close.

typedef struct wav_priv {
    int fd;        // immutable after open
    int64_t bytes; // audio thread only (close after it stopped)
} wav_priv;

static void put_le(uint8_t *p, uint32_t v, int n)
{
    for (int i = 0; i < n; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static void make_header(uint8_t h[44], int rate, int channels, uint32_t data_bytes)
{
    memcpy(h, "RIFF", 4);
    put_le(h + 4, 36 + data_bytes, 4);
    memcpy(h + 8, "WAVEfmt ", 8);
    put_le(h + 16, 16, 4);
    put_le(h + 20, 1, 2); // PCM
    put_le(h + 22, (uint32_t)channels, 2);
    put_le(h + 24, (uint32_t)rate, 4);
    put_le(h + 28, (uint32_t)(rate * channels * 2), 4);
    put_le(h + 32, (uint32_t)(channels * 2), 2);
    put_le(h + 34, 16, 2);
    memcpy(h + 36, "data", 4);
    put_le(h + 40, data_bytes, 4);
}

static int write_all(int fd, const void *buf, size_t n)
{
    const uint8_t *p = buf;
    while (n > 0) {
        ssize_t w = write(fd, p, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return MQ_ERR_IO;
        p += w;
        n -= (size_t)w;
    }
    return MQ_OK;
}

static int wav_open(mq_audio_out *ao, const char *arg, int buffer_ms)
{
    (void)buffer_ms;
    wav_priv *w = ao->priv;
    w->fd = -1;
    if (!arg || !*arg)
        return MQ_ERR_INVALID_ARGUMENT;
    w->fd = open(arg, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (w->fd < 0) {
        mq_log(MQ_LOG_ERROR, "wav: cannot create %s: %s", arg, strerror(errno));
        return MQ_ERR_IO;
    }
    uint8_t h[44];
    make_header(h, ao->rate, ao->channels, 0);
    ao->paced = false;
    return write_all(w->fd, h, sizeof h);
}

static int wav_write(mq_audio_out *ao, const int16_t *data, int frames)
{
    wav_priv *w = ao->priv;
    size_t n = (size_t)frames * (size_t)ao->channels * sizeof(int16_t);
    int ret = write_all(w->fd, data, n);
    if (ret < 0)
        return ret;
    w->bytes += (int64_t)n;
    return frames;
}

static void wav_close(mq_audio_out *ao, bool drain)
{
    (void)drain;
    wav_priv *w = ao->priv;
    if (w->fd < 0)
        return;
    uint8_t h[44];
    uint32_t bytes = w->bytes > 0xFFFFFFD0 ? 0xFFFFFFD0 : (uint32_t)w->bytes;
    make_header(h, ao->rate, ao->channels, bytes);
    if (pwrite(w->fd, h, sizeof h, 0) != (ssize_t)sizeof h)
        mq_log(MQ_LOG_ERROR, "wav: cannot finalise the header");
    close(w->fd);
    w->fd = -1;
}

const mq_audio_out_driver mq_audio_out_wav = {
    .name = "wav",
    .priv_size = sizeof(wav_priv),
    .open = wav_open,
    .write = wav_write,
    .close = wav_close,
};
