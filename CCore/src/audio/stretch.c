#include "audio/stretch.h"

#include <dlfcn.h>
#include <libavfilter/avfilter.h>
#include <libavfilter/buffersink.h>
#include <libavfilter/buffersrc.h>
#include <libavutil/channel_layout.h>
#include <libavutil/frame.h>
#include <libavutil/macros.h>
#include <libavutil/opt.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "core/log.h"
#include "mq_err.h"
#include "mq_player.h"

/* libavfilter is loaded the first time a rate other than 1 is wanted, not linked: it brings ~150
 * shared libraries of its own (speech synthesis, Vulkan, LV2, …) that cost ~12 MiB of resident
 * memory and startup time in every process, while most sessions play at rate 1 throughout. The
 * library of the major version the headers describe is the one loaded, on a thread of its own:
 * cold, on a loaded box or a board's SD card, loading takes from 0.1 s to seconds, and the tempo
 * stage that waited for it dropped everything that fell late meanwhile (a CI run's whole
 * stretched file). Until it is loaded the tempo stage hands on nothing new (tempo_thread.c). */

static struct {
    __typeof__(&avfilter_graph_alloc) graph_alloc;
    __typeof__(&avfilter_get_by_name) get_by_name;
    __typeof__(&avfilter_graph_create_filter) graph_create_filter;
    __typeof__(&avfilter_link) link;
    __typeof__(&avfilter_graph_config) graph_config;
    __typeof__(&avfilter_graph_send_command) graph_send_command;
    __typeof__(&avfilter_graph_free) graph_free;
    __typeof__(&av_buffersrc_add_frame_flags) buffersrc_add_frame_flags;
    __typeof__(&av_buffersink_get_samples) buffersink_get_samples;
} lavfi;

enum { MQ_LAVFI_IDLE, MQ_LAVFI_LOADING, MQ_LAVFI_LOADED, MQ_LAVFI_FAILED };
static _Atomic int lavfi_state = MQ_LAVFI_IDLE; // LOADED is stored after `lavfi` is filled (release)

#define MQ_LAVFI_SONAME "libavfilter.so." AV_STRINGIFY(LIBAVFILTER_VERSION_MAJOR)

static bool load_lavfi(void)
{
    void *h = dlopen(MQ_LAVFI_SONAME, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        mq_log(MQ_LOG_ERROR, "tempo: cannot load %s: %s", MQ_LAVFI_SONAME, dlerror());
        return false;
    }
    // POSIX: a data pointer from dlsym converts to a function pointer through memcpy.
#define MQ_SYM(field, name)                                                                                            \
    do {                                                                                                               \
        void *sym = dlsym(h, name);                                                                                    \
        if (!sym) {                                                                                                    \
            mq_log(MQ_LOG_ERROR, "tempo: %s lacks %s", MQ_LAVFI_SONAME, name);                                         \
            return false;                                                                                              \
        }                                                                                                              \
        memcpy(&lavfi.field, &sym, sizeof sym);                                                                        \
    } while (0)
    MQ_SYM(graph_alloc, "avfilter_graph_alloc");
    MQ_SYM(get_by_name, "avfilter_get_by_name");
    MQ_SYM(graph_create_filter, "avfilter_graph_create_filter");
    MQ_SYM(link, "avfilter_link");
    MQ_SYM(graph_config, "avfilter_graph_config");
    MQ_SYM(graph_send_command, "avfilter_graph_send_command");
    MQ_SYM(graph_free, "avfilter_graph_free");
    MQ_SYM(buffersrc_add_frame_flags, "av_buffersrc_add_frame_flags");
    MQ_SYM(buffersink_get_samples, "av_buffersink_get_samples");
#undef MQ_SYM
    return true; // the handle stays open for the process's life
}

static void *lavfi_loader(void *arg)
{
    (void)arg;
    double t0 = mq_clock_now();
    bool ok = load_lavfi();
    if (ok)
        mq_log(MQ_LOG_DEBUG, "tempo: %s loaded in %.0f ms", MQ_LAVFI_SONAME, (mq_clock_now() - t0) * 1e3);
    atomic_store_explicit(&lavfi_state, ok ? MQ_LAVFI_LOADED : MQ_LAVFI_FAILED, memory_order_release);
    return NULL;
}

int mq_tempo_prepare(void)
{
    int state = atomic_load_explicit(&lavfi_state, memory_order_acquire), idle = MQ_LAVFI_IDLE;
    if (state == MQ_LAVFI_IDLE && atomic_compare_exchange_strong(&lavfi_state, &idle, MQ_LAVFI_LOADING)) {
        pthread_t t;
        pthread_attr_t attr;
        bool started = pthread_attr_init(&attr) == 0;
        started = started && pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED) == 0 &&
                  pthread_create(&t, &attr, lavfi_loader, NULL) == 0;
        pthread_attr_destroy(&attr);
        if (!started) {
            mq_log(MQ_LOG_ERROR, "tempo: cannot start loading %s", MQ_LAVFI_SONAME);
            atomic_store(&lavfi_state, MQ_LAVFI_IDLE); // (tried again at the next call)
            return MQ_ERR_NO_MEMORY;
        }
        pthread_setname_np(t, "mq-lavfi");
        state = MQ_LAVFI_LOADING;
    }
    return state == MQ_LAVFI_LOADED ? MQ_OK : state == MQ_LAVFI_FAILED ? MQ_ERR_UNSUPPORTED : MQ_ERR_STATE;
}

bool mq_stretch_wanted(double rate)
{
    return fabs(rate - 1.0) > MQ_RATE_EPSILON && rate >= 0.5 && rate <= 2.0;
}

