#ifndef MQ_SEGMENT_IO_H
#define MQ_SEGMENT_IO_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <libavformat/avio.h>

/// A track's input: the bytes pushed by the controlling thread, read by the track's decode
/// thread through a custom AVIOContext whose read blocks until bytes arrive.
///
/// A light ISO BMFF box scanner runs over the pushed bytes: it rejects garbage at once (a box
/// header no fMP4 stream has), notices a segment cut short at its end (or the input's), and
/// marks a new init segment (ftyp/moov after media) as a session boundary: the reader gets EOF
/// there and the decode thread reopens the demuxer on the new init segment without a gap.
/// Damage (what the scanner or the demuxer found bad) costs only its segment: the reader stops
/// there, the decode thread skips to the segment's end and reopens the demuxer on the last init
/// segment followed by the next segment.
typedef struct mq_byte_queue mq_byte_queue;

/// Why the reader stopped (or may go on).
typedef enum mq_input_state {
    MQ_INPUT_DATA = 0,     ///< Bytes are waiting.
    MQ_INPUT_BOUNDARY = 1, ///< The reader is at a new init segment.
    MQ_INPUT_ENDED = 2,    ///< Input ended and everything was read.
    MQ_INPUT_RESET = 3,    ///< A reset is pending (acknowledge with mq_byte_queue_ack_reset).
    MQ_INPUT_CORRUPT = 4,  ///< The bytes are not an fMP4 stream (or a segment was cut short).
    MQ_INPUT_ABORTED = 5,  ///< The player is stopping.
    MQ_INPUT_ROLLOVER = 6, ///< The reader is at the segment where a fresh demuxer was asked for.
} mq_input_state;

int mq_byte_queue_create(mq_byte_queue **out);
void mq_byte_queue_destroy(mq_byte_queue **q);

/// Controlling thread: what the bytes are (`mq_container`), before any is pushed since the
/// creation or the last reset (else MQ_ERR_STATE). MPEG-TS input is checked packet by packet
/// (a sync byte every 188) and has no boundaries.
int mq_byte_queue_set_container(mq_byte_queue *q, int container);
/// Decode thread: the container of the bytes being read.
int mq_byte_queue_container(mq_byte_queue *q);

/// Controlling thread. Copies the bytes (dropped while the track is failed).
int mq_byte_queue_push(mq_byte_queue *q, const uint8_t *data, size_t size);
typedef struct mq_chunk mq_chunk;
typedef struct mq_chunk_ref mq_chunk_ref;
/// A copy of `size` bytes at `data` for `users` queues (each pushes its `ref[i]`); NULL when out
/// of memory.
mq_chunk *mq_chunk_create(const uint8_t *data, size_t size, int users);
/// The place of user `i` (< users) in `c`.
mq_chunk_ref *mq_chunk_place(mq_chunk *c, int i);
/// Controlling thread: appends the chunk `c` is a place in (as `mq_byte_queue_push`, without a
/// copy); the queue is done with it when refused or dropped.
int mq_byte_queue_push_ref(mq_byte_queue *q, mq_chunk_ref *c);
/// Controlling thread: pushes an init segment and keeps a copy (the last one pushed), read again
/// before the segment after a damaged one.
int mq_byte_queue_push_init(mq_byte_queue *q, const uint8_t *data, size_t size);
/// Controlling thread: the bytes pushed so far end a segment. A box or TS packet cut short
/// there marks the segment damaged; the scanner starts afresh after a damaged segment.
int mq_byte_queue_end_segment(mq_byte_queue *q);
/// Controlling thread: the bytes pushed next begin a new stream (a discontinuity): the reader
/// stops here (MQ_INPUT_BOUNDARY, as at a new init segment) and `offset` (NAN: unchanged) is due
/// when it passes. MQ_ERR_STATE when too many are waiting.
int mq_byte_queue_mark_stream(mq_byte_queue *q, double offset);
/// Controlling thread: gives the last stream start not yet passed `offset` (true), or changes
/// the offset due but not yet taken (false: none pending, the caller applies it at once too).
bool mq_byte_queue_set_stream_offset(mq_byte_queue *q, double offset);
/// Decode thread: the offset of the stream starts passed since the last call (NAN: none).
double mq_byte_queue_take_offset(mq_byte_queue *q);
int mq_byte_queue_end(mq_byte_queue *q);
void mq_byte_queue_reset(mq_byte_queue *q);
void mq_byte_queue_abort(mq_byte_queue *q);

