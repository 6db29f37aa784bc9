#ifndef MQ_VIDEO_RENDER_H
#define MQ_VIDEO_RENDER_H

#include <stdbool.h>
#include <stdint.h>

#include <libavutil/frame.h>

/// Software composition for display outputs: fit a decoded picture onto an XRGB8888 screen
/// buffer (libswscale), rotate it, and draw the poster / overlays. Used by the video thread
/// only (and by the controlling thread while the output is opened); no locks.

typedef struct mq_rect {
    int x, y, w, h;
} mq_rect;

/// An XRGB8888 image in memory (a mapped dumb buffer, or any buffer for tests/bench).
typedef struct mq_canvas {
    uint8_t *data;
    int stride; // bytes
    int width, height;
} mq_canvas;

/// Where a `src_w`×`src_h` picture lands on a `dst_w`×`dst_h` area for fit mode `fit`
/// (`mq_fit`): `*src` is the part of the picture used (cover crops it, centred; x/y even),
/// `*dst` where it is drawn (contain/scaledown centre it; the rest is black).
void mq_fit_compute(int fit, int src_w, int src_h, int dst_w, int dst_h, mq_rect *src, mq_rect *dst);

/// A cached scaler: the fit rectangle and the SwsContext are computed once per change of
/// picture size/format, screen size, fit or rotation.
typedef struct mq_scaler {
    struct SwsContext *sws;
    int src_w, src_h, src_fmt, src_cs, src_range, dst_w, dst_h, fit, rotation; // the key of what is cached
    mq_rect src, pic, screen; // picture-space crop, picture-space dst, screen-space dst
    uint8_t *tmp;             // rotated outputs: the unrotated scaled picture
    int tmp_size;
} mq_scaler;

void mq_scaler_uninit(mq_scaler *s);

/// Whether a YCbCr picture uses the full 0–255 range (tagged JPEG range, or a yuvj format):
/// what swscale is told and what the video plane's COLOR_RANGE is set to.
bool mq_full_range(const AVFrame *f);

/// Draws `f` fitted and rotated (0/90/180/270 clockwise, in software) onto `c`, the area
/// around it black. Returns 0 or a negative mq_err.
int mq_scaler_draw(mq_scaler *s, const AVFrame *f, int fit, int rotation, const mq_canvas *c);

/// Decodes a PNG or JPEG (anything libavformat's image demuxers read) into a new frame.
int mq_image_load(const char *path, AVFrame **out);

/// Fills `r` of `c` with `xrgb`.
void mq_canvas_fill(const mq_canvas *c, mq_rect r, uint32_t xrgb);

/// video_overlay.c: the buffering band drawn over the picture (bottom of the screen) and the
/// full-screen stall slate with `message`. Geometry and font are fixed so tests can compute
/// the expected image: see rigs/vm/expect.py.
void mq_overlay_draw_buffering(const mq_canvas *c, const char *message);
void mq_overlay_draw_slate(const mq_canvas *c, const char *message);

#endif
