#ifndef MQ_STRETCH_H
#define MQ_STRETCH_H

#include <stdbool.h>
#include <stdint.h>

typedef struct AVFilterGraph AVFilterGraph;
typedef struct AVFilterContext AVFilterContext;
typedef struct AVFrame AVFrame;

/// A pitch-preserving time-stretch of interleaved float audio: libavfilter's `atempo`
/// (WSOLA) in a graph abuffer → atempo → abuffersink. `tempo` > 1 plays faster (fewer output
/// frames per input frame), the pitch unchanged. Owned by one thread; allocates while open.
typedef struct mq_stretch {
    AVFilterGraph *graph;
    AVFilterContext *src, *sink;
    AVFrame *frame; // reused for input and output
    int sample_rate, channels;
    double tempo;
    int64_t fed;  // input frames fed since open
    bool flushed; // EOF sent: only receive until it runs dry
} mq_stretch;

#define MQ_RATE_EPSILON 1e-6 // closer to 1 than this is rate 1: passed through (the trim's, not a stretch)

/// Whether the tempo stage stretches the sound at schedule rate `rate`: 0.5 … 2, and not 1
/// (within MQ_RATE_EPSILON).
bool mq_stretch_wanted(double rate);

/// Builds the graph at `tempo` (0.5 … 2). Returns an mq_err: MQ_ERR_STATE while libavfilter
/// is still loading (`mq_tempo_prepare`, started here if it was not), without waiting for it.
int mq_stretch_open(mq_stretch *s, int sample_rate, int channels, double tempo);

/// Changes the tempo of what is fed from now on (atempo's runtime command).
int mq_stretch_set_tempo(mq_stretch *s, double tempo);

/// Feeds `frames` interleaved frames; `data` NULL flushes (then only receive).
int mq_stretch_feed(mq_stretch *s, const float *data, int frames);

/// Takes up to `max` output frames into `dst`. Returns the frames written, 0 when none is
/// ready yet (or, after a flush, none is left), or an mq_err.
int mq_stretch_receive(mq_stretch *s, float *dst, int max);

/// Frees the graph; safe on a closed or zeroed stretch.
void mq_stretch_close(mq_stretch *s);

#endif
