#include "core/clock.h"

#include <math.h>
#include <time.h>

#include "mq_player.h"

double mq_clock_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

void mq_seq3_init(mq_seq3 *s, double a, double b, double c)
{
    atomic_init(&s->seq, 0);
    atomic_init(&s->a, a);
    atomic_init(&s->b, b);
    atomic_init(&s->c, c);
}

void mq_seq3_store(mq_seq3 *s, double a, double b, double c)
{
    uint32_t seq = atomic_load_explicit(&s->seq, memory_order_relaxed);
    atomic_store_explicit(&s->seq, seq + 1, memory_order_relaxed);
    atomic_thread_fence(memory_order_release);
    atomic_store_explicit(&s->a, a, memory_order_relaxed);
    atomic_store_explicit(&s->b, b, memory_order_relaxed);
    atomic_store_explicit(&s->c, c, memory_order_relaxed);
    atomic_store_explicit(&s->seq, seq + 2, memory_order_release);
}

void mq_seq3_load(const mq_seq3 *s, double *a, double *b, double *c)
{
    mq_seq3 *m = (mq_seq3 *)s; // C11 atomic loads take non-const pointers
    uint32_t s1, s2;
    do {
        s1 = atomic_load_explicit(&m->seq, memory_order_acquire);
        *a = atomic_load_explicit(&m->a, memory_order_relaxed);
        *b = atomic_load_explicit(&m->b, memory_order_relaxed);
        *c = atomic_load_explicit(&m->c, memory_order_relaxed);
        atomic_thread_fence(memory_order_acquire);
        s2 = atomic_load_explicit(&m->seq, memory_order_relaxed);
    } while ((s1 & 1u) || s1 != s2);
}

void mq_clock_init(mq_clock *c)
{
    mq_seq3_init(&c->timeline, NAN, NAN, 1.0);
    mq_seq3_init(&c->audio, 0, 0, 0);
    atomic_init(&c->jumps, 0);
    atomic_init(&c->moves, 0);
}

void mq_clock_set_timeline(mq_clock *c, double mono_anchor, double media_anchor, double rate)
{
    double mono = mq_clock_now(), before = NAN;
    bool had = mq_clock_schedule(c, mono, &before);
    mq_seq3_store(&c->timeline, mono_anchor, media_anchor, rate);
    double after = media_anchor + (mono - mono_anchor) * rate;
    if (!had || fabs(after - before) > MQ_CLOCK_JUMP)
        atomic_fetch_add(&c->jumps, 1);
    if (!had || fabs(after - before) >= MQ_CLOCK_MOVE)
        atomic_fetch_add(&c->moves, 1);
}

uint32_t mq_clock_moves(const mq_clock *c)
{
    return atomic_load(&((mq_clock *)c)->moves);
}

uint32_t mq_clock_jumps(const mq_clock *c)
{
    return atomic_load(&((mq_clock *)c)->jumps);
}

bool mq_clock_schedule(const mq_clock *c, double mono, double *media)
{
    double anchor, media_anchor, rate;
    mq_seq3_load(&c->timeline, &anchor, &media_anchor, &rate);
    if (isnan(anchor))
        return false;
    *media = media_anchor + (mono - anchor) * rate;
    return true;
}

double mq_clock_rate(const mq_clock *c)
{
    double anchor, media_anchor, rate;
    mq_seq3_load(&c->timeline, &anchor, &media_anchor, &rate);
    return isnan(anchor) ? 1.0 : rate;
}

bool mq_clock_audio(const mq_clock *c, double mono, double *media)
{
    double heard_mono, heard_media, valid;
    mq_seq3_load(&c->audio, &heard_mono, &heard_media, &valid);
    if (valid != (double)mq_clock_jumps(c) + 1) // none (0), or heard before a jump
        return false;
    *media = heard_media + (mono - heard_mono) * mq_clock_rate(c);
    return true;
}

bool mq_clock_master(const mq_clock *c, double mono, double *media)
{
    return mq_clock_audio(c, mono, media) || mq_clock_schedule(c, mono, media);
}

void mq_clock_publish_audio(mq_clock *c, double mono, double media, uint32_t jumps)
{
    mq_seq3_store(&c->audio, mono, media, (double)jumps + 1);
}

void mq_clock_invalidate_audio(mq_clock *c)
{
    double a, b, valid;
    mq_seq3_load(&c->audio, &a, &b, &valid);
    if (valid != 0)
        mq_seq3_store(&c->audio, 0, 0, 0);
}
