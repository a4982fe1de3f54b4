/* schema: strict field schemas kept as the parsed schema text itself (a jansson tree that is only
 * read after parsing, so it can be shared by threads), a checker that walks object and schema
 * together collecting the path of each unknown field, and the OpenAPI v3 emitter. */
#include "meta/schema.h"

#include "util/alloc.h"
#include "util/buf.h"
#include "util/error.h"
#include "util/json.h"
#include "util/str.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#define MAX_UNKNOWN 10  /* unknown fields listed in one error */
#define SCHEMA_DEPTH 32 /* nesting allowed in schema texts */

struct sw_schema {
    json_t *root; /* struct node: apiVersion, kind, metadata, then the kind's own fields */
};

static const char objectmeta_text[] =
    "{\"name\":\"string\",\"generateName\":\"string\",\"namespace\":\"string\","
    "\"selfLink\":\"string\",\"uid\":\"string\",\"resourceVersion\":\"string\","
    "\"generation\":\"integer\",\"creationTimestamp\":\"string\","
    "\"deletionTimestamp\":\"string\",\"deletionGracePeriodSeconds\":\"integer\","
    "\"labels\":\"map\",\"annotations\":\"map\","
    "\"ownerReferences\":[{\"apiVersion\":\"string\",\"kind\":\"string\",\"name\":\"string\","
    "\"uid\":\"string\",\"controller\":\"boolean\",\"blockOwnerDeletion\":\"boolean\"}],"
    "\"finalizers\":[\"string\"],\"managedFields\":\"any\"}";

static const char *const leaf_types[] = {"string", "integer", "number", "boolean", "any", "map"};

/* ---- field paths ---- */

struct path {
    char s[1024];
    size_t len;
};

/* Appends a formatted step; returns the previous length for path_pop. Truncates silently. */
__attribute__((format(printf, 2, 3))) static size_t path_push(struct path *p, const char *fmt, ...)
{
    size_t old = p->len;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(p->s + p->len, sizeof(p->s) - p->len, fmt, ap);
    va_end(ap);
    if (n > 0)
        p->len += (size_t)n < sizeof(p->s) - p->len ? (size_t)n : sizeof(p->s) - 1 - p->len;
    return old;
}

static void path_pop(struct path *p, size_t old)
{
    p->len = old;
    p->s[old] = '\0';
}

static size_t path_push_key(struct path *p, const char *key)
{
    return p->len ? path_push(p, ".%s", key) : path_push(p, "%s", key);
}

/* ---- parsing and validating schema texts ---- */

static bool is_leaf_type(const char *s)
{
    for (size_t i = 0; i < sizeof(leaf_types) / sizeof(leaf_types[0]); i++)
        if (strcmp(s, leaf_types[i]) == 0)
            return true;
    return false;
}

static int validate_node(const json_t *node, struct path *p)
{
    const char *where = p->len ? p->s : "<root>";
    if (json_is_string(node)) {
        if (!is_leaf_type(json_string_value(node)))
            return sw_error_set(SW_EINVALID, "schema: unknown type \"%s\" at %s",
                                json_string_value(node), where);
        return 0;
    }
    if (json_is_array(node)) {
        if (json_array_size(node) != 1)
            return sw_error_set(SW_EINVALID, "schema: a list needs exactly one element at %s",
                                where);
        size_t old = path_push(p, "[]");
        int error = validate_node(json_array_get(node, 0), p);
        path_pop(p, old);
        return error;
    }
    if (!json_is_object(node))
        return sw_error_set(SW_EINVALID, "schema: expected an object, a list or a type name at %s",
                            where);
    const char *key;
    json_t *child;
    json_object_foreach((json_t *)node, key, child)
    {
        size_t old = path_push_key(p, key);
        int error = validate_node(child, p);
        path_pop(p, old);
        if (error < 0)
            return error;
    }
    return 0;
}

static int parse_text(const char *text, json_t **out)
{
    if (!text)
        return sw_error_set(SW_EINVALID, "schema: no schema text");
    int error = sw_json_parse(text, strlen(text), SCHEMA_DEPTH, SW_JSON_STRICT_DUPLICATES, out);
    if (error < 0) {
        char detail[512]; /* the message buffer cannot be its own format argument */
        sw_strlcpy(detail, sw_error_msg(), sizeof(detail));
        return sw_error_set(SW_EINVALID, "schema: %s", detail);
    }
    return 0;
}

