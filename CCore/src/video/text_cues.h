#ifndef MQ_TEXT_CUES_H
#define MQ_TEXT_CUES_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "mq_player.h"
#include "video/captions.h"

/// Text tracks (WebVTT renditions, side-loaded or segmented): their cues decoded by FFmpeg (its
/// webvtt demuxer and decoder, which write each cue as an ASS event as they do for the other
/// subtitle formats) and held on the presentation timeline until their pictures come. The video
/// thread shows, with each picture, every cue whose [start, end) holds its pts: a cue appears
/// on its first picture and is gone on the first at or after its end, whenever it was pushed.

_Static_assert(MQ_TEXT_CUE_TEXT == MQ_CC_TEXT, "a cue's text is a caption screen's");
_Static_assert(MQ_TEXT_CUE_ASS == MQ_CC_ASS, "a cue's events are a caption screen's");

/// The most cues held (segments fetched a few ahead: at a cue a second, a minute of them).
#define MQ_TEXT_CUES 64

/// Cues on their way to the video thread (the controlling side pushes, the video thread reads;
/// locked inside, never by the audio thread). Full, the cue that ends first gives way.
typedef struct mq_text_cues {
    pthread_mutex_t lock;
    struct {
        double start, end;
        uint64_t id; // (pushed order: the screen's identity is the set of ids showing)
        char text[MQ_CC_TEXT];
        char ass[MQ_CC_ASS];
    } c[MQ_TEXT_CUES];
    int n;
    uint64_t pushed;
    bool active; // a text track feeds the screen: the video's own captions are not shown
    bool ok;     // the lock was made
} mq_text_cues;

void mq_text_cues_init(mq_text_cues *q);
void mq_text_cues_destroy(mq_text_cues *q);
/// Adds a cue (its ASS event lines; its text is read from them) and makes the list the
/// screen's source. MQ_ERR_INVALID_ARGUMENT for a cue that ends before it starts or is not finite.
int mq_text_cues_push(mq_text_cues *q, double start, double end, const char *ass);
/// Drops every cue; `active`: whether a text track still feeds the screen.
void mq_text_cues_clear(mq_text_cues *q, bool active);
/// The screen at `pts` when a text track feeds it (false otherwise: the video's captions do):
/// `*changed` when the cues showing are not those of `*shown` (updated), the screen's text
/// (cues separated by '\n') and ASS events then written. Cues ended more than a minute before
/// `pts` are dropped.
bool mq_text_cues_screen(mq_text_cues *q, double pts, uint64_t *shown, bool *changed, char *text, size_t text_size,
                         char *ass, size_t ass_size);

/// The plain text of ASS event lines ("ReadOrder,Layer,Style,Name,MarginL,MarginR,MarginV,
/// Effect,Text"): each line's Text with its override blocks ({...}) removed and \N, \n as new
/// lines, \h as a space; lines separated by '\n'. Truncated to `size`.
void mq_ass_plain_text(const char *ass, char *text, size_t size);

#endif
