// Host/guest helper for the VM suite (not part of the library):
//   render_bench bench <src WxH> <screen WxH> <fit> <frames>   CPU per converted frame (swscale
//                       yuv420p -> XRGB8888 fitted, as video_out_drm does), printed as a figure
//   render_bench drm <src WxH> <fit> <frames> [<mode WxH>]     the same into DRM dumb buffers with
//                       page flips on /dev/dri/card0 (in the VM): CPU and wall per presented frame
//   render_bench plane <src WxH> <fit> <frames> [<mode WxH>]   the same pictures copied to the
//                       DRM video plane (yuv420p as it is, no conversion): CPU and wall per frame;
//                       exit 3 when the driver has no such plane or refuses the placement
//   render_bench prime <src WxH>      a picture in a dma-buf of another device (vgem, standing in
//                       for a hardware decoder) imported onto the video plane without a copy
//                       ("PRIME SHOWN"), then the same picture copied into a dumb buffer ("COPY
//                       SHOWN"), 4 s each, 1:1: the guest reads both screens back
//   render_bench slate <message>                               shows the stall slate, prints
//                       "SLATE READY" and holds the display until killed
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <drm_fourcc.h>
#include <libavutil/hwcontext_drm.h>
#include <libavutil/imgutils.h>
#include <xf86drm.h>

#include <libavutil/frame.h>
#include <libavutil/mem.h>

#include "mq_err.h"
#include "mq_player.h"
#include "video/drm_setup.h"
#include "video/video_render.h"

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
    return !strcmp(s, "cover")       ? MQ_FIT_COVER
           : !strcmp(s, "fill")      ? MQ_FIT_FILL
           : !strcmp(s, "scaledown") ? MQ_FIT_SCALEDOWN
                                     : MQ_FIT_CONTAIN;
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

/// The video plane path of video_out_drm: copy, then an atomic commit (black primary at entry).
static int plane(int sw, int sh, const char *fit_name, int frames, const char *mode)
{
    mq_drm d;
    if (mq_drm_open(&d, NULL, NULL, mode) < 0)
        return 1;
    int b = mq_drm_back(&d);
    mq_canvas_fill(&(mq_canvas){d.fb[b].map, (int)d.fb[b].pitch, d.width, d.height}, (mq_rect){0, 0, d.width, d.height},
                   0);
    if (mq_drm_show(&d, b) < 0)
        return 1;
    AVFrame *src[4];
    for (int i = 0; i < 4; i++)
        src[i] = make_frame(sw, sh, i * 7);
    mq_rect crop, dst;
    mq_fit_compute(fit_of(fit_name), sw, sh, d.width, d.height, &crop, &dst);
    mq_drm_placement at = {crop.x, crop.y, crop.w, crop.h, dst.x, dst.y, dst.w, dst.h, 2 /* unspecified */, 0};
    int ret = mq_drm_plane_takes(&d, src[0]) ? 0 : MQ_ERR_UNSUPPORTED;
    double c0 = cpu_now(), w0 = wall_now();
    for (int n = 0; n < frames && ret >= 0; n++) {
        int vi = mq_drm_video_back(&d, src[n % 4]->format, sw, sh);
        if (vi < 0)
            ret = MQ_ERR_UNSUPPORTED;
        else {
            mq_drm_video_copy(&d, vi, src[n % 4]);
            ret = mq_drm_show_video(&d, vi, &at, -1, false);
        }
    }
    mq_drm_wait_flip(&d, 0.1);
    double cpu = cpu_now() - c0, wall = wall_now() - w0;
    if (ret >= 0)
        printf("BENCH plane %dx%d -> %dx%d %s: %.2f ms CPU/frame, %.2f ms wall/frame (%d frames)\n", sw, sh, dst.w,
               dst.h, fit_name, cpu * 1e3 / frames, wall * 1e3 / frames, frames);
    else
        printf("BENCH plane %dx%d -> %dx%d %s: %s\n", sw, sh, dst.w, dst.h, fit_name,
               !d.plane.id                 ? "no video plane"
               : ret == MQ_ERR_UNSUPPORTED ? "refused by the driver"
                                           : "commit failed (the reason is logged above)");
    mq_drm_close(&d);
    for (int i = 0; i < 4; i++)
        av_frame_free(&src[i]);
    return ret >= 0 ? 0 : 3;
}

static void free_desc(void *opaque, uint8_t *data)
{
    (void)opaque;
    AVDRMFrameDescriptor *desc = (AVDRMFrameDescriptor *)data;
    close(desc->objects[0].fd);
    av_free(desc);
}

static int open_vgem(void)
{
    for (int n = 0; n < 8; n++) {
        char path[32];
        snprintf(path, sizeof path, "/dev/dri/card%d", n);
        int fd = open(path, O_RDWR | O_CLOEXEC);
        drmVersion *v = fd >= 0 ? drmGetVersion(fd) : NULL;
        bool vgem = v && !strcmp(v->name, "vgem");
        drmFreeVersion(v);
        if (vgem)
            return fd;
        if (fd >= 0)
            close(fd);
    }
    return -1;
}

