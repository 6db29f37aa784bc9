#include <libswresample/swresample.h>
