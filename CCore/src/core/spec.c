#include "core/spec.h"

#include <string.h>

bool mq_spec_matches(const char *spec, const char *name, const char **arg)
{
    const char *colon = strchr(spec, ':');
    size_t len = colon ? (size_t)(colon - spec) : strlen(spec);
    if (strlen(name) != len || strncmp(name, spec, len) != 0)
        return false;
    *arg = colon ? colon + 1 : NULL;
    return true;
}
