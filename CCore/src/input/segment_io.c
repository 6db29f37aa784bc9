#include "input/segment_io.h"

#include <errno.h>

#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include <libavutil/error.h>
#include <libavutil/mem.h>

#include "core/clock.h"
#include "core/thread.h"
#include "input/segment_io_internal.h"
#include "mq_err.h"
#include "mq_player.h"

/// The byte queue's reader (segment_io.h): the decode thread's calls, and the AVIO context
/// through which a demuxer reads the queue. The queue itself is in byte_queue.c.

#define MQ_AVIO_BUFFER 32768

/* ---- decode thread ---- */

/// Starts reading the last init segment again: from a copy (see mq_inject). Decode thread
/// (never the audio thread), so it may allocate; without memory nothing is injected, and the
/// demuxer fails on the segment as it would without a kept init segment.
static void start_inject(mq_byte_queue *q)
{
    mq_inject *in = &q->inject;
    in->left = in->len = 0;
    if (q->init_len == 0)
        return;
    if (q->init_len > in->cap) {
        uint8_t *grown = realloc(in->data, q->init_len);
        if (!grown)
            return;
        in->data = grown;
        in->cap = q->init_len;
    }
    memcpy(in->data, q->init, q->init_len);
    in->len = in->left = q->init_len;
}

/// After a skip, an fMP4 segment is read after the last init segment unless it brings one (or
/// a new stream starts there): decided once its first bytes are here, since a skip often
/// reaches the last byte pushed while the next segment is still on its way.
static void resolve_inject(mq_byte_queue *q)
{
    if (!q->inject_due || q->read >= q->pushed)
        return;
    q->inject_due = false;
    bool init_next = (q->scan.nboundaries > 0 && q->scan.boundaries[0] == q->read) ||
                     (q->nstreams > 0 && q->streams[0].at == q->read);
    if (q->container == MQ_CONTAINER_FMP4 && !init_next)
        start_inject(q);
}

static mq_input_state state_locked(mq_byte_queue *q)
{
    resolve_inject(q);
    if (q->aborted)
        return MQ_INPUT_ABORTED;
    if (q->reset_pending)
        return MQ_INPUT_RESET;
    if (q->failed) // until a reset; a failed track has not ended unless its input has
        return q->ended ? MQ_INPUT_ENDED : (mq_input_state)-1;
    if (q->container == MQ_CONTAINER_PROBED && !q->ended) // a whole file: read once all of it is
        return (mq_input_state)-1;                        // here (its demuxer is told its size then)
    if (q->inject.left > 0)
        return MQ_INPUT_DATA;
    if ((q->scan.nboundaries > 0 && q->read == q->scan.boundaries[0]) ||
        (q->nstreams > 0 && q->read == q->streams[0].at))
        return MQ_INPUT_BOUNDARY;
    if (q->read == q->rollover_at && q->read < q->pushed)
        return MQ_INPUT_ROLLOVER;
    if (q->ndamage > 0 && q->read >= q->damage[0].from)
        return MQ_INPUT_CORRUPT;
    if (q->read < q->pushed)
        return MQ_INPUT_DATA;
    if (q->ended)
        return MQ_INPUT_ENDED;
    return -1; // nothing yet
}

mq_input_state mq_byte_queue_wait(mq_byte_queue *q)
{
    pthread_mutex_lock(&q->lock);
    int st;
    while ((st = (int)state_locked(q)) < 0)
        pthread_cond_wait(&q->cond, &q->lock);
    pthread_mutex_unlock(&q->lock);
    return (mq_input_state)st;
}

mq_input_state mq_byte_queue_state(mq_byte_queue *q)
{
    pthread_mutex_lock(&q->lock);
    int st = (int)state_locked(q);
    pthread_mutex_unlock(&q->lock);
    return st < 0 ? MQ_INPUT_DATA : (mq_input_state)st;
}

