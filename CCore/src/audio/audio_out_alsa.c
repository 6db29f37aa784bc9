#include "audio/audio_out.h"

#include <errno.h>

#include <alsa/asoundlib.h>

#include "core/log.h"
#include "mq_err.h"

/// ALSA playback, S16_LE interleaved. Real devices (and pulse) pace us through the ring buffer;
/// the `file` and `null` plugins accept everything at once and report no delay, so they are
/// flagged unpaced (by type at open, and by a runtime check) and the audio thread keeps a
/// virtual device for them. XRUNs are recovered here (snd_pcm_recover) and counted.

#define CHECK_ALSA(expr, what)                                                                                         \
    do {                                                                                                               \
        int err_ = (expr);                                                                                             \
        if (err_ < 0) {                                                                                                \
            mq_log(MQ_LOG_ERROR, "alsa: %s: %s", (what), snd_strerror(err_));                                          \
            return MQ_ERR_AUDIO_DEVICE;                                                                                \
        }                                                                                                              \
    } while (0)

typedef struct alsa_priv {
    snd_pcm_t *pcm;                // immutable after open
    snd_pcm_uframes_t buffer_size; // immutable after open
    snd_pcm_uframes_t period_size; // immutable after open
    int idle_checks;               // audio thread only: delay 0 + buffer empty seen in a row
    int64_t written;               // audio thread only
} alsa_priv;

static int set_hw_params(mq_audio_out *ao, alsa_priv *a, int buffer_ms)
{
    snd_pcm_hw_params_t *hw;
    snd_pcm_hw_params_alloca(&hw);
    CHECK_ALSA(snd_pcm_hw_params_any(a->pcm, hw), "no configurations");
    CHECK_ALSA(snd_pcm_hw_params_set_access(a->pcm, hw, SND_PCM_ACCESS_RW_INTERLEAVED), "access");
    CHECK_ALSA(snd_pcm_hw_params_set_format(a->pcm, hw, SND_PCM_FORMAT_S16_LE), "format S16_LE");
    CHECK_ALSA(snd_pcm_hw_params_set_channels(a->pcm, hw, (unsigned)ao->channels), "channels");
    unsigned rate = (unsigned)ao->rate;
    CHECK_ALSA(snd_pcm_hw_params_set_rate_near(a->pcm, hw, &rate, NULL), "rate");
    unsigned buffer_us = (unsigned)buffer_ms * 1000u, period_us = 10000;
    CHECK_ALSA(snd_pcm_hw_params_set_buffer_time_near(a->pcm, hw, &buffer_us, NULL), "buffer");
    CHECK_ALSA(snd_pcm_hw_params_set_period_time_near(a->pcm, hw, &period_us, NULL), "period");
    CHECK_ALSA(snd_pcm_hw_params(a->pcm, hw), "hw params");
    snd_pcm_hw_params_get_buffer_size(hw, &a->buffer_size);
    snd_pcm_hw_params_get_period_size(hw, &a->period_size, NULL);
    ao->rate = (int)rate;
    return MQ_OK;
}

static int set_sw_params(alsa_priv *a)
{
    snd_pcm_sw_params_t *sw;
    snd_pcm_sw_params_alloca(&sw);
    CHECK_ALSA(snd_pcm_sw_params_current(a->pcm, sw), "sw params");
    CHECK_ALSA(snd_pcm_sw_params_set_start_threshold(a->pcm, sw, a->period_size), "start");
    CHECK_ALSA(snd_pcm_sw_params_set_avail_min(a->pcm, sw, a->period_size), "avail min");
    CHECK_ALSA(snd_pcm_sw_params(a->pcm, sw), "sw params");
    return MQ_OK;
}

