#include "input/segment_io.h"

#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include <libavutil/error.h>
#include <libavutil/mem.h>

#include "mq_err.h"
#include "mq_player.h"

#define MQ_AVIO_BUFFER 32768
#define MQ_MAX_BOUNDARIES 16
#define MQ_MAX_MARKS 32
#define MQ_MAX_DAMAGE 8
#define MQ_MAX_INIT ((size_t)4 << 20)
#define MQ_MAX_BOX_SIZE ((int64_t)1 << 30)
#define MQ_TS_PACKET 188

typedef struct mq_chunk {
    struct mq_chunk *next;
    size_t size, pos;
    uint8_t data[];
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
    mq_chunk *head, *tail;
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
    free_chunks(q);
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
    free(c);
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
    free_chunks(q);
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
        mq_chunk *c = q->head;
        size_t take = c->size - c->pos;
        if ((int64_t)take > to - q->read)
            take = (size_t)(to - q->read);
        c->pos += take;
        q->read += (int64_t)take;
        if (c->pos == c->size) {
            q->head = c->next;
            if (!q->head)
                q->tail = NULL;
            free(c);
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
    free_chunks(q);
    q->read = q->pushed;
    q->inject.left = 0;
    q->inject_due = false;
    pthread_mutex_unlock(&q->lock);
}

_Atomic bool *mq_byte_queue_cancel_flag(mq_byte_queue *q)
{
    return &q->cancel;
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
