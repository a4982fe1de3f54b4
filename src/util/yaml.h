/* yaml: writes a JSON value as a block-style YAML document through libyaml's emitter (what
 * `slipway crds` prints and kubectl reads): strings double-quoted so that "true" or "1" stay
 * strings, keys as libyaml chooses, 128 levels at most. */
#ifndef SW_UTIL_YAML_H
#define SW_UTIL_YAML_H

#include "util/buf.h"

#include <jansson.h>

/* Appends v to out as one YAML document starting with "---": 0, out's sticky error, or
 * SW_ERROR when the emitter fails (nesting past 128 levels). */
int sw_yaml_emit(const json_t *v, sw_buf *out);

#endif
