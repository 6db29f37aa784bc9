#include "video/video_out.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include <libavutil/imgutils.h>
#include <libavutil/md5.h>
#include <libavutil/mem.h>

#include "core/log.h"
#include "mq_err.h"
#include "video/caption_render.h"

/// `frames:<dir>`: appends one row per presented picture to <dir>/frames.tsv:
///   wall_time \t pts \t md5 \t width \t height \t item \t still \t due \t mono_time \t caption \t
///   captions_drawn
/// wall_time: server-corrected Unix seconds; pts: the stream's own pts_time (no pts_offset);
/// md5: of the planes packed without padding, as `ffmpeg -f framemd5` prints. Rows are
/// flushed at once (tests read the file while playing). item: the label set when the picture was
/// presented (mq_player_set_label: a playlist item's id), empty without one. still: 1 for a
/// join's keyframe shown before its time (mq_player_config.hide_join_still), else 0. due: when
/// the picture was due to be shown, on the clock of wall_time (wall_time − due: how late it was
/// shown); empty for a join's still. mono_time: the same instant on this machine's monotonic clock (CLOCK_MONOTONIC
/// seconds): one clock for every row, where wall_time's offset changes when a measured server clock takes over from
/// this machine's (a playlist's still, then a stream). caption: the captions on screen with the
/// picture (mq_video_out.caption), rows separated by `\n` written as a backslash and `n` (a tab
/// as `\t`, a backslash as `\\`); empty when none. captions_drawn: while captions are drawn
/// (mq_player_set_captions) and some are on screen, what is drawn over the picture: the md5 of
/// the caption layer alone, drawn over black at the picture's size (RGB24, packed), which is
/// written once as <dir>/captions/<md5>.ppm; empty when nothing is drawn.

typedef struct frames_priv {
    FILE *tsv;         // immutable after open
    struct AVMD5 *md5; // immutable after open
    char dir[4096];    // immutable after open
    uint8_t *buf;      // video thread only: packed picture, sized at configure
    int buf_size;
    // video thread only: the caption layer (made with the first caption drawn)
    mq_caption_render *captions;
    bool captions_failed;
    unsigned caption_gen; // the screen the layer below holds
    int layer_w, layer_h; // its size (the picture's)
    char layer_md5[33];   // its md5, "" none
} frames_priv;

static int frames_open(mq_video_out *vo, const char *arg)
{
    frames_priv *f = vo->priv;
    if (!arg || !*arg)
        return MQ_ERR_INVALID_ARGUMENT;
    if (mkdir(arg, 0755) < 0 && errno != EEXIST) {
        mq_log(MQ_LOG_ERROR, "frames: cannot create %s: %s", arg, strerror(errno));
        return MQ_ERR_IO;
    }
    snprintf(f->dir, sizeof f->dir, "%s", arg);
    char path[4200];
    snprintf(path, sizeof path, "%s/frames.tsv", arg);
    f->tsv = fopen(path, "w");
    f->md5 = av_md5_alloc();
    if (!f->tsv || !f->md5)
        return f->tsv ? MQ_ERR_NO_MEMORY : MQ_ERR_IO;
    fputs("wall_time\tpts\tmd5\twidth\theight\titem\tstill\tdue\tmono_time\tcaption\tcaptions_drawn\n", f->tsv);
    return fflush(f->tsv) == 0 ? MQ_OK : MQ_ERR_IO;
}

static int frames_configure(mq_video_out *vo, const mq_video_format *fmt, mq_video_format *accepted)
{
    frames_priv *f = vo->priv;
    int size = av_image_get_buffer_size(fmt->pix_fmt, fmt->width, fmt->height, 1);
    *accepted = *fmt;
    if (size < 0) // a hardware format: read back at each picture, the buffer sized then
        return MQ_OK;
    if (size > f->buf_size) {
        av_freep(&f->buf);
        f->buf_size = 0;
        f->buf = av_malloc((size_t)size);
        if (!f->buf)
            return MQ_ERR_NO_MEMORY;
        f->buf_size = size;
    }
    return MQ_OK;
}

/// `text` for a TSV field: newline, tab and backslash escaped (\n, \t, \\), other control
/// characters dropped; cut to fit `size`.
static void escape(const char *text, char *out, size_t size)
{
    size_t n = 0;
    for (const char *c = text; *c && n + 3 <= size; c++) {
        char e = *c == '\n' ? 'n' : *c == '\t' ? 't' : *c == '\\' ? '\\' : 0;
        if (e) {
            out[n++] = '\\';
            out[n++] = e;
        } else if ((unsigned char)*c >= 0x20)
            out[n++] = *c;
    }
    out[n] = '\0';
}

static void md5_hex(struct AVMD5 *md5, const uint8_t *data, size_t size, char hex[33])
{
    uint8_t digest[16];
    av_md5_init(md5);
    av_md5_update(md5, data, size);
    av_md5_final(md5, digest);
    for (int i = 0; i < 16; i++)
        snprintf(hex + 2 * i, 3, "%02x", digest[i]);
}

