#include "core/log.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <libavutil/log.h>
#include <libavutil/mem.h>

static int log_level = MQ_LOG_WARN;
static pthread_once_t log_once = PTHREAD_ONCE_INIT;

static void log_init(void)
{
    static const char *const names[] = {"error", "warn", "info", "debug"};
    const char *env = getenv("MQ_LOG");
    for (int i = 0; env && i < 4; i++)
        if (strcmp(env, names[i]) == 0)
            log_level = i;
}

void mq_log(int level, const char *fmt, ...)
{
    pthread_once(&log_once, log_init);
    if (level > log_level)
        return;
    char line[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    fprintf(stderr, "[marquee] %s\n", line);
}

/// The largest single allocation FFmpeg may make: an 8K 10-bit picture is 100 MB; a hostile
/// box size made libavformat ask for 2 GB at once (a fuzz input), which now fails as ENOMEM
/// and costs the segment, not the box's memory.
#define MQ_MAX_AV_ALLOC ((size_t)128 << 20)

static void ffmpeg_once(void)
{
    if (!getenv("MQ_FFMPEG_LOG"))
        av_log_set_level(AV_LOG_FATAL); // our events report errors; keep stderr clean
    av_max_alloc(MQ_MAX_AV_ALLOC);
}

void mq_ffmpeg_init(void)
{
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, ffmpeg_once);
}
