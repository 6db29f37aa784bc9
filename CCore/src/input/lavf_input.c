#include "input/lavf_input.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <libavutil/avstring.h>
#include <libavutil/error.h>
#include <libavutil/mem.h>

#include "core/log.h"
#include "mq_err.h"

#define MQ_FILE_BUFFER 32768

/// `s` for a log line: at most `n` - 1 bytes, control bytes as '?' (a URL comes from the
/// input's bytes: it must not forge log lines).
static const char *printable(const char *s, char *buf, size_t n)
{
    size_t i = 0;
    for (; s && s[i] && i + 1 < n; i++)
        buf[i] = (unsigned char)s[i] < 0x20 || s[i] == 0x7f ? '?' : s[i];
    buf[i] = '\0';
    return buf;
}

int mq_lavf_refuse_open(AVFormatContext *s, AVIOContext **pb, const char *url, int flags, AVDictionary **options)
{
    (void)flags, (void)options;
    char shown[200];
    mq_log(MQ_LOG_WARN, "refused: the %s demuxer asked to open \"%s\" (an input may not name another)",
           s && s->iformat ? s->iformat->name : "?", printable(url, shown, sizeof shown));
    *pb = NULL;
    return MQ_AVERROR_REFUSED;
}

int mq_lavf_open_input(AVFormatContext **fmt, const AVInputFormat *format, const char *formats, AVDictionary **opts,
                       const char *what, char *why, size_t n)
{
    AVFormatContext *s = *fmt;
    AVDictionary *own = NULL, **o = opts ? opts : &own;
    s->io_open = mq_lavf_refuse_open;
    // "": no protocol at all (the input is our AVIOContext); both lists also bind what a
    // demuxer opens through libavformat's own calls, past io_open.
    int ret = av_dict_set(o, "protocol_whitelist", "", 0);
    if (ret >= 0)
        ret = av_dict_set(o, "format_whitelist", formats, 0);
    // Probed here, not by avformat_open_input, to tell a refusal from unreadable bytes; with
    // no file name, so a name's extension (image2's patterns, .m3u8) decides nothing.
    if (ret >= 0 && !format)
        ret = av_probe_input_buffer2(s->pb, &format, "", s, 0, (unsigned)s->format_probesize);
    if (ret < 0) {
        snprintf(why, n, "cannot open the %s: %s", what, av_err2str(ret));
    } else if (av_match_list(format->name, formats, ',') <= 0) {
        snprintf(why, n, "refused: the %s is %s (%s), not a format allowed for it", what,
                 format->long_name ? format->long_name : format->name, format->name);
        ret = MQ_AVERROR_REFUSED;
    } else {
        ret = avformat_open_input(fmt, "", format, o); // frees *fmt on failure
        s = *fmt;
        if (ret == MQ_AVERROR_REFUSED)
            snprintf(why, n, "refused: the %s (%s) names another input", what, format->name);
        else if (ret < 0)
            snprintf(why, n, "cannot open the %s (%s): %s", what, format->name, av_err2str(ret));
    }
    av_dict_free(&own);
    if (ret < 0 && s) {
        avformat_free_context(s); // (the pb is the caller's)
        *fmt = NULL;
    }
    return ret < 0 ? ret : 0;
}

/* ---- local files ---- */

/// A ':' in the first path component: a URL or a libavformat protocol ("concat:a|b",
/// "tcp://…", "file:…", "subfile,,start,…:…"), never a local path we take.
static bool names_a_url(const char *path)
{
    const char *colon = strchr(path, ':'), *slash = strchr(path, '/');
    return colon && (!slash || colon < slash);
}

static const char *kind_of(mode_t m)
{
    return S_ISFIFO(m)   ? "a FIFO"
           : S_ISCHR(m)  ? "a character device"
           : S_ISBLK(m)  ? "a block device"
           : S_ISSOCK(m) ? "a socket"
           : S_ISDIR(m)  ? "a directory"
                         : "not a regular file";
}

static int fd_read(void *opaque, uint8_t *buf, int size)
{
    mq_file_input *in = opaque;
    for (;;) {
        ssize_t n = read(in->fd, buf, (size_t)size);
        if (n > 0)
            return (int)n;
        if (n == 0)
            return AVERROR_EOF;
        if (errno != EINTR)
            return AVERROR(errno);
    }
}

static int64_t fd_seek(void *opaque, int64_t offset, int whence)
{
    mq_file_input *in = opaque;
    if (whence & AVSEEK_SIZE) {
        struct stat st;
        return fstat(in->fd, &st) == 0 ? (int64_t)st.st_size : AVERROR(errno);
    }
    off_t at = lseek(in->fd, (off_t)offset, whence & ~AVSEEK_FORCE);
    return at < 0 ? AVERROR(errno) : (int64_t)at;
}