int mq_byte_queue_poll(mq_byte_queue *q)
{
    pthread_mutex_lock(&q->lock);
    int st = (int)state_locked(q);
    pthread_mutex_unlock(&q->lock);
    return st < 0 ? -1 : st;
}

mq_input_state mq_byte_queue_wait_reset(mq_byte_queue *q)
{
    pthread_mutex_lock(&q->lock);
    while (!q->aborted && !q->reset_pending)
        pthread_cond_wait(&q->cond, &q->lock);
    mq_input_state st = q->aborted ? MQ_INPUT_ABORTED : MQ_INPUT_RESET;
    pthread_mutex_unlock(&q->lock);
    return st;
}

void mq_byte_queue_ack_reset(mq_byte_queue *q)
{
    pthread_mutex_lock(&q->lock);
    q->reset_pending = false;
    atomic_store(&q->cancel, q->aborted);
    pthread_mutex_unlock(&q->lock);
}

/// Passes the stream starts before `at`: the last one's offset is due.
static void pass_streams_before(mq_byte_queue *q, int64_t at)
{
    int n = 0;
    while (n < q->nstreams && q->streams[n].at < at) {
        if (!isnan(q->streams[n].offset))
            q->due_offset = q->streams[n].offset;
        n++;
    }
    q->nstreams -= n;
    memmove(q->streams, q->streams + n, (size_t)q->nstreams * sizeof q->streams[0]);
}

double mq_byte_queue_take_offset(mq_byte_queue *q)
{
    pthread_mutex_lock(&q->lock);
    double offset = q->due_offset;
    q->due_offset = NAN;
    pthread_mutex_unlock(&q->lock);
    return offset;
}

/// Drops the first boundary when it lies before `at`.
static bool drop_boundary_before(mq_box_scan *s, int64_t at)
{
    if (s->nboundaries == 0 || s->boundaries[0] >= at)
        return false;
    s->nboundaries--;
    memmove(s->boundaries, s->boundaries + 1, (size_t)s->nboundaries * sizeof s->boundaries[0]);
    return true;
}

void mq_byte_queue_pass_boundary(mq_byte_queue *q)
{
    pthread_mutex_lock(&q->lock);
    drop_boundary_before(&q->scan, q->read + 1);
    pass_streams_before(q, q->read + 1);
    if (q->rollover_at == q->read) { // the new init segment opens a fresh demuxer anyway
        q->rollover_at = INT64_MAX;
        q->rollover_wanted = false;
    }
    pthread_mutex_unlock(&q->lock);
}

/// Discards the bytes before `to` (the reader moves there).
static void discard_to(mq_byte_queue *q, int64_t to)
{
    while (q->head && q->read < to) {
        mq_chunk_ref *c = q->head;
        size_t take = c->chunk->size - c->pos;
        if ((int64_t)take > to - q->read)
            take = (size_t)(to - q->read);
        c->pos += take;
        q->read += (int64_t)take;
        if (c->pos == c->chunk->size) {
            q->head = c->next;
            if (!q->head)
                q->tail = NULL;
            mq_chunk_release(c);
        }
    }
    while (drop_boundary_before(&q->scan, to)) {
    }
    pass_streams_before(q, to);
    if (q->rollover_at < to)
        q->rollover_at = INT64_MAX; // wanted still: at the next mark
    int keep = 0;
    for (int i = 0; i < q->nmarks; i++)
        if (q->marks[i] > to)
            q->marks[keep++] = q->marks[i];
    q->nmarks = keep;
}

/// The end of the segment holding stream offset `at` (INT64_MAX while it is not marked).
static int64_t segment_end(const mq_byte_queue *q, int64_t at)
{
    for (int i = 0; i < q->nmarks; i++)
        if (q->marks[i] > at)
            return q->marks[i];
    return INT64_MAX;
}

