#include "segment_io.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include <libavutil/error.h>
#include <libavutil/mem.h>

#include "mq_err.h"
#include "mq_player.h"

#define MQ_AVIO_BUFFER 32768
#define MQ_MAX_BOUNDARIES 16
#define MQ_MAX_BOX_SIZE ((int64_t)1 << 30)
#define MQ_TS_PACKET 188

typedef struct mq_chunk {
    struct mq_chunk *next;
    size_t size, pos;
    uint8_t data[];
} mq_chunk;

/// Top-level box scanner state (protected by the queue lock).
typedef struct mq_box_scan {
    int64_t next_box;  // stream offset of the next box header (INT64_MAX: last box runs to the end)
    int64_t box_start; // stream offset of the box being scanned
    int64_t corrupt_at; // the reader stops here with an error (INT64_MAX: stream sound)
    uint8_t hdr[16];
    int hdr_len;
    bool seen_media;   // a moof/mdat since the last init segment
    int64_t boundaries[MQ_MAX_BOUNDARIES];
    int nboundaries;
    const char *corrupt; // reason, NULL while the stream looks sound
} mq_box_scan;

struct mq_byte_queue {
    // immutable after create
    int sync_ok;
    // protected by lock
    pthread_mutex_t lock;
    pthread_cond_t cond;
    mq_chunk *head, *tail;
    int64_t pushed; // bytes pushed since the last reset (stream offset of the end)
    int64_t read;   // stream offset of the next byte to read
    int container;  // mq_container of the bytes
    bool ended, reset_pending, aborted, failed;
    mq_box_scan scan;
    // written under lock, read anywhere
    _Atomic bool cancel; // reset or abort pending
};

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

static void free_chunks(mq_byte_queue *q)
{
    while (q->head) {
        mq_chunk *c = q->head;
        q->head = c->next;
        free(c);
    }
    q->tail = NULL;
}

