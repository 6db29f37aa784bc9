// Text tracks (video/text_cues.c): a WebVTT file written by ffmpeg's muxer decoded by
// mq_webvtt_decode cue for cue as ffmpeg's own decode of it says (cues.ass: the times to its
// centisecond, the events' text the same); an HLS segment's X-TIMESTAMP-MAP read in either
// order, a malformed one ignored; hostile bytes refused or bounded (not WebVTT, too large, more
// cues than room, a cue longer than its room). The cue list: a cue on the screen from its start
// to its end, overlapping ones together in the order they start, the one that ends first giving
// way when full, the screen given back to the video's captions when cleared.
//
//   text_cues_test <media dir>   exit 0 when every check passed

#include <math.h>

#include "mq_err.h"
#include "test_util.h"
#include "video/text_cues.h"

/// ffmpeg's decode of cues.vtt: each Dialogue's start, end and Text.
static int reference(const char *dir, double *start, double *end, char text[][MQ_TEXT_CUE_ASS], int max)
{
    char path[512];
    snprintf(path, sizeof path, "%s/cues.ass", dir);
    FILE *f = fopen(path, "r");
    CHECK(f != NULL, "%s", path);
    if (!f)
        return 0;
    char line[MQ_TEXT_CUE_ASS];
    int n = 0;
    while (n < max && fgets(line, sizeof line, f)) {
        int h1, m1, h2, m2;
        double s1, s2;
        if (sscanf(line, "Dialogue: %*d,%d:%d:%lf,%d:%d:%lf,", &h1, &m1, &s1, &h2, &m2, &s2) != 6)
            continue;
        start[n] = h1 * 3600 + m1 * 60 + s1;
        end[n] = h2 * 3600 + m2 * 60 + s2;
        const char *t = line;
        for (int commas = 0; commas < 9 && *t; t++)
            commas += *t == ',';
        snprintf(text[n], MQ_TEXT_CUE_ASS, "%s", t);
        text[n][strcspn(text[n], "\r\n")] = '\0';
        n++;
    }
    fclose(f);
    return n;
}

/// The Text field of an ASS event line (after its eighth comma).
static const char *event_text(const char *ass)
{
    const char *t = ass;
    for (int commas = 0; commas < 8 && *t; t++)
        commas += *t == ',';
    return t;
}

