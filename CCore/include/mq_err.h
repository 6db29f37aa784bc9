#ifndef MQ_ERR_H
#define MQ_ERR_H

#include "mq_defs.h"

/// Error codes returned by every `mq_*` function: `>= 0` is success, a negative value is one of
/// these. `mq_err_string()` gives a short English description.
typedef enum mq_err {
    MQ_OK = 0,
    MQ_ERR_INVALID_ARGUMENT = -1, ///< A NULL pointer, an out-of-range value or a malformed spec.
    MQ_ERR_NO_MEMORY = -2,        ///< An allocation failed.
    MQ_ERR_UNSUPPORTED = -3,      ///< Unknown output name, codec with no decoder, unsupported format.
    MQ_ERR_AUDIO_DEVICE = -4,     ///< The audio output could not be opened or written.
    MQ_ERR_VIDEO_DEVICE = -5,     ///< The video output could not be opened or written.
    MQ_ERR_DEMUX = -6,            ///< The pushed bytes are not a stream libavformat can read.
    MQ_ERR_DECODE = -7,           ///< The decoder rejected the stream.
    MQ_ERR_IO = -8,               ///< A file could not be written (wav:, frames:).
    MQ_ERR_STATE = -9,            ///< The call is not valid in the object's current state.
    MQ_ERR_NOT_FOUND = -10,       ///< No such track / item; no stream of a track's kind in its input.
    MQ_ERR_CLOSED = -11,          ///< The object was stopped or the track ended.
    MQ_ERR_REFUSED = -12,         ///< An input refused: a URL or not a regular file where a local file is
                                  ///< taken, a format not allowed for it, or bytes naming other inputs.
} mq_err;

/// A static English description of `err` (never NULL).
const char *_Nonnull mq_err_string(int err);

#endif