static int alsa_open(mq_audio_out *ao, const char *arg, int buffer_ms)
{
    alsa_priv *a = ao->priv;
    const char *name = arg && *arg ? arg : "default";
    int err = snd_pcm_open(&a->pcm, name, SND_PCM_STREAM_PLAYBACK, 0);
    if (err < 0) {
        mq_log(MQ_LOG_ERROR, "alsa: cannot open '%s': %s", name, snd_strerror(err));
        a->pcm = NULL;
        return MQ_ERR_AUDIO_DEVICE;
    }
    int ret = set_hw_params(ao, a, buffer_ms);
    if (ret == MQ_OK)
        ret = set_sw_params(a);
    if (ret < 0)
        return ret;
    snd_pcm_type_t type = snd_pcm_type(a->pcm);
    ao->paced = type != SND_PCM_TYPE_FILE && type != SND_PCM_TYPE_NULL;
    mq_log(MQ_LOG_INFO, "alsa: '%s' %s, %d Hz, buffer %lu, period %lu, %s", name, snd_pcm_type_name(type), ao->rate,
           (unsigned long)a->buffer_size, (unsigned long)a->period_size, ao->paced ? "paced" : "not paced");
    return MQ_OK;
}

static int recover(mq_audio_out *ao, alsa_priv *a, int err)
{
    if (err == -EPIPE || err == -ESTRPIPE || err == -EINTR) {
        if (err != -EINTR)
            ao->xruns++;
        err = snd_pcm_recover(a->pcm, err, 1);
    }
    return err < 0 ? MQ_ERR_AUDIO_DEVICE : MQ_OK;
}

static int alsa_wait(mq_audio_out *ao, int frames, int timeout_ms)
{
    alsa_priv *a = ao->priv;
    snd_pcm_sframes_t avail = snd_pcm_avail_update(a->pcm);
    if (avail < 0)
        return recover(ao, a, (int)avail);
    if (avail >= frames || snd_pcm_state(a->pcm) != SND_PCM_STATE_RUNNING)
        return MQ_OK;
    int err = snd_pcm_wait(a->pcm, timeout_ms);
    return err < 0 ? recover(ao, a, err) : MQ_OK;
}

static int alsa_delay(mq_audio_out *ao, int64_t *frames)
{
    alsa_priv *a = ao->priv;
    snd_pcm_sframes_t delay = 0;
    int err = snd_pcm_delay(a->pcm, &delay);
    if (err < 0) {
        *frames = 0;
        return recover(ao, a, err);
    }
    snd_pcm_sframes_t avail = snd_pcm_avail_update(a->pcm);
    // A device that takes everything and reports nothing queued, again and again after we
    // wrote more than a buffer, does not pace.
    bool idle = delay == 0 && avail == (snd_pcm_sframes_t)a->buffer_size && a->written > (int64_t)a->buffer_size;
    a->idle_checks = idle ? a->idle_checks + 1 : 0;
    if (a->idle_checks >= 3)
        ao->paced = false;
    *frames = delay > 0 ? delay : 0;
    return MQ_OK;
}

static int alsa_write(mq_audio_out *ao, const int16_t *data, int frames)
{
    alsa_priv *a = ao->priv;
    int done = 0;
    while (done < frames) {
        snd_pcm_sframes_t n =
            snd_pcm_writei(a->pcm, data + (size_t)done * (size_t)ao->channels, (snd_pcm_uframes_t)(frames - done));
        if (n == -EAGAIN)
            continue;
        if (n < 0) {
            int ret = recover(ao, a, (int)n);
            if (ret < 0)
                return ret;
            continue;
        }
        done += (int)n;
    }
    a->written += frames;
    return frames;
}

static void alsa_close(mq_audio_out *ao, bool drain)
{
    alsa_priv *a = ao->priv;
    if (!a->pcm)
        return;
    if (drain)
        snd_pcm_drain(a->pcm);
    else
        snd_pcm_drop(a->pcm);
    snd_pcm_close(a->pcm);
    a->pcm = NULL;
}

const mq_audio_out_driver mq_audio_out_alsa = {
    .name = "alsa",
    .priv_size = sizeof(alsa_priv),
    .open = alsa_open,
    .wait = alsa_wait,
    .delay = alsa_delay,
    .write = alsa_write,
    .close = alsa_close,
};