int sw_schema_parse(const char *text, sw_schema **out)
{
    json_t *user = NULL, *meta = NULL, *root = NULL;
    struct path p = {{0}, 0};
    int error = parse_text(text, &user);
    if (error < 0)
        goto done;
    if (!json_is_object(user)) {
        error = sw_error_set(SW_EINVALID, "schema: the top level must be an object of fields");
        goto done;
    }
    static const char *const builtin[] = {"apiVersion", "kind", "metadata"};
    for (size_t i = 0; i < 3; i++) {
        if (json_object_get(user, builtin[i])) {
            error = sw_error_set(SW_EINVALID, "schema: \"%s\" is built in", builtin[i]);
            goto done;
        }
    }
    error = validate_node(user, &p);
    if (error < 0)
        goto done;
    error = parse_text(objectmeta_text, &meta);
    if (error < 0)
        goto done;
    root = json_object();
    json_object_set_new(root, "apiVersion", json_string("string"));
    json_object_set_new(root, "kind", json_string("string"));
    json_object_set_new(root, "metadata", meta);
    meta = NULL;
    json_object_update(root, user);
    *out = sw_calloc(1, sizeof(sw_schema));
    (*out)->root = root;
    root = NULL;
done:
    json_decref(user);
    json_decref(meta);
    json_decref(root);
    return error;
}

void sw_schema_free(sw_schema *schema)
{
    if (!schema)
        return;
    json_decref(schema->root);
    sw_free(schema);
}

/* ---- checking objects ---- */

struct check_ctx {
    struct path path;
    bool type_error; /* a type mismatch was reported; stop walking */
    size_t nunknown; /* unknown fields recorded so far */
    sw_buf unknown;  /* "unknown field \"a\", unknown field \"b\"" */
};

static void type_mismatch(struct check_ctx *c, const char *expected, const json_t *got)
{
    c->type_error = true;
    sw_error_set(SW_EBADREQUEST, "%s: expected %s, got %s", c->path.len ? c->path.s : "<root>",
                 expected, sw_json_type_name(got));
}

static void note_unknown(struct check_ctx *c)
{
    if (c->nunknown++ >= MAX_UNKNOWN)
        return;
    if (c->unknown.len)
        sw_buf_puts(&c->unknown, ", ");
    sw_buf_printf(&c->unknown, "unknown field \"%s\"", c->path.s);
}

static void check_node(struct check_ctx *c, const json_t *schema, const json_t *v);

/* "map": an object whose values are strings. */
static void check_map(struct check_ctx *c, const json_t *v)
{
    const char *key;
    json_t *child;
    if (!json_is_object(v)) {
        type_mismatch(c, "object", v);
        return;
    }
    json_object_foreach((json_t *)v, key, child)
    {
        if (json_is_null(child) || json_is_string(child))
            continue;
        path_push(&c->path, "[%s]", key);
        type_mismatch(c, "string", child);
        return;
    }
}

static void check_leaf(struct check_ctx *c, const char *type, const json_t *v)
{
    bool ok;
    if (strcmp(type, "any") == 0)
        return;
    if (strcmp(type, "map") == 0) {
        check_map(c, v);
        return;
    }
    if (strcmp(type, "string") == 0)
        ok = json_is_string(v);
    else if (strcmp(type, "integer") == 0)
        ok = json_is_integer(v);
    else if (strcmp(type, "number") == 0)
        ok = json_is_number(v);
    else
        ok = json_is_boolean(v);
    if (!ok)
        type_mismatch(c, type, v);
}

static void check_list(struct check_ctx *c, const json_t *elem_schema, const json_t *v)
{
    if (!json_is_array(v)) {
        type_mismatch(c, "array", v);
        return;
    }
    for (size_t i = 0; i < json_array_size(v) && !c->type_error; i++) {
        size_t old = path_push(&c->path, "[%zu]", i);
        check_node(c, elem_schema, json_array_get(v, i));
        path_pop(&c->path, old);
    }
}

static void check_struct(struct check_ctx *c, const json_t *schema, const json_t *v)
{
    const char *key;
    json_t *child;
    if (!json_is_object(v)) {
        type_mismatch(c, "object", v);
        return;
    }
    json_object_foreach((json_t *)v, key, child)
    {
        const json_t *field = json_object_get(schema, key);
        size_t old = path_push_key(&c->path, key);
        if (field)
            check_node(c, field, child);
        else
            note_unknown(c);
        if (c->type_error)
            return;
        path_pop(&c->path, old);
    }
}

static void check_node(struct check_ctx *c, const json_t *schema, const json_t *v)
{
    if (json_is_null(v))
        return;
    if (json_is_string(schema))
        check_leaf(c, json_string_value(schema), v);
    else if (json_is_array(schema))
        check_list(c, json_array_get(schema, 0), v);
    else
        check_struct(c, schema, v);
}

int sw_schema_check(const sw_schema *schema, const json_t *obj)
{
    int error = 0;
    if (!schema)
        return 0;
    if (!json_is_object(obj))
        return sw_error_set(SW_EBADREQUEST, "expected a JSON object, got %s",
                            obj ? sw_json_type_name(obj) : "nothing");
    struct check_ctx c = {.unknown = SW_BUF_INIT(4096)};
    check_struct(&c, schema->root, obj);
    if (c.type_error)
        error = SW_EBADREQUEST; /* message already set */
    else if (c.nunknown)
        error = sw_error_set(SW_EBADREQUEST, "strict decoding error: %s", sw_buf_cstr(&c.unknown));
    sw_buf_dispose(&c.unknown);
    return error;
}