/// Opens the file itself: a regular file only, checked on the descriptor that is then read.
static int open_regular(mq_file_input *in, const char *path, const char *what, const char *shown)
{
    struct stat st;
    // Looked at before opening too: opening a device or a FIFO can act on it (a watchdog
    // starts, a FIFO's writer goes on); the descriptor's fstat below is what decides (a path
    // swapped in between is caught there).
    if (stat(path, &st) == 0 && !S_ISREG(st.st_mode)) {
        mq_log(MQ_LOG_WARN, "%s %s: refused: %s, not a regular file", what, shown, kind_of(st.st_mode));
        return MQ_ERR_REFUSED;
    }
    // O_NONBLOCK: a FIFO swapped in after the stat must not block the open; O_NOCTTY: a
    // terminal never becomes ours. A symbolic link is followed (operators link content in):
    // what it leads to is checked like any file.
    in->fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
    if (in->fd < 0) {
        int e = errno;
        if (e == ENXIO) { // a socket, a device without its driver
            mq_log(MQ_LOG_WARN, "%s %s: refused: not a regular file", what, shown);
            return MQ_ERR_REFUSED;
        }
        mq_log(MQ_LOG_INFO, "%s %s: %s", what, shown, strerror(e)); // (the caller reports it)
        return MQ_ERR_IO;
    }
    if (fstat(in->fd, &st) != 0)
        return MQ_ERR_IO;
    if (!S_ISREG(st.st_mode)) {
        mq_log(MQ_LOG_WARN, "%s %s: refused: %s, not a regular file", what, shown, kind_of(st.st_mode));
        return MQ_ERR_REFUSED;
    }
    int flags = fcntl(in->fd, F_GETFL);
    if (flags >= 0) // a regular file's reads never wait: the flag was for the open only
        fcntl(in->fd, F_SETFL, flags & ~O_NONBLOCK);
    return MQ_OK;
}

int mq_file_input_open(const char *path, const char *formats, const char *what, mq_file_input **out)
{
    if (out)
        *out = NULL;
    if (!path || !*path || !formats || !what || !out)
        return MQ_ERR_INVALID_ARGUMENT;
    char shown[256];
    printable(path, shown, sizeof shown);
    if (names_a_url(path)) {
        mq_log(MQ_LOG_WARN, "%s %s: refused: a URL or a protocol, not a local file path", what, shown);
        return MQ_ERR_REFUSED;
    }
    mq_file_input *in = calloc(1, sizeof *in);
    if (!in)
        return MQ_ERR_NO_MEMORY;
    in->fd = -1;
    int ret = open_regular(in, path, what, shown);
    if (ret < 0)
        goto fail;
    ret = MQ_ERR_NO_MEMORY;
    uint8_t *buf = av_malloc(MQ_FILE_BUFFER);
    if (!buf)
        goto fail;
    if (!(in->pb = avio_alloc_context(buf, MQ_FILE_BUFFER, 0, in, fd_read, NULL, fd_seek))) {
        av_free(buf);
        goto fail;
    }
    if (!(in->fmt = avformat_alloc_context()))
        goto fail;
    in->fmt->pb = in->pb;
    in->fmt->flags |= AVFMT_FLAG_CUSTOM_IO;
    char why[256];
    int av = mq_lavf_open_input(&in->fmt, NULL, formats, NULL, what, why, sizeof why);
    if (av < 0) {
        ret = av == MQ_AVERROR_REFUSED ? MQ_ERR_REFUSED : av == AVERROR(ENOMEM) ? MQ_ERR_NO_MEMORY : MQ_ERR_DEMUX;
        mq_log(ret == MQ_ERR_REFUSED ? MQ_LOG_WARN : MQ_LOG_INFO, "%s %s: %s", what, shown, why);
        goto fail;
    }
    *out = in;
    return MQ_OK;
fail:
    mq_file_input_destroy(&in);
    return ret;
}

void mq_file_input_destroy(mq_file_input **pin)
{
    mq_file_input *in = pin ? *pin : NULL;
    if (!in)
        return;
    avformat_close_input(&in->fmt); // (custom IO: leaves the pb)
    if (in->pb) {
        av_freep(&in->pb->buffer);
        avio_context_free(&in->pb);
    }
    if (in->fd >= 0)
        close(in->fd);
    free(in);
    *pin = NULL;
}
