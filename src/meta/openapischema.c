/* openapischema: compile, prune, default and validate with a CRD's OpenAPI v3 schema
 * (openapischema.h). A schema is compiled into a tree of nodes, one per (sub)schema, each with
 * its keywords parsed once; the passes walk that tree beside the object. */
#include "meta/openapischema.h"

#include "meta/names.h"
#include "meta/oasformat.h"
#include "util/alloc.h"
#include "util/buf.h"
#include "util/error.h"
#include "util/json.h"
#include "util/str.h"
#include "util/time.h"

#include <math.h>
#include <pthread.h>
#include <regex.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { T_OBJECT = 1, T_ARRAY, T_STRING, T_INTEGER, T_NUMBER, T_BOOLEAN };
static const char *const type_words[] = {"",        "object", "array",  "string",
                                         "integer", "number", "boolean"};
enum { LT_ATOMIC, LT_SET, LT_MAP };
enum { RE_NONE, RE_READY, RE_LAZY, RE_BAD };
typedef struct node node;
typedef struct {
    char *name;
    node *schema;
} prop;

struct node {
    int type; /* T_* or 0 */
    bool nullable, preserve, embedded, int_or_string;
    int fmt;
    json_t *def;                                /* default, or NULL */
    json_t *enumv;                              /* array, or NULL */
    const json_t *maximum, *minimum, *multiple; /* numbers in the source, or NULL */
    bool excl_max, excl_min;
    int64_t max_len, min_len, max_items, min_items, max_props, min_props; /* -1: none */
    regex_t re;
    _Atomic int re_state; /* RE_NONE, RE_READY (re compiled), RE_LAZY (on first use), RE_BAD */
    const char *pattern;  /* in the source */
    node *items;
    int list_type;
    const json_t *map_keys; /* array of strings in the source */
    prop *props;
    size_t nprops;
    const json_t *required; /* array of strings in the source */
    node *additional;       /* additionalProperties schema */
    bool additional_any;    /* additionalProperties: true */
    node **all, **any, **one, *not ;
    size_t nall, nany, none;
};

struct sw_oas {
    json_t *source;
    node *root;
    bool defaults; /* some node has a default */
};

/* ---- field paths ---- */

#define MAX_PATH 65536 /* bytes of one field path; longer ones are cut */
#define MAX_MESSAGE 65536

typedef struct {
    char *s;
    size_t n, cap;
} fpath;

static void fp_init(fpath *p)
{
    p->cap = 256;
    p->s = sw_malloc(p->cap);
    p->s[0] = '\0';
    p->n = 0;
}

static void fp_free(fpath *p)
{
    sw_free(p->s);
}

/* Appends n bytes (after a '.' when sep and the path is not empty); returns the old length, to
 * give back to fp_pop. Without printf: this runs for every field of every object. */
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

static size_t fp_key(fpath *p, const char *key)
{
    return fp_put(p, true, key, strlen(key));
}

static size_t fp_index(fpath *p, size_t i)
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

static void fp_pop(fpath *p, size_t mark)
{
    p->n = mark;
    p->s[mark] = '\0';
}

