/* yaml: writes a JSON value as block-style YAML (what `slipway crds` prints and kubectl reads):
 * mappings and sequences indented by two, strings double-quoted with JSON's escapes (valid YAML
 * double-quoted scalars), keys plain when they are plain-safe, empty containers as {} and []. */
#ifndef SW_UTIL_YAML_H
#define SW_UTIL_YAML_H

#include "util/buf.h"

#include <jansson.h>

/* Appends v to out as one YAML document (no "---"); 0 or out's sticky error. */
int sw_yaml_emit(const json_t *v, sw_buf *out);

#endif
