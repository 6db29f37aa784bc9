#ifndef MQ_FRAME_QUEUE_H
#define MQ_FRAME_QUEUE_H

#include <stdbool.h>
#include <stddef.h>

#include <libavutil/frame.h>

/// A decoded picture on its way to the video output.
typedef struct mq_vframe {
    AVFrame *frame;   ///< Owned by whoever holds the mq_vframe.
    double pts;       ///< Presentation time (stream pts_time + the track's pts_offset).
    double media_pts; ///< The stream's own pts_time (what ffprobe prints).
    double duration;  ///< Seconds this picture lasts.
    /// A join's keyframe, late, shown at once until a due picture follows (mq_player_config.hide_join_still).
    bool still;
} mq_vframe;

/// Bounded FIFO of decoded pictures between one decode thread (push, flush) and the video
/// thread (peek, pop). Protected by its own mutex; never touched by the audio thread.
typedef struct mq_frame_queue mq_frame_queue;

/// `capacity` pictures at most; with a `budget` (bytes, 0: none) fewer when that many of the
/// pictures being pushed would hold more, but never fewer than 3 (or `capacity` if smaller).
int mq_frame_queue_create(int capacity, size_t budget, mq_frame_queue **out);
void mq_frame_queue_destroy(mq_frame_queue **q);

/// Decode thread: appends `f` (takes ownership, also on failure). Blocks while full until
/// there is room or `*cancel` becomes true (then returns MQ_ERR_CLOSED).
int mq_frame_queue_push(mq_frame_queue *q, mq_vframe *f, _Atomic bool *cancel);
/// Decode thread: frees everything queued.
void mq_frame_queue_flush(mq_frame_queue *q);

/// Copies the first `n` (≤ 2) entries' metadata; returns how many are queued.
int mq_frame_queue_peek(mq_frame_queue *q, mq_vframe *head, mq_vframe *next);
/// Removes the head if it is still `expected` (a flush may have raced); the caller owns *out
/// and must call mq_frame_queue_release once it is presented or freed.
bool mq_frame_queue_pop(mq_frame_queue *q, const AVFrame *expected, mq_vframe *out);
void mq_frame_queue_release(mq_frame_queue *q);

/// Video thread: sleeps until `deadline`, a kick, or (if `want_frames`) a frame arrives.
void mq_frame_queue_wait(mq_frame_queue *q, double deadline, bool want_frames);
/// Wakes the video thread (timeline changed, stop).
void mq_frame_queue_kick(mq_frame_queue *q);

/// Queued + in flight pictures, and the presentation time of the last queued one (NAN if none).
int mq_frame_queue_pending(mq_frame_queue *q, double *last_pts);

#endif
