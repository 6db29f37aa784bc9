#include "video/video_out.h"

#include <stdlib.h>
#include <string.h>

#include <libavutil/hwcontext.h>

#include "core/log.h"
#include "core/spec.h"
#include "mq_err.h"

static const mq_video_out_driver *const drivers[] = {
    &mq_video_out_headless,
    &mq_video_out_frames,
    &mq_video_out_drm,
};

static const mq_video_out_driver *find_driver(const char *spec, const char **arg)
{
    for (size_t i = 0; i < sizeof drivers / sizeof drivers[0]; i++)
        if (mq_spec_matches(spec, drivers[i]->name, arg))
            return drivers[i];
    return NULL;
}

int mq_video_out_create(const char *spec, const mq_video_out_options *opts, mq_video_out **out)
{
    const char *arg = NULL;
    const mq_video_out_driver *drv = find_driver(spec ? spec : "headless", &arg);
    if (!drv) {
        mq_log(MQ_LOG_ERROR, "unknown video output '%s'", spec);
        return MQ_ERR_UNSUPPORTED;
    }
    mq_video_out *vo = calloc(1, sizeof *vo);
    if (!vo)
        return MQ_ERR_NO_MEMORY;
    vo->driver = drv;
    if (opts)
        vo->opts = *opts;
    vo->priv = drv->priv_size ? calloc(1, drv->priv_size) : NULL;
    int ret = drv->priv_size && !vo->priv ? MQ_ERR_NO_MEMORY : drv->open(vo, arg);
    if (ret < 0) {
        mq_video_out_destroy(&vo); // drivers' close undoes a partial open
        return ret;
    }
    *out = vo;
    return MQ_OK;
}

void mq_video_out_destroy(mq_video_out **pvo)
{
    mq_video_out *vo = pvo ? *pvo : NULL;
    if (!vo)
        return;
    if (vo->priv || !vo->driver->priv_size)
        vo->driver->close(vo);
    free(vo->priv);
    free(vo);
    *pvo = NULL;
}

const AVFrame *mq_vo_in_memory(const AVFrame *f, AVFrame **tmp)
{
    *tmp = NULL;
    if (!f->hw_frames_ctx)
        return f;
    AVFrame *sw = av_frame_alloc();
    if (!sw || av_hwframe_transfer_data(sw, f, 0) < 0 || av_frame_copy_props(sw, f) < 0) {
        av_frame_free(&sw);
        return NULL;
    }
    return *tmp = sw;
}