/* ---- pruning ---- */

static size_t prune_node(const json_t *schema, json_t *v, int depth);

static size_t prune_struct(const json_t *schema, json_t *v, int depth)
{
    size_t removed = 0;
    const char *key;
    json_t *child;
    void *tmp;
    json_object_foreach_safe(v, tmp, key, child)
    {
        const json_t *field = json_object_get(schema, key);
        if (!field) {
            json_object_del(v, key);
            removed++;
        } else {
            removed += prune_node(field, child, depth + 1);
        }
    }
    return removed;
}

static size_t prune_node(const json_t *schema, json_t *v, int depth)
{
    size_t removed = 0, i;
    json_t *e;
    if (depth > SW_JSON_MAX_DEPTH * 2)
        return 0;
    if (json_is_array(schema) && json_is_array(v)) {
        json_array_foreach(v, i, e) removed += prune_node(json_array_get(schema, 0), e, depth + 1);
    } else if (json_is_object(schema) && json_is_object(v)) {
        removed = prune_struct(schema, v, depth);
    }
    return removed;
}

size_t sw_schema_prune(const sw_schema *schema, json_t *obj)
{
    return schema && json_is_object(obj) ? prune_struct(schema->root, obj, 0) : 0;
}

/* ---- OpenAPI v3 ---- */

static json_t *openapi_type(const char *type, const char *format)
{
    json_t *o = json_object();
    json_object_set_new(o, "type", json_string(type));
    if (format)
        json_object_set_new(o, "format", json_string(format));
    return o;
}

static json_t *openapi_leaf(const char *type)
{
    if (strcmp(type, "integer") == 0)
        return openapi_type("integer", "int64");
    if (strcmp(type, "number") == 0)
        return openapi_type("number", "double");
    if (strcmp(type, "map") == 0) {
        json_t *o = openapi_type("object", NULL);
        json_object_set_new(o, "additionalProperties", openapi_type("string", NULL));
        return o;
    }
    if (strcmp(type, "any") == 0) {
        json_t *o = openapi_type("object", NULL);
        json_object_set_new(o, "x-kubernetes-preserve-unknown-fields", json_true());
        return o;
    }
    return openapi_type(type, NULL);
}

static json_t *openapi_node(const json_t *node)
{
    if (json_is_string(node))
        return openapi_leaf(json_string_value(node));
    if (json_is_array(node)) {
        json_t *o = openapi_type("array", NULL);
        json_object_set_new(o, "items", openapi_node(json_array_get(node, 0)));
        return o;
    }
    json_t *o = openapi_type("object", NULL);
    json_t *props = json_object();
    const char *key;
    json_t *child;
    json_object_foreach((json_t *)node, key, child)
        json_object_set_new(props, key, openapi_node(child));
    json_object_set_new(o, "properties", props);
    return o;
}

static void describe(json_t *props, const char *field, const char *text)
{
    json_t *p = json_object_get(props, field);
    if (json_is_object(p))
        json_object_set_new(p, "description", json_string(text));
}

void sw_schema_describe(json_t *openapi, const sw_field_doc *docs)
{
    for (size_t i = 0; docs && docs[i].path; i++) {
        json_t *node = openapi;
        const char *p = docs[i].path;
        while (node && *p) {
            if (sw_str_eq(sw_json_str_at(node, "type"), "array"))
                node = json_object_get(node, "items");
            size_t n = strcspn(p, ".");
            node = json_object_getn(json_object_get(node, "properties"), p, n);
            p += n + (p[n] == '.');
        }
        if (sw_str_eq(sw_json_str_at(node, "type"), "array") && !*docs[i].path)
            node = json_object_get(node, "items");
        if (json_is_object(node))
            json_object_set_new(node, "description", json_string(docs[i].text));
    }
}

json_t *sw_schema_openapi(const sw_schema *schema, const char *group, const char *version,
                          const char *kind)
{
    json_t *o;
    if (schema) {
        o = openapi_node(schema->root);
        json_t *props = json_object_get(o, "properties");
        describe(props, "apiVersion",
                 "APIVersion defines the versioned schema of this representation of an object.");
        describe(props, "kind",
                 "Kind is a string value representing the REST resource this "
                 "object represents.");
        describe(props, "metadata", "Standard object's metadata.");
    } else {
        o = openapi_leaf("any");
    }
    json_t *gvk = json_object();
    json_object_set_new(gvk, "group", json_string(group ? group : ""));
    json_object_set_new(gvk, "version", json_string(version ? version : ""));
    json_object_set_new(gvk, "kind", json_string(kind ? kind : ""));
    json_object_set_new(o, "x-kubernetes-group-version-kind", json_pack("[o]", gvk));
    return o;
}
