#include "audio/resample.h"

#include <libavutil/channel_layout.h>

#include "mq_err.h"

int mq_resampler_open(SwrContext **swr, const AVFrame *f, int rate, int channels)
{
    swr_free(swr);
    // A copy: FFmpeg 5.1's swr_alloc_set_opts2 takes the layouts without const.
    AVChannelLayout out_layout, in_layout;
    if (av_channel_layout_copy(&in_layout, &f->ch_layout) < 0)
        return MQ_ERR_DECODE;
    av_channel_layout_default(&out_layout, channels);
    int ret =
        swr_alloc_set_opts2(swr, &out_layout, AV_SAMPLE_FMT_FLT, rate, &in_layout, f->format, f->sample_rate, 0, NULL);
    av_channel_layout_uninit(&out_layout);
    av_channel_layout_uninit(&in_layout);
    if (ret < 0 || swr_init(*swr) < 0) {
        swr_free(swr);
        return MQ_ERR_DECODE;
    }
    return MQ_OK;
}
