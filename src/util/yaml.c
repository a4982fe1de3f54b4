/* yaml: JSON to block-style YAML (yaml.h). */
#include "util/yaml.h"

#include "util/alloc.h"
#include "util/json.h"

#include <string.h>
#include <strings.h>

#define MAX_DEPTH 128

static void emit_node(const json_t *v, int indent, sw_buf *out, int depth);

static void pad(sw_buf *out, int n)
{
    for (int i = 0; i < n; i++)
        sw_buf_putc(out, ' ');
}

/* A key that YAML reads back as the same string without quotes. */
static bool plain_key(const char *k)
{
    if (!*k || strchr("-?:,[]{}#&*!|>'\"%@` ", k[0]))
        return false;
    for (const char *p = k; *p; p++)
        if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
              strchr("-_./$", *p)))
            return false;
    static const char *const reserved[] = {"true", "false", "null", "yes", "no",
                                           "on",   "off",   "y",    "n",   "~"};
    for (size_t i = 0; i < sizeof(reserved) / sizeof(reserved[0]); i++)
        if (!strcasecmp(k, reserved[i]))
            return false;
    return true;
}

static void emit_key(const char *k, sw_buf *out)
{
    if (plain_key(k)) {
        sw_buf_puts(out, k);
    } else {
        json_t *s = json_string(k);
        sw_json_dump_buf(s, out);
        json_decref(s);
    }
    sw_buf_putc(out, ':');
}

static bool is_container(const json_t *v)
{
    return (json_is_object(v) && json_object_size(v)) || (json_is_array(v) && json_array_size(v));
}

static void emit_scalar(const json_t *v, sw_buf *out)
{
    if (json_is_object(v))
        sw_buf_puts(out, "{}");
    else if (json_is_array(v))
        sw_buf_puts(out, "[]");
    else
        sw_json_dump_buf(v, out);
}

/* The members of an object, the first at the cursor, the others at indent. */
static void emit_members(const json_t *v, int indent, sw_buf *out, int depth, bool first_inline)
{
    const char *k;
    const json_t *x;
    bool first = true;
    json_object_foreach((json_t *)v, k, x)
    {
        if (!(first && first_inline))
            pad(out, indent);
        first = false;
        emit_key(k, out);
        if (is_container(x)) {
            sw_buf_putc(out, '\n');
            emit_node(x, json_is_array(x) ? indent : indent + 2, out, depth + 1);
        } else {
            sw_buf_putc(out, ' ');
            emit_scalar(x, out);
            sw_buf_putc(out, '\n');
        }
    }
}

static void emit_node(const json_t *v, int indent, sw_buf *out, int depth)
{
    if (depth > MAX_DEPTH) {
        pad(out, indent);
        sw_json_dump_buf(v, out); /* flow style below this depth: still YAML */
        sw_buf_putc(out, '\n');
        return;
    }
    if (json_is_object(v) && json_object_size(v)) {
        emit_members(v, indent, out, depth, false);
    } else if (json_is_array(v) && json_array_size(v)) {
        size_t i;
        const json_t *x;
        json_array_foreach(v, i, x)
        {
            pad(out, indent);
            sw_buf_puts(out, "- ");
            if (json_is_object(x) && json_object_size(x))
                emit_members(x, indent + 2, out, depth + 1, true);
            else if (json_is_array(x) && json_array_size(x)) {
                sw_buf_putc(out, '\n');
                emit_node(x, indent + 2, out, depth + 1);
            } else {
                emit_scalar(x, out);
                sw_buf_putc(out, '\n');
            }
        }
    } else {
        pad(out, indent);
        emit_scalar(v, out);
        sw_buf_putc(out, '\n');
    }
}

int sw_yaml_emit(const json_t *v, sw_buf *out)
{
    emit_node(v, 0, out, 0);
    return sw_buf_error(out);
}