/// The caption layer of the screen on show, `w`×`h`: drawn (and written) when the screen or
/// the size changed; f->layer_md5 "" when nothing is drawn.
static void caption_layer(mq_video_out *vo, int w, int h)
{
    frames_priv *f = vo->priv;
    if (!vo->draw_captions || !vo->caption_events[0] || f->captions_failed) {
        f->layer_md5[0] = '\0';
        f->layer_w = 0; // (drawn again when shown again)
        return;
    }
    if (f->layer_w == w && f->layer_h == h && f->caption_gen == vo->caption_gen)
        return;
    f->layer_w = w, f->layer_h = h, f->caption_gen = vo->caption_gen, f->layer_md5[0] = '\0';
    int ret = f->captions ? MQ_OK : mq_caption_render_create(NULL, &f->captions);
    if (ret < 0) {
        f->captions_failed = true;
        mq_log(MQ_LOG_WARN, "frames: captions not drawn: %s (%s)", mq_err_string(ret), MQ_CAPTION_FONT);
        return;
    }
    uint8_t *xrgb = av_mallocz((size_t)w * (size_t)h * 4);
    if (!xrgb)
        return;
    mq_caption_render_set(f->captions, vo->caption_events);
    if (mq_caption_render_draw(f->captions, &(mq_canvas){xrgb, w * 4, w, h}, (mq_rect){0, 0, w, h}) == 0) {
        av_free(xrgb); // (an empty screen's events: nothing drawn)
        return;
    }
    size_t n = (size_t)w * (size_t)h;
    for (size_t i = 0; i < n; i++) { // packed RGB24, in place (each pixel's 3 bytes before its 4)
        uint8_t r = xrgb[4 * i + 2], g = xrgb[4 * i + 1], b = xrgb[4 * i];
        xrgb[3 * i] = r, xrgb[3 * i + 1] = g, xrgb[3 * i + 2] = b;
    }
    md5_hex(f->md5, xrgb, 3 * n, f->layer_md5);
    char path[4300];
    snprintf(path, sizeof path, "%s/captions", f->dir);
    mkdir(path, 0755);
    snprintf(path, sizeof path, "%s/captions/%s.ppm", f->dir, f->layer_md5);
    FILE *ppm = fopen(path, "wx"); // (a screen shown before is on file already)
    if (ppm) {
        fprintf(ppm, "P6\n%d %d\n255\n", w, h);
        fwrite(xrgb, 1, 3 * n, ppm);
        fclose(ppm);
    }
    av_free(xrgb);
}

static int frames_present(mq_video_out *vo, const mq_vframe *v, double wall_time)
{
    frames_priv *f = vo->priv;
    AVFrame *tmp;
    const AVFrame *fr = mq_vo_in_memory(v->frame, &tmp); // a hardware decoder's: its planes read back
    int size = fr ? av_image_get_buffer_size(fr->format, fr->width, fr->height, 1) : -1;
    if (size > 0 && size > f->buf_size) { // (configure sized it for the decoder's format, not this one)
        av_freep(&f->buf);
        f->buf_size = 0;
        if ((f->buf = av_malloc((size_t)size)))
            f->buf_size = size;
    }
    if (fr && f->buf)
        size = av_image_copy_to_buffer(f->buf, f->buf_size, (const uint8_t *const *)fr->data, fr->linesize, fr->format,
                                       fr->width, fr->height, 1);
    av_frame_free(&tmp);
    if (!fr || !f->buf || size < 0)
        return MQ_ERR_VIDEO_DEVICE;
    char hex[33];
    md5_hex(f->md5, f->buf, (size_t)size, hex);
    caption_layer(vo, v->frame->width, v->frame->height);
    char due[32] = "";
    if (isfinite(vo->due))
        snprintf(due, sizeof due, "%.6f", vo->due);
    char caption[2 * MQ_VO_CAPTION_MAX];
    escape(vo->caption, caption, sizeof caption);
    fprintf(f->tsv, "%.6f\t%.6f\t%s\t%d\t%d\t%s\t%d\t%s\t%.6f\t%s\t%s\n", wall_time, v->media_pts, hex, v->frame->width,
            v->frame->height, vo->label, v->still, due, wall_time - vo->wall_offset, caption, f->layer_md5);
    return fflush(f->tsv) == 0 ? MQ_OK : MQ_ERR_IO;
}

static void frames_close(mq_video_out *vo)
{
    frames_priv *f = vo->priv;
    if (f->tsv)
        fclose(f->tsv);
    f->tsv = NULL;
    av_freep(&f->md5);
    av_freep(&f->buf);
    mq_caption_render_destroy(&f->captions);
}

const mq_video_out_driver mq_video_out_frames = {
    .name = "frames",
    .priv_size = sizeof(frames_priv),
    .open = frames_open,
    .configure = frames_configure,
    .present = frames_present,
    .close = frames_close,
};
