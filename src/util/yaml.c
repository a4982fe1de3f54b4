/* yaml: JSON to block-style YAML through libyaml's emitter (yaml.h). */
#include "util/yaml.h"

#include "util/alloc.h"
#include "util/error.h"
#include "util/json.h"

#include <stdio.h>
#include <string.h>
#include <yaml.h>

#define MAX_DEPTH 128

static int write_out(void *data, unsigned char *buffer, size_t size)
{
    return sw_buf_put(data, buffer, size) == 0; /* libyaml: 1 is success */
}

static int scalar(yaml_emitter_t *e, const char *text, size_t n, yaml_scalar_style_t style)
{
    yaml_event_t ev;
    yaml_scalar_event_initialize(&ev, NULL, NULL, (yaml_char_t *)text, (int)n, 1, 1, style);
    return yaml_emitter_emit(e, &ev);
}

static int emit(yaml_emitter_t *e, const json_t *v, int depth)
{
    yaml_event_t ev;
    char num[64];
    if (depth > MAX_DEPTH)
        return 0;
    switch (json_typeof(v)) {
    case JSON_OBJECT: {
        yaml_mapping_start_event_initialize(&ev, NULL, NULL, 1, YAML_BLOCK_MAPPING_STYLE);
        if (!yaml_emitter_emit(e, &ev))
            return 0;
        const char *k;
        const json_t *x;
        json_object_foreach((json_t *)v, k, x)
        {
            if (!scalar(e, k, strlen(k), YAML_ANY_SCALAR_STYLE) || !emit(e, x, depth + 1))
                return 0;
        }
        yaml_mapping_end_event_initialize(&ev);
        return yaml_emitter_emit(e, &ev);
    }
    case JSON_ARRAY: {
        yaml_sequence_start_event_initialize(&ev, NULL, NULL, 1, YAML_BLOCK_SEQUENCE_STYLE);
        if (!yaml_emitter_emit(e, &ev))
            return 0;
        size_t i;
        const json_t *x;
        json_array_foreach(v, i, x) if (!emit(e, x, depth + 1)) return 0;
        yaml_sequence_end_event_initialize(&ev);
        return yaml_emitter_emit(e, &ev);
    }
    case JSON_STRING:
        /* quoted, so that "true", "1" or "" stay strings */
        return scalar(e, json_string_value(v), json_string_length(v),
                      YAML_DOUBLE_QUOTED_SCALAR_STYLE);
    case JSON_INTEGER:
        snprintf(num, sizeof(num), "%" JSON_INTEGER_FORMAT, json_integer_value(v));
        return scalar(e, num, strlen(num), YAML_PLAIN_SCALAR_STYLE);
    case JSON_REAL:
        snprintf(num, sizeof(num), "%.17g", json_real_value(v));
        return scalar(e, num, strlen(num), YAML_PLAIN_SCALAR_STYLE);
    case JSON_TRUE:
        return scalar(e, "true", 4, YAML_PLAIN_SCALAR_STYLE);
    case JSON_FALSE:
        return scalar(e, "false", 5, YAML_PLAIN_SCALAR_STYLE);
    default:
        return scalar(e, "null", 4, YAML_PLAIN_SCALAR_STYLE);
    }
}

int sw_yaml_emit(const json_t *v, sw_buf *out)
{
    yaml_emitter_t e;
    yaml_event_t ev;
    if (!yaml_emitter_initialize(&e))
        return sw_error_set(SW_ERROR, "yaml: cannot start the emitter");
    yaml_emitter_set_output(&e, write_out, out);
    yaml_emitter_set_unicode(&e, 1);
    yaml_emitter_set_width(&e, -1);
    yaml_stream_start_event_initialize(&ev, YAML_UTF8_ENCODING);
    int ok = yaml_emitter_emit(&e, &ev);
    yaml_document_start_event_initialize(&ev, NULL, NULL, NULL, 0);
    ok = ok && yaml_emitter_emit(&e, &ev) && emit(&e, v, 0);
    yaml_document_end_event_initialize(&ev, 1);
    ok = ok && yaml_emitter_emit(&e, &ev);
    yaml_stream_end_event_initialize(&ev);
    ok = ok && yaml_emitter_emit(&e, &ev) && yaml_emitter_flush(&e);
    yaml_emitter_delete(&e);
    if (sw_buf_error(out) < 0)
        return sw_buf_error(out);
    return ok ? 0 : sw_error_set(SW_ERROR, "yaml: the emitter failed");
}