static void test_ffmpegs_file(const char *dir)
{
    char path[512];
    snprintf(path, sizeof path, "%s/cues.vtt", dir);
    size_t size = 0;
    uint8_t *data = mqt_read_file(path, &size);
    CHECK(data != NULL, "%s", path);
    if (!data)
        return;
    static mq_text_cue cues[8];
    int n = -1;
    double map = 0;
    CHECK(mq_webvtt_decode(data, size, cues, 8, &n, &map) == MQ_OK, "decoded");
    CHECK(isnan(map), "no X-TIMESTAMP-MAP: %f", map);
    static char want[8][MQ_TEXT_CUE_ASS];
    double start[8], end[8];
    int m = reference(dir, start, end, want, 8);
    CHECK(n == m && m == 3, "%d cues, ffmpeg's decode %d", n, m);
    for (int i = 0; i < n && i < m; i++) {
        CHECK(fabs(cues[i].start - start[i]) < 0.006 && fabs(cues[i].end - end[i]) < 0.006,
              "cue %d: %.3f-%.3f, ffmpeg's %.2f-%.2f", i, cues[i].start, cues[i].end, start[i], end[i]);
        CHECK(!strcmp(event_text(cues[i].ass), want[i]), "cue %d: '%s', ffmpeg's '%s'", i, event_text(cues[i].ass),
              want[i]);
    }
    CHECK(!strcmp(cues[0].text, "Hello world"), "'%s'", cues[0].text);
    CHECK(!strcmp(cues[1].text, "Second cue\ntwo lines & more"), "'%s'", cues[1].text);
    CHECK(fabs(cues[2].start - 3605.04) < 0.001, "an hour on: %.3f", cues[2].start);

    // Room for two: the first two, the third dropped.
    CHECK(mq_webvtt_decode(data, size, cues, 2, &n, &map) == MQ_OK && n == 2, "%d of 3 in room for 2", n);

    // As an HLS segment: the map after the signature, either order; its offset is MPEGTS/90000 - LOCAL.
    static const char *maps[][2] = {
        {"X-TIMESTAMP-MAP=MPEGTS:900000,LOCAL:00:00:00.000", "10.0"},
        {"X-TIMESTAMP-MAP=LOCAL:00:00:01.500,MPEGTS:183000", "0.5333333"},
        {"X-TIMESTAMP-MAP=MPEGTS:8589934591,LOCAL:00:00.000", "95443.7176778"}, // 2^33 - 1
        {"X-TIMESTAMP-MAP=MPEGTS:8589934592,LOCAL:00:00:00.000", "nan"},        // past 33 bits
        {"X-TIMESTAMP-MAP=MPEGTS:90000", "nan"},                                // no LOCAL
        {"X-TIMESTAMP-MAP=MPEGTS:9x,LOCAL:00:00:00.000", "nan"},
        {"X-TIMESTAMP-MAP=MPEGTS:90000,LOCAL:00:61:00.000", "nan"},
    };
    for (size_t k = 0; k < sizeof maps / sizeof maps[0]; k++) {
        size_t len = strlen(maps[k][0]);
        uint8_t *seg = malloc(size + len + 1);
        memcpy(seg, "WEBVTT\n", 7);
        memcpy(seg + 7, maps[k][0], len);
        seg[7 + len] = '\n';
        memcpy(seg + 8 + len, data + 7, size - 7); // (cues.vtt begins "WEBVTT\n")
        int ret = mq_webvtt_decode(seg, size + len + 1, cues, 8, &n, &map);
        double want_map = atof(maps[k][1]);
        CHECK(ret == MQ_OK && n == 3, "%s: %d, %d cues", maps[k][0], ret, n);
        CHECK(isnan(want_map) ? isnan(map) : fabs(map - want_map) < 1e-6, "%s: %f", maps[k][0], map);
        free(seg);
    }
    free(data);
}

static void test_hostile(void)
{
    static mq_text_cue cues[4];
    int n = -1;
    double map = 0;
    const char *html = "<html><body>WEBVTT</body></html>";
    CHECK(mq_webvtt_decode((const uint8_t *)html, strlen(html), cues, 4, &n, &map) == MQ_ERR_DEMUX && n == 0,
          "not WebVTT");
    CHECK(mq_webvtt_decode((const uint8_t *)"", 0, cues, 4, &n, &map) == MQ_ERR_DEMUX, "empty");
    size_t big = MQ_WEBVTT_MAX + 1;
    uint8_t *b = calloc(1, big);
    memcpy(b, "WEBVTT\n\n", 8);
    CHECK(mq_webvtt_decode(b, big, cues, 4, &n, &map) == MQ_ERR_INVALID_ARGUMENT, "over %d bytes", MQ_WEBVTT_MAX);
    // A cue of 5000 characters: cut within its room, its text with it.
    size_t at = (size_t)sprintf((char *)b, "WEBVTT\n\n00:01.000 --> 00:02.000\n");
    memset(b + at, 'x', 5000);
    at += 5000;
    b[at++] = '\n';
    CHECK(mq_webvtt_decode(b, at, cues, 4, &n, &map) == MQ_OK && n == 1, "a long cue: %d", n);
    CHECK(strlen(cues[0].ass) < MQ_TEXT_CUE_ASS && strlen(cues[0].text) < MQ_TEXT_CUE_TEXT, "bounded");
    // A timing line that is not one, then a good cue: the good one.
    const char *bad = "WEBVTT\n\n00:99.000 --> 00:02.000\nbad\n\n00:03.000 --> 00:04.000\ngood\n";
    CHECK(mq_webvtt_decode((const uint8_t *)bad, strlen(bad), cues, 4, &n, &map) == MQ_OK && n == 1 &&
              !strcmp(cues[0].text, "good"),
          "%d cues, '%s'", n, n > 0 ? cues[0].text : "");
    free(b);
}

