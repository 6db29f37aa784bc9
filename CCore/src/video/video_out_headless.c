#include "video/video_out.h"

#include "mq_err.h"

/// No display: pictures are "presented" on the clock and discarded. A product mode for
/// audio-only boxes and CI, not a mock: timing, drops and status behave as on a screen.

static int headless_open(mq_video_out *vo, const char *arg)
{
    (void)vo;
    (void)arg;
    return MQ_OK;
}

static int headless_configure(mq_video_out *vo, const mq_video_format *fmt, mq_video_format *accepted)
{
    (void)vo;
    *accepted = *fmt;
    return MQ_OK;
}

static int headless_present(mq_video_out *vo, const mq_vframe *f, double wall_time)
{
    (void)vo;
    (void)f;
    (void)wall_time;
    return MQ_OK;
}

static void headless_close(mq_video_out *vo)
{
    (void)vo;
}

const mq_video_out_driver mq_video_out_headless = {
    .name = "headless",
    .open = headless_open,
    .configure = headless_configure,
    .present = headless_present,
    .close = headless_close,
};
