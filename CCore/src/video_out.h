#ifndef MQ_VIDEO_OUT_H
#define MQ_VIDEO_OUT_H

#include <stddef.h>

#include "frame_queue.h"

/// A video output. open runs on the controlling thread at create; configure, present and
/// close run on the video thread (close also at destroy, after the video thread stopped).
typedef struct mq_video_out mq_video_out;

typedef struct mq_video_format {
    int width, height;
    int pix_fmt; ///< enum AVPixelFormat
} mq_video_format;

typedef struct mq_video_out_driver {
    const char *name;
    size_t priv_size;
    /// Parses `arg` (after "name:", or NULL) and acquires the device/directory.
    int (*open)(mq_video_out *vo, const char *arg);
    /// Size/format negotiation on the first picture and whenever it changes: `fmt` is what
    /// the decoder gives; the driver writes into `accepted` what it will take (a DRM output
    /// may want another pixel format; the caller then converts).
    int (*configure)(mq_video_out *vo, const mq_video_format *fmt, mq_video_format *accepted);
    /// Shows `f` now; `wall_time` is the server-corrected Unix time of this presentation.
    int (*present)(mq_video_out *vo, const mq_vframe *f, double wall_time);
    void (*close)(mq_video_out *vo);
} mq_video_out_driver;

struct mq_video_out {
    // immutable after open
    const mq_video_out_driver *driver;
    void *priv;
    // video thread only
    mq_video_format fmt; // configured format, width 0 before the first picture
};

/// Chooses a driver by spec: `headless`, `frames:<dir>` (NULL spec: headless).
int mq_video_out_create(const char *spec, mq_video_out **out);
void mq_video_out_destroy(mq_video_out **vo);

extern const mq_video_out_driver mq_video_out_headless;
extern const mq_video_out_driver mq_video_out_frames;

#endif
