#ifndef MQ_LOG_H
#define MQ_LOG_H

/// A tiny stderr logger for the decode, video and control threads. NEVER call it from the
/// audio thread (it formats and writes). Level from the MQ_LOG environment variable
/// (error, warn, info, debug; default warn).
enum { MQ_LOG_ERROR = 0, MQ_LOG_WARN = 1, MQ_LOG_INFO = 2, MQ_LOG_DEBUG = 3 };

void mq_log(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/// FFmpeg's process-wide settings, once (any thread): its log quiet unless MQ_FFMPEG_LOG is
/// set (our events report errors), and a cap on a single allocation. Run by player create and
/// clip open.
void mq_ffmpeg_init(void);

#endif
