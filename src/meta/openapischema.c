/* openapischema: prune, default and validate with a CRD's OpenAPI v3 schema
 * (openapischema.h). A schema is compiled (oascompile.c) into a tree of nodes, one per
 * (sub)schema, each with its keywords parsed once; the passes here walk that tree beside the
 * object. */
#include "meta/openapischema.h"

#include "meta/oas_int.h"

#include "meta/oasformat.h"
#include "util/alloc.h"
#include "util/buf.h"
#include "util/error.h"
#include "util/json.h"
#include "util/str.h"

#include <math.h>
#include <pthread.h>
#include <regex.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *const sw_oasi_type_words[] = {"",        "object", "array",  "string",
                                          "integer", "number", "boolean"};

/* ---- field paths ---- */

void sw_oasi_fp_init(fpath *p)
{
    p->cap = 256;
    p->s = sw_malloc(p->cap);
    p->s[0] = '\0';
    p->n = 0;
}

void sw_oasi_fp_free(fpath *p)
{
    sw_free(p->s);
}

/* Appends n bytes (after a '.' when sep and the path is not empty); returns the old length, to
 * give back to sw_oasi_fp_pop. Without printf: this runs for every field of every object. */
static size_t fp_put(fpath *p, bool sep, const char *data, size_t n)
{
    size_t mark = p->n, need = p->n + n + 2;
    if (need > MAX_PATH)
        return mark;
    if (need > p->cap) {
        while (p->cap < need)
            p->cap *= 2;
        p->s = sw_realloc(p->s, p->cap);
    }
    if (sep && p->n)
        p->s[p->n++] = '.';
    memcpy(p->s + p->n, data, n);
    p->n += n;
    p->s[p->n] = '\0';
    return mark;
}

size_t sw_oasi_fp_key(fpath *p, const char *key)
{
    return fp_put(p, true, key, strlen(key));
}

size_t sw_oasi_fp_index(fpath *p, size_t i)
{
    char digits[24], *d = digits + sizeof(digits);
    *--d = ']';
    do {
        *--d = (char)('0' + i % 10);
        i /= 10;
    } while (i);
    *--d = '[';
    return fp_put(p, false, d, (size_t)(digits + sizeof(digits) - d));
}

void sw_oasi_fp_pop(fpath *p, size_t mark)
{
    p->n = mark;
    p->s[mark] = '\0';
}

void sw_oasi_add_cause_v(json_t *causes, const char *reason, const char *field, const char *fmt,
                         va_list ap)
{
    if (json_array_size(causes) >= SW_OAS_MAX_CAUSES)
        return;
    sw_buf msg = SW_BUF_INIT(MAX_MESSAGE);
    sw_buf_vprintf(&msg, fmt, ap);
    /* a cause is never lost: text that is not UTF-8 (a cut value) is cleaned, not dropped */
    char *clean = sw_utf8_clean(sw_buf_cstr(&msg)), *cfield = sw_utf8_clean(field);
    json_t *c = json_pack("{s:s, s:s, s:s}", "reason", reason, "message", clean, "field", cfield);
    json_array_append_new(causes, c ? c
                                    : json_pack("{s:s, s:s, s:s}", "reason", reason, "message",
                                                "Invalid value", "field", ""));
    sw_free(clean);
    sw_free(cfield);
    sw_buf_dispose(&msg);
}

