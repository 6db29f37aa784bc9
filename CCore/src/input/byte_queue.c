#include "input/segment_io.h"

#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/thread.h"
#include "input/segment_io_internal.h"
#include "mq_err.h"
#include "mq_player.h"

/// The byte queue (segment_io.h): chunks as pushed, the top-level box / TS packet scanner that
/// finds init segments and damage as bytes arrive, and the controlling thread's calls. The
/// decode thread's side is in segment_io.c.

#define MQ_MAX_INIT ((size_t)4 << 20)
#define MQ_MAX_BOX_SIZE ((int64_t)1 << 30)
#define MQ_TS_PACKET 188

static void scan_reset(mq_box_scan *s)
{
    memset(s, 0, sizeof *s);
    s->corrupt_at = INT64_MAX;
}

static void scan_corrupt(mq_box_scan *s, int64_t at, const char *why)
{
    s->corrupt = why;
    s->corrupt_at = at;
}

/// Records the scanner's finding as damage (it stops scanning until the segment's end).
static void note_damage(mq_byte_queue *q)
{
    mq_box_scan *s = &q->scan;
    if (!s->corrupt || s->corrupt_at == INT64_MAX)
        return;
    if (q->ndamage > 0 && q->damage[q->ndamage - 1].to == INT64_MAX)
        return;                        // already open
    if (q->ndamage == MQ_MAX_DAMAGE) { // merge into the last: skipped as one
        q->damage[q->ndamage - 1].to = INT64_MAX;
        return;
    }
    q->damage[q->ndamage++] = (mq_damage){.from = s->corrupt_at, .to = INT64_MAX, .why = s->corrupt};
    s->corrupt_at = INT64_MAX; // the damage list holds it now
}

void mq_chunk_release(mq_chunk_ref *r)
{
    mq_chunk *c = r->chunk;
    if (atomic_fetch_sub_explicit(&c->users, 1, memory_order_acq_rel) == 1)
        free(c);
}

void mq_byte_queue_free_chunks(mq_byte_queue *q)
{
    while (q->head) {
        mq_chunk_ref *c = q->head;
        q->head = c->next;
        mq_chunk_release(c);
    }
    q->tail = NULL;
}

mq_chunk *mq_chunk_create(const uint8_t *data, size_t size, int users)
{
    if (users < 1 || size > SIZE_MAX / 2)
        return NULL;
    mq_chunk *c = malloc(sizeof *c + (size_t)users * sizeof(mq_chunk_ref) + size);
    if (!c)
        return NULL;
    atomic_init(&c->users, users);
    c->size = size;
    uint8_t *bytes = (uint8_t *)&c->ref[users];
    memcpy(bytes, data, size);
    c->data = bytes;
    for (int i = 0; i < users; i++)
        c->ref[i] = (mq_chunk_ref){.next = NULL, .chunk = c, .pos = 0};
    return c;
}

int mq_byte_queue_create(mq_byte_queue **out)
{
    mq_byte_queue *q = calloc(1, sizeof *q);
    if (!q)
        return MQ_ERR_NO_MEMORY;
    if (pthread_mutex_init(&q->lock, NULL) != 0)
        goto fail;
    q->sync_ok = 1;
    if (mq_cond_init_mono(&q->cond) != MQ_OK) // (timed waits: mq_byte_queue_sleep)
        goto fail;
    q->sync_ok = 2;
    scan_reset(&q->scan);
    q->rollover_at = INT64_MAX;
    q->due_offset = NAN;
    *out = q;
    return MQ_OK;
fail:
    mq_byte_queue_destroy(&q);
    return MQ_ERR_NO_MEMORY;
}

void mq_byte_queue_destroy(mq_byte_queue **pq)
{
    mq_byte_queue *q = pq ? *pq : NULL;
    if (!q)
        return;
    mq_byte_queue_free_chunks(q);
    free(q->init);
    free(q->inject.data);
    if (q->sync_ok >= 1)
        pthread_mutex_destroy(&q->lock);
    if (q->sync_ok >= 2)
        pthread_cond_destroy(&q->cond);
    free(q);
    *pq = NULL;
}

/* ---- box scanner ---- */

static bool known_top_level(const uint8_t *t)
{
    static const char *const types[] = {"ftyp", "styp", "moov", "moof", "mdat", "sidx", "ssix", "emsg", "prft", "free",
                                        "skip", "meta", "mfra", "uuid", "pdin", "bloc", "udta", "wide", "pnot", "junk"};
    for (size_t i = 0; i < sizeof types / sizeof types[0]; i++)
        if (memcmp(t, types[i], 4) == 0)
            return true;
    for (int i = 0; i < 4; i++) // tolerate other lower-case alphanumeric types
        if (!((t[i] >= 'a' && t[i] <= 'z') || (t[i] >= '0' && t[i] <= '9')))
            return false;
    return true;
}