void mq_byte_queue_skip_segment(mq_byte_queue *q)
{
    pthread_mutex_lock(&q->lock);
    q->inject.left = 0;
    q->inject_due = false;
    if (q->ndamage == 0 || q->damage[0].from > q->read) { // the demuxer's finding: the segment it is in
        if (q->ndamage == MQ_MAX_DAMAGE)
            q->ndamage--;
        memmove(q->damage + 1, q->damage, (size_t)q->ndamage * sizeof q->damage[0]);
        q->damage[0] = (mq_damage){.from = q->read, .to = segment_end(q, q->read), .why = "the demuxer failed"};
        q->ndamage++;
    }
    while (q->damage[0].to == INT64_MAX && !q->aborted && !q->reset_pending && !q->ended)
        pthread_cond_wait(&q->cond, &q->lock);
    if (!q->aborted && !q->reset_pending) {
        int64_t to = q->damage[0].to == INT64_MAX ? q->pushed : q->damage[0].to; // ended: all of it
        discard_to(q, to);
        q->ndamage--;
        memmove(q->damage, q->damage + 1, (size_t)q->ndamage * sizeof q->damage[0]);
        q->inject_due = q->container == MQ_CONTAINER_FMP4; // (resolved when its bytes are here)
        resolve_inject(q);
    }
    pthread_mutex_unlock(&q->lock);
}

bool mq_byte_queue_request_rollover(mq_byte_queue *q)
{
    pthread_mutex_lock(&q->lock);
    bool can = q->container == MQ_CONTAINER_FMP4 && q->init_len > 0;
    if (can && !q->rollover_wanted) {
        q->rollover_wanted = true;
        q->rollover_at = segment_end(q, q->read);
    }
    pthread_mutex_unlock(&q->lock);
    return can;
}

void mq_byte_queue_pass_rollover(mq_byte_queue *q)
{
    pthread_mutex_lock(&q->lock);
    if (q->read == q->rollover_at) {
        q->rollover_at = INT64_MAX;
        q->rollover_wanted = false;
        start_inject(q);
    }
    pthread_mutex_unlock(&q->lock);
}

void mq_byte_queue_fail(mq_byte_queue *q)
{
    pthread_mutex_lock(&q->lock);
    q->failed = true;
    mq_byte_queue_free_chunks(q);
    q->read = q->pushed;
    q->inject.left = 0;
    q->inject_due = false;
    pthread_mutex_unlock(&q->lock);
}

_Atomic bool *mq_byte_queue_cancel_flag(mq_byte_queue *q)
{
    return &q->cancel;
}

bool mq_byte_queue_wait_while(mq_byte_queue *q, _Atomic bool *flag)
{
    pthread_mutex_lock(&q->lock);
    // Reset and abort set `cancel` and broadcast under the lock; mq_byte_queue_wake broadcasts
    // under it after `flag` is cleared: neither is missed between the test and the wait.
    while (atomic_load(flag) && !atomic_load(&q->cancel))
        pthread_cond_wait(&q->cond, &q->lock);
    bool cancelled = atomic_load(&q->cancel);
    pthread_mutex_unlock(&q->lock);
    return !cancelled;
}

bool mq_byte_queue_sleep(mq_byte_queue *q, double deadline)
{
    pthread_mutex_lock(&q->lock);
    while (!atomic_load(&q->cancel) && mq_clock_now() < deadline)
        if (mq_cond_wait_until(&q->cond, &q->lock, deadline) == ETIMEDOUT)
            break;
    bool cancelled = atomic_load(&q->cancel);
    pthread_mutex_unlock(&q->lock);
    return !cancelled;
}

void mq_byte_queue_wake(mq_byte_queue *q)
{
    pthread_mutex_lock(&q->lock);
    pthread_cond_broadcast(&q->cond);
    pthread_mutex_unlock(&q->lock);
}

const char *mq_byte_queue_corrupt_reason(mq_byte_queue *q)
{
    pthread_mutex_lock(&q->lock);
    const char *r = q->ndamage > 0 && q->damage[0].why ? q->damage[0].why : "";
    pthread_mutex_unlock(&q->lock);
    return r;
}