void sw_oasi_add_cause(json_t *causes, const char *reason, const char *field, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
void sw_oasi_add_cause(json_t *causes, const char *reason, const char *field, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    sw_oasi_add_cause_v(causes, reason, field, fmt, ap);
    va_end(ap);
}

/* ---- value rendering ---- */

static void render_number(double d, char *out, size_t n)
{
    if (d == floor(d) && fabs(d) < 1e15) {
        snprintf(out, n, "%.0f", d);
        return;
    }
    for (int prec = 1; prec <= 17; prec++) {
        snprintf(out, n, "%.*g", prec, d);
        if (strtod(out, NULL) == d)
            return;
    }
}

/* V in a message: JSON, numbers shortest, cut at about 200 bytes. */
void sw_oasi_render(const json_t *v, char *out, size_t n)
{
    if (json_is_integer(v)) {
        snprintf(out, n, "%lld", (long long)json_integer_value(v));
        return;
    }
    if (json_is_number(v)) {
        render_number(json_number_value(v), out, n);
        return;
    }
    char *s = sw_json_dumps(v, NULL);
    size_t len = strlen(s);
    if (len > 4096 && n > 4100) {
        size_t cut = 4096;
        while (cut > 0 && ((unsigned char)s[cut] & 0xC0) == 0x80)
            cut--; /* never inside a UTF-8 sequence */
        snprintf(out, n, "%.*s...", (int)cut, s);
    } else
        snprintf(out, n, "%s", s);
    sw_free(s);
}

#define RENDER_MAX 4200

/* sw_oasi_render into a new buffer (sw_free it): for values, which may be long. */
static char *render_new(const json_t *v)
{
    char *out = sw_malloc(RENDER_MAX);
    sw_oasi_render(v, out, RENDER_MAX);
    return out;
}

/* The type a value shows in messages: a whole real counts as an integer, as for kube. */
static const char *type_of(const json_t *v)
{
    if (json_is_real(v) && json_real_value(v) == floor(json_real_value(v)))
        return "integer";
    return sw_json_type_name(v);
}

bool sw_oasi_is_integral(const json_t *v)
{
    return json_is_integer(v) ||
           (json_is_real(v) && json_real_value(v) == floor(json_real_value(v)) &&
            isfinite(json_real_value(v)));
}

static bool type_ok(int type, const json_t *v)
{
    switch (type) {
    case T_OBJECT:
        return json_is_object(v);
    case T_ARRAY:
        return json_is_array(v);
    case T_STRING:
        return json_is_string(v);
    case T_INTEGER:
        return sw_oasi_is_integral(v);
    case T_NUMBER:
        return json_is_number(v);
    case T_BOOLEAN:
        return json_is_boolean(v);
    default:
        return true;
    }
}

/* Equality where 1 and 1.0 are the same number. */
static bool same_value(const json_t *a, const json_t *b)
{
    if (json_is_number(a) && json_is_number(b))
        return json_number_value(a) == json_number_value(b);
    return json_equal(a, b);
}

static size_t runes(const char *s)
{
    size_t n = 0;
    for (; *s; s++)
        if (((unsigned char)*s & 0xC0) != 0x80)
            n++;
    return n;
}

/* ---- freeing ---- */

void sw_oasi_node_free(node *n)
{
    if (!n)
        return;
    json_decref(n->def);
    json_decref(n->enumv);
    if (atomic_load(&n->re_state) == RE_READY)
        regfree(&n->re);
    sw_oasi_node_free(n->items);
    for (size_t i = 0; i < n->nprops; i++) {
        sw_free(n->props[i].name);
        sw_oasi_node_free(n->props[i].schema);
    }
    sw_free(n->props);
    sw_oasi_node_free(n->additional);
    for (size_t i = 0; i < n->nall; i++)
        sw_oasi_node_free(n->all[i]);
    for (size_t i = 0; i < n->nany; i++)
        sw_oasi_node_free(n->any[i]);
    for (size_t i = 0; i < n->none; i++)
        sw_oasi_node_free(n->one[i]);
    sw_free(n->all);
    sw_free(n->any);
    sw_free(n->one);
    sw_oasi_node_free(n->not );
    sw_free(n);
}

void sw_oas_free(sw_oas *s)
{
    if (!s)
        return;
    sw_oasi_node_free(s->root);
    json_decref(s->source);
    sw_free(s);
}

const json_t *sw_oas_source(const sw_oas *s)
{
    return s ? s->source : NULL;
}

bool sw_oas_has_defaults(const sw_oas *s)
{
    return s && s->defaults;
}

/* ---- pruning ---- */

static const char *const object_meta_fields[] = {"name",
                                                 "generateName",
                                                 "namespace",
                                                 "selfLink",
                                                 "uid",
                                                 "resourceVersion",
                                                 "generation",
                                                 "creationTimestamp",
                                                 "deletionTimestamp",
                                                 "deletionGracePeriodSeconds",
                                                 "labels",
                                                 "annotations",
                                                 "ownerReferences",
                                                 "finalizers",
                                                 "managedFields",
                                                 NULL};

static const prop *find_prop(const node *n, const char *name)
{
    for (size_t i = 0; i < n->nprops; i++)
        if (sw_str_eq(n->props[i].name, name))
            return &n->props[i];
    return NULL;
}

static void note_unknown(json_t *unknown, fpath *p, const char *key)
{
    if (!json_is_array(unknown) || json_array_size(unknown) >= 1000)
        return;
    size_t mark = sw_oasi_fp_key(p, key);
    json_array_append_new(unknown, json_string(p->s));
    sw_oasi_fp_pop(p, mark);
}

/* Returns whether anything was removed. */
/* A value with no schema (under additionalProperties: true): objects lose every field, as in
 * kube's pruning, arrays are walked, scalars stay. */
static bool prune_bare(json_t *v, fpath *p, json_t *unknown)
{
    bool removed = false;
    size_t i;
    json_t *x;
    if (json_is_array(v)) {
        json_array_foreach(v, i, x)
        {
            size_t mark = sw_oasi_fp_index(p, i);
            removed |= prune_bare(x, p, unknown);
            sw_oasi_fp_pop(p, mark);
        }
        return removed;
    }
    const char *key;
    void *tmp;
    json_object_foreach_safe(v, tmp, key, x)
    {
        note_unknown(unknown, p, key);
        json_object_del(v, key);
        removed = true;
    }
    return removed;
}

bool sw_oasi_prune_node(const node *n, json_t *v, fpath *p, json_t *unknown, bool root)
{
    bool removed = false;
    if (json_is_array(v) && n->items) {
        size_t i;
        json_t *x;
        json_array_foreach(v, i, x)
        {
            size_t mark = sw_oasi_fp_index(p, i);
            removed |= sw_oasi_prune_node(n->items, x, p, unknown, false);
            sw_oasi_fp_pop(p, mark);
        }
        return removed;
    }
    if (!json_is_object(v))
        return false;
    bool resource = root || n->embedded;
    const char *key;
    json_t *x;
    void *tmp;
    json_object_foreach_safe(v, tmp, key, x)
    {
        if (resource && (sw_str_eq(key, "apiVersion") || sw_str_eq(key, "kind")))
            continue;
        if (resource && sw_str_eq(key, "metadata")) {
            /* ObjectMeta's fields only, at the root as in embedded resources */
            if (json_is_object(x)) {
                const char *mk;
                json_t *mv;
                void *t2;
                size_t mark = sw_oasi_fp_key(p, "metadata");
                json_object_foreach_safe(x, t2, mk, mv)
                {
                    (void)mv;
                    if (!sw_str_one_of(mk, object_meta_fields)) {
                        note_unknown(unknown, p, mk);
                        json_object_del(x, mk);
                        removed = true;
                    }
                }
                sw_oasi_fp_pop(p, mark);
            }
            continue;
        }
        const prop *pr = find_prop(n, key);
        const node *sub = pr ? pr->schema : n->additional;
        if (sub) {
            size_t mark = sw_oasi_fp_key(p, key);
            removed |= sw_oasi_prune_node(sub, x, p, unknown, false);
            sw_oasi_fp_pop(p, mark);
            continue;
        }
        if (n->preserve)
            continue;
        if (n->additional_any) {
            size_t mark = sw_oasi_fp_key(p, key);
            removed |= prune_bare(x, p, unknown);
            sw_oasi_fp_pop(p, mark);
            continue;
        }
        note_unknown(unknown, p, key);
        json_object_del(v, key);
        removed = true;
    }
    return removed;
}

void sw_oas_prune(const sw_oas *s, json_t *obj, json_t *unknown)
{
    if (!s || !obj)
        return;
    fpath p;
    sw_oasi_fp_init(&p);
    sw_oasi_prune_node(s->root, obj, &p, unknown, true);
    sw_oasi_fp_free(&p);
}

/* ---- defaulting ---- */

static void default_node(const node *n, json_t *v);

/* The value at key of obj under schema sub: a non-nullable null becomes the default or goes; an
 * absent key takes the default; then its own defaults. */
static void default_member(const node *sub, json_t *obj, const char *key)
{
    json_t *cur = json_object_get(obj, key);
    if (json_is_null(cur) && !sub->nullable) {
        if (sub->def)
            json_object_set_new(obj, key, json_deep_copy(sub->def));
        else
            json_object_del(obj, key);
    } else if (!cur && sub->def)
        json_object_set_new(obj, key, json_deep_copy(sub->def));
    cur = json_object_get(obj, key);
    if (cur)
        default_node(sub, cur);
}

static void default_node(const node *n, json_t *v)
{
    if (json_is_array(v) && n->items) {
        size_t i;
        json_t *x;
        json_array_foreach(v, i, x)
        {
            if (json_is_null(x) && !n->items->nullable && n->items->def) {
                json_array_set_new(v, i, json_deep_copy(n->items->def));
                x = json_array_get(v, i);
            }
            default_node(n->items, x);
        }
        return;
    }
    if (!json_is_object(v))
        return;
    for (size_t i = 0; i < n->nprops; i++)
        default_member(n->props[i].schema, v, n->props[i].name);
    if (n->additional) {
        const char *key;
        json_t *x;
        void *tmp;
        json_object_foreach_safe(v, tmp, key, x)
        {
            (void)x;
            if (!find_prop(n, key))
                default_member(n->additional, v, key);
        }
    }
}

void sw_oas_default(const sw_oas *s, json_t *obj)
{
    if (s && json_is_object(obj))
        default_node(s->root, obj);
}

/* ---- validation ---- */

static void vcause(json_t *causes, fpath *p, const char *reason, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void vcause(json_t *causes, fpath *p, const char *reason, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    sw_oasi_add_cause_v(causes, reason, p->s, fmt, ap);
    va_end(ap);
}

/* a - b as a sign: exact for two integers (past 2^53 too), else in doubles. */
static int compare(const json_t *a, const json_t *b)
{
    if (json_is_integer(a) && json_is_integer(b))
        return json_integer_value(a) < json_integer_value(b)   ? -1
               : json_integer_value(a) > json_integer_value(b) ? 1
                                                               : 0;
    double x = json_number_value(a), y = json_number_value(b);
    return x < y ? -1 : x > y ? 1 : 0;
}

static void check_number(const node *n, const json_t *v, fpath *p, json_t *causes)
{
    double d = json_number_value(v);
    char rv[64], lim[64];
    sw_oasi_render(v, rv, sizeof(rv));
    if (n->maximum) {
        int cmp = compare(v, n->maximum);
        sw_oasi_render(n->maximum, lim, sizeof(lim));
        if (n->excl_max ? cmp >= 0 : cmp > 0)
            vcause(causes, p, "FieldValueInvalid",
                   "Invalid value: %s: %s in body should be less "
                   "than %s%s",
                   rv, p->s, n->excl_max ? "" : "or equal to ", lim);
    }
    if (n->minimum) {
        int cmp = compare(v, n->minimum);
        sw_oasi_render(n->minimum, lim, sizeof(lim));
        if (n->excl_min ? cmp <= 0 : cmp < 0)
            vcause(causes, p, "FieldValueInvalid",
                   "Invalid value: %s: %s in body should be "
                   "greater than %s%s",
                   rv, p->s, n->excl_min ? "" : "or equal to ", lim);
    }
    if (n->multiple && json_is_integer(v) && json_is_integer(n->multiple)) {
        sw_oasi_render(n->multiple, lim, sizeof(lim));
        if (json_integer_value(v) % json_integer_value(n->multiple) != 0)
            vcause(causes, p, "FieldValueInvalid",
                   "Invalid value: %s: %s in body should be a multiple of %s", rv, p->s, lim);
    } else if (n->multiple) {
        double m = json_number_value(n->multiple), q = d / m;
        sw_oasi_render(n->multiple, lim, sizeof(lim));
        if (fabs(q - nearbyint(q)) > 1e-9 * fmax(1.0, fabs(q)))
            vcause(causes, p, "FieldValueInvalid",
                   "Invalid value: %s: %s in body should be a multiple of %s", rv, p->s, lim);
    }
}

/* Whether n's pattern is compiled, compiling it now when it waited for its first use (one
 * compiler at a time; a pattern that fails here, which validation at write time rules out,
 * fails every value rather than none). */
static bool pattern_ready(const node *cn)
{
    static pthread_mutex_t lazy_mu = PTHREAD_MUTEX_INITIALIZER;
    node *n = (node *)cn; /* only re and re_state change, under lazy_mu */
    int st = atomic_load(&n->re_state);
    if (st != RE_LAZY)
        return st == RE_READY;
    pthread_mutex_lock(&lazy_mu);
    if (atomic_load(&n->re_state) == RE_LAZY)
        atomic_store(&n->re_state, sw_oas_regcomp(n->pattern, &n->re) == 0 ? RE_READY : RE_BAD);
    pthread_mutex_unlock(&lazy_mu);
    return atomic_load(&n->re_state) == RE_READY;
}

static void check_string(const node *n, const json_t *v, fpath *p, json_t *causes)
{
    const char *s = json_string_value(v);
    size_t len = runes(s);
    if (n->max_len >= 0 && len > (size_t)n->max_len)
        vcause(causes, p, "FieldValueTooLong", "Too long: may not be more than %lld bytes",
               (long long)n->max_len);
    bool short_ = n->min_len >= 0 && len < (size_t)n->min_len;
    bool mismatch = n->pattern && (!pattern_ready(n) || !sw_oas_regmatch(&n->re, s));
    if (!short_ && !mismatch)
        return;
    char *rv = render_new(v);
    if (short_)
        vcause(causes, p, "FieldValueInvalid",
               "Invalid value: %s: %s in body should be at least %lld chars long", rv, p->s,
               (long long)n->min_len);
    if (mismatch)
        vcause(causes, p, "FieldValueInvalid", "Invalid value: %s: %s in body should match '%s'",
               rv, p->s, n->pattern);
    sw_free(rv);
}

typedef struct {
    char *text;
    size_t index;
} keyed;

static int sorted_cb(const char *data, size_t n, void *p)
{
    return sw_buf_put(p, data, n) < 0 ? -1 : 0;
}

/* Compact JSON with object keys sorted: equal values give equal text. */
static char *sorted_text(const json_t *v)
{
    sw_buf b = SW_BUF_INIT(64 << 20);
    json_dump_callback(v, sorted_cb, &b, JSON_COMPACT | JSON_SORT_KEYS | JSON_ENCODE_ANY);
    sw_buf_putc(&b, '\0');
    return sw_buf_detach(&b, NULL);
}

static int keyed_cmp(const void *a, const void *b)
{
    const keyed *x = a, *y = b;
    int c = strcmp(x->text, y->text);
    return c ? c : (x->index < y->index ? -1 : x->index > y->index);
}

static int index_cmp(const void *a, const void *b)
{
    const keyed *x = a, *y = b;
    return x->index < y->index ? -1 : x->index > y->index;
}

/* The key fields of a list-map item, in x-kubernetes-list-map-keys order (new reference). */
static json_t *map_key(const node *n, const json_t *item)
{
    json_t *key = json_object();
    size_t k;
    const json_t *name;
    json_array_foreach(n->map_keys, k, name)
    {
        const json_t *kv = json_object_get(item, json_string_value(name));
        if (kv)
            json_object_set(key, json_string_value(name), (json_t *)kv);
    }
    return key;
}

/* Duplicates of a set (whole items) or map (the key fields), in O(n log n). */
static void check_duplicates(const node *n, const json_t *v, fpath *p, json_t *causes)
{
    size_t count = json_array_size(v);
    if (count < 2)
        return;
    keyed *ks = sw_calloc(count, sizeof(*ks));
    for (size_t i = 0; i < count; i++) {
        const json_t *item = json_array_get(v, i);
        json_t *key = n->list_type == LT_MAP ? map_key(n, item) : json_incref((json_t *)item);
        ks[i].text = sorted_text(key);
        ks[i].index = i;
        json_decref(key);
    }
    qsort(ks, count, sizeof(*ks), keyed_cmp);
    keyed *dups = sw_calloc(count, sizeof(*dups));
    size_t ndup = 0;
    for (size_t i = 1; i < count; i++)
        if (strcmp(ks[i].text, ks[i - 1].text) == 0)
            dups[ndup++].index = ks[i].index; /* the later of each equal pair */
    qsort(dups, ndup, sizeof(*dups), index_cmp);
    for (size_t i = 0; i < ndup; i++) {
        const json_t *item = json_array_get(v, dups[i].index);
        char *rv;
        if (n->list_type == LT_MAP) {
            json_t *key = map_key(n, item);
            rv = render_new(key);
            json_decref(key);
        } else
            rv = render_new(item);
        size_t mark = sw_oasi_fp_index(p, dups[i].index);
        vcause(causes, p, "FieldValueDuplicate", "Duplicate value: %s", rv);
        sw_oasi_fp_pop(p, mark);
        sw_free(rv);
    }
    for (size_t i = 0; i < count; i++)
        sw_free(ks[i].text);
    sw_free(ks);
    sw_free(dups);
}

static void check_object(const node *n, const json_t *v, const json_t *old, fpath *p,
                         json_t *causes)
{
    size_t i;
    const json_t *r;
    json_array_foreach(n->required, i, r)
    {
        if (json_object_get(v, json_string_value(r)))
            continue;
        size_t mark = sw_oasi_fp_key(p, json_string_value(r));
        vcause(causes, p, "FieldValueRequired", "Required value");
        sw_oasi_fp_pop(p, mark);
    }
    if (n->embedded) {
        static const char *const must[] = {"apiVersion", "kind"};
        for (size_t k = 0; k < 2; k++)
            if (!json_is_string(json_object_get(v, must[k])) ||
                !*json_string_value(json_object_get(v, must[k]))) {
                size_t mark = sw_oasi_fp_key(p, must[k]);
                vcause(causes, p, "FieldValueRequired", "Required value: must not be empty");
                sw_oasi_fp_pop(p, mark);
            }
    }
    size_t size = json_object_size(v);
    if (n->max_props >= 0 && size > (size_t)n->max_props)
        vcause(causes, p, "FieldValueTooMany", "Too many: %zu: must have at most %lld items", size,
               (long long)n->max_props);
    if (n->min_props >= 0 && size < (size_t)n->min_props)
        vcause(causes, p, "FieldValueInvalid",
               "Invalid value: %zu: %s in body should have at least %lld properties", size, p->s,
               (long long)n->min_props);
    const char *key;
    const json_t *x;
    json_object_foreach((json_t *)v, key, x)
    {
        const prop *pr = find_prop(n, key);
        const node *sub = pr ? pr->schema : n->additional;
        if (!sub)
            continue;
        size_t mark = sw_oasi_fp_key(p, key);
        sw_oasi_validate_node(sub, x, json_is_object(old) ? json_object_get(old, key) : NULL, p,
                              causes);
        sw_oasi_fp_pop(p, mark);
    }
}

static bool passes(const node *n, const json_t *v, fpath *p)
{
    json_t *scratch = json_array();
    sw_oasi_validate_node(n, v, NULL, p, scratch);
    bool ok = json_array_size(scratch) == 0;
    json_decref(scratch);
    return ok;
}

/* A failed junctor, reported as kube does: field "<nil>", the path in the message. */
static void junctor_cause(json_t *causes, const fpath *p, const char *what)
{
    sw_oasi_add_cause(causes, "FieldValueInvalid", "<nil>", "Invalid value: \"\": \"%s\" must %s",
                      p->s, what);
}

static void check_junctors(const node *n, const json_t *v, fpath *p, json_t *causes)
{
    for (size_t i = 0; i < n->nall; i++)
        sw_oasi_validate_node(n->all[i], v, NULL, p, causes);
    if (n->nany) {
        bool any = false;
        for (size_t i = 0; i < n->nany && !any; i++)
            any = passes(n->any[i], v, p);
        if (!any)
            junctor_cause(causes, p, "validate at least one schema (anyOf)");
    }
    if (n->none) {
        size_t ok = 0;
        for (size_t i = 0; i < n->none && ok < 2; i++)
            ok += passes(n->one[i], v, p);
        if (ok != 1)
            junctor_cause(causes, p, "validate one and only one schema (oneOf)");
    }
    if (n->not &&passes(n->not, v, p))
        junctor_cause(causes, p, "not validate the schema (not)");
}

/* old: the value at the same place before an update, or NULL. An unchanged value is not
 * validated again (kube's ratcheting): tightening a schema never locks stored objects, and a
 * changed object is checked whole (its required fields too). Array items are not matched up. */
void sw_oasi_validate_node(const node *n, const json_t *v, const json_t *old, fpath *p,
                           json_t *causes)
{
    if (old && json_equal(v, old))
        return;
    if (json_array_size(causes) >= SW_OAS_MAX_CAUSES)
        return;
    if (json_is_null(v) && n->nullable)
        return;
    if (n->int_or_string) {
        if (!sw_oasi_is_integral(v) && !json_is_string(v)) {
            vcause(causes, p, "FieldValueTypeInvalid",
                   "Invalid value: \"%s\": %s in body must be of type int-or-string: \"%s\"",
                   type_of(v), p->s, type_of(v));
            return;
        }
    } else if (n->type && !type_ok(n->type, v)) {
        vcause(causes, p, "FieldValueTypeInvalid",
               "Invalid value: \"%s\": %s in body must be of type %s: \"%s\"", type_of(v), p->s,
               sw_oasi_type_words[n->type], type_of(v));
        return;
    }
    if (n->enumv) {
        bool found = false;
        size_t i;
        const json_t *e;
        json_array_foreach(n->enumv, i, e) found = found || same_value(e, v);
        if (!found) {
            sw_buf list = SW_BUF_INIT(MAX_MESSAGE / 2);
            json_array_foreach(n->enumv, i, e)
            {
                char *ev = render_new(e);
                sw_buf_printf(&list, "%s%s", i ? ", " : "", ev);
                sw_free(ev);
            }
            char *rv = render_new(v);
            vcause(causes, p, "FieldValueNotSupported",
                   "Unsupported value: %s: supported values: %s", rv, sw_buf_cstr(&list));
            sw_free(rv);
            sw_buf_dispose(&list);
        }
    }
    if (n->fmt && !sw_oas_format_ok(n->fmt, v)) {
        char *rv = render_new(v);
        vcause(causes, p, "FieldValueTypeInvalid",
               "Invalid value: %s: %s in body must be of type %s: %s", rv, p->s,
               sw_oas_format_name(n->fmt), rv);
        sw_free(rv);
    }
    if (json_is_string(v))
        check_string(n, v, p, causes);
    else if (json_is_number(v))
        check_number(n, v, p, causes);
    else if (json_is_array(v)) {
        size_t count = json_array_size(v);
        if (n->max_items >= 0 && count > (size_t)n->max_items)
            vcause(causes, p, "FieldValueTooMany", "Too many: %zu: must have at most %lld items",
                   count, (long long)n->max_items);
        if (n->min_items >= 0 && count < (size_t)n->min_items)
            vcause(causes, p, "FieldValueInvalid",
                   "Invalid value: %zu: %s in body should have at least %lld items", count, p->s,
                   (long long)n->min_items);
        if (n->list_type != LT_ATOMIC)
            check_duplicates(n, v, p, causes);
        if (n->items) {
            size_t i;
            const json_t *x;
            json_array_foreach(v, i, x)
            {
                size_t mark = sw_oasi_fp_index(p, i);
                sw_oasi_validate_node(n->items, x, NULL, p, causes);
                sw_oasi_fp_pop(p, mark);
            }
        }
    } else if (json_is_object(v))
        check_object(n, v, old, p, causes);
    check_junctors(n, v, p, causes);
}

int sw_oas_validate(const sw_oas *s, const json_t *obj, json_t **causes)
{
    return sw_oas_validate_update(s, obj, NULL, causes);
}

int sw_oas_validate_update(const sw_oas *s, const json_t *obj, const json_t *old, json_t **causes)
{
    if (causes)
        *causes = NULL;
    if (!s)
        return 0;
    json_t *c = json_array();
    fpath p;
    sw_oasi_fp_init(&p);
    sw_oasi_validate_node(s->root, obj, old, &p, c);
    sw_oasi_fp_free(&p);
    if (json_array_size(c) == 0) {
        json_decref(c);
        return 0;
    }
    if (causes)
        *causes = c;
    else
        json_decref(c);
    return SW_EINVALID;
}
