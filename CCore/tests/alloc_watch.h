// Counts the allocations one thread makes: malloc & co. are interposed for the whole process
// (shared libraries included) and every call made on the watched thread is counted. Shared by
// the allocation tests (audio_alloc_test.c, mixer_alloc_test.c); include it in one .c file.
#ifndef MQ_ALLOC_WATCH_H
#define MQ_ALLOC_WATCH_H

#include <errno.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <unistd.h>

extern void *__libc_malloc(size_t n);
extern void *__libc_calloc(size_t n, size_t m);
extern void *__libc_realloc(void *p, size_t n);
extern void *__libc_memalign(size_t a, size_t n);
extern void __libc_free(void *p);

/// The thread whose calls are counted (a tid), 0: none.
static _Atomic pid_t watched;
static _Atomic long allocs, frees;

static void note(_Atomic long *counter)
{
    pid_t w = atomic_load_explicit(&watched, memory_order_relaxed);
    if (w != 0 && gettid() == w)
        atomic_fetch_add(counter, 1);
}

void *malloc(size_t n)
{
    note(&allocs);
    return __libc_malloc(n);
}
void *calloc(size_t n, size_t m)
{
    note(&allocs);
    return __libc_calloc(n, m);
}
void *realloc(void *p, size_t n)
{
    note(&allocs);
    return __libc_realloc(p, n);
}
void *memalign(size_t a, size_t n)
{
    note(&allocs);
    return __libc_memalign(a, n);
}
void *aligned_alloc(size_t a, size_t n)
{
    note(&allocs);
    return __libc_memalign(a, n);
}
void free(void *p)
{
    if (p)
        note(&frees);
    __libc_free(p);
}
int posix_memalign(void **out, size_t a, size_t n)
{
    note(&allocs);
    void *p = __libc_memalign(a, n);
    if (!p)
        return ENOMEM;
    *out = p;
    return 0;
}

#endif