static void scan_box(mq_box_scan *s, int64_t at, int64_t size)
{
    const uint8_t *type = s->hdr + 4;
    bool init = memcmp(type, "ftyp", 4) == 0 || memcmp(type, "moov", 4) == 0;
    if (init && s->seen_media && at > 0 && s->nboundaries < MQ_MAX_BOUNDARIES)
        s->boundaries[s->nboundaries++] = at;
    if (init)
        s->seen_media = false;
    if (memcmp(type, "moof", 4) == 0 || memcmp(type, "mdat", 4) == 0)
        s->seen_media = true;
    s->box_start = at;
    s->next_box = size == 0 ? INT64_MAX : at + size;
}

/// Parses a complete header in s->hdr; returns false while more header bytes are needed.
static bool scan_header(mq_box_scan *s)
{
    if (s->hdr_len < 8)
        return false;
    const uint8_t *h = s->hdr;
    int64_t size = ((int64_t)h[0] << 24) | (h[1] << 16) | (h[2] << 8) | h[3];
    if (size == 1) {
        if (s->hdr_len < 16)
            return false;
        uint64_t large = 0; // unsigned: a hostile largesize may use all 64 bits
        for (int i = 8; i < 16; i++)
            large = (large << 8) | h[i];
        size = large > (uint64_t)MQ_MAX_BOX_SIZE ? MQ_MAX_BOX_SIZE + 1 : (int64_t)large;
    }
    if (!known_top_level(h + 4))
        scan_corrupt(s, s->next_box, "not an ISO BMFF (fMP4) stream");
    else if ((size != 0 && size < 8) || size > MQ_MAX_BOX_SIZE)
        scan_corrupt(s, s->next_box, "implausible box size");
    else
        scan_box(s, s->next_box, size);
    return true;
}

/// Feeds the bytes at stream offsets [start, start + size) to the scanner.
static void scan_bytes(mq_box_scan *s, int64_t start, const uint8_t *data, size_t size)
{
    int64_t end = start + (int64_t)size;
    while (!s->corrupt && s->next_box < end) {
        int64_t at = s->next_box + s->hdr_len;
        while (s->hdr_len < 16 && at < end)
            s->hdr[s->hdr_len++] = data[at++ - start];
        if (!scan_header(s)) {
            if (at >= end)
                return;
            continue;
        }
        s->hdr_len = 0;
    }
}

/// MPEG-TS: checks the sync byte of each packet that starts in [start, start + size);
/// `next_box` is the offset of the next packet.
static void scan_ts(mq_box_scan *s, int64_t start, const uint8_t *data, size_t size)
{
    int64_t end = start + (int64_t)size;
    for (; !s->corrupt && s->next_box < end; s->next_box += MQ_TS_PACKET) {
        if (data[s->next_box - start] != 0x47) {
            scan_corrupt(s, s->next_box, "not an MPEG-TS stream (no sync byte where a packet starts)");
            return;
        }
        s->box_start = s->next_box;
    }
}

/* ---- controlling thread ---- */

int mq_byte_queue_set_container(mq_byte_queue *q, int container)
{
    pthread_mutex_lock(&q->lock);
    int ret = q->pushed > 0 ? MQ_ERR_STATE : MQ_OK;
    if (ret == MQ_OK)
        q->container = container;
    pthread_mutex_unlock(&q->lock);
    return ret;
}

int mq_byte_queue_container(mq_byte_queue *q)
{
    pthread_mutex_lock(&q->lock);
    int container = q->container;
    pthread_mutex_unlock(&q->lock);
    return container;
}

mq_chunk_ref *mq_chunk_place(mq_chunk *c, int i)
{
    return &c->ref[i];
}

int mq_byte_queue_push(mq_byte_queue *q, const uint8_t *data, size_t size)
{
    mq_chunk *c = mq_chunk_create(data, size, 1);
    return c ? mq_byte_queue_push_ref(q, &c->ref[0]) : MQ_ERR_NO_MEMORY;
}

int mq_byte_queue_push_ref(mq_byte_queue *q, mq_chunk_ref *c)
{
    const uint8_t *data = c->chunk->data;
    size_t size = c->chunk->size;
    pthread_mutex_lock(&q->lock);
    int ret = q->ended ? MQ_ERR_CLOSED : MQ_OK;
    if (ret == MQ_OK && !q->failed && size > 0) {
        if (q->container == MQ_CONTAINER_MPEGTS)
            scan_ts(&q->scan, q->pushed, data, size);
        else if (q->container == MQ_CONTAINER_FMP4)
            scan_bytes(&q->scan, q->pushed, data, size); // (a probed file is not scanned)
        note_damage(q);
        q->pushed += (int64_t)size;
        if (q->tail)
            q->tail->next = c;
        else
            q->head = c;
        q->tail = c;
        c = NULL;
        pthread_cond_broadcast(&q->cond);
    }
    pthread_mutex_unlock(&q->lock);
    if (c)
        mq_chunk_release(c);
    return ret;
}

