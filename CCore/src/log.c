#include "log.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
