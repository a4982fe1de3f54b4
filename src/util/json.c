/* json: bounded jansson parsing (depth pre-scan) and dotted-path accessors. */
#include "util/json.h"

#include "util/alloc.h"
#include "util/error.h"

#include <stdbool.h>
#include <stdio.h>
#include <string.h>

/* Scans for nesting depth outside strings; jansson's own limit is 2048, far too deep for us. */
static int check_depth(const char *data, size_t len, int max_depth)
{
    int depth = 0;
    bool in_str = false;
    for (size_t i = 0; i < len; i++) {
        char c = data[i];
        if (in_str) {
            if (c == '\\')
                i++;
            else if (c == '"')
                in_str = false;
            continue;
        }
        if (c == '"') {
            in_str = true;
        } else if (c == '{' || c == '[') {
            if (++depth > max_depth)
                return sw_error_set(SW_EBADREQUEST, "JSON nesting exceeds the maximum depth of %d",
                                    max_depth);
        } else if (c == '}' || c == ']') {
            depth--;
        }
    }
    return 0;
}

/* The one parser behind both entry points: duplicate keys are refused (strict), or taken with
 * the first one described in warning (warning != NULL), or taken silently. */
static int parse(const char *data, size_t len, int max_depth, bool strict, json_t **out,
                 char *warning, size_t n)
{
    json_error_t jerr;
    int error = check_depth(data, len, max_depth);
    if (error < 0)
        return error;
    json_t *j = json_loadb(data, len, strict || warning ? JSON_REJECT_DUPLICATES : 0, &jerr);
    if (!j && warning && json_error_code(&jerr) == json_error_duplicate_key) {
        snprintf(warning, n, "%s at line %d column %d", jerr.text, jerr.line, jerr.column);
        j = json_loadb(data, len, 0, &jerr);
    }
    if (!j)
        return sw_error_set(SW_EBADREQUEST, "invalid JSON at line %d column %d: %s", jerr.line,
                            jerr.column, jerr.text);
    *out = j;
    return 0;
}

int sw_json_parse(const char *data, size_t len, int max_depth, int flags, json_t **out)
{
    return parse(data, len, max_depth, flags & SW_JSON_STRICT_DUPLICATES, out, NULL, 0);
}

int sw_json_parse_warn(const char *data, size_t len, int max_depth, json_t **out, char *warning,
                       size_t n)
{
    warning[0] = '\0';
    return parse(data, len, max_depth, false, out, warning, n);
}

int sw_json_depth(const json_t *v, int limit)
{
    const char *key;
    json_t *child;
    size_t i;
    int deepest = 0;
    if (!json_is_object(v) && !json_is_array(v))
        return 0;
    if (limit <= 0)
        return 1; /* one more level than allowed: stop here */
    if (json_is_object(v)) {
        json_object_foreach((json_t *)v, key, child)
        {
            int d = sw_json_depth(child, limit - 1);
            deepest = d > deepest ? d : deepest;
            if (deepest >= limit)
                break;
        }
    } else {
        json_array_foreach(v, i, child)
        {
            int d = sw_json_depth(child, limit - 1);
            deepest = d > deepest ? d : deepest;
            if (deepest >= limit)
                break;
        }
    }
    return deepest + 1;
}

char *sw_json_dumps(const json_t *j, size_t *len_out)
{
    char *s = json_dumps(j, JSON_COMPACT | JSON_ENCODE_ANY);
    char *copy = sw_strdup(s ? s : "null");
    free(s);
    if (len_out)
        *len_out = strlen(copy);
    return copy;
}

static int dump_cb(const char *buffer, size_t size, void *data)
{
    return sw_buf_put(data, buffer, size) < 0 ? -1 : 0;
}

int sw_json_dump_buf(const json_t *j, sw_buf *b)
{
    if (json_dump_callback(j, dump_cb, b, JSON_COMPACT | JSON_ENCODE_ANY) < 0)
        return b->err ? b->err : sw_error_set(SW_ERROR, "JSON encoding failed");
    return 0;
}

