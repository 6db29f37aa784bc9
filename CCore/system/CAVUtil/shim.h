#include <libavutil/avutil.h>
