#ifndef MQ_VIDEO_OUT_H
#define MQ_VIDEO_OUT_H

#include <stdbool.h>
#include <stddef.h>

#include "video/frame_queue.h"

/// A video output. open runs on the controlling thread at create; configure, present and
/// close run on the video thread (close also at destroy, after the video thread stopped).
typedef struct mq_video_out mq_video_out;

typedef struct mq_video_format {
    int width, height;
    int pix_fmt; ///< enum AVPixelFormat
} mq_video_format;

/// How a display output composes pictures (from mq_player_config).
typedef struct mq_video_out_options {
    int fit;            ///< mq_fit
    int rotation;       ///< 0, 90, 180, 270 (clockwise)
    const char *poster; ///< image shown before the first picture, NULL none (only read in open)
} mq_video_out_options;

/// What is drawn over / instead of pictures (mq_overlay + message).
typedef struct mq_vo_overlay {
    int kind;
    char message[128];
} mq_vo_overlay;

/// Bytes of a label (mq_player_set_label), the terminating NUL included.
#define MQ_VO_LABEL_MAX 64
/// Bytes of the caption text on screen (MQ_CC_TEXT), the terminating NUL included.
#define MQ_VO_CAPTION_MAX 256
/// Bytes of the caption screen's ASS events (MQ_CC_ASS, MQ_CAPTION_EVENTS).
#define MQ_VO_CAPTION_EVENTS 1024

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
    /// Optional (display outputs). Video thread, every ≤ 50 ms and at once when `vo->overlay`
    /// changed (`overlay_changed`): redraws what is shown without a new picture (poster, held
    /// picture + overlay) and checks the display. Returns 1 when the display was lost, came
    /// back or changed mode (an English line in `what`), 0 otherwise, negative on failure.
    int (*refresh)(mq_video_out *vo, bool overlay_changed, char *what, size_t what_size);
    /// Optional. The monotonic time at which a picture presented now would become visible
    /// (the next vblank a flip can make); NULL or `now` when unknown.
    double (*next_vblank)(mq_video_out *vo, double now);
} mq_video_out_driver;

struct mq_video_out {
    // immutable after open
    const mq_video_out_driver *driver;
    void *priv;
    mq_video_out_options opts;
    // video thread only
    mq_video_format fmt;                       // configured format, width 0 before the first picture
    mq_vo_overlay overlay;                     // what present/refresh draw over pictures
    char label[MQ_VO_LABEL_MAX];               // what is presented (mq_player_set_label): frames' item column
    char caption[MQ_VO_CAPTION_MAX];           // the captions on screen with the picture presented (rows
                                               // on lines; "" none): frames' caption column
    char caption_events[MQ_VO_CAPTION_EVENTS]; // the same screen as ASS events, to be drawn ("" none)
    unsigned caption_gen;                      // changes of caption_events
    bool draw_captions;                        // the player shows captions (mq_player_set_captions)
    double due;         // when the picture being presented was due to be visible: server-corrected Unix
                        // seconds, set before each present (NAN for a join's still, shown before its time)
    double wall_offset; // wall_time minus the monotonic clock at that present (mq_player_set_wall_offset)
};

/// Chooses a driver by spec: `headless`, `frames:<dir>`, `drm[:<card>[,<connector>[,<WxH>]]]`
/// (NULL spec: headless). `opts` may be NULL (contain, no rotation, no poster).
int mq_video_out_create(const char *spec, const mq_video_out_options *opts, mq_video_out **out);
void mq_video_out_destroy(mq_video_out **vo);

/// `f` itself, or — a decoder's picture in its own memory (a hardware frame: VAAPI surface,
/// dma-buf) — a copy read back into memory (av_hwframe_transfer_data) in a new `*tmp` the
/// caller frees. NULL when it cannot be read back.
const AVFrame *mq_vo_in_memory(const AVFrame *f, AVFrame **tmp);

extern const mq_video_out_driver mq_video_out_headless;
extern const mq_video_out_driver mq_video_out_frames;
extern const mq_video_out_driver mq_video_out_drm;

#endif