static void test_list(void)
{
    mq_text_cues q;
    mq_text_cues_init(&q);
    uint64_t shown = 0;
    bool changed = false;
    char text[MQ_CC_TEXT], ass[MQ_CC_ASS];
    // Not fed: the video's captions are the screen.
    CHECK(!mq_text_cues_screen(&q, 1, &shown, &changed, text, sizeof text, ass, sizeof ass) && !changed, "idle");
    CHECK(mq_text_cues_push(&q, 2, 1, "0,0,Default,,0,0,0,,x") == MQ_ERR_INVALID_ARGUMENT, "ends before it starts");
    CHECK(mq_text_cues_push(&q, NAN, 1, "x") == MQ_ERR_INVALID_ARGUMENT, "not finite");
    CHECK(mq_text_cues_push(&q, 1.5, 4.25, "0,0,Default,,0,0,0,,Second") == MQ_OK, "pushed");
    CHECK(mq_text_cues_push(&q, 0.5, 2.0, "0,0,Default,,0,0,0,,Hello {\\i1}world{\\i0}") == MQ_OK, "pushed");
    struct {
        double pts;
        bool changed;
        const char *text;
    } steps[] = {
        {0.46, false, ""}, // (nothing yet: the empty screen it starts with)
        {0.50, true, "Hello world"},
        {1.00, false, "Hello world"},
        {1.50, true, "Hello world\nSecond"}, // in the order they start
        {1.99, false, "Hello world\nSecond"},
        {2.00, true, "Second"}, // gone on the picture at its end
        {4.25, true, ""},
        {5.00, false, ""},
    };
    for (size_t k = 0; k < sizeof steps / sizeof steps[0]; k++) {
        bool fed = mq_text_cues_screen(&q, steps[k].pts, &shown, &changed, text, sizeof text, ass, sizeof ass);
        CHECK(fed && changed == steps[k].changed, "at %.2f: changed %d", steps[k].pts, changed);
        if (changed)
            CHECK(!strcmp(text, steps[k].text), "at %.2f: '%s'", steps[k].pts, text);
    }
    CHECK(ass[0] == '\0', "no events on an empty screen: '%s'", ass);
    // Full: the one that ends first gives way.
    mq_text_cues_clear(&q, true);
    for (int i = 0; i < MQ_TEXT_CUES + 1; i++) {
        char e[64];
        snprintf(e, sizeof e, "0,0,Default,,0,0,0,,cue %d", i);
        mq_text_cues_push(&q, 10 + i, i == 0 ? 100 : 20 + i, e); // (cue 1 ends first)
    }
    mq_text_cues_screen(&q, 10.5, &shown, &changed, text, sizeof text, ass, sizeof ass);
    CHECK(changed && !strcmp(text, "cue 0"), "'%s'", text);
    mq_text_cues_screen(&q, 11.5, &shown, &changed, text, sizeof text, ass, sizeof ass);
    CHECK(!changed, "cue 1 gave way: '%s'", text);
    mq_text_cues_screen(&q, 12.5, &shown, &changed, text, sizeof text, ass, sizeof ass);
    CHECK(changed && !strcmp(text, "cue 0\ncue 2"), "'%s'", text);
    // Cleared, not active: the screen is the video's again.
    mq_text_cues_clear(&q, false);
    CHECK(!mq_text_cues_screen(&q, 12.5, &shown, &changed, text, sizeof text, ass, sizeof ass), "given back");
    mq_text_cues_destroy(&q);
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: text_cues_test <media dir>\n");
        return 2;
    }
    test_ffmpegs_file(argv[1]);
    test_hostile();
    test_list();
    return mqt_done("text_cues");
}