/* ---- AVIO ---- */

/// Copies up to `size` bytes (the init segment to inject first, then the queue's up to the
/// next boundary or damage) and frees consumed chunks.
static int copy_out(mq_byte_queue *q, uint8_t *buf, int size)
{
    int n = 0;
    mq_inject *in = &q->inject;
    if (in->left > 0) { // left <= len: both set only by start_inject
        n = in->left < (size_t)size ? (int)in->left : size;
        memcpy(buf, in->data + (in->len - in->left), (size_t)n);
        in->left -= (size_t)n;
        return n;
    }
    int64_t limit = q->scan.nboundaries > 0 ? q->scan.boundaries[0] : INT64_MAX;
    if (q->nstreams > 0 && q->streams[0].at < limit)
        limit = q->streams[0].at;
    if (q->rollover_at < limit)
        limit = q->rollover_at;
    if (q->ndamage > 0 && q->damage[0].from < limit)
        limit = q->damage[0].from;
    while (n < size && q->head && q->read < limit) {
        mq_chunk_ref *c = q->head;
        size_t take = c->chunk->size - c->pos;
        if ((int64_t)take > limit - q->read)
            take = (size_t)(limit - q->read);
        if (take > (size_t)(size - n))
            take = (size_t)(size - n);
        memcpy(buf + n, c->chunk->data + c->pos, take);
        c->pos += take;
        q->read += (int64_t)take;
        n += (int)take;
        if (c->pos == c->chunk->size) {
            q->head = c->next;
            if (!q->head)
                q->tail = NULL;
            mq_chunk_release(c);
        }
    }
    return n;
}

static int read_packet(void *opaque, uint8_t *buf, int size)
{
    mq_byte_queue *q = opaque;
    pthread_mutex_lock(&q->lock);
    int ret;
    for (;;) {
        int st = (int)state_locked(q);
        if (st == MQ_INPUT_DATA) {
            ret = copy_out(q, buf, size);
            break;
        }
        if (st == MQ_INPUT_CORRUPT) {
            ret = AVERROR_INVALIDDATA;
            break;
        }
        if (st >= 0) { // boundary, rollover, ended, reset, aborted
            ret = AVERROR_EOF;
            break;
        }
        pthread_cond_wait(&q->cond, &q->lock);
    }
    pthread_mutex_unlock(&q->lock);
    return ret;
}

/// The input is not seekable; only a probed file's size is told, once all of it was pushed
/// (an image demuxer reads a still whole by its size: without it, nothing).
static int64_t seek_packet(void *opaque, int64_t offset, int whence)
{
    (void)offset;
    mq_byte_queue *q = opaque;
    if (whence != AVSEEK_SIZE)
        return AVERROR(ENOSYS);
    pthread_mutex_lock(&q->lock);
    int64_t size = q->container == MQ_CONTAINER_PROBED && q->ended ? q->pushed : AVERROR(ENOSYS);
    pthread_mutex_unlock(&q->lock);
    return size;
}

int mq_segment_io_open(mq_byte_queue *q, AVIOContext **out)
{
    uint8_t *buf = av_malloc(MQ_AVIO_BUFFER);
    if (!buf)
        return MQ_ERR_NO_MEMORY;
    AVIOContext *pb = avio_alloc_context(buf, MQ_AVIO_BUFFER, 0, q, read_packet, NULL, seek_packet);
    if (!pb) {
        av_free(buf);
        return MQ_ERR_NO_MEMORY;
    }
    pb->seekable = 0;
    *out = pb;
    return MQ_OK;
}

void mq_segment_io_close(AVIOContext **pb)
{
    if (!pb || !*pb)
        return;
    av_freep(&(*pb)->buffer);
    avio_context_free(pb);
}

int mq_segment_io_interrupt(void *q)
{
    return atomic_load(&((mq_byte_queue *)q)->cancel) ? 1 : 0;
}
