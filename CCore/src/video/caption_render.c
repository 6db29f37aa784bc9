#include "video/caption_render.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <ass/ass.h>

#include "core/log.h"
#include "mq_err.h"

/// The script FFmpeg's caption decoder writes its events for (its ff_ass_subtitle_header_full:
/// 384×288, a 16-line monospace face, BorderStyle 3: an opaque box behind the text), with the
/// face named for the file loaded.
static const char script_header[] = "[Script Info]\n"
                                    "ScriptType: v4.00+\n"
                                    "PlayResX: 384\n"
                                    "PlayResY: 288\n"
                                    "ScaledBorderAndShadow: yes\n"
                                    "\n"
                                    "[V4+ Styles]\n"
                                    "Format: Name, Fontname, Fontsize, PrimaryColour, SecondaryColour, OutlineColour, "
                                    "BackColour, Bold, Italic, Underline, StrikeOut, ScaleX, ScaleY, Spacing, Angle, "
                                    "BorderStyle, Outline, Shadow, Alignment, MarginL, MarginR, MarginV, Encoding\n"
                                    "Style: Default,DejaVu Sans Mono,16,&Hffffff,&Hffffff,&H0,&H0,0,0,0,0,100,100,0,0,"
                                    "3,1,0,2,10,10,10,0\n"
                                    "\n"
                                    "[Events]\n"
                                    "Format: Layer, Start, End, Style, Name, MarginL, MarginR, MarginV, Effect, Text\n";

#define SCRIPT_W 384
#define SCRIPT_H 288

struct mq_caption_render {
    ASS_Library *lib;
    ASS_Renderer *renderer;
    ASS_Track *track;
};

/// libass's messages: its warnings (a malformed event) at debug, the rest dropped.
static void on_message(int level, const char *fmt, va_list args, void *data)
{
    (void)data;
    if (level > 2)
        return;
    char line[256];
    vsnprintf(line, sizeof line, fmt, args);
    mq_log(MQ_LOG_DEBUG, "captions: libass: %s", line);
}

int mq_caption_render_create(const char *font, mq_caption_render **out)
{
    *out = NULL;
    font = font ? font : MQ_CAPTION_FONT;
    if (access(font, R_OK) != 0)
        return MQ_ERR_NOT_FOUND;
    mq_caption_render *r = calloc(1, sizeof *r);
    if (!r)
        return MQ_ERR_NO_MEMORY;
    r->lib = ass_library_init();
    if (r->lib)
        ass_set_message_cb(r->lib, on_message, NULL);
    r->renderer = r->lib ? ass_renderer_init(r->lib) : NULL;
    r->track = r->lib ? ass_new_track(r->lib) : NULL;
    if (!r->renderer || !r->track) {
        mq_caption_render_destroy(&r);
        return MQ_ERR_NO_MEMORY;
    }
    // The file for every face, no font provider (fontconfig would scan the system's fonts).
    ass_set_fonts(r->renderer, font, "DejaVu Sans Mono", ASS_FONTPROVIDER_NONE, NULL, 0);
    ass_process_codec_private(r->track, (char *)script_header, (int)strlen(script_header));
    ass_set_check_readorder(r->track, 0); // (each screen replaces the last: its read orders recur)
    *out = r;
    return MQ_OK;
}

void mq_caption_render_destroy(mq_caption_render **r)
{
    if (!*r)
        return;
    if ((*r)->track)
        ass_free_track((*r)->track);
    if ((*r)->renderer)
        ass_renderer_done((*r)->renderer);
    if ((*r)->lib)
        ass_library_done((*r)->lib);
    free(*r);
    *r = NULL;
}

void mq_caption_render_set(mq_caption_render *r, const char *events)
{
    ass_flush_events(r->track);
    for (const char *line = events; line && *line;) {
        const char *end = strchr(line, '\n');
        size_t n = end ? (size_t)(end - line) : strlen(line);
        if (n > 0) // shown from 0 for a day: the screen holds until the next change
            ass_process_chunk(r->track, (char *)line, (int)n, 0, 86400000LL);
        line = end ? end + 1 : line + n;
    }
}

/// Blends one libass image (an 8-bit coverage map in one colour, RRGGBBAA with AA its
/// transparency) onto `c` at (x0, y0), clipped; returns the pixels inked.
static long blend(const mq_canvas *c, const ASS_Image *img, int x0, int y0)
{
    uint32_t rgb[3] = {img->color >> 24, (img->color >> 16) & 0xff, (img->color >> 8) & 0xff};
    uint32_t opacity = 255 - (img->color & 0xff);
    long inked = 0;
    for (int y = 0; y < img->h; y++) {
        int cy = y0 + img->dst_y + y;
        if (cy < 0 || cy >= c->height)
            continue;
        const uint8_t *src = img->bitmap + (size_t)y * (size_t)img->stride;
        uint8_t *row = c->data + (size_t)cy * (size_t)c->stride;
        for (int x = 0; x < img->w; x++) {
            int cx = x0 + img->dst_x + x;
            uint32_t a = src[x] * opacity / 255;
            if (cx < 0 || cx >= c->width || a == 0)
                continue;
            uint8_t *px = row + (size_t)cx * 4; // XRGB8888, little-endian: B G R X
            for (int k = 0; k < 3; k++)
                px[2 - k] = (uint8_t)((rgb[k] * a + px[2 - k] * (255 - a) + 127) / 255);
            inked++;
        }
    }
    return inked;
}

long mq_caption_render_draw(mq_caption_render *r, const mq_canvas *c, mq_rect area)
{
    if (area.w <= 0 || area.h <= 0)
        return 0;
    // The script is 4:3: fitted into the area, centred (a 16:9 picture: the middle 4:3).
    mq_rect s = area;
    if ((long)area.w * SCRIPT_H > (long)area.h * SCRIPT_W)
        s.w = (int)((long)area.h * SCRIPT_W / SCRIPT_H);
    else
        s.h = (int)((long)area.w * SCRIPT_H / SCRIPT_W);
    s.x += (area.w - s.w) / 2;
    s.y += (area.h - s.h) / 2;
    ass_set_frame_size(r->renderer, s.w, s.h);
    ass_set_storage_size(r->renderer, s.w, s.h);
    long inked = 0;
    for (ASS_Image *img = ass_render_frame(r->renderer, r->track, 0, NULL); img; img = img->next)
        inked += blend(c, img, s.x, s.y);
    return inked;
}