int mq_byte_queue_create(mq_byte_queue **out)
{
    mq_byte_queue *q = calloc(1, sizeof *q);
    if (!q)
        return MQ_ERR_NO_MEMORY;
    if (pthread_mutex_init(&q->lock, NULL) != 0)
        goto fail;
    q->sync_ok = 1;
    if (pthread_cond_init(&q->cond, NULL) != 0)
        goto fail;
    q->sync_ok = 2;
    scan_reset(&q->scan);
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
    free_chunks(q);
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
    static const char *const types[] = {"ftyp", "styp", "moov", "moof", "mdat", "sidx", "ssix",
                                        "emsg", "prft", "free", "skip", "meta", "mfra", "uuid",
                                        "pdin", "bloc", "udta", "wide", "pnot", "junk"};
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
        size = 0;
        for (int i = 8; i < 16; i++)
            size = (size << 8) | h[i];
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

int mq_byte_queue_push(mq_byte_queue *q, const uint8_t *data, size_t size)
{
    mq_chunk *c = malloc(sizeof *c + size);
    if (!c)
        return MQ_ERR_NO_MEMORY;
    memcpy(c->data, data, size);
    c->size = size;
    c->pos = 0;
    c->next = NULL;

    pthread_mutex_lock(&q->lock);
    int ret = q->ended ? MQ_ERR_CLOSED : MQ_OK;
    if (ret == MQ_OK && !q->failed && size > 0) {
        if (q->container == MQ_CONTAINER_MPEGTS)
            scan_ts(&q->scan, q->pushed, data, size);
        else
            scan_bytes(&q->scan, q->pushed, data, size);
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
    free(c);
    return ret;
}

int mq_byte_queue_end(mq_byte_queue *q)
{
    pthread_mutex_lock(&q->lock);
    q->ended = true;
    // A box that runs past the last byte: a segment was cut short.
    mq_box_scan *s = &q->scan;
    if (q->container == MQ_CONTAINER_MPEGTS) {
        if (!s->corrupt && s->next_box > q->pushed)
            scan_corrupt(s, s->box_start, "input ended inside a TS packet (truncated segment)");
    } else if (!s->corrupt && s->hdr_len > 0)
        scan_corrupt(s, s->next_box, "input ended inside a box header (truncated segment)");
    else if (!s->corrupt && s->next_box != INT64_MAX && s->next_box > q->pushed)
        scan_corrupt(s, s->box_start, "input ended inside a box (truncated segment)");
    pthread_cond_broadcast(&q->cond);
    pthread_mutex_unlock(&q->lock);
    return MQ_OK;
}

void mq_byte_queue_reset(mq_byte_queue *q)
{
    pthread_mutex_lock(&q->lock);
    free_chunks(q);
    q->pushed = q->read = 0;
    scan_reset(&q->scan);
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

/* ---- decode thread ---- */

static mq_input_state state_locked(mq_byte_queue *q)
{
    if (q->aborted)
        return MQ_INPUT_ABORTED;
    if (q->reset_pending)
        return MQ_INPUT_RESET;
    if (q->scan.nboundaries > 0 && q->read == q->scan.boundaries[0])
        return MQ_INPUT_BOUNDARY;
    if (q->read >= q->scan.corrupt_at && !q->failed)
        return MQ_INPUT_CORRUPT;
    if (q->read < q->pushed && !q->failed)
        return MQ_INPUT_DATA;
    if (q->ended || q->failed)
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

void mq_byte_queue_pass_boundary(mq_byte_queue *q)
{
    pthread_mutex_lock(&q->lock);
    if (q->scan.nboundaries > 0 && q->read == q->scan.boundaries[0]) {
        q->scan.nboundaries--;
        memmove(q->scan.boundaries, q->scan.boundaries + 1,
                (size_t)q->scan.nboundaries * sizeof q->scan.boundaries[0]);
    }
    pthread_mutex_unlock(&q->lock);
}

void mq_byte_queue_fail(mq_byte_queue *q)
{
    pthread_mutex_lock(&q->lock);
    q->failed = true;
    free_chunks(q);
    q->read = q->pushed;
    pthread_mutex_unlock(&q->lock);
}

_Atomic bool *mq_byte_queue_cancel_flag(mq_byte_queue *q)
{
    return &q->cancel;
}

const char *mq_byte_queue_corrupt_reason(mq_byte_queue *q)
{
    pthread_mutex_lock(&q->lock);
    const char *r = q->scan.corrupt ? q->scan.corrupt : "";
    pthread_mutex_unlock(&q->lock);
    return r;
}

/* ---- AVIO ---- */

/// Copies up to `size` bytes (not past the next boundary) and frees consumed chunks.
static int copy_out(mq_byte_queue *q, uint8_t *buf, int size)
{
    int64_t limit = q->scan.nboundaries > 0 ? q->scan.boundaries[0] : INT64_MAX;
    if (q->scan.corrupt_at < limit)
        limit = q->scan.corrupt_at;
    int n = 0;
    while (n < size && q->head && q->read < limit) {
        mq_chunk *c = q->head;
        size_t take = c->size - c->pos;
        if ((int64_t)take > limit - q->read)
            take = (size_t)(limit - q->read);
        if (take > (size_t)(size - n))
            take = (size_t)(size - n);
        memcpy(buf + n, c->data + c->pos, take);
        c->pos += take;
        q->read += (int64_t)take;
        n += (int)take;
        if (c->pos == c->size) {
            q->head = c->next;
            if (!q->head)
                q->tail = NULL;
            free(c);
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
        if (st >= 0) { // boundary, ended, reset, aborted
            ret = AVERROR_EOF;
            break;
        }
        pthread_cond_wait(&q->cond, &q->lock);
    }
    pthread_mutex_unlock(&q->lock);
    return ret;
}

int mq_segment_io_open(mq_byte_queue *q, AVIOContext **out)
{
    uint8_t *buf = av_malloc(MQ_AVIO_BUFFER);
    if (!buf)
        return MQ_ERR_NO_MEMORY;
    AVIOContext *pb = avio_alloc_context(buf, MQ_AVIO_BUFFER, 0, q, read_packet, NULL, NULL);
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
