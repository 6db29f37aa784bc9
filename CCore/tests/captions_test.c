// Closed captions (video/captions.c): CEA-608 pairs given to FFmpeg's cc_dec as a picture's
// A/53 side data, picture by picture, as the video decode thread does: a pop-on caption shown
// whole on its End Of Caption's picture, erased, a roll-up line growing; damaged bytes change
// nothing. The queue to the video thread: taken by time (a staged track's later changes pushed
// between the playing one's do not hold them back), the newest screen of those due, bounded.
//
//   captions_test        exit 0 when every check passed

#include <libavutil/frame.h>

#include "mq_err.h"
#include "test_util.h"
#include "video/captions.h"

static uint8_t odd(uint8_t b)
{
    return __builtin_popcount(b) % 2 ? b : (uint8_t)(b | 0x80);
}

/// Feeds one picture carrying the pair (a, b) on field 1 (CC1) at `pts`.
static int feed(mq_cc_decoder *d, uint8_t a, uint8_t b, double pts, char *text)
{
    AVFrame *f = av_frame_alloc();
    AVFrameSideData *sd = av_frame_new_side_data(f, AV_FRAME_DATA_A53_CC, 3);
    sd->data[0] = 0xFC, sd->data[1] = a, sd->data[2] = b;
    int ret = mq_cc_decoder_feed(d, f, pts, text, MQ_CC_TEXT);
    av_frame_free(&f);
    return ret;
}

static void test_decoder(void)
{
    mq_cc_decoder *d = NULL;
    CHECK(mq_cc_decoder_create(&d) == MQ_OK, "cc_dec opened");
    if (!d)
        return;
    char text[MQ_CC_TEXT];
    // Pop-on: RCL, ENM, PAC row 15, "HI", then EOC (control codes doubled, as sent).
    uint8_t seq[][2] = {{0x14, 0x20}, {0x14, 0x20}, {0x14, 0x2E}, {0x14, 0x2E}, {0x14, 0x60},
                        {0x14, 0x60}, {'H', 'I'},   {0x14, 0x2F}, {0x14, 0x2F}};
    int n = (int)(sizeof seq / sizeof seq[0]), shown_at = -1, changes = 0;
    for (int i = 0; i < n; i++)
        if (feed(d, odd(seq[i][0]), odd(seq[i][1]), i / 30.0, text) == 1) {
            changes++;
            if (!strcmp(text, "HI") && shown_at < 0)
                shown_at = i;
        }
    CHECK(shown_at == 7, "pop-on shown on its EOC's picture (7): %d", shown_at);
    CHECK(changes == 1, "one change while loading off screen and showing: %d", changes);
    // Damaged bytes (parity errors, an invalid triplet) and empty pairs: no change.
    int before = changes;
    for (int i = 0; i < 20; i++)
        changes += feed(d, 0x01, 0x02, (10 + i) / 30.0, text) == 1 || feed(d, 0x80, 0x80, (10 + i) / 30.0, text) == 1;
    CHECK(changes == before, "damaged pairs changed the screen %d times", changes - before);
    // Erase displayed memory: cleared.
    CHECK(feed(d, odd(0x14), odd(0x2C), 40 / 30.0, text) == 1 && text[0] == '\0', "erased: '%s'", text);
    // Roll-up (RU2, CR, PAC): the line grows as its pairs come.
    uint8_t roll[][2] = {{0x14, 0x25}, {0x14, 0x25}, {0x14, 0x2D}, {0x14, 0x2D},
                         {0x14, 0x60}, {0x14, 0x60}, {'R', 'O'},   {'L', 'L'}};
    char last[MQ_CC_TEXT] = "";
    for (int i = 0; i < 8; i++)
        if (feed(d, odd(roll[i][0]), odd(roll[i][1]), (50 + i) / 30.0, text) == 1)
            snprintf(last, sizeof last, "%s", text);
    CHECK(!strcmp(last, "ROLL"), "roll-up line: '%s'", last);
    mq_cc_decoder_flush(d);
    mq_cc_decoder_destroy(&d);
    CHECK(d == NULL, "destroyed");
    // A picture without captions: nothing to do, no decoder needed.
    AVFrame *f = av_frame_alloc();
    CHECK(mq_cc_decoder_feed(NULL, f, 0, text, sizeof text) == 0, "no side data");
    av_frame_free(&f);
}

static void test_queue(void)
{
    mq_cc_queue q;
    mq_cc_queue_init(&q);
    char text[MQ_CC_TEXT];
    double at = -1;
    CHECK(!mq_cc_queue_due(&q, 100, text, sizeof text, &at), "empty");
    // The playing track's changes at 10 and 12, a staged track's at 50 pushed between them.
    mq_cc_queue_push(&q, 10, "A");
    mq_cc_queue_push(&q, 50, "STAGED");
    mq_cc_queue_push(&q, 12, "B");
    CHECK(!mq_cc_queue_due(&q, 9.9, text, sizeof text, &at), "none due before 10");
    CHECK(mq_cc_queue_due(&q, 10, text, sizeof text, &at) && !strcmp(text, "A") && at == 10, "A at 10");
    CHECK(mq_cc_queue_due(&q, 13, text, sizeof text, &at) && !strcmp(text, "B") && at == 12,
          "B at 12, not held back by the staged change: '%s' %.1f", text, at);
    // Several due at once: the newest screen; two at one time: the last pushed.
    mq_cc_queue_push(&q, 20, "C");
    mq_cc_queue_push(&q, 21, "D1");
    mq_cc_queue_push(&q, 21, "D2");
    CHECK(mq_cc_queue_due(&q, 22, text, sizeof text, &at) && !strcmp(text, "D2"), "newest due: '%s'", text);
    CHECK(!mq_cc_queue_due(&q, 22, text, sizeof text, &at), "taken once");
    CHECK(mq_cc_queue_due(&q, 60, text, sizeof text, &at) && !strcmp(text, "STAGED"), "staged at 50");
    // Bounded: the earliest give way.
    for (int i = 0; i < MQ_CC_QUEUE + 5; i++) {
        char t[8];
        snprintf(t, sizeof t, "%d", i);
        mq_cc_queue_push(&q, 100 + i, t);
    }
    CHECK(q.n == MQ_CC_QUEUE, "bounded: %d", q.n);
    CHECK(!mq_cc_queue_due(&q, 104.5, text, sizeof text, &at), "the earliest five given up");
    CHECK(mq_cc_queue_due(&q, 105, text, sizeof text, &at) && !strcmp(text, "5"), "then 5: '%s'", text);
    // Long text: cut at the bound, terminated.
    char big[600];
    memset(big, 'X', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    CHECK(!mq_cc_queue_take_flush(&q), "no reset yet");
    mq_cc_queue_clear(&q);
    CHECK(mq_cc_queue_take_flush(&q) && !mq_cc_queue_take_flush(&q), "a reset said once");
    CHECK(!mq_cc_queue_due(&q, 1000, text, sizeof text, &at), "a reset empties the queue");
    mq_cc_queue_push(&q, 1, big);
    CHECK(mq_cc_queue_due(&q, 1, text, sizeof text, &at) && strlen(text) == MQ_CC_TEXT - 1, "cut: %zu", strlen(text));
    mq_cc_queue_destroy(&q);
}

int main(void)
{
    test_decoder();
    test_queue();
    return mqt_done("captions_test");
}
