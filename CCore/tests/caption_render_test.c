// Captions drawn (video/caption_render.c): a CEA-608 pop-on caption on row 15, decoded by FFmpeg's
// cc_dec as the video decode thread does, drawn with libass over a grey 16:9 picture: white text
// on an opaque black box where row 15 of the 4:3 caption area is (the middle 4:3 of the picture,
// 15 rows from its top), nothing drawn anywhere else; a cleared screen draws nothing; the same
// screen draws the same pixels again; malformed events and a missing font are refused, not drawn.
//
//   caption_render_test  exit 0 when every check passed

#include <libavutil/frame.h>

#include "mq_err.h"
#include "test_util.h"
#include "video/caption_render.h"
#include "video/captions.h"

#define W 640
#define H 360
#define GREY 0x80

static uint8_t odd(uint8_t b)
{
    return __builtin_popcount(b) % 2 ? b : (uint8_t)(b | 0x80);
}

/// The screen's events after a pop-on "HI" on row 15 (RCL, ENM, PAC row 15, HI, EOC).
static void pop_on(char *events, size_t size)
{
    events[0] = '\0';
    mq_cc_decoder *d = NULL;
    CHECK(mq_cc_decoder_create(&d) == MQ_OK, "cc_dec opened");
    if (!d)
        return;
    uint8_t seq[][2] = {{0x14, 0x20}, {0x14, 0x2E}, {0x14, 0x60}, {'H', 'I'}, {0x14, 0x2F}};
    char text[MQ_CC_TEXT];
    for (int i = 0; i < 5; i++) {
        AVFrame *f = av_frame_alloc();
        AVFrameSideData *sd = av_frame_new_side_data(f, AV_FRAME_DATA_A53_CC, 3);
        sd->data[0] = 0xFC, sd->data[1] = odd(seq[i][0]), sd->data[2] = odd(seq[i][1]);
        if (mq_cc_decoder_feed(d, f, i / 30.0, text, sizeof text) == 1)
            snprintf(events, size, "%s", mq_cc_decoder_events(d));
        av_frame_free(&f);
    }
    CHECK(!strcmp(text, "HI"), "the screen: '%s'", text);
    mq_cc_decoder_destroy(&d);
}

static void fill_grey(uint8_t *px)
{
    memset(px, GREY, (size_t)W * H * 4);
}

int main(void)
{
    static uint8_t px[W * H * 4], again[W * H * 4];
    mq_canvas c = {px, W * 4, W, H};
    mq_rect all = {0, 0, W, H};
    char events[MQ_CC_ASS];
    pop_on(events, sizeof events);
    CHECK(strstr(events, "\\pos(") && strstr(events, "HI"), "events: '%s'", events);

    mq_caption_render *r = NULL;
    CHECK(mq_caption_render_create("/nonexistent/font.ttf", &r) == MQ_ERR_NOT_FOUND && !r, "a missing font");
    CHECK(mq_caption_render_create(NULL, &r) == MQ_OK && r, "created with %s", MQ_CAPTION_FONT);
    if (!r)
        return mqt_done("caption_render_test");

    fill_grey(px);
    mq_caption_render_set(r, events);
    long inked = mq_caption_render_draw(r, &c, all);
    // Where it was drawn, and in what: white, black, and their blends at the glyphs' edges.
    int x0 = W, x1 = -1, y0 = H, y1 = -1;
    long white = 0, black = 0;
    for (int y = 0; y < H; y++)
        for (int x = 0; x < W; x++) {
            const uint8_t *p = px + ((size_t)y * W + (size_t)x) * 4;
            if (p[0] == GREY && p[1] == GREY && p[2] == GREY)
                continue;
            x0 = x < x0 ? x : x0, x1 = x > x1 ? x : x1, y0 = y < y0 ? y : y0, y1 = y > y1 ? y : y1;
            white += p[0] >= 0xF0 && p[1] >= 0xF0 && p[2] >= 0xF0;
            black += p[0] <= 0x10 && p[1] <= 0x10 && p[2] <= 0x10;
        }
    printf("caption HI: %ld pixels inked, box %d..%d × %d..%d, %ld white, %ld black\n", inked, x0, x1, y0, y1, white,
           black);
    // The 4:3 area is 480×360 at x 80; the script's 384×288 scaled by 1.25: the row at
    // (38, 243) begins at x 127.5, y 303.75, 16 script lines (20 px) high, its box around it.
    CHECK(inked > 0, "nothing drawn");
    CHECK(y0 >= 296 && y0 <= 306 && y1 >= 318 && y1 <= 334, "rows %d..%d (row 15: from 304, 20 px high)", y0, y1);
    CHECK(x0 >= 118 && x0 <= 130 && x1 > x0 + 16 && x1 < 180, "columns %d..%d (from 127: two cells and a box)", x0, x1);
    CHECK(white > 20 && black > 200, "white text (H, I) on a black box: %ld white, %ld black", white, black);

    // Deterministic: the same screen, the same pixels.
    memcpy(again, px, sizeof px);
    fill_grey(px);
    mq_caption_render_set(r, events);
    mq_caption_render_draw(r, &c, all);
    CHECK(!memcmp(again, px, sizeof px), "drawn again, other pixels");

    // Cleared: nothing drawn. Malformed events: libass skips them, nothing drawn, no crash.
    const char *bad[] = {"", "garbage", "1,0,Default", "1,0,NoSuchStyle,,0,0,0,,{\\pos(", "\n\n\n"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        fill_grey(px);
        mq_caption_render_set(r, bad[i]);
        long n = mq_caption_render_draw(r, &c, all);
        CHECK(n == 0 || i == 3, "'%s' drew %ld pixels", bad[i], n);
    }
    // An empty area draws nothing.
    mq_caption_render_set(r, events);
    CHECK(mq_caption_render_draw(r, &c, (mq_rect){0, 0, 0, 0}) == 0, "an empty area");
    mq_caption_render_destroy(&r);
    CHECK(r == NULL, "destroyed");
    return mqt_done("caption_render_test");
}