static void add_cause_v(json_t *causes, const char *reason, const char *field, const char *fmt,
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

static void add_cause(json_t *causes, const char *reason, const char *field, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void add_cause(json_t *causes, const char *reason, const char *field, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    add_cause_v(causes, reason, field, fmt, ap);
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
static void render(const json_t *v, char *out, size_t n)
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

/* render into a new buffer (sw_free it): for values, which may be long. */
static char *render_new(const json_t *v)
{
    char *out = sw_malloc(RENDER_MAX);
    render(v, out, RENDER_MAX);
    return out;
}

/* The type a value shows in messages: a whole real counts as an integer, as for kube. */
static const char *type_of(const json_t *v)
{
    if (json_is_real(v) && json_real_value(v) == floor(json_real_value(v)))
        return "integer";
    return sw_json_type_name(v);
}

static bool is_integral(const json_t *v)
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
        return is_integral(v);
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

static void node_free(node *n)
{
    if (!n)
        return;
    json_decref(n->def);
    json_decref(n->enumv);
    if (atomic_load(&n->re_state) == RE_READY)
        regfree(&n->re);
    node_free(n->items);
    for (size_t i = 0; i < n->nprops; i++) {
        sw_free(n->props[i].name);
        node_free(n->props[i].schema);
    }
    sw_free(n->props);
    node_free(n->additional);
    for (size_t i = 0; i < n->nall; i++)
        node_free(n->all[i]);
    for (size_t i = 0; i < n->nany; i++)
        node_free(n->any[i]);
    for (size_t i = 0; i < n->none; i++)
        node_free(n->one[i]);
    sw_free(n->all);
    sw_free(n->any);
    sw_free(n->one);
    node_free(n->not );
    sw_free(n);
}

void sw_oas_free(sw_oas *s)
{
    if (!s)
        return;
    node_free(s->root);
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

/* ---- compiling ---- */

enum { AT_ROOT, AT_PROPERTY, AT_ITEMS, AT_JUNCTOR };

typedef struct {
    json_t *causes;
    size_t nodes;
    bool defaults;
    bool lazy; /* patterns compiled on first use */
    fpath path;
} cctx;

static node *compile_node(cctx *c, const json_t *schema, int at, int depth);
static void validate_node(const node *n, const json_t *v, const json_t *old, fpath *p,
                          json_t *causes);
static bool prune_node(const node *n, json_t *v, fpath *p, json_t *unknown, bool root);

static void ccause(cctx *c, const char *reason, const char *key, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void ccause(cctx *c, const char *reason, const char *key, const char *fmt, ...)
{
    size_t mark = key ? fp_key(&c->path, key) : c->path.n;
    va_list ap;
    va_start(ap, fmt);
    add_cause_v(c->causes, reason, c->path.s, fmt, ap);
    va_end(ap);
    fp_pop(&c->path, mark);
}

static bool count_kw(cctx *c, const json_t *schema, const char *kw, int64_t *out)
{
    const json_t *v = json_object_get(schema, kw);
    *out = -1;
    if (!v)
        return true;
    if (!is_integral(v) || json_number_value(v) < 0) {
        char r[256];
        render(v, r, sizeof(r));
        ccause(c, "FieldValueInvalid", kw, "Invalid value: %s: must be a non-negative integer", r);
        return false;
    }
    *out = (int64_t)json_number_value(v);
    return true;
}

static bool number_kw(cctx *c, const json_t *schema, const char *kw, const json_t **out)
{
    const json_t *v = json_object_get(schema, kw);
    *out = NULL;
    if (!v)
        return true;
    if (!json_is_number(v)) {
        char r[256];
        render(v, r, sizeof(r));
        ccause(c, "FieldValueInvalid", kw, "Invalid value: %s: must be a number", r);
        return false;
    }
    *out = v;
    return true;
}

/* The exact anyOf int-or-string spells out: [{type: integer}, {type: string}]. */
static bool int_or_string_anyof(const json_t *any)
{
    return json_array_size(any) == 2 &&
           sw_str_eq(sw_json_str_at(json_array_get(any, 0), "type"), "integer") &&
           sw_str_eq(sw_json_str_at(json_array_get(any, 1), "type"), "string") &&
           json_object_size(json_array_get(any, 0)) == 1 &&
           json_object_size(json_array_get(any, 1)) == 1;
}

static bool compile_list(cctx *c, const json_t *schema, const char *kw, int depth, node ***out,
                         size_t *nout)
{
    const json_t *list = json_object_get(schema, kw);
    if (!list)
        return true;
    if (!json_is_array(list) || json_array_size(list) == 0) {
        ccause(c, "FieldValueInvalid", kw, "Invalid value: must be a non-empty list of schemas");
        return false;
    }
    size_t mark = fp_key(&c->path, kw);
    *out = sw_calloc(json_array_size(list), sizeof(node *));
    size_t i;
    const json_t *sub;
    bool ok = true;
    json_array_foreach(list, i, sub)
    {
        size_t m2 = fp_index(&c->path, i);
        node *n = compile_node(c, sub, AT_JUNCTOR, depth + 1);
        fp_pop(&c->path, m2);
        if (!n) {
            ok = false;
            break;
        }
        (*out)[(*nout)++] = n;
    }
    fp_pop(&c->path, mark);
    return ok;
}

/* Every field a junctor's schema sub names, at any depth, must be declared at the same place in
 * main, the schema the junctor sits in; rel is that place relative to the current path. */
static bool junctor_declared(cctx *c, const json_t *main, const json_t *sub, sw_buf *rel,
                             const char *where, int depth)
{
    if (depth > SW_OAS_MAX_DEPTH || !json_is_object(sub))
        return true;
    const json_t *props = json_object_get(main, "properties");
    const char *name;
    const json_t *x;
    json_object_foreach((json_t *)json_object_get(sub, "properties"), name, x)
    {
        size_t mark = rel->len;
        sw_buf_printf(rel, "%sproperties[%s]", rel->len ? "." : "", name);
        if (!json_object_get(props, name)) {
            ccause(c, "FieldValueRequired", sw_buf_cstr(rel),
                   "Required value: because it is defined in %s%s%s", c->path.s,
                   c->path.n ? "." : "", where);
            return false;
        }
        bool ok = junctor_declared(c, json_object_get(props, name), x, rel, where, depth + 1);
        rel->len = mark;
        if (rel->ptr)
            rel->ptr[mark] = '\0';
        if (!ok)
            return false;
    }
    const json_t *items = json_object_get(sub, "items");
    if (items) {
        size_t mark = rel->len;
        sw_buf_printf(rel, "%sitems", rel->len ? "." : "");
        bool ok = junctor_declared(c, json_object_get(main, "items"), items, rel, where, depth + 1);
        rel->len = mark;
        if (rel->ptr)
            rel->ptr[mark] = '\0';
        return ok;
    }
    return true;
}

static bool junctor_fields_declared(cctx *c, const json_t *schema)
{
    static const char *const kws[] = {"allOf", "anyOf", "oneOf", "not"};
    for (size_t k = 0; k < 4; k++) {
        const json_t *list = json_object_get(schema, kws[k]);
        size_t count = json_is_array(list) ? json_array_size(list) : json_is_object(list);
        for (size_t i = 0; i < count; i++) {
            const json_t *sub = json_is_array(list) ? json_array_get(list, i) : list;
            char where[64];
            if (json_is_array(list))
                snprintf(where, sizeof(where), "%s[%zu]", kws[k], i);
            else
                snprintf(where, sizeof(where), "%s", kws[k]);
            sw_buf rel = SW_BUF_INIT(MAX_PATH);
            bool ok = junctor_declared(c, schema, sub, &rel, where, 0);
            sw_buf_dispose(&rel);
            if (!ok)
                return false;
        }
    }
    return true;
}

static bool compile_props(cctx *c, node *n, const json_t *schema, int at, int depth)
{
    const json_t *props = json_object_get(schema, "properties");
    if (!props)
        return true;
    if (!json_is_object(props)) {
        ccause(c, "FieldValueInvalid", "properties", "Invalid value: must be an object");
        return false;
    }
    n->props = sw_calloc(json_object_size(props) + 1, sizeof(prop));
    const char *name;
    const json_t *sub;
    json_object_foreach((json_t *)props, name, sub)
    {
        char key[600];
        snprintf(key, sizeof(key), "properties[%s]", name);
        size_t mark = fp_key(&c->path, key);
        bool root_meta = at == AT_ROOT && sw_str_eq(name, "metadata");
        if (at == AT_ROOT &&
            (sw_str_eq(name, "apiVersion") || sw_str_eq(name, "kind") || root_meta) &&
            json_object_get(sub, "default")) {
            ccause(c, "FieldValueForbidden", "default", "Forbidden: must not be set");
            fp_pop(&c->path, mark);
            return false;
        }
        if (root_meta) {
            static const char *const meta_keys[] = {"type", "properties", "description", "title",
                                                    NULL};
            const char *mk;
            const json_t *mv;
            bool other = false;
            json_object_foreach((json_t *)sub, mk, mv) other =
                other || (!sw_str_one_of(mk, meta_keys) || !json_is_object(sub));
            json_object_foreach((json_t *)json_object_get(sub, "properties"), mk, mv)
            {
                (void)mv;
                if (other || (!sw_str_eq(mk, "name") && !sw_str_eq(mk, "generateName"))) {
                    ccause(c, "FieldValueForbidden", NULL,
                           "Forbidden: must not specify anything other than name and "
                           "generateName, but metadata is implicitly specified");
                    fp_pop(&c->path, mark);
                    return false;
                }
            }
            if (other) {
                ccause(c, "FieldValueForbidden", NULL,
                       "Forbidden: must not specify anything other than name and "
                       "generateName, but metadata is implicitly specified");
                fp_pop(&c->path, mark);
                return false;
            }
        }
        node *p = compile_node(c, sub, at == AT_JUNCTOR ? AT_JUNCTOR : AT_PROPERTY, depth + 1);
        fp_pop(&c->path, mark);
        if (!p)
            return false;
        n->props[n->nprops].name = sw_strdup(name);
        n->props[n->nprops++].schema = p;
    }
    return true;
}

static bool compile_lists(cctx *c, node *n, const json_t *schema)
{
    const json_t *lt = json_object_get(schema, "x-kubernetes-list-type");
    const json_t *keys = json_object_get(schema, "x-kubernetes-list-map-keys");
    const char *mt = sw_json_str_at(schema, "x-kubernetes-map-type");
    if (json_object_get(schema, "x-kubernetes-map-type") && !sw_str_eq(mt, "granular") &&
        !sw_str_eq(mt, "atomic")) {
        ccause(c, "FieldValueNotSupported", "x-kubernetes-map-type",
               "Unsupported value: \"%s\": supported values: \"atomic\", \"granular\"",
               mt ? mt : "");
        return false;
    }
    if (!lt) {
        if (keys) {
            ccause(c, "FieldValueForbidden", "x-kubernetes-list-map-keys",
                   "Forbidden: must not be set if x-kubernetes-list-type is not map");
            return false;
        }
        return true;
    }
    const char *ls = json_string_value(lt);
    if (n->type != T_ARRAY) {
        ccause(c, "FieldValueForbidden", "x-kubernetes-list-type",
               "Forbidden: must only be used on type=array");
        return false;
    }
    if (sw_str_eq(ls, "atomic"))
        n->list_type = LT_ATOMIC;
    else if (sw_str_eq(ls, "set"))
        n->list_type = LT_SET;
    else if (sw_str_eq(ls, "map"))
        n->list_type = LT_MAP;
    else {
        ccause(c, "FieldValueNotSupported", "x-kubernetes-list-type",
               "Unsupported value: \"%s\": supported values: \"atomic\", \"map\", \"set\"",
               ls ? ls : "");
        return false;
    }
    const node *it = n->items;
    if (n->list_type == LT_SET && it && (it->type == T_OBJECT || it->type == T_ARRAY) &&
        !sw_str_eq(sw_json_str_at(json_object_get(schema, "items"), "x-kubernetes-map-type"),
                   "atomic")) {
        ccause(c, "FieldValueForbidden", "items.type",
               "Forbidden: must be a scalar type if parent array's x-kubernetes-list-type is set");
        return false;
    }
    if (n->list_type != LT_MAP) {
        if (keys) {
            ccause(c, "FieldValueForbidden", "x-kubernetes-list-map-keys",
                   "Forbidden: must not be set if x-kubernetes-list-type is not map");
            return false;
        }
        return true;
    }
    if (!json_is_array(keys) || json_array_size(keys) == 0) {
        ccause(c, "FieldValueRequired", "x-kubernetes-list-map-keys",
               "Required value: must not be empty if x-kubernetes-list-type is map");
        return false;
    }
    if (!it || it->type != T_OBJECT) {
        ccause(c, "FieldValueInvalid", "items.type",
               "Invalid value: must be object if parent array's x-kubernetes-list-type is map");
        return false;
    }
    const json_t *req = json_object_get(json_object_get(schema, "items"), "required");
    size_t i;
    const json_t *k;
    json_array_foreach(keys, i, k)
    {
        const char *ks = json_string_value(k);
        const node *kp = NULL;
        for (size_t j = 0; ks && j < it->nprops; j++)
            if (sw_str_eq(it->props[j].name, ks))
                kp = it->props[j].schema;
        char key[600];
        snprintf(key, sizeof(key), "items.properties[%s]", ks ? ks : "");
        if (!kp) {
            ccause(c, "FieldValueRequired", key,
                   "Required value: entries of x-kubernetes-list-map-keys must be properties");
            return false;
        }
        if (kp->type == T_OBJECT || kp->type == T_ARRAY) {
            ccause(c, "FieldValueInvalid", key,
                   "Invalid value: must be a scalar type if parent array's "
                   "x-kubernetes-list-type is map");
            return false;
        }
        bool required = false;
        size_t r;
        const json_t *rv;
        json_array_foreach(req, r, rv) required = required || sw_str_eq(json_string_value(rv), ks);
        if (!required && !kp->def) {
            ccause(c, "FieldValueRequired", key,
                   "Required value: map keys must be required or have a default value");
            return false;
        }
    }
    n->map_keys = keys;
    return true;
}

static bool compile_keywords(cctx *c, node *n, const json_t *schema)
{
    static const char *const refused[] = {
        "$ref",   "id", "definitions", "dependencies", "patternProperties", "additionalItems",
        "$schema"};
    for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++)
        if (json_object_get(schema, refused[i])) {
            ccause(c, "FieldValueForbidden", refused[i], "Forbidden: %s is not supported",
                   refused[i]);
            return false;
        }
    if (json_is_true(json_object_get(schema, "uniqueItems"))) {
        ccause(c, "FieldValueForbidden", "uniqueItems",
               "Forbidden: uniqueItems cannot be set to true since the runtime complexity "
               "becomes quadratic");
        return false;
    }
    if (json_object_get(schema, "x-kubernetes-validations")) {
        ccause(c, "FieldValueForbidden", "x-kubernetes-validations",
               "Forbidden: slipway does not evaluate CEL rules");
        return false;
    }
    const json_t *pres = json_object_get(schema, "x-kubernetes-preserve-unknown-fields");
    if (pres && !json_is_true(pres)) {
        ccause(c, "FieldValueInvalid", "x-kubernetes-preserve-unknown-fields",
               "Invalid value: false: must be true or undefined");
        return false;
    }
    n->preserve = pres != NULL;
    n->embedded = json_is_true(json_object_get(schema, "x-kubernetes-embedded-resource"));
    n->int_or_string = json_is_true(json_object_get(schema, "x-kubernetes-int-or-string"));
    n->nullable = json_is_true(json_object_get(schema, "nullable"));
    if (!count_kw(c, schema, "maxLength", &n->max_len) ||
        !count_kw(c, schema, "minLength", &n->min_len) ||
        !count_kw(c, schema, "maxItems", &n->max_items) ||
        !count_kw(c, schema, "minItems", &n->min_items) ||
        !count_kw(c, schema, "maxProperties", &n->max_props) ||
        !count_kw(c, schema, "minProperties", &n->min_props) ||
        !number_kw(c, schema, "maximum", &n->maximum) ||
        !number_kw(c, schema, "minimum", &n->minimum) ||
        !number_kw(c, schema, "multipleOf", &n->multiple))
        return false;
    if (n->multiple && json_number_value(n->multiple) <= 0) {
        ccause(c, "FieldValueInvalid", "multipleOf", "Invalid value: must be greater than zero");
        return false;
    }
    n->excl_max = json_is_true(json_object_get(schema, "exclusiveMaximum"));
    n->excl_min = json_is_true(json_object_get(schema, "exclusiveMinimum"));
    const json_t *en = json_object_get(schema, "enum");
    if (en && !json_is_array(en)) {
        ccause(c, "FieldValueInvalid", "enum", "Invalid value: must be a list");
        return false;
    }
    n->enumv = json_incref((json_t *)en);
    static const char *const booleans[] = {"nullable",
                                           "exclusiveMaximum",
                                           "exclusiveMinimum",
                                           "uniqueItems",
                                           "x-kubernetes-embedded-resource",
                                           "x-kubernetes-int-or-string"};
    for (size_t b = 0; b < sizeof(booleans) / sizeof(booleans[0]); b++) {
        const json_t *x = json_object_get(schema, booleans[b]);
        if (x && !json_is_boolean(x)) {
            char rv[256];
            render(x, rv, sizeof(rv));
            ccause(c, "FieldValueInvalid", booleans[b], "Invalid value: %s: must be a boolean", rv);
            return false;
        }
    }
    const json_t *req = json_object_get(schema, "required");
    size_t i;
    const json_t *r;
    if (req && !json_is_array(req)) {
        ccause(c, "FieldValueInvalid", "required", "Invalid value: must be a list of names");
        return false;
    }
    json_array_foreach(req, i, r) if (!json_is_string(r))
    {
        ccause(c, "FieldValueInvalid", "required", "Invalid value: must be a list of names");
        return false;
    }
    n->required = json_is_array(req) ? req : NULL;
    n->fmt = sw_oas_format_find(sw_json_str_at(schema, "format"));
    const json_t *pat = json_object_get(schema, "pattern");
    if (pat) {
        n->pattern = json_string_value(pat);
        int error = !n->pattern ? SW_EINVALID
                    : c->lazy   ? 0 /* a schema validated when its CRD was written */
                                : sw_oas_regcomp(n->pattern, &n->re);
        atomic_store(&n->re_state, error < 0 ? RE_NONE : c->lazy ? RE_LAZY : RE_READY);
        if (error == SW_ELIMIT) {
            ccause(c, "FieldValueTooLong", "pattern", "Too long: may not be more than %d bytes",
                   SW_OAS_MAX_PATTERN);
            return false;
        }
        if (error < 0) {
            char rv[256];
            render(pat, rv, sizeof(rv));
            ccause(c, "FieldValueInvalid", "pattern",
                   "Invalid value: %s: must be a valid regular expression slipway supports "
                   "(POSIX extended, with RE2's \\d \\s \\w and (?:...)), but isn't",
                   rv);
            return false;
        }
    }
    return true;
}

static bool check_default(cctx *c, node *n, const json_t *schema)
{
    const json_t *def = json_object_get(schema, "default");
    if (!def)
        return true;
    char rv[256];
    render(def, rv, sizeof(rv));
    json_t *copy = json_deep_copy(def);
    fpath p;
    fp_init(&p);
    json_t *unknown = json_array();
    prune_node(n, copy, &p, unknown, false);
    bool pruned = json_array_size(unknown) > 0;
    json_decref(unknown);
    json_t *causes = json_array();
    if (!pruned)
        validate_node(n, copy, NULL, &p, causes);
    json_decref(copy);
    fp_free(&p);
    bool ok = !pruned && json_array_size(causes) == 0;
    if (pruned)
        ccause(c, "FieldValueInvalid", "default", "Invalid value: %s: must not have unknown fields",
               rv);
    else if (!ok)
        ccause(c, "FieldValueInvalid", "default", "Invalid value: %s: %s", rv,
               sw_json_str_at(json_array_get(causes, 0), "message") ?: "invalid");
    json_decref(causes);
    if (ok) {
        n->def = json_deep_copy(def);
        c->defaults = true;
    }
    return ok;
}

static node *compile_node(cctx *c, const json_t *schema, int at, int depth)
{
    if (depth > SW_OAS_MAX_DEPTH || ++c->nodes > SW_OAS_MAX_NODES) {
        ccause(c, "FieldValueInvalid", NULL,
               "Invalid value: the schema nests more than %d levels "
               "or has more than %d schemas",
               SW_OAS_MAX_DEPTH, SW_OAS_MAX_NODES);
        return NULL;
    }
    if (!json_is_object(schema)) {
        ccause(c, "FieldValueInvalid", NULL, "Invalid value: must be a schema object");
        return NULL;
    }
    node *n = sw_calloc(1, sizeof(*n));
    if (!compile_keywords(c, n, schema))
        goto fail;
    const json_t *type = json_object_get(schema, "type");
    if (type) {
        const char *t = json_string_value(type);
        for (int i = 1; t && i <= T_BOOLEAN; i++)
            if (sw_str_eq(t, type_words[i]))
                n->type = i;
        if (!n->type) {
            ccause(c, "FieldValueNotSupported", "type",
                   "Unsupported value: \"%s\": supported values: \"array\", \"boolean\", "
                   "\"integer\", \"number\", \"object\", \"string\"",
                   t ? t : "");
            goto fail;
        }
    }
    if (at == AT_JUNCTOR) {
        static const char *const empty[] = {"type",
                                            "additionalProperties",
                                            "default",
                                            "nullable",
                                            "title",
                                            "description",
                                            "x-kubernetes-preserve-unknown-fields",
                                            "x-kubernetes-embedded-resource",
                                            "x-kubernetes-int-or-string",
                                            "x-kubernetes-list-type",
                                            "x-kubernetes-list-map-keys",
                                            "x-kubernetes-map-type"};
        for (size_t i = 0; i < sizeof(empty) / sizeof(empty[0]); i++)
            if (json_object_get(schema, empty[i])) {
                ccause(c, "FieldValueForbidden", empty[i],
                       "Forbidden: must be empty to be structural");
                goto fail;
            }
        if (json_object_get(json_object_get(schema, "properties"), "metadata") && depth == 1) {
            ccause(c, "FieldValueForbidden", "properties[metadata]",
                   "Forbidden: must not be specified in a nested context");
            goto fail;
        }
    } else if (!n->type && !n->int_or_string && !n->preserve) {
        ccause(c, "FieldValueRequired", "type",
               at == AT_ROOT    ? "Required value: must not be empty at the root"
               : at == AT_ITEMS ? "Required value: must not be empty for specified array items"
                                : "Required value: must not be empty for specified object "
                                  "fields");
        goto fail;
    }
    if (at == AT_ROOT && n->type != T_OBJECT) {
        ccause(c, "FieldValueInvalid", "type", "Invalid value: \"%s\": must be object at the root",
               json_string_value(type) ?: "");
        goto fail;
    }
    if (n->int_or_string && n->type) {
        ccause(c, "FieldValueForbidden", "type",
               "Forbidden: must be empty if x-kubernetes-int-or-string is true");
        goto fail;
    }
    if (n->embedded && n->type != T_OBJECT) {
        ccause(c, "FieldValueInvalid", "type",
               "Invalid value: must be object if x-kubernetes-embedded-resource is true");
        goto fail;
    }
    if (!compile_props(c, n, schema, at, depth))
        goto fail;
    const json_t *add = json_object_get(schema, "additionalProperties");
    if (add) {
        const char *why = at == AT_ROOT ? "must not be used at the root"
                          : n->embedded ? "must not be used if x-kubernetes-embedded-resource is "
                                          "set"
                          : n->nprops && !json_is_true(add)
                              ? "additionalProperties and properties are mutual exclusive"
                          : json_is_false(add) ? "must not be false; leave it out, and fields "
                                                 "not in properties are pruned"
                                               : NULL;
        if (why) {
            ccause(c, "FieldValueForbidden", "additionalProperties", "Forbidden: %s", why);
            goto fail;
        }
        if (json_is_true(add))
            n->additional_any = true;
        else {
            size_t mark = fp_key(&c->path, "additionalProperties");
            n->additional = compile_node(c, add, AT_PROPERTY, depth + 1);
            fp_pop(&c->path, mark);
            if (!n->additional)
                goto fail;
        }
    }
    const json_t *items = json_object_get(schema, "items");
    if (items) {
        if (!json_is_object(items)) {
            ccause(c, "FieldValueForbidden", "items",
                   "Forbidden: items must be a schema object and not an array");
            goto fail;
        }
        size_t mark = fp_key(&c->path, "items");
        n->items = compile_node(c, items, at == AT_JUNCTOR ? AT_JUNCTOR : AT_ITEMS, depth + 1);
        fp_pop(&c->path, mark);
        if (!n->items)
            goto fail;
    } else if (n->type == T_ARRAY) {
        ccause(c, "FieldValueRequired", "items", "Required value: must be specified");
        goto fail;
    }
    if (!compile_lists(c, n, schema))
        goto fail;
    /* int-or-string may spell itself out as anyOf (also as allOf[0].anyOf); that anyOf is it */
    const json_t *any = json_object_get(schema, "anyOf");
    bool skip_any = n->int_or_string && int_or_string_anyof(any);
    const json_t *all0 = json_array_get(json_object_get(schema, "allOf"), 0);
    bool skip_all0 = n->int_or_string && json_object_size(all0) == 1 &&
                     int_or_string_anyof(json_object_get(all0, "anyOf"));
    if (!junctor_fields_declared(c, schema))
        goto fail;
    if (!skip_any && !compile_list(c, schema, "anyOf", depth, &n->any, &n->nany))
        goto fail;
    if (!compile_list(c, schema, "oneOf", depth, &n->one, &n->none))
        goto fail;
    if (!skip_all0 && !compile_list(c, schema, "allOf", depth, &n->all, &n->nall))
        goto fail;
    const json_t *not = json_object_get(schema, "not");
    if (not ) {
        size_t mark = fp_key(&c->path, "not");
        n->not = compile_node(c, not, AT_JUNCTOR, depth + 1);
        fp_pop(&c->path, mark);
        if (!n->not )
            goto fail;
    }
    if (!check_default(c, n, schema))
        goto fail;
    return n;
fail:
    node_free(n);
    return NULL;
}

/* With /status the root may hold only these (kube's allowedFieldsAtRootSchema). */
static bool root_allowed(cctx *c, const json_t *schema)
{
    static const char *const allowed[] = {"type",
                                          "description",
                                          "title",
                                          "format",
                                          "maximum",
                                          "exclusiveMaximum",
                                          "minimum",
                                          "exclusiveMinimum",
                                          "maxLength",
                                          "minLength",
                                          "pattern",
                                          "maxItems",
                                          "minItems",
                                          "uniqueItems",
                                          "multipleOf",
                                          "required",
                                          "items",
                                          "properties",
                                          "externalDocs",
                                          "example",
                                          "x-kubernetes-preserve-unknown-fields",
                                          "x-kubernetes-validations",
                                          NULL};
    const char *key;
    const json_t *v;
    json_object_foreach((json_t *)schema, key, v)
    {
        (void)v;
        if (!sw_str_one_of(key, allowed)) {
            ccause(
                c, "FieldValueInvalid", NULL,
                "Invalid value: only description, type, title, format, numeric and length limits, "
                "pattern, uniqueItems, multipleOf, required, items, properties, externalDocs, "
                "example and x-kubernetes-preserve-unknown-fields are allowed at the root of "
                "the schema if the status subresource is enabled (%s is not)",
                key);
            return false;
        }
    }
    return true;
}

static int compile_schema(const json_t *schema, const char *field, bool status_subresource,
                          bool lazy, sw_oas **out, json_t **causes)
{
    *out = NULL;
    if (causes)
        *causes = NULL;
    cctx c = {.causes = json_array(), .nodes = 0, .lazy = lazy};
    fp_init(&c.path);
    fp_key(&c.path, field && *field ? field : "openAPIV3Schema");
    if (status_subresource && json_is_object(schema) && !root_allowed(&c, schema)) {
        fp_free(&c.path);
        if (causes)
            *causes = c.causes;
        else
            json_decref(c.causes);
        return SW_EINVALID;
    }
    /* the nodes point into the copy they were compiled from, which the result keeps */
    json_t *copy = json_deep_copy(schema);
    node *root = compile_node(&c, copy, AT_ROOT, 0);
    if (!root) {
        json_decref(copy);
        if (json_array_size(c.causes) == 0)
            add_cause(c.causes, "FieldValueInvalid", c.path.s, "Invalid value: invalid schema");
        fp_free(&c.path);
        if (causes)
            *causes = c.causes;
        else
            json_decref(c.causes);
        return SW_EINVALID;
    }
    json_decref(c.causes);
    fp_free(&c.path);
    sw_oas *s = sw_calloc(1, sizeof(*s));
    s->source = copy;
    s->root = root;
    s->defaults = c.defaults;
    *out = s;
    return 0;
}

int sw_oas_compile(const json_t *schema, const char *field, bool status_subresource, sw_oas **out,
                   json_t **causes)
{
    return compile_schema(schema, field, status_subresource, false, out, causes);
}

int sw_oas_compile_lazy(const json_t *schema, const char *field, bool status_subresource,
                        sw_oas **out, json_t **causes)
{
    return compile_schema(schema, field, status_subresource, true, out, causes);
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
    size_t mark = fp_key(p, key);
    json_array_append_new(unknown, json_string(p->s));
    fp_pop(p, mark);
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
            size_t mark = fp_index(p, i);
            removed |= prune_bare(x, p, unknown);
            fp_pop(p, mark);
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

static bool prune_node(const node *n, json_t *v, fpath *p, json_t *unknown, bool root)
{
    bool removed = false;
    if (json_is_array(v) && n->items) {
        size_t i;
        json_t *x;
        json_array_foreach(v, i, x)
        {
            size_t mark = fp_index(p, i);
            removed |= prune_node(n->items, x, p, unknown, false);
            fp_pop(p, mark);
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
                size_t mark = fp_key(p, "metadata");
                json_object_foreach_safe(x, t2, mk, mv)
                {
                    (void)mv;
                    if (!sw_str_one_of(mk, object_meta_fields)) {
                        note_unknown(unknown, p, mk);
                        json_object_del(x, mk);
                        removed = true;
                    }
                }
                fp_pop(p, mark);
            }
            continue;
        }
        const prop *pr = find_prop(n, key);
        const node *sub = pr ? pr->schema : n->additional;
        if (sub) {
            size_t mark = fp_key(p, key);
            removed |= prune_node(sub, x, p, unknown, false);
            fp_pop(p, mark);
            continue;
        }
        if (n->preserve)
            continue;
        if (n->additional_any) {
            size_t mark = fp_key(p, key);
            removed |= prune_bare(x, p, unknown);
            fp_pop(p, mark);
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
    fp_init(&p);
    prune_node(s->root, obj, &p, unknown, true);
    fp_free(&p);
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
    add_cause_v(causes, reason, p->s, fmt, ap);
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
    render(v, rv, sizeof(rv));
    if (n->maximum) {
        int cmp = compare(v, n->maximum);
        render(n->maximum, lim, sizeof(lim));
        if (n->excl_max ? cmp >= 0 : cmp > 0)
            vcause(causes, p, "FieldValueInvalid",
                   "Invalid value: %s: %s in body should be less "
                   "than %s%s",
                   rv, p->s, n->excl_max ? "" : "or equal to ", lim);
    }
    if (n->minimum) {
        int cmp = compare(v, n->minimum);
        render(n->minimum, lim, sizeof(lim));
        if (n->excl_min ? cmp <= 0 : cmp < 0)
            vcause(causes, p, "FieldValueInvalid",
                   "Invalid value: %s: %s in body should be "
                   "greater than %s%s",
                   rv, p->s, n->excl_min ? "" : "or equal to ", lim);
    }
    if (n->multiple && json_is_integer(v) && json_is_integer(n->multiple)) {
        render(n->multiple, lim, sizeof(lim));
        if (json_integer_value(v) % json_integer_value(n->multiple) != 0)
            vcause(causes, p, "FieldValueInvalid",
                   "Invalid value: %s: %s in body should be a multiple of %s", rv, p->s, lim);
    } else if (n->multiple) {
        double m = json_number_value(n->multiple), q = d / m;
        render(n->multiple, lim, sizeof(lim));
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
        size_t mark = fp_index(p, dups[i].index);
        vcause(causes, p, "FieldValueDuplicate", "Duplicate value: %s", rv);
        fp_pop(p, mark);
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
        size_t mark = fp_key(p, json_string_value(r));
        vcause(causes, p, "FieldValueRequired", "Required value");
        fp_pop(p, mark);
    }
    if (n->embedded) {
        static const char *const must[] = {"apiVersion", "kind"};
        for (size_t k = 0; k < 2; k++)
            if (!json_is_string(json_object_get(v, must[k])) ||
                !*json_string_value(json_object_get(v, must[k]))) {
                size_t mark = fp_key(p, must[k]);
                vcause(causes, p, "FieldValueRequired", "Required value: must not be empty");
                fp_pop(p, mark);
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
        size_t mark = fp_key(p, key);
        validate_node(sub, x, json_is_object(old) ? json_object_get(old, key) : NULL, p, causes);
        fp_pop(p, mark);
    }
}

static bool passes(const node *n, const json_t *v, fpath *p)
{
    json_t *scratch = json_array();
    validate_node(n, v, NULL, p, scratch);
    bool ok = json_array_size(scratch) == 0;
    json_decref(scratch);
    return ok;
}

/* A failed junctor, reported as kube does: field "<nil>", the path in the message. */
static void junctor_cause(json_t *causes, const fpath *p, const char *what)
{
    add_cause(causes, "FieldValueInvalid", "<nil>", "Invalid value: \"\": \"%s\" must %s", p->s,
              what);
}

static void check_junctors(const node *n, const json_t *v, fpath *p, json_t *causes)
{
    for (size_t i = 0; i < n->nall; i++)
        validate_node(n->all[i], v, NULL, p, causes);
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
static void validate_node(const node *n, const json_t *v, const json_t *old, fpath *p,
                          json_t *causes)
{
    if (old && json_equal(v, old))
        return;
    if (json_array_size(causes) >= SW_OAS_MAX_CAUSES)
        return;
    if (json_is_null(v) && n->nullable)
        return;
    if (n->int_or_string) {
        if (!is_integral(v) && !json_is_string(v)) {
            vcause(causes, p, "FieldValueTypeInvalid",
                   "Invalid value: \"%s\": %s in body must be of type int-or-string: \"%s\"",
                   type_of(v), p->s, type_of(v));
            return;
        }
    } else if (n->type && !type_ok(n->type, v)) {
        vcause(causes, p, "FieldValueTypeInvalid",
               "Invalid value: \"%s\": %s in body must be of type %s: \"%s\"", type_of(v), p->s,
               type_words[n->type], type_of(v));
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
                size_t mark = fp_index(p, i);
                validate_node(n->items, x, NULL, p, causes);
                fp_pop(p, mark);
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
    fp_init(&p);
    validate_node(s->root, obj, old, &p, c);
    fp_free(&p);
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
