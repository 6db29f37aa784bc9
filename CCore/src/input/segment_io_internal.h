#ifndef MQ_SEGMENT_IO_INTERNAL_H
#define MQ_SEGMENT_IO_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "input/segment_io.h"

/// The byte queue's insides, shared by byte_queue.c (the queue: chunks pushed, the box and
/// packet scanner, the controlling thread's calls) and segment_io.c (the decode thread's reader
/// and the AVIO context on it).

#define MQ_MAX_BOUNDARIES 16
#define MQ_MAX_MARKS 32
#define MQ_MAX_DAMAGE 8

/// A queue's place in a chunk: its link in the queue and how far it has read.
typedef struct mq_chunk_ref {
    struct mq_chunk_ref *next;
    struct mq_chunk *chunk;
    size_t pos;
} mq_chunk_ref;

/// Bytes pushed, one copy for every queue they were pushed to (a muxed transport stream's audio
/// and video tracks read the same segments: `mq_player_push_shared`), each queue with its own
/// `ref`; immutable once made, freed by the last queue done with it (`users`, atomic: the
/// queues' decode threads release it).
typedef struct mq_chunk {
    atomic_int users;
    size_t size;
    const uint8_t *data; // after ref[]
    mq_chunk_ref ref[];
} mq_chunk;

/// Top-level box scanner state (protected by the queue lock).
typedef struct mq_box_scan {
    int64_t next_box;   // stream offset of the next box header (INT64_MAX: last box runs to the end)
    int64_t box_start;  // stream offset of the box being scanned
    int64_t corrupt_at; // the reader stops here with an error (INT64_MAX: stream sound)
    uint8_t hdr[16];
    int hdr_len;
    bool seen_media; // a moof/mdat since the last init segment
    int64_t boundaries[MQ_MAX_BOUNDARIES];
    int nboundaries;
    const char *corrupt; // reason, NULL while the stream looks sound
} mq_box_scan;

/// A damaged stretch of input: [from, to), `to` the end of the segment it is in (INT64_MAX until
/// that segment's end is marked). The reader stops at `from`; the decode thread skips to `to`.
typedef struct mq_damage {
    int64_t from, to;
    const char *why;
} mq_damage;

/// The init segment being read again ahead of a segment: the injection's own copy, taken when it
/// starts, so an init pushed meanwhile (a rendition switch: smaller, larger, or over the size
/// kept) never changes the bytes or the length under the reader. `data` is kept for the next one.
typedef struct mq_inject {
    uint8_t *data;
    size_t len, cap;
    size_t left; // bytes of `data` still to be read (0: no injection under way)
} mq_inject;

struct mq_byte_queue {
    // immutable after create
    int sync_ok;
    // protected by lock
    pthread_mutex_t lock;
    pthread_cond_t cond;
    mq_chunk_ref *head, *tail;
    int64_t pushed; // bytes pushed since the last reset (stream offset of the end)
    int64_t read;   // stream offset of the next byte to read
    int container;  // mq_container of the bytes
    bool ended, reset_pending, aborted, failed;
    mq_box_scan scan;
    int64_t marks[MQ_MAX_MARKS]; // segment ends not yet read past (mq_byte_queue_end_segment)
    int nmarks;
    mq_damage damage[MQ_MAX_DAMAGE]; // in stream order
    int ndamage;
    uint8_t *init; // the last init segment pushed (mq_byte_queue_push_init), for a resync
    size_t init_len, init_cap;
    mq_inject inject; // read before the bytes at `read` (after a skip or at a rollover)
    bool inject_due;  // a skip reached the last byte pushed: inject when the next segment comes
    struct {
        int64_t at;
        double offset;
    } streams[MQ_MAX_BOUNDARIES]; // discontinuities not yet read past
    int nstreams;
    double due_offset;    // the offset of the last stream start passed, until taken (NAN: none)
    int64_t rollover_at;  // the reader stops here for a fresh demuxer (INT64_MAX: not asked)
    bool rollover_wanted; // asked for, at the next segment end marked
    // written under lock, read anywhere
    _Atomic bool cancel; // reset or abort pending
};

/// byte_queue.c
void mq_byte_queue_free_chunks(mq_byte_queue *q);
/// A queue is done with `r`'s chunk (the last one frees it).
void mq_chunk_release(mq_chunk_ref *r);

#endif
