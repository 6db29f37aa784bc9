#ifndef _GNU_SOURCE
#define _GNU_SOURCE // dl_iterate_phdr, MADV_DONTNEED
#endif
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#ifdef __GLIBC__
#include <link.h>
#include <malloc.h>
#include <sys/mman.h>
#endif

#include "mq_err.h"
#include "mq_player.h"

int mq_heap_usage(int64_t *in_use, int64_t *free_bytes)
{
    if (!in_use || !free_bytes)
        return MQ_ERR_INVALID_ARGUMENT;
#ifdef __GLIBC__
    struct mallinfo2 mi = mallinfo2(); // every arena
    *in_use = (int64_t)(mi.uordblks + mi.hblkhd);
    *free_bytes = (int64_t)mi.fordblks;
    return MQ_OK;
#else
    *in_use = *free_bytes = 0;
    return MQ_ERR_UNSUPPORTED;
#endif
}

#ifdef __GLIBC__
/// Resident pages of the process (`/proc/self/statm`), 0 when unreadable.
static int64_t resident_bytes(void)
{
    FILE *f = fopen("/proc/self/statm", "re");
    if (!f)
        return 0;
    long size = 0, resident = 0;
    int n = fscanf(f, "%ld %ld", &size, &resident);
    fclose(f);
    return n == 2 ? (int64_t)resident * sysconf(_SC_PAGESIZE) : 0;
}

/// Whether a loaded object patches its own code at load (text relocations): then its
/// read-only segments hold private copies that must not be dropped.
static int has_text_relocations(const struct dl_phdr_info *info)
{
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_DYNAMIC)
            continue;
        for (const ElfW(Dyn) *d = (const ElfW(Dyn) *)(info->dlpi_addr + ph->p_vaddr); d->d_tag != DT_NULL; d++)
            if (d->d_tag == DT_TEXTREL || (d->d_tag == DT_FLAGS && (d->d_un.d_val & DF_TEXTREL)))
                return 1;
    }
    return 0;
}

/// Called for each loaded object with the loader's lock held (no dlopen or dlclose meanwhile):
/// drops the page-table entries of its segments that are never written (code, read-only data).
static int drop_read_only_segments(struct dl_phdr_info *info, size_t size, void *data)
{
    (void)size;
    (void)data;
    if (strstr(info->dlpi_name, "vdso") || has_text_relocations(info)) // (the kernel's own, not a file)
        return 0;
    uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_LOAD || (ph->p_flags & PF_W) || ph->p_memsz == 0)
            continue;
        // Only whole pages inside the segment: a page shared with a writable neighbour (its
        // relocated data) is left alone.
        uintptr_t start = (info->dlpi_addr + ph->p_vaddr + page - 1) & ~(page - 1);
        uintptr_t end = (info->dlpi_addr + ph->p_vaddr + ph->p_filesz) & ~(page - 1);
        if (end > start)
            (void)madvise((void *)start, end - start, MADV_DONTNEED);
    }
    return 0;
}
#endif

int mq_memory_trim(int64_t *released)
{
    if (!released)
        return MQ_ERR_INVALID_ARGUMENT;
#ifdef __GLIBC__
    int64_t before = resident_bytes();
    malloc_trim(0);
    dl_iterate_phdr(drop_read_only_segments, NULL);
    int64_t after = resident_bytes();
    *released = before > after ? before - after : 0;
    return MQ_OK;
#else
    *released = 0;
    return MQ_ERR_UNSUPPORTED;
#endif
}

int mq_memory_map_large_blocks(size_t threshold)
{
#ifdef __GLIBC__
    if (threshold == 0)
        threshold = (size_t)128 << 10;
    if (threshold > (size_t)32 << 20) // glibc's own ceiling (HEAP_MAX_SIZE / 2 on 64-bit)
        return MQ_ERR_INVALID_ARGUMENT;
    return mallopt(M_MMAP_THRESHOLD, (int)threshold) == 1 ? MQ_OK : MQ_ERR_INVALID_ARGUMENT;
#else
    (void)threshold;
    return MQ_ERR_UNSUPPORTED;
#endif
}
