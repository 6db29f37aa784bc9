#ifndef MQ_DECODER_OPEN_H
#define MQ_DECODER_OPEN_H

#include <stddef.h>

#include <libavcodec/avcodec.h>

/// Opens a decoder for a stream, honouring a preference list (`mq_player_config.decoders`):
/// comma-separated libavcodec decoder names tried in order, then the codec's default decoder.
/// A name applies to the stream when libavcodec has a decoder of that name for its codec, or,
/// when this libavcodec lacks the name, when the name's `<codec>_` prefix is the codec's
/// (FFmpeg's convention: `h264_v4l2m2m`, `hevc_rkmpp`). `<codec>_<device>` with a hardware
/// device type instead of a decoder name (`h264_vaapi`, `hevc_vdpau`) is the codec's own decoder
/// with that hwaccel on the device's default node; its pictures are hardware surfaces
/// (`hw_frames_ctx` set). Other names are skipped silently.
///
/// `threads`: the decoder's thread count (0: one per core).
///
/// On success `*out` is open (`pkt_timebase` = `tb`, `threads` threads) and `failed` holds
/// "" or the applicable preferences that could not be used, with why ("h264_v4l2m2m: Invalid
/// argument"). Returns MQ_OK, MQ_ERR_UNSUPPORTED (no decoder at all for the codec) or
/// MQ_ERR_DECODE (the default decoder did not open either).
int mq_decoder_open(const char *prefs, const AVCodecParameters *par, AVRational tb, int threads, AVCodecContext **out,
                    char *failed, size_t failed_size);

/// Checks a preference list before it is used: NULL, or at most 1023 characters of decoder
/// names ([A-Za-z0-9_]), commas and spaces. Returns MQ_OK or MQ_ERR_INVALID_ARGUMENT.
int mq_decoder_prefs_check(const char *prefs);

#endif
