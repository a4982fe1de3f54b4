/* oascompile: compiling a CRD's OpenAPI v3 schema into the tree the passes use
 * (openapischema.h, oas_int.h), with the structural-schema checks kube-apiserver makes
 * (crd-gc.md §1.5) and their causes. */
#include "meta/openapischema.h"

#include "meta/oas_int.h"
#include "meta/oasformat.h"
#include "util/alloc.h"
#include "util/buf.h"
#include "util/error.h"
#include "util/json.h"
#include "util/str.h"

#include <stdio.h>
#include <string.h>

enum { AT_ROOT, AT_PROPERTY, AT_ITEMS, AT_JUNCTOR };

typedef struct {
    json_t *causes;
    size_t nodes;
    bool defaults;
    bool lazy; /* patterns compiled on first use */
    fpath path;
} cctx;

static node *compile_node(cctx *c, const json_t *schema, int at, int depth);

static void ccause(cctx *c, const char *reason, const char *key, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void ccause(cctx *c, const char *reason, const char *key, const char *fmt, ...)
{
    size_t mark = key ? sw_oasi_fp_key(&c->path, key) : c->path.n;
    va_list ap;
    va_start(ap, fmt);
    sw_oasi_add_cause_v(c->causes, reason, c->path.s, fmt, ap);
    va_end(ap);
    sw_oasi_fp_pop(&c->path, mark);
}

static bool count_kw(cctx *c, const json_t *schema, const char *kw, int64_t *out)
{
    const json_t *v = json_object_get(schema, kw);
    *out = -1;
    if (!v)
        return true;
    if (!sw_oasi_is_integral(v) || json_number_value(v) < 0) {
        char r[256];
        sw_oasi_render(v, r, sizeof(r));
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
        sw_oasi_render(v, r, sizeof(r));
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
    size_t mark = sw_oasi_fp_key(&c->path, kw);
    *out = sw_calloc(json_array_size(list), sizeof(node *));
    size_t i;
    const json_t *sub;
    bool ok = true;
    json_array_foreach(list, i, sub)
    {
        size_t m2 = sw_oasi_fp_index(&c->path, i);
        node *n = compile_node(c, sub, AT_JUNCTOR, depth + 1);
        sw_oasi_fp_pop(&c->path, m2);
        if (!n) {
            ok = false;
            break;
        }
        (*out)[(*nout)++] = n;
    }
    sw_oasi_fp_pop(&c->path, mark);
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
        size_t mark = sw_oasi_fp_key(&c->path, key);
        bool root_meta = at == AT_ROOT && sw_str_eq(name, "metadata");
        if (at == AT_ROOT &&
            (sw_str_eq(name, "apiVersion") || sw_str_eq(name, "kind") || root_meta) &&
            json_object_get(sub, "default")) {
            ccause(c, "FieldValueForbidden", "default", "Forbidden: must not be set");
            sw_oasi_fp_pop(&c->path, mark);
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
                    sw_oasi_fp_pop(&c->path, mark);
                    return false;
                }
            }
            if (other) {
                ccause(c, "FieldValueForbidden", NULL,
                       "Forbidden: must not specify anything other than name and "
                       "generateName, but metadata is implicitly specified");
                sw_oasi_fp_pop(&c->path, mark);
                return false;
            }
        }
        node *p = compile_node(c, sub, at == AT_JUNCTOR ? AT_JUNCTOR : AT_PROPERTY, depth + 1);
        sw_oasi_fp_pop(&c->path, mark);
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
            sw_oasi_render(x, rv, sizeof(rv));
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
            sw_oasi_render(pat, rv, sizeof(rv));
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
    sw_oasi_render(def, rv, sizeof(rv));
    json_t *copy = json_deep_copy(def);
    fpath p;
    sw_oasi_fp_init(&p);
    json_t *unknown = json_array();
    sw_oasi_prune_node(n, copy, &p, unknown, false);
    bool pruned = json_array_size(unknown) > 0;
    json_decref(unknown);
    json_t *causes = json_array();
    if (!pruned)
        sw_oasi_validate_node(n, copy, NULL, &p, causes);
    json_decref(copy);
    sw_oasi_fp_free(&p);
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
            if (sw_str_eq(t, sw_oasi_type_words[i]))
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
            size_t mark = sw_oasi_fp_key(&c->path, "additionalProperties");
            n->additional = compile_node(c, add, AT_PROPERTY, depth + 1);
            sw_oasi_fp_pop(&c->path, mark);
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
        size_t mark = sw_oasi_fp_key(&c->path, "items");
        n->items = compile_node(c, items, at == AT_JUNCTOR ? AT_JUNCTOR : AT_ITEMS, depth + 1);
        sw_oasi_fp_pop(&c->path, mark);
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
        size_t mark = sw_oasi_fp_key(&c->path, "not");
        n->not = compile_node(c, not, AT_JUNCTOR, depth + 1);
        sw_oasi_fp_pop(&c->path, mark);
        if (!n->not )
            goto fail;
    }
    if (!check_default(c, n, schema))
        goto fail;
    return n;
fail:
    sw_oasi_node_free(n);
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
    sw_oasi_fp_init(&c.path);
    sw_oasi_fp_key(&c.path, field && *field ? field : "openAPIV3Schema");
    if (status_subresource && json_is_object(schema) && !root_allowed(&c, schema)) {
        sw_oasi_fp_free(&c.path);
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
            sw_oasi_add_cause(c.causes, "FieldValueInvalid", c.path.s,
                              "Invalid value: invalid schema");
        sw_oasi_fp_free(&c.path);
        if (causes)
            *causes = c.causes;
        else
            json_decref(c.causes);
        return SW_EINVALID;
    }
    json_decref(c.causes);
    sw_oasi_fp_free(&c.path);
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
