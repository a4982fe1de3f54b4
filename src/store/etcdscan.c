/* store/etcdscan: a cursor over a Range reply (see etcdscan.h). */
#include "store/etcdscan.h"

#include "util/alloc.h"
#include "util/error.h"
#include "util/str.h"

#include <string.h>

typedef struct cursor {
    const char *p, *end;
} cursor;

static void skip_ws(cursor *c)
{
    while (c->p < c->end && (*c->p == ' ' || *c->p == '\n' || *c->p == '\r' || *c->p == '\t'))
        c->p++;
}

static bool take(cursor *c, char ch)
{
    skip_ws(c);
    if (c->p < c->end && *c->p == ch) {
        c->p++;
        return true;
    }
    return false;
}

/* A string without escapes: its bytes between the quotes. */
static bool string(cursor *c, const char **s, size_t *n)
{
    if (!take(c, '"'))
        return false;
    const char *q = memchr(c->p, '"', (size_t)(c->end - c->p));
    if (!q || memchr(c->p, '\\', (size_t)(q - c->p)))
        return false;
    *s = c->p;
    *n = (size_t)(q - c->p);
    c->p = q + 1;
    return true;
}

static bool is(const char *s, size_t n, const char *word)
{
    return strlen(word) == n && !memcmp(s, word, n);
}

/* An int64 as the gateway writes it: a string of decimal digits. */
static bool number(cursor *c, int64_t *out)
{
    const char *s;
    size_t n;
    if (!string(c, &s, &n) || n == 0 || n > 18)
        return false;
    int64_t v = 0;
    for (size_t i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9')
            return false;
        v = v * 10 + (s[i] - '0');
    }
    *out = v;
    return true;
}

static bool literal(cursor *c, const char *word)
{
    size_t n = strlen(word);
    skip_ws(c);
    if ((size_t)(c->end - c->p) < n || memcmp(c->p, word, n))
        return false;
    c->p += n;
    return true;
}

/* Calls field(name) for each member of an object; false when field or the syntax fails. */
#define EACH_MEMBER(c, name, nlen, body)                                                           \
    do {                                                                                           \
        if (!take(c, '{'))                                                                         \
            return false;                                                                          \
        if (take(c, '}'))                                                                          \
            break;                                                                                 \
        do {                                                                                       \
            if (!string(c, &name, &nlen) || !take(c, ':'))                                         \
                return false;                                                                      \
            body                                                                                   \
        } while (take(c, ','));                                                                    \
        if (!take(c, '}'))                                                                         \
            return false;                                                                          \
    } while (0)

static bool header(cursor *c, int64_t *rev)
{
    const char *name, *v;
    size_t nlen, vlen;
    EACH_MEMBER(c, name, nlen, {
        if (is(name, nlen, "revision")) {
            if (!number(c, rev))
                return false;
        } else if (!string(c, &v, &vlen)) {
            return false;
        }
    });
    return true;
}

static bool b64(const char *s, size_t n, char **out, size_t *len)
{
    unsigned char *d = NULL;
    if (n == 0) {
        *out = sw_strdup("");
        *len = 0;
        return true;
    }
    if (sw_base64_decode(s, n, &d, len) < 0)
        return false;
    *out = (char *)d;
    return true;
}

static bool kv(cursor *c, const char *prefix, size_t prefix_len, sw_kv *out)
{
    const char *name, *key = NULL, *value = NULL;
    size_t nlen, klen = 0, vlen = 0, ignored;
    int64_t n;
    EACH_MEMBER(c, name, nlen, {
        if (is(name, nlen, "key")) {
            if (!string(c, &key, &klen))
                return false;
        } else if (is(name, nlen, "value")) {
            if (!string(c, &value, &vlen))
                return false;
        } else if (is(name, nlen, "create_revision")) {
            if (!number(c, &out->create_rev))
                return false;
        } else if (is(name, nlen, "mod_revision")) {
            if (!number(c, &out->mod_rev))
                return false;
        } else if (is(name, nlen, "version") || is(name, nlen, "lease")) {
            if (!number(c, &n))
                return false;
        } else {
            return false;
        }
    });
    char *full = NULL;
    size_t flen = 0;
    if (!key || !b64(key, klen, &full, &flen) || flen < prefix_len ||
        memcmp(full, prefix, prefix_len) || memchr(full, '\0', flen)) {
        sw_free(full);
        return false;
    }
    if (!(value ? b64(value, vlen, &out->value, &out->value_len)
                : b64("", 0, &out->value, &ignored))) {
        sw_free(full);
        return false;
    }
    out->key = sw_strdup(full + prefix_len);
    sw_free(full);
    return true;
}

/* The items read so far. */
typedef struct items {
    sw_kv *v;
    size_t n, cap;
} items;

static bool reply(cursor *c, const char *prefix, size_t prefix_len, items *out, int64_t *rev,
                  bool *more)
{
    const char *name;
    size_t nlen;
    int64_t count;
    EACH_MEMBER(c, name, nlen, {
        if (is(name, nlen, "header")) {
            if (!header(c, rev))
                return false;
        } else if (is(name, nlen, "more")) {
            if (literal(c, "true"))
                *more = true;
            else if (!literal(c, "false"))
                return false;
        } else if (is(name, nlen, "count")) {
            if (!number(c, &count))
                return false;
        } else if (is(name, nlen, "kvs")) {
            if (!take(c, '['))
                return false;
            if (take(c, ']'))
                continue;
            do {
                if (out->n == out->cap) {
                    out->cap = out->cap ? out->cap * 2 : 512;
                    out->v = sw_realloc(out->v, out->cap * sizeof(*out->v));
                }
                sw_kv *item = &out->v[out->n];
                memset(item, 0, sizeof(*item));
                if (!kv(c, prefix, prefix_len, item)) {
                    sw_kv_dispose(item);
                    return false;
                }
                out->n++;
            } while (take(c, ','));
            if (!take(c, ']'))
                return false;
        } else {
            return false;
        }
    });
    skip_ws(c);
    return c->p == c->end;
}

int sw_etcdscan_range(const char *text, size_t len, const char *prefix, size_t prefix_len,
                      sw_kv_list *out, int64_t *rev_out, bool *more_out)
{
    cursor c = {text, text + len};
    items got = {0};
    int64_t rev = 0;
    bool more = false;
    if (!reply(&c, prefix, prefix_len, &got, &rev, &more) || rev <= 0) {
        for (size_t i = 0; i < got.n; i++)
            sw_kv_dispose(&got.v[i]);
        sw_free(got.v);
        return SW_EINVALID;
    }
    out->items = sw_realloc(out->items, (out->count + got.n + 1) * sizeof(*out->items));
    if (got.n)
        memcpy(out->items + out->count, got.v, got.n * sizeof(*got.v));
    out->count += got.n;
    sw_free(got.v);
    *rev_out = rev;
    *more_out = more;
    return 0;
}
