#include "mq_err.h"

const char *mq_err_string(int err)
{
    switch (err) {
    case MQ_OK:
        return "success";
    case MQ_ERR_INVALID_ARGUMENT:
        return "invalid argument";
    case MQ_ERR_NO_MEMORY:
        return "out of memory";
    case MQ_ERR_UNSUPPORTED:
        return "unsupported";
    case MQ_ERR_AUDIO_DEVICE:
        return "audio output failed";
    case MQ_ERR_VIDEO_DEVICE:
        return "video output failed";
    case MQ_ERR_DEMUX:
        return "stream could not be demuxed";
    case MQ_ERR_DECODE:
        return "stream could not be decoded";
    case MQ_ERR_IO:
        return "file could not be written";
    case MQ_ERR_STATE:
        return "not valid in the current state";
    case MQ_ERR_NOT_FOUND:
        return "not found";
    case MQ_ERR_CLOSED:
        return "closed";
    case MQ_ERR_REFUSED:
        return "input refused";
    default:
        return err >= 0 ? "success" : "unknown error";
    }
}
