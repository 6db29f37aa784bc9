// Host/guest helper for the VM suite (not part of the library):
//   render_bench bench <src WxH> <screen WxH> <fit> <frames>   CPU per converted frame (swscale
//                       yuv420p -> XRGB8888 fitted, as video_out_drm does), printed as a figure
//   render_bench drm <src WxH> <fit> <frames> [<mode WxH>]     the same into DRM dumb buffers with
//                       page flips on /dev/dri/card0 (in the VM): CPU and wall per presented frame
//   render_bench slate <message>                               shows the stall slate, prints
//                       "SLATE READY" and holds the display until killed
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <libavutil/frame.h>
#include <libavutil/mem.h>

#include "drm_setup.h"
#include "mq_player.h"
#include "video_render.h"

static double cpu_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static double wall_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static AVFrame *make_frame(int w, int h, int n)
{
    AVFrame *f = av_frame_alloc();
    f->width = w, f->height = h, f->format = 0; // AV_PIX_FMT_YUV420P
    av_frame_get_buffer(f, 32);
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++)
            f->data[0][y * f->linesize[0] + x] = (uint8_t)(x + y + n);
    for (int y = 0; y < h / 2; y++) {
        memset(f->data[1] + y * f->linesize[1], 90 + n % 64, w / 2);
        memset(f->data[2] + y * f->linesize[2], 160 - n % 64, w / 2);
    }
    return f;
}

static int fit_of(const char *s)
{
    return !strcmp(s, "cover") ? MQ_FIT_COVER : !strcmp(s, "fill") ? MQ_FIT_FILL : !strcmp(s, "scaledown") ? MQ_FIT_SCALEDOWN : MQ_FIT_CONTAIN;
}

static int slate(const char *message)
{
    mq_drm d;
    if (mq_drm_open(&d, NULL, NULL, NULL) < 0)
        return 1;
    int b = mq_drm_back(&d);
    mq_canvas c = {d.fb[b].map, (int)d.fb[b].pitch, d.width, d.height};
    mq_overlay_draw_slate(&c, message);
    if (mq_drm_show(&d, b) < 0)
        return 1;
    printf("SLATE READY %dx%d\n", d.width, d.height);
    fflush(stdout);
    for (;;)
        pause(); // stay DRM master until killed
}

int main(int argc, char **argv)
{
    if (argc == 3 && !strcmp(argv[1], "slate"))
        return slate(argv[2]);
    int sw, sh, dw = 0, dh = 0;
    if (argc < 5 || sscanf(argv[2], "%dx%d", &sw, &sh) != 2) {
        fprintf(stderr, "usage: see the source\n");
        return 2;
    }
    bool drm = !strcmp(argv[1], "drm");
    if (!drm && (argc < 6 || sscanf(argv[3], "%dx%d", &dw, &dh) != 2))
        return 2;
    int fit = fit_of(argv[drm ? 3 : 4]), frames = atoi(argv[drm ? 4 : 5]);
    mq_drm d;
    uint8_t *mem = NULL;
    if (drm) {
        if (mq_drm_open(&d, NULL, NULL, argc > 5 ? argv[5] : NULL) < 0)
            return 1;
        dw = d.width, dh = d.height;
    } else {
        mem = av_malloc((size_t)dw * dh * 4);
    }
    AVFrame *src[4];
    for (int i = 0; i < 4; i++)
        src[i] = make_frame(sw, sh, i * 7);
    mq_scaler s = {0};
    double c0 = cpu_now(), w0 = wall_now();
    for (int n = 0; n < frames; n++) {
        int b = drm ? mq_drm_back(&d) : 0;
        mq_canvas c = drm ? (mq_canvas){d.fb[b].map, (int)d.fb[b].pitch, dw, dh} : (mq_canvas){mem, dw * 4, dw, dh};
        if (mq_scaler_draw(&s, src[n % 4], fit, 0, &c) < 0)
            return 1;
        if (drm && mq_drm_show(&d, b) < 0)
            return 1;
    }
    if (drm)
        mq_drm_wait_flip(&d, 0.1);
    double cpu = cpu_now() - c0, wall = wall_now() - w0;
    printf("BENCH %s %dx%d -> %dx%d %s: %.2f ms CPU/frame, %.2f ms wall/frame (%d frames)\n", drm ? "drm" : "mem",
           sw, sh, dw, dh, argv[drm ? 3 : 4], cpu * 1e3 / frames, wall * 1e3 / frames, frames);
    mq_scaler_uninit(&s);
    if (drm)
        mq_drm_close(&d);
    for (int i = 0; i < 4; i++)
        av_frame_free(&src[i]);
    av_free(mem);
    return 0;
}
