#ifndef CCORE_H
#define CCORE_H
#include "mq_defs.h"
#include "mq_err.h"
#include "mq_player.h"
#endif
