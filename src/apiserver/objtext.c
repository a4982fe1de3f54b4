/* objtext: text splicing over compact JSON objects (see objtext.h). The scanner walks the
 * top-level object once, honouring strings and nesting, and records where the metadata and
 * status objects open. */
#include "apiserver/objtext.h"

#include "util/error.h"

#include <stdbool.h>
#include <stdio.h>
#include <string.h>

typedef struct scan {
    long meta_open; /* offset just after metadata's '{' */
    bool meta_empty;
    long status_open; /* offset just after status's '{', or -1 */
    bool status_empty;
    long end; /* offset of the top-level closing '}' */
} scan;

static size_t skip_ws(const char *t, size_t i, size_t len)
{
    while (i < len && (t[i] == ' ' || t[i] == '\n' || t[i] == '\r' || t[i] == '\t'))
        i++;
    return i;
}

/* t[i] is '"': returns the offset after the closing quote, or len on error. */
static size_t skip_string(const char *t, size_t i, size_t len)
{
    for (i++; i < len; i++) {
        if (t[i] == '\\')
            i++;
        else if (t[i] == '"')
            return i + 1;
    }
    return len + 1;
}

/* Skips one value starting at t[i]; returns the offset after it (> len on error). */
static size_t skip_value(const char *t, size_t i, size_t len)
{
    int depth = 0;
    if (i >= len)
        return len + 1;
    if (t[i] == '"')
        return skip_string(t, i, len);
    if (t[i] != '{' && t[i] != '[') {
        while (i < len && !strchr(",}] \n\r\t", t[i]))
            i++;
        return i;
    }
    for (; i < len; i++) {
        if (t[i] == '"') {
            i = skip_string(t, i, len) - 1;
        } else if (t[i] == '{' || t[i] == '[') {
            depth++;
        } else if (t[i] == '}' || t[i] == ']') {
            if (--depth == 0)
                return i + 1;
        }
    }
    return len + 1;
}

static bool key_is(const char *t, size_t start, size_t end, const char *key)
{
    size_t n = strlen(key);
    return end - start == n + 2 && !memcmp(t + start + 1, key, n);
}

static int scan_object(const char *t, size_t len, scan *s)
{
    size_t i = skip_ws(t, 0, len);
    s->meta_open = s->status_open = -1;
    if (i >= len || t[i] != '{')
        return SW_EINVALID;
    i = skip_ws(t, i + 1, len);
    while (i < len && t[i] != '}') {
        if (t[i] != '"')
            return SW_EINVALID;
        size_t kstart = i, kend = skip_string(t, i, len);
        i = skip_ws(t, kend, len);
        if (kend > len || i >= len || t[i] != ':')
            return SW_EINVALID;
        i = skip_ws(t, i + 1, len);
        bool obj = i < len && t[i] == '{';
        size_t vend = skip_value(t, i, len);
        if (vend > len)
            return SW_EINVALID;
        size_t inner = skip_ws(t, i + 1, len);
        if (obj && key_is(t, kstart, kend, "metadata")) {
            s->meta_open = (long)(i + 1);
            s->meta_empty = t[inner] == '}';
        } else if (obj && key_is(t, kstart, kend, "status")) {
            s->status_open = (long)(i + 1);
            s->status_empty = t[inner] == '}';
        }
        i = skip_ws(t, vend, len);
        if (i < len && t[i] == ',')
            i = skip_ws(t, i + 1, len);
    }
    if (i >= len || s->meta_open < 0)
        return SW_EINVALID;
    s->end = (long)i;
    return 0;
}

/* A JSON string literal of s (the value is a host/path: only quotes and backslashes need it). */
static void put_string(sw_buf *out, const char *s)
{
    sw_buf_putc(out, '"');
    for (; *s; s++) {
        if (*s == '"' || *s == '\\')
            sw_buf_putc(out, '\\');
        if ((unsigned char)*s >= 0x20)
            sw_buf_putc(out, *s);
    }
    sw_buf_putc(out, '"');
}

/* Writes status's content from its '{' on, with key set first. */
static size_t put_status(const char *t, size_t len, const scan *s, const char *key,
                         const char *value, sw_buf *out)
{
    size_t i = (size_t)s->status_open, kend;
    sw_buf_printf(out, "\"%s\":", key);
    put_string(out, value);
    i = skip_ws(t, i, len);
    if (t[i] == '"' && (kend = skip_string(t, i, len)) <= len && key_is(t, i, kend, key)) {
        /* replace: skip the old "key":value and its comma */
        size_t v = skip_ws(t, skip_ws(t, kend, len) + 1, len);
        i = skip_ws(t, skip_value(t, v, len), len);
        if (i < len && t[i] == ',')
            i++;
    }
    if (t[skip_ws(t, i, len)] != '}')
        sw_buf_putc(out, ',');
    return i;
}

static void put_rv(sw_buf *out, int64_t rev, bool meta_empty)
{
    sw_buf_printf(out, "\"resourceVersion\":\"%lld\"%s", (long long)rev, meta_empty ? "" : ",");
}

int sw_objtext_render(const char *text, size_t len, int64_t rev, const char *status_key,
                      const char *status_value, sw_buf *out)
{
    scan s = {0};
    if (scan_object(text, len, &s) < 0)
        return sw_error_set(SW_EINVALID, "stored object is not a JSON object with metadata");
    size_t pos = (size_t)s.meta_open;
    if (status_key && s.status_open >= 0 && s.status_open < s.meta_open) {
        /* stored with status before metadata (a client's key order is kept) */
        sw_buf_put(out, text, (size_t)s.status_open);
        pos = put_status(text, len, &s, status_key, status_value, out);
        sw_buf_put(out, text + pos, (size_t)s.meta_open - pos);
        put_rv(out, rev, s.meta_empty);
        sw_buf_put(out, text + s.meta_open, len - (size_t)s.meta_open);
        return sw_buf_error(out);
    }
    sw_buf_put(out, text, pos);
    put_rv(out, rev, s.meta_empty);
    if (status_key && s.status_open >= 0) {
        sw_buf_put(out, text + pos, (size_t)s.status_open - pos);
        pos = put_status(text, len, &s, status_key, status_value, out);
        sw_buf_put(out, text + pos, len - pos);
    } else if (status_key) {
        sw_buf_put(out, text + pos, (size_t)s.end - pos);
        sw_buf_printf(out, ",\"status\":{\"%s\":", status_key);
        put_string(out, status_value);
        sw_buf_putc(out, '}');
        sw_buf_put(out, text + s.end, len - (size_t)s.end);
    } else {
        sw_buf_put(out, text + pos, len - pos);
    }
    return sw_buf_error(out);
}
