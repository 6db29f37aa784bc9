#ifndef MQ_RESAMPLE_H
#define MQ_RESAMPLE_H

#include <libavutil/frame.h>
#include <libswresample/swresample.h>

/// (Re)opens `*swr` to convert audio shaped like `f` (its sample format, layout and rate) to
/// interleaved float at `rate` Hz with `channels` channels (the default layout): what the
/// stream decoder and the clip decoder both hand on. A previous context is freed first.
/// Returns MQ_OK, or MQ_ERR_DECODE (with `*swr` NULL) when libswresample refuses.
int mq_resampler_open(SwrContext **swr, const AVFrame *f, int rate, int channels);

#endif