/// A yuv420p picture in a YUV420 buffer of vgem, exported as a dma-buf: an AV_PIX_FMT_DRM_PRIME
/// frame, as a hardware decoder hands out.
static AVFrame *prime_frame(int vfd, const AVFrame *src)
{
    int w = src->width, h = src->height;
    struct drm_mode_create_dumb cd = {.width = (uint32_t)w, .height = (uint32_t)(h + h / 2), .bpp = 8};
    if (drmIoctl(vfd, DRM_IOCTL_MODE_CREATE_DUMB, &cd) < 0)
        return NULL;
    struct drm_mode_map_dumb md = {.handle = cd.handle};
    uint8_t *map = drmIoctl(vfd, DRM_IOCTL_MODE_MAP_DUMB, &md) < 0
                       ? MAP_FAILED
                       : mmap(NULL, cd.size, PROT_READ | PROT_WRITE, MAP_SHARED, vfd, (off_t)md.offset);
    if (map == MAP_FAILED)
        return NULL;
    int p = (int)cd.pitch, offsets[3] = {0, p * h, p * h + p / 2 * (h / 2)}, pitches[3] = {p, p / 2, p / 2};
    for (int i = 0; i < 3; i++)
        av_image_copy_plane(map + offsets[i], pitches[i], src->data[i], src->linesize[i], i ? w / 2 : w, i ? h / 2 : h);
    munmap(map, cd.size);
    int dmafd = -1;
    if (drmPrimeHandleToFD(vfd, cd.handle, DRM_CLOEXEC | DRM_RDWR, &dmafd) < 0)
        return NULL;
    AVDRMFrameDescriptor *desc = av_mallocz(sizeof *desc);
    AVFrame *f = av_frame_alloc();
    desc->nb_objects = 1;
    desc->objects[0].fd = dmafd;
    desc->objects[0].size = cd.size;
    desc->objects[0].format_modifier = DRM_FORMAT_MOD_LINEAR;
    desc->nb_layers = 1;
    desc->layers[0].format = DRM_FORMAT_YUV420;
    desc->layers[0].nb_planes = 3;
    for (int i = 0; i < 3; i++)
        desc->layers[0].planes[i] =
            (AVDRMPlaneDescriptor){.object_index = 0, .offset = offsets[i], .pitch = pitches[i]};
    f->format = AV_PIX_FMT_DRM_PRIME;
    f->width = w, f->height = h;
    f->buf[0] = av_buffer_create((uint8_t *)desc, sizeof *desc, free_desc, NULL, 0);
    f->data[0] = (uint8_t *)desc;
    return f;
}

static int prime(int sw, int sh)
{
    int vfd = open_vgem();
    mq_drm d;
    if (vfd < 0 || mq_drm_open(&d, NULL, NULL, NULL) < 0) {
        printf("BENCH prime: %s\n", vfd < 0 ? "no vgem card" : "no display");
        return 3;
    }
    int b = mq_drm_back(&d);
    mq_canvas_fill(&(mq_canvas){d.fb[b].map, (int)d.fb[b].pitch, d.width, d.height}, (mq_rect){0, 0, d.width, d.height},
                   0);
    mq_drm_show(&d, b);
    AVFrame *src = make_frame(sw, sh, 0), *pf = prime_frame(vfd, src);
    mq_rect crop, dst;
    mq_fit_compute(MQ_FIT_SCALEDOWN, sw, sh, d.width, d.height, &crop, &dst);
    mq_drm_placement at = {crop.x, crop.y, crop.w, crop.h, dst.x, dst.y, dst.w, dst.h, 2, 0};
    int vi = pf && mq_drm_plane_takes(&d, pf) ? mq_drm_video_import(&d, pf) : -1;
    int ret = vi >= 0 ? mq_drm_show_video(&d, vi, &at, -1, false) : MQ_ERR_UNSUPPORTED;
    av_frame_free(&pf); // the plane's slot holds its own reference
    printf("%s\n", ret >= 0 ? "PRIME SHOWN" : "PRIME FAILED");
    fflush(stdout);
    sleep(4);
    vi = ret >= 0 ? mq_drm_video_back(&d, src->format, sw, sh) : -1;
    if (vi >= 0) {
        mq_drm_video_copy(&d, vi, src);
        ret = mq_drm_show_video(&d, vi, &at, -1, false);
    }
    printf("%s\n", vi >= 0 && ret >= 0 ? "COPY SHOWN" : "COPY FAILED");
    fflush(stdout);
    sleep(4);
    mq_drm_close(&d);
    av_frame_free(&src);
    close(vfd);
    return ret >= 0 ? 0 : 1;
}

int main(int argc, char **argv)
{
    if (argc == 3 && !strcmp(argv[1], "slate"))
        return slate(argv[2]);
    int pw, ph;
    if (argc == 3 && !strcmp(argv[1], "prime") && sscanf(argv[2], "%dx%d", &pw, &ph) == 2)
        return prime(pw, ph);
    if (argc >= 5 && !strcmp(argv[1], "plane") && sscanf(argv[2], "%dx%d", &pw, &ph) == 2)
        return plane(pw, ph, argv[3], atoi(argv[4]), argc > 5 ? argv[5] : NULL);
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
    printf("BENCH %s %dx%d -> %dx%d %s: %.2f ms CPU/frame, %.2f ms wall/frame (%d frames)\n", drm ? "drm" : "mem", sw,
           sh, dw, dh, argv[drm ? 3 : 4], cpu * 1e3 / frames, wall * 1e3 / frames, frames);
    mq_scaler_uninit(&s);
    if (drm)
        mq_drm_close(&d);
    for (int i = 0; i < 4; i++)
        av_frame_free(&src[i]);
    av_free(mem);
    return 0;
}
