#ifndef MQ_CAPTIONS_H
#define MQ_CAPTIONS_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <libavutil/frame.h>

/// Closed captions carried in a video track's pictures: CEA-608 (and 608 carried in CEA-708's
/// compatibility bytes) in ATSC A/53 user data, which libavcodec exports with each decoded
/// H.264/HEVC/MPEG-2 picture as AV_FRAME_DATA_A53_CC side data, in TS and fMP4 alike. FFmpeg's
/// own decoder (`cc_dec`) turns the byte pairs into the caption screen's text (pop-on, roll-up
/// and paint-on as the standard has them), one change at a time, at the picture that made it.

#define MQ_CC_TEXT 256 // bytes of a screen's text kept (a 608 screen shows up to 4 rows of 32 in use)
#define MQ_CC_QUEUE 16 // changes waiting for their picture to be presented
#define MQ_CC_ASS 1024 // bytes of a screen's ASS events kept (its rows with their places and styles)

/// Decode thread only: FFmpeg's cc_dec over the side data of one track's pictures.
typedef struct mq_cc_decoder mq_cc_decoder;

/// MQ_ERR_UNSUPPORTED when this FFmpeg has no cc_dec.
int mq_cc_decoder_create(mq_cc_decoder **out);
void mq_cc_decoder_destroy(mq_cc_decoder **d);
/// A stream break (a reset, a seek): the screen is empty again.
void mq_cc_decoder_flush(mq_cc_decoder *d);
/// The caption bytes of picture `f` (presentation time `pts`, seconds), if it has any: 1 when
/// the screen changed (its text, rows separated by '\n', "" when cleared, in `text`), 0 when not.
int mq_cc_decoder_feed(mq_cc_decoder *d, const AVFrame *f, double pts, char *text, size_t size);
/// The screen of the last change fed as the decoder writes it: ASS events, one a line
/// ("ReadOrder,Layer,Style,Name,MarginL,MarginR,MarginV,Effect,Text", rows placed with
/// {\an7}{\pos(x,y)} on a 384×288 script: video/caption_render.h draws them); "" when cleared or
/// when they did not fit MQ_CC_ASS.
const char *mq_cc_decoder_events(const mq_cc_decoder *d);

/// Screen changes on their way to the video thread, which reports each as its picture is
/// presented (decode threads push, the video thread takes; locked inside, never by the audio
/// thread). Taken by time, not in the order pushed: a staged track (a playlist's next item,
/// decoded ahead) pushes changes due after the playing one's. Full, the earliest change is
/// dropped (the newest screen is what counts).
typedef struct mq_cc_queue {
    pthread_mutex_t lock;
    struct {
        double pts;
        uint64_t order; // (changes at one time: the last pushed is the screen)
        char text[MQ_CC_TEXT];
        char ass[MQ_CC_ASS]; // (mq_cc_decoder_events)
    } e[MQ_CC_QUEUE];
    int n;
    uint64_t pushed;
    bool flushed; // cleared since the video thread last looked (mq_cc_queue_take_flush)
    bool ok;      // the lock was made
} mq_cc_queue;

void mq_cc_queue_init(mq_cc_queue *q);
void mq_cc_queue_destroy(mq_cc_queue *q);
void mq_cc_queue_push(mq_cc_queue *q, double pts, const char *text);
/// A change with its screen's ASS events (mq_cc_decoder_events) to be drawn.
void mq_cc_queue_push_screen(mq_cc_queue *q, double pts, const char *text, const char *ass);
/// Takes every change due at or before `pts`: true with the last one's text and time.
bool mq_cc_queue_due(mq_cc_queue *q, double pts, char *text, size_t size, double *at);
/// mq_cc_queue_due with the change's ASS events too (MQ_CC_ASS bytes in `ass`).
bool mq_cc_queue_due_screen(mq_cc_queue *q, double pts, char *text, size_t size, char *ass, double *at);
/// Empties the queue (a reset: the screen starts empty); said once by mq_cc_queue_take_flush.
void mq_cc_queue_clear(mq_cc_queue *q);
/// Whether the queue was cleared since the last call (the video thread then clears its screen).
bool mq_cc_queue_take_flush(mq_cc_queue *q);

#endif
