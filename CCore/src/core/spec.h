#ifndef MQ_SPEC_H
#define MQ_SPEC_H

#include <stdbool.h>

/// Output specs are `<driver>[:<argument>]`. True when `spec`'s driver part is `name`; then
/// `*arg` points at the argument (after the first colon) or is NULL when there is none.
bool mq_spec_matches(const char *spec, const char *name, const char **arg);

#endif
