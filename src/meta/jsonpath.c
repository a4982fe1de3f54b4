/* jsonpath: a cursor parser over the path that evaluates as it goes (see jsonpath.h): each step
 * maps the current candidate set to the next one. */
#include "meta/jsonpath.h"

#include "util/alloc.h"
#include "util/error.h"
#include "util/str.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_CANDIDATES 10000
#define MAX_NAME 256

typedef struct cursor {
    const char *p, *start;
} cursor;

typedef struct set {
    const json_t *v[MAX_CANDIDATES];
    size_t n;
} set;

static int bad(const cursor *c, const char *what)
{
    return sw_error_set(SW_EINVALID, "%s at offset %d", what, (int)(c->p - c->start));
}

static void add(set *s, const json_t *v)
{
    if (v && s->n < MAX_CANDIDATES)
        s->v[s->n++] = v;
}

/* A bare field name: letters, digits, '_', '-', '/', and '$'. */
static size_t name_len(const char *p)
{
    size_t n = 0;
    while (p[n] && (strchr("_-/$", p[n]) || (p[n] >= 'a' && p[n] <= 'z') ||
                    (p[n] >= 'A' && p[n] <= 'Z') || (p[n] >= '0' && p[n] <= '9')))
        n++;
    return n;
}

/* `'name'` or `"name"` at c into out. */
static int quoted(cursor *c, char *out, size_t n)
{
    char q = *c->p;
    const char *end = strchr(c->p + 1, q);
    if (!end || (size_t)(end - c->p - 1) >= n)
        return bad(c, "unterminated or too long quoted name");
    memcpy(out, c->p + 1, (size_t)(end - c->p - 1));
    out[end - c->p - 1] = '\0';
    c->p = end + 1;
    return 0;
}

/* `@.a.b=="v"` (or !=) inside a filter: the field path and the literal. */
typedef struct filter {
    char path[MAX_NAME];
    char value[MAX_NAME];
    bool negate;
    bool exists; /* `@.a` alone: the field is there */
} filter;

static int parse_filter(cursor *c, filter *f)
{
    if (strncmp(c->p, "?(@", 3))
        return bad(c, "expected ?(@");
    c->p += 3;
    size_t k = 0;
    while (*c->p == '.') {
        c->p++;
        size_t n = name_len(c->p);
        if (!n || k + n + 2 >= sizeof(f->path))
            return bad(c, "expected a field name in the filter");
        if (k)
            f->path[k++] = '.';
        memcpy(f->path + k, c->p, n);
        k += n;
        c->p += n;
    }
    f->path[k] = '\0';
    if (!k)
        return bad(c, "expected @.field in the filter");
    while (*c->p == ' ')
        c->p++;
    if (*c->p == ')') {
        f->exists = true;
    } else {
        if (!strncmp(c->p, "==", 2))
            f->negate = false;
        else if (!strncmp(c->p, "!=", 2))
            f->negate = true;
        else
            return bad(c, "expected == or != in the filter");
        c->p += 2;
        while (*c->p == ' ')
            c->p++;
        if (*c->p == '"' || *c->p == '\'') {
            if (quoted(c, f->value, sizeof(f->value)) < 0)
                return SW_EINVALID;
        } else {
            size_t n = strcspn(c->p, ") ");
            if (!n || n >= sizeof(f->value))
                return bad(c, "expected a value in the filter");
            memcpy(f->value, c->p, n);
            f->value[n] = '\0';
            c->p += n;
        }
        while (*c->p == ' ')
            c->p++;
    }
    if (strncmp(c->p, ")]", 2))
        return bad(c, "expected )] to end the filter");
    c->p += 2;
    return 0;
}

static const json_t *dotted(const json_t *v, const char *path)
{
    char part[MAX_NAME];
    const char *p = path;
    while (v && *p) {
        size_t n = strcspn(p, ".");
        if (n >= sizeof(part))
            return NULL;
        memcpy(part, p, n);
        part[n] = '\0';
        v = json_object_get(v, part);
        p += n + (p[n] == '.');
    }
    return v;
}

static bool matches(const json_t *item, const filter *f)
{
    const json_t *v = dotted(item, f->path);
    if (f->exists)
        return v != NULL;
    char text[MAX_NAME * 2];
    sw_jsonpath_text(v, text, sizeof(text));
    bool eq = v && !strcmp(text, f->value);
    return f->negate ? !eq : eq;
}