int mq_stretch_open(mq_stretch *s, int sample_rate, int channels, double tempo)
{
    memset(s, 0, sizeof *s);
    if (sample_rate <= 0 || channels <= 0 || !(tempo >= 0.5 && tempo <= 2.0))
        return MQ_ERR_INVALID_ARGUMENT;
    s->sample_rate = sample_rate;
    s->channels = channels;
    s->tempo = tempo;
    int ready = mq_tempo_prepare();
    if (ready < 0)
        return ready;
    s->graph = lavfi.graph_alloc();
    s->frame = av_frame_alloc();
    if (!s->graph || !s->frame) {
        mq_stretch_close(s);
        return MQ_ERR_NO_MEMORY;
    }
    s->graph->nb_threads = 1;
    AVChannelLayout layout;
    av_channel_layout_default(&layout, channels);
    char layout_name[64], args[256], tempo_arg[32];
    av_channel_layout_describe(&layout, layout_name, sizeof layout_name);
    snprintf(args, sizeof args, "sample_rate=%d:sample_fmt=flt:channel_layout=%s:time_base=1/%d", sample_rate,
             layout_name, sample_rate);
    snprintf(tempo_arg, sizeof tempo_arg, "tempo=%.6f", tempo);
    AVFilterContext *atempo = NULL;
    int ret = lavfi.graph_create_filter(&s->src, lavfi.get_by_name("abuffer"), "in", args, NULL, s->graph);
    if (ret >= 0)
        ret = lavfi.graph_create_filter(&atempo, lavfi.get_by_name("atempo"), "atempo", tempo_arg, NULL, s->graph);
    if (ret >= 0)
        ret = lavfi.graph_create_filter(&s->sink, lavfi.get_by_name("abuffersink"), "out", NULL, NULL, s->graph);
    if (ret >= 0) {
        // The sink hands back exactly what went in: interleaved float, same rate and layout.
        static const enum AVSampleFormat fmts[] = {AV_SAMPLE_FMT_FLT, AV_SAMPLE_FMT_NONE};
        const int rates[] = {sample_rate, -1};
        ret = av_opt_set_int_list(s->sink, "sample_fmts", fmts, AV_SAMPLE_FMT_NONE, AV_OPT_SEARCH_CHILDREN);
        if (ret >= 0)
            ret = av_opt_set_int_list(s->sink, "sample_rates", rates, -1, AV_OPT_SEARCH_CHILDREN);
        if (ret >= 0)
            ret = av_opt_set(s->sink, "ch_layouts", layout_name, AV_OPT_SEARCH_CHILDREN);
    }
    if (ret >= 0)
        ret = lavfi.link(s->src, 0, atempo, 0);
    if (ret >= 0)
        ret = lavfi.link(atempo, 0, s->sink, 0);
    if (ret >= 0)
        ret = lavfi.graph_config(s->graph, NULL);
    av_channel_layout_uninit(&layout);
    if (ret < 0) {
        mq_stretch_close(s);
        return ret == AVERROR(ENOMEM) ? MQ_ERR_NO_MEMORY : MQ_ERR_UNSUPPORTED;
    }
    return MQ_OK;
}

int mq_stretch_set_tempo(mq_stretch *s, double tempo)
{
    if (!s->graph || !(tempo >= 0.5 && tempo <= 2.0))
        return MQ_ERR_INVALID_ARGUMENT;
    if (tempo == s->tempo)
        return MQ_OK;
    char arg[32];
    snprintf(arg, sizeof arg, "%.6f", tempo);
    if (lavfi.graph_send_command(s->graph, "atempo", "tempo", arg, NULL, 0, 0) < 0)
        return MQ_ERR_UNSUPPORTED;
    s->tempo = tempo;
    return MQ_OK;
}

int mq_stretch_feed(mq_stretch *s, const float *data, int frames)
{
    if (!s->graph || s->flushed)
        return MQ_ERR_STATE;
    if (!data) {
        s->flushed = true;
        return lavfi.buffersrc_add_frame_flags(s->src, NULL, 0) < 0 ? MQ_ERR_DECODE : MQ_OK;
    }
    AVFrame *f = s->frame;
    av_frame_unref(f);
    f->format = AV_SAMPLE_FMT_FLT;
    f->sample_rate = s->sample_rate;
    f->nb_samples = frames;
    f->pts = s->fed;
    av_channel_layout_default(&f->ch_layout, s->channels);
    if (av_frame_get_buffer(f, 0) < 0)
        return MQ_ERR_NO_MEMORY;
    memcpy(f->data[0], data, (size_t)frames * (size_t)s->channels * sizeof(float));
    s->fed += frames;
    int ret = lavfi.buffersrc_add_frame_flags(s->src, f, AV_BUFFERSRC_FLAG_KEEP_REF);
    av_frame_unref(f);
    return ret < 0 ? MQ_ERR_DECODE : MQ_OK;
}

int mq_stretch_receive(mq_stretch *s, float *dst, int max)
{
    if (!s->graph)
        return 0;
    AVFrame *f = s->frame;
    av_frame_unref(f);
    int ret = lavfi.buffersink_get_samples(s->sink, f, max);
    if (ret == AVERROR(EAGAIN) || ret == AVERROR_EOF)
        return 0;
    if (ret < 0)
        return MQ_ERR_DECODE;
    int n = f->nb_samples < max ? f->nb_samples : max;
    memcpy(dst, f->data[0], (size_t)n * (size_t)s->channels * sizeof(float));
    av_frame_unref(f);
    return n;
}

void mq_stretch_close(mq_stretch *s)
{
    if (s->graph)
        lavfi.graph_free(&s->graph);
    av_frame_free(&s->frame);
    s->src = s->sink = NULL;
    s->fed = 0;
    s->flushed = false;
}
