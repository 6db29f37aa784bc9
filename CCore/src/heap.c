#include <stdint.h>

#ifdef __GLIBC__
#include <malloc.h>
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