/* Runs path over *in (or only checks it when in is NULL); the result ends in *in (out is the
 * scratch set the steps alternate with). */
static int run(const char *path, set **in, set **out)
{
    cursor c = {path, path};
    bool wrapped = *c.p == '{';
    if (wrapped)
        c.p++;
    if (*c.p != '.')
        return bad(&c, "a JSONPath must start with '.'");
    set *cur = in ? *in : NULL, *next = out ? *out : NULL;
    while (*c.p && !(wrapped && *c.p == '}')) {
        if (next)
            next->n = 0;
        if (*c.p == '.') {
            c.p++;
            size_t n = name_len(c.p);
            if (!n && *c.p != '[')
                return bad(&c, "expected a field name after '.'");
            if (!n)
                continue;
            char name[MAX_NAME];
            if (n >= sizeof(name))
                return bad(&c, "field name too long");
            memcpy(name, c.p, n);
            name[n] = '\0';
            c.p += n;
            for (size_t i = 0; cur && i < cur->n; i++)
                add(next, json_object_get(cur->v[i], name));
        } else if (*c.p == '[') {
            c.p++;
            if (*c.p == '\'' || *c.p == '"') {
                char name[MAX_NAME];
                if (quoted(&c, name, sizeof(name)) < 0)
                    return SW_EINVALID;
                if (*c.p != ']')
                    return bad(&c, "expected ]");
                c.p++;
                for (size_t i = 0; cur && i < cur->n; i++)
                    add(next, json_object_get(cur->v[i], name));
            } else if (*c.p == '*') {
                if (c.p[1] != ']')
                    return bad(&c, "expected ] after *");
                c.p += 2;
                for (size_t i = 0; cur && i < cur->n; i++) {
                    size_t j;
                    const json_t *x;
                    if (json_is_array(cur->v[i]))
                        json_array_foreach(cur->v[i], j, x) add(next, x);
                    else if (json_is_object(cur->v[i])) {
                        const char *k;
                        json_object_foreach((json_t *)cur->v[i], k, x) add(next, x);
                    }
                }
            } else if (*c.p == '?') {
                filter f = {0};
                if (parse_filter(&c, &f) < 0)
                    return SW_EINVALID;
                for (size_t i = 0; cur && i < cur->n; i++) {
                    size_t j;
                    const json_t *x;
                    json_array_foreach(cur->v[i], j, x) if (matches(x, &f)) add(next, x);
                }
            } else {
                char *end;
                long idx = strtol(c.p, &end, 10);
                if (end == c.p || *end != ']')
                    return bad(&c, "expected an index, *, a quoted name or a filter in []");
                c.p = end + 1;
                for (size_t i = 0; cur && i < cur->n; i++) {
                    long len = (long)json_array_size(cur->v[i]);
                    long at = idx < 0 ? len + idx : idx;
                    if (at >= 0 && at < len)
                        add(next, json_array_get(cur->v[i], (size_t)at));
                }
            }
        } else {
            return bad(&c, "expected '.' or '['");
        }
        if (next) { /* the output becomes the input of the next step */
            set *t = cur;
            cur = next;
            next = t;
        }
    }
    if (in) {
        *in = cur;
        *out = next;
    }
    if (wrapped && *c.p != '}')
        return bad(&c, "expected } at the end");
    if (wrapped && c.p[1])
        return bad(&c, "unexpected text after }");
    return 0;
}

int sw_jsonpath_check(const char *path)
{
    if (!path || !*path)
        return sw_error_set(SW_EINVALID, "a JSONPath must not be empty");
    return run(path, NULL, NULL);
}

const json_t *sw_jsonpath_first(const json_t *obj, const char *path)
{
    if (!obj || !path)
        return NULL;
    set *a = sw_malloc(sizeof(*a)), *b = sw_malloc(sizeof(*b));
    const json_t *out = NULL;
    a->n = 0;
    add(a, obj);
    if (run(path, &a, &b) == 0 && a->n)
        out = a->v[0];
    sw_free(a);
    sw_free(b);
    return out;
}

void sw_jsonpath_text(const json_t *v, char *out, size_t n)
{
    if (!n)
        return;
    out[0] = '\0';
    if (!v)
        return;
    if (json_is_string(v)) {
        sw_strlcpy(out, json_string_value(v), n);
        return;
    }
    char *text = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY | JSON_SORT_KEYS);
    sw_strlcpy(out, text ? text : "", n);
    free(text);
}