int mq_byte_queue_push_init(mq_byte_queue *q, const uint8_t *data, size_t size)
{
    pthread_mutex_lock(&q->lock);
    if (size <= MQ_MAX_INIT && size > q->init_cap) {
        uint8_t *grown = realloc(q->init, size);
        if (grown) {
            q->init = grown;
            q->init_cap = size;
        }
    }
    bool kept = size > 0 && size <= q->init_cap; // (an empty one: init may still be NULL)
    if (kept)
        memcpy(q->init, data, size);
    q->init_len = kept ? size : 0; // none is better than a stale one
    pthread_mutex_unlock(&q->lock);
    return mq_byte_queue_push(q, data, size);
}

/// A box or TS packet running past the last byte pushed: the input was cut short there.
static void check_cut(mq_byte_queue *q)
{
    mq_box_scan *s = &q->scan;
    if (s->corrupt)
        return;
    if (q->container == MQ_CONTAINER_PROBED)
        return;
    if (q->container == MQ_CONTAINER_MPEGTS) {
        if (s->next_box > q->pushed)
            scan_corrupt(s, s->box_start, "input ended inside a TS packet (truncated segment)");
    } else if (s->hdr_len > 0)
        scan_corrupt(s, s->next_box, "input ended inside a box header (truncated segment)");
    else if (s->next_box != INT64_MAX && s->next_box > q->pushed)
        scan_corrupt(s, s->box_start, "input ended inside a box (truncated segment)");
    note_damage(q);
}

int mq_byte_queue_end_segment(mq_byte_queue *q)
{
    pthread_mutex_lock(&q->lock);
    int ret = q->ended ? MQ_ERR_CLOSED : MQ_OK;
    if (ret == MQ_OK && !q->failed && (q->nmarks == 0 || q->marks[q->nmarks - 1] < q->pushed)) {
        check_cut(q);
        if (q->ndamage > 0 && q->damage[q->ndamage - 1].to == INT64_MAX)
            q->damage[q->ndamage - 1].to = q->pushed;
        if (q->scan.corrupt) { // scan the next segment afresh (an init there is a boundary)
            scan_reset(&q->scan);
            q->scan.next_box = q->pushed;
            q->scan.box_start = q->pushed;
            q->scan.seen_media = true;
        }
        if (q->nmarks == MQ_MAX_MARKS) // far more segments queued than a buffer holds
            memmove(q->marks, q->marks + 1, (MQ_MAX_MARKS - 1) * sizeof q->marks[0]), q->nmarks--;
        q->marks[q->nmarks++] = q->pushed;
        if (q->rollover_wanted && q->rollover_at == INT64_MAX)
            q->rollover_at = q->pushed;
        pthread_cond_broadcast(&q->cond);
    }
    pthread_mutex_unlock(&q->lock);
    return ret;
}

int mq_byte_queue_end(mq_byte_queue *q)
{
    pthread_mutex_lock(&q->lock);
    q->ended = true;
    check_cut(q);
    pthread_cond_broadcast(&q->cond);
    pthread_mutex_unlock(&q->lock);
    return MQ_OK;
}

int mq_byte_queue_mark_stream(mq_byte_queue *q, double offset)
{
    pthread_mutex_lock(&q->lock);
    int ret = q->ended ? MQ_ERR_CLOSED : MQ_OK;
    if (ret == MQ_OK && !q->failed) {
        if (q->nstreams > 0 && q->streams[q->nstreams - 1].at == q->pushed)
            q->streams[q->nstreams - 1].offset = offset; // nothing between two marks: the last counts
        else if (q->nstreams == MQ_MAX_BOUNDARIES)
            ret = MQ_ERR_STATE;
        else
            q->streams[q->nstreams++].at = q->pushed, q->streams[q->nstreams - 1].offset = offset;
        pthread_cond_broadcast(&q->cond); // a reader waiting at the end stops there
    }
    pthread_mutex_unlock(&q->lock);
    return ret;
}

bool mq_byte_queue_set_stream_offset(mq_byte_queue *q, double offset)
{
    pthread_mutex_lock(&q->lock);
    bool pending = q->nstreams > 0;
    if (pending)
        q->streams[q->nstreams - 1].offset = offset;
    else if (!isnan(q->due_offset))
        q->due_offset = offset;
    pthread_mutex_unlock(&q->lock);
    return pending;
}

void mq_byte_queue_reset(mq_byte_queue *q)
{
    pthread_mutex_lock(&q->lock);
    mq_byte_queue_free_chunks(q);
    q->pushed = q->read = 0;
    q->nstreams = 0;
    q->due_offset = NAN;
    scan_reset(&q->scan);
    q->nmarks = q->ndamage = 0;
    q->init_len = q->inject.left = 0;
    q->inject_due = false;
    q->rollover_at = INT64_MAX;
    q->rollover_wanted = false;
    q->ended = q->failed = false;
    q->reset_pending = true;
    atomic_store(&q->cancel, true);
    pthread_cond_broadcast(&q->cond);
    pthread_mutex_unlock(&q->lock);
}

void mq_byte_queue_abort(mq_byte_queue *q)
{
    pthread_mutex_lock(&q->lock);
    q->aborted = true;
    atomic_store(&q->cancel, true);
    pthread_cond_broadcast(&q->cond);
    pthread_mutex_unlock(&q->lock);
}