/// Decode thread. Blocks until the state is not "nothing yet", then returns it.
mq_input_state mq_byte_queue_wait(mq_byte_queue *q);
/// Decode thread: blocks until a reset or abort is pending (after the end or a failure).
mq_input_state mq_byte_queue_wait_reset(mq_byte_queue *q);
/// Decode thread: the state without blocking.
mq_input_state mq_byte_queue_state(mq_byte_queue *q);
/// Decode thread: the state, or -1 while nothing can be read yet (a read would block): lets the
/// fuzz harness read from the thread that pushes.
int mq_byte_queue_poll(mq_byte_queue *q);
/// Decode thread: acknowledges a reset; bytes pushed after it are kept.
void mq_byte_queue_ack_reset(mq_byte_queue *q);
/// Decode thread: steps over the boundary the reader stopped at.
void mq_byte_queue_pass_boundary(mq_byte_queue *q);
/// Decode thread: the stream is unusable; drop bytes until the next reset (not an end: the
/// track ends only when its input does).
void mq_byte_queue_fail(mq_byte_queue *q);
/// Decode thread: the segment being read (or the damage the reader stopped at) is bad: waits
/// until its end is marked (or a reset, an abort, the end), drops it, and has the reader go on
/// at the next segment, after the last init segment (fMP4) unless that segment brings its own.
void mq_byte_queue_skip_segment(mq_byte_queue *q);
/// Decode thread: asks for a fresh demuxer session at the next segment start (a long-lived
/// fMP4 demuxer keeps an index entry per sample it ever read): the reader stops there with
/// MQ_INPUT_ROLLOVER. False when it cannot be done (MPEG-TS, no init segment kept).
bool mq_byte_queue_request_rollover(mq_byte_queue *q);
/// Decode thread: steps over the rollover point; the init segment is read again first.
void mq_byte_queue_pass_rollover(mq_byte_queue *q);
/// True while a reset or abort is pending: blocking producers give up.
_Atomic bool *mq_byte_queue_cancel_flag(mq_byte_queue *q);
/// Decode thread: sleeps on the queue's condition while `*flag` stays true and no reset or abort
/// is pending (a staged track's hold until its activation). False when a reset or abort ended
/// the wait. Whoever clears `flag` calls mq_byte_queue_wake.
bool mq_byte_queue_wait_while(mq_byte_queue *q, _Atomic bool *flag);
/// Decode thread: sleeps until `deadline` (mq_clock_now seconds) unless a reset or abort is
/// pending or comes meanwhile (the queue's condition is broadcast then). False when one is.
bool mq_byte_queue_sleep(mq_byte_queue *q, double deadline);
/// Wakes the threads sleeping on the queue (its condition) to look again at what they wait for.
void mq_byte_queue_wake(mq_byte_queue *q);
/// A short description of what made the input corrupt ("" if not).
const char *mq_byte_queue_corrupt_reason(mq_byte_queue *q);

/// Opens an AVIOContext reading `q` (not seekable). Its read never returns 0: AVERROR_EOF at a
/// boundary, at the end, on reset or abort.
int mq_segment_io_open(mq_byte_queue *q, AVIOContext **out);
void mq_segment_io_close(AVIOContext **pb);
/// For AVFormatContext.interrupt_callback: 1 when a reset or abort is pending.
int mq_segment_io_interrupt(void *q);

#endif