json_t *sw_json_at(const json_t *root, const char *path)
{
    const json_t *cur = root;
    const char *p = path;
    while (cur && *p) {
        size_t n = strcspn(p, ".");
        if (!json_is_object(cur))
            return NULL;
        cur = json_object_getn(cur, p, n);
        p += n + (p[n] == '.');
    }
    return (json_t *)cur;
}

const char *sw_json_str_at(const json_t *root, const char *path)
{
    return json_string_value(sw_json_at(root, path));
}

bool sw_json_int_at(const json_t *root, const char *path, int64_t *out)
{
    json_t *v = sw_json_at(root, path);
    if (!json_is_integer(v))
        return false;
    *out = (int64_t)json_integer_value(v);
    return true;
}

int64_t sw_json_int_or(const json_t *root, const char *path, int64_t dflt)
{
    int64_t v;
    return sw_json_int_at(root, path, &v) ? v : dflt;
}

void sw_json_default(json_t *obj, const char *key, json_t *value)
{
    json_t *cur = json_object_get(obj, key);
    if (json_is_object(obj) && (!cur || json_is_null(cur)))
        json_object_set_new(obj, key, value);
    else
        json_decref(value);
}

bool sw_json_bool_at(const json_t *root, const char *path)
{
    return json_is_true(sw_json_at(root, path));
}

json_t *sw_json_obj_path(json_t *root, const char *path)
{
    json_t *cur = root;
    const char *p = path;
    char key[256];
    while (*p) {
        const char *dot = strchr(p, '.');
        size_t n = dot ? (size_t)(dot - p) : strlen(p);
        if (n >= sizeof(key))
            n = sizeof(key) - 1;
        memcpy(key, p, n);
        key[n] = '\0';
        json_t *next = json_object_get(cur, key);
        if (!json_is_object(next)) {
            next = json_object();
            json_object_set_new(cur, key, next);
        }
        cur = next;
        p += n + (dot ? 1 : 0);
        if (!dot)
            break;
    }
    return cur;
}

void sw_json_set_path(json_t *root, const char *path, json_t *value)
{
    const char *dot = strrchr(path, '.');
    if (!dot) {
        json_object_set_new(root, path, value);
        return;
    }
    char parent[256];
    size_t n = (size_t)(dot - path);
    if (n >= sizeof(parent)) {
        json_decref(value);
        return;
    }
    memcpy(parent, path, n);
    parent[n] = '\0';
    json_object_set_new(sw_json_obj_path(root, parent), dot + 1, value);
}

void sw_json_del_path(json_t *root, const char *path)
{
    const char *dot = strrchr(path, '.');
    if (!dot) {
        json_object_del(root, path);
        return;
    }
    char parent[256];
    size_t n = (size_t)(dot - path);
    if (n >= sizeof(parent))
        return;
    memcpy(parent, path, n);
    parent[n] = '\0';
    json_t *obj = sw_json_at(root, parent);
    if (json_is_object(obj))
        json_object_del(obj, dot + 1);
}

bool sw_json_same(const json_t *a, const json_t *b)
{
    if (json_is_null(a))
        a = NULL;
    if (json_is_null(b))
        b = NULL;
    return (!a && !b) || (a && b && json_equal(a, b));
}

static void release_json(void *v)
{
    json_decref(v);
}

int sw_error_set_causes(int code, json_t *causes, const char *fmt, ...)
{
    char text[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof(text), fmt, ap);
    va_end(ap);
    sw_error_set(code, "%s", text);
    if (causes)
        sw_error_attach(causes, release_json);
    return code;
}

const json_t *sw_error_causes(void)
{
    return sw_error_details();
}

const char *sw_json_type_name(const json_t *v)
{
    switch (json_typeof(v)) {
    case JSON_OBJECT:
        return "object";
    case JSON_ARRAY:
        return "array";
    case JSON_STRING:
        return "string";
    case JSON_INTEGER:
        return "integer";
    case JSON_REAL:
        return "number";
    case JSON_TRUE:
    case JSON_FALSE:
        return "boolean";
    default:
        return "null";
    }
}
