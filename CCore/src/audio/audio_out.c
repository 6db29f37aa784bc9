#include "audio/audio_out.h"

#include <stdlib.h>
#include <string.h>

#include "core/log.h"
#include "core/spec.h"
#include "mq_err.h"

static const mq_audio_out_driver *const drivers[] = {
    &mq_audio_out_alsa,
    &mq_audio_out_wav,
    &mq_audio_out_null,
};

static const mq_audio_out_driver *find_driver(const char *spec, const char **arg)
{
    for (size_t i = 0; i < sizeof drivers / sizeof drivers[0]; i++)
        if (mq_spec_matches(spec, drivers[i]->name, arg))
            return drivers[i];
    return NULL;
}

int mq_audio_out_create(const char *spec, int rate, int channels, int buffer_ms, mq_audio_out **out)
{
    const char *arg = NULL;
    const mq_audio_out_driver *drv = find_driver(spec ? spec : "null", &arg);
    if (!drv) {
        mq_log(MQ_LOG_ERROR, "unknown audio output '%s'", spec);
        return MQ_ERR_UNSUPPORTED;
    }
    mq_audio_out *ao = calloc(1, sizeof *ao);
    if (!ao)
        return MQ_ERR_NO_MEMORY;
    ao->rate = rate;
    ao->channels = channels;
    ao->priv = drv->priv_size ? calloc(1, drv->priv_size) : NULL;
    if (drv->priv_size && !ao->priv) {
        free(ao);
        return MQ_ERR_NO_MEMORY;
    }
    int ret = drv->open(ao, arg, buffer_ms);
    if (ret < 0) {
        drv->close(ao, false); // drivers' close undoes a partial open
        free(ao->priv);
        free(ao);
        return ret;
    }
    ao->driver = drv; // set last: destroy closes only opened outputs
    *out = ao;
    return MQ_OK;
}

void mq_audio_out_destroy(mq_audio_out **pao)
{
    mq_audio_out *ao = pao ? *pao : NULL;
    if (!ao)
        return;
    if (ao->driver)
        ao->driver->close(ao, false);
    free(ao->priv);
    free(ao);
    *pao = NULL;
}
