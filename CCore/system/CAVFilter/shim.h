#include <libavfilter/avfilter.h>
