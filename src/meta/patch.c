/* patch: RFC 7386 JSON merge patch and RFC 6902 JSON patch over jansson documents.
 * Both apply to a deep copy of the document and never modify their inputs. The strategic merge
 * patch is in smp.c; docs/internals/patch.md describes all three. */
#include "meta/patch.h"
#include "meta/smp.h"

#include "util/alloc.h"
#include "util/error.h"
#include "util/json.h"
#include "util/str.h"

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

char *sw_patch__show(char *dst, size_t cap, const char *s)
{
    size_t max = cap - 1 < SW_PATCH_SHOW_MAX ? cap - 1 : SW_PATCH_SHOW_MAX;
    size_t n = 0;
    for (; s[n] && n < max; n++) {
        unsigned char c = (unsigned char)s[n];
        dst[n] = (c < 0x20 || c == 0x7f) ? '?' : (char)c;
    }
    if (s[n] && n >= 3) {
        /* Cut on a UTF-8 character boundary so the message stays valid UTF-8. */
        size_t m = n - 3;
        while (m > 0 && ((unsigned char)s[m] & 0xC0) == 0x80)
            m--;
        memcpy(dst + m, "...", 3);
        n = m + 3;
    }
    dst[n] = '\0';
    return dst;
}

int sw_patch__obj_set(json_t *obj, const char *key, json_t *value)
{
    char shown[SW_PATCH_SHOW_MAX + 4];
    if (json_object_set_new(obj, key, value) < 0)
        return sw_error_set(SW_EINVALID, "patch: cannot set key \"%s\"",
                            sw_patch__show(shown, sizeof(shown), key));
    return 0;
}

/* ---- RFC 7386 merge patch ---- */

static int merge_obj(json_t *t, const json_t *p, int depth);

/* Applies one member of a merge patch object to the mutable object t. */
static int merge_member(json_t *t, const char *key, const json_t *pv, int depth)
{
    if (json_is_null(pv)) {
        json_object_del(t, key);
        return 0;
    }
    if (!json_is_object(pv))
        return sw_patch__obj_set(t, key, json_deep_copy(pv));
    json_t *child = json_object_get(t, key);
    if (json_is_object(child))
        return merge_obj(child, pv, depth + 1);
    json_t *fresh = json_object();
    int error = merge_obj(fresh, pv, depth + 1);
    if (error < 0) {
        json_decref(fresh);
        return error;
    }
    return sw_patch__obj_set(t, key, fresh);
}

/* Merges the patch object p into the mutable object t, in place. */
static int merge_obj(json_t *t, const json_t *p, int depth)
{
    const char *key;
    json_t *pv;
    if (depth > SW_PATCH_MAX_DEPTH)
        return sw_error_set(SW_EINVALID, "merge patch: nesting deeper than %d levels",
                            SW_PATCH_MAX_DEPTH);
    json_object_foreach(sw_patch__mut(p), key, pv)
    {
        int error = merge_member(t, key, pv, depth);
        if (error < 0)
            return error;
    }
    return 0;
}

int sw_patch_merge(const json_t *doc, const json_t *patch, json_t **out)
{
    json_t *t = NULL;
    int error = 0;
    if (!doc || !patch)
        return sw_error_set(SW_EINVALID, "merge patch: no document or patch");
    if (!json_is_object(patch))
        t = json_deep_copy(patch);
    else if (json_is_object(doc))
        t = json_deep_copy(doc);
    else
        t = json_object();
    if (!t)
        return sw_error_set(SW_EINVALID, "merge patch: cannot copy the document");
    if (json_is_object(patch)) {
        error = merge_obj(t, patch, 0);
        if (error < 0)
            goto done;
    }
    *out = t;
    t = NULL;
done:
    json_decref(t);
    return error;
}

/* ---- RFC 6901 JSON pointers ---- */

typedef struct jp_ptr {
    char **tok; /* unescaped reference tokens, sw_malloc'd */
    size_t n;   /* number of tokens; 0 is the whole document */
} jp_ptr;

static void ptr_dispose(jp_ptr *p)
{
    for (size_t i = 0; i < p->n; i++)
        sw_free(p->tok[i]);
    sw_free(p->tok);
    p->tok = NULL;
    p->n = 0;
}

/* Unescapes one token [s, end) (~0 is '~', ~1 is '/'); false on any other '~'. */
static bool ptr_unescape(const char *s, const char *end, char *dst)
{
    size_t k = 0;
    for (const char *c = s; c < end; c++) {
        if (*c != '~') {
            dst[k++] = *c;
        } else if (c + 1 < end && (c[1] == '0' || c[1] == '1')) {
            dst[k++] = c[1] == '0' ? '~' : '/';
            c++;
        } else {
            dst[k] = '\0';
            return false;
        }
    }
    dst[k] = '\0';
    return true;
}

/* Splits a pointer into tokens. Returns 0, or SW_EINVALID (no message set; *out is disposed). */
static int ptr_parse(const char *s, jp_ptr *out)
{
    out->tok = NULL;
    out->n = 0;
    if (*s == '\0')
        return 0;
    if (*s != '/')
        return SW_EINVALID;
    size_t count = 0;
    for (const char *c = s; *c; c++)
        count += *c == '/';
    out->tok = sw_calloc(count, sizeof(char *));
    const char *cur = s + 1;
    for (size_t i = 0; i < count; i++) {
        const char *end = strchr(cur, '/');
        if (!end)
            end = cur + strlen(cur);
        out->tok[i] = sw_malloc((size_t)(end - cur) + 1);
        out->n = i + 1;
        if (!ptr_unescape(cur, end, out->tok[i])) {
            ptr_dispose(out);
            return SW_EINVALID;
        }
        cur = end + 1;
    }
    return 0;
}

/* An array index token: "0" or digits without a leading zero, fitting in size_t. */
static bool ptr_index(const char *tok, size_t *out)
{
    const char *p = tok;
    uint64_t v;
    if (tok[0] < '0' || tok[0] > '9' || (tok[0] == '0' && tok[1]))
        return false;
    if (sw_parse_u64(&p, (uint64_t)SIZE_MAX, &v) < 0 || *p)
        return false;
    *out = (size_t)v;
    return true;
}

static json_t *ptr_child(json_t *v, const char *tok)
{
    size_t idx;
    if (json_is_object(v))
        return json_object_get(v, tok);
    if (json_is_array(v) && ptr_index(tok, &idx))
        return json_array_get(v, idx);
    return NULL;
}

/* Follows the first n tokens from root; NULL when a step is missing. */
static json_t *ptr_walk(json_t *root, const jp_ptr *p, size_t n)
{
    json_t *cur = root;
    for (size_t i = 0; i < n && cur; i++)
        cur = ptr_child(cur, p->tok[i]);
    return cur;
}

/* True when the first n tokens of a and b are equal (both must have at least n). */
static bool ptr_head_equal(const jp_ptr *a, const jp_ptr *b, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(a->tok[i], b->tok[i]) != 0)
            return false;
    return true;
}

/* True when a is a proper prefix of b, token by token. */
static bool ptr_is_proper_prefix(const jp_ptr *a, const jp_ptr *b)
{
    return a->n < b->n && ptr_head_equal(a, b, a->n);
}

static bool ptr_equal(const jp_ptr *a, const jp_ptr *b)
{
    return a->n == b->n && ptr_head_equal(a, b, a->n);
}

/* ---- RFC 6902 operations ---- */

enum jp_kind { JP_ADD, JP_REMOVE, JP_REPLACE, JP_MOVE, JP_COPY, JP_TEST };

static const struct {
    const char *name;
    enum jp_kind kind;
    bool value; /* needs "value" */
    bool from;  /* needs "from" */
} jp_kinds[] = {
    {"add", JP_ADD, true, false},         {"remove", JP_REMOVE, false, false},
    {"replace", JP_REPLACE, true, false}, {"move", JP_MOVE, false, true},
    {"copy", JP_COPY, false, true},       {"test", JP_TEST, true, false},
};

typedef struct jp_op {
    size_t index;        /* position in the patch array, for messages */
    enum jp_kind kind;   /* the operation */
    const char *path;    /* raw "path" text (borrowed from the patch) */
    jp_ptr ptr;          /* parsed path */
    const char *from;    /* raw "from" text, or NULL */
    jp_ptr from_ptr;     /* parsed from */
    const json_t *value; /* borrowed "value", or NULL */
} jp_op;

/* Where a pointer leads: the container and slot, and the value there (NULL when absent). */
typedef struct jp_loc {
    json_t *parent;  /* object or array holding the slot; NULL for the whole document */
    const char *key; /* last token */
    size_t idx;      /* slot index when parent is an array */
    json_t *child;   /* current value in the slot, NULL if none */
} jp_loc;

static int op_fail(const jp_op *op, const char *text, const char *why)
{
    char shown[SW_PATCH_SHOW_MAX + 4];
    return sw_error_set(SW_EINVALID, "json patch op %zu: path \"%s\" %s", op->index,
                        sw_patch__show(shown, sizeof(shown), text), why);
}

/* Resolves ptr (text is its raw form, for messages). A missing final object member or an
 * array end slot is not an error here (child is NULL); a missing parent is. */
static int jp_locate(json_t *root, const jp_op *op, const jp_ptr *ptr, const char *text,
                     jp_loc *loc)
{
    memset(loc, 0, sizeof(*loc));
    if (ptr->n == 0) {
        loc->child = root;
        return 0;
    }
    json_t *parent = ptr_walk(root, ptr, ptr->n - 1);
    if (!json_is_object(parent) && !json_is_array(parent))
        return op_fail(op, text, "not found");
    loc->parent = parent;
    loc->key = ptr->tok[ptr->n - 1];
    if (json_is_object(parent)) {
        loc->child = json_object_get(parent, loc->key);
        return 0;
    }
    size_t size = json_array_size(parent);
    if (strcmp(loc->key, "-") == 0) {
        loc->idx = size;
        return 0;
    }
    if (!ptr_index(loc->key, &loc->idx))
        return op_fail(op, text, "has an invalid array index");
    if (loc->idx > size)
        return op_fail(op, text, "has an array index out of range");
    loc->child = json_array_get(parent, loc->idx);
    return 0;
}

/* Adds value (stolen) at ptr: replaces the document, sets a member, or inserts into an array. */
/* A value placed at ptr (n tokens deep) must keep the document within the depth a stored
 * object may have: moves and copies could otherwise nest without bound. */
static int jp_check_depth(const jp_op *op, const jp_ptr *ptr, const json_t *value)
{
    if (ptr->n <= SW_JSON_MAX_DEPTH &&
        ptr->n + (size_t)sw_json_depth(value, SW_JSON_MAX_DEPTH) <= SW_JSON_MAX_DEPTH)
        return 0;
    return sw_error_set(SW_EINVALID,
                        "json patch op %zu: the result would nest deeper than %d "
                        "levels",
                        op->index, SW_JSON_MAX_DEPTH);
}

static int jp_add_at(json_t **root, const jp_op *op, const jp_ptr *ptr, const char *text,
                     json_t *value)
{
    jp_loc loc;
    int error = jp_check_depth(op, ptr, value);
    if (error < 0) {
        json_decref(value);
        return error;
    }
    error = jp_locate(*root, op, ptr, text, &loc);
    if (error < 0) {
        json_decref(value);
        return error;
    }
    if (!loc.parent) {
        json_decref(*root);
        *root = value;
        return 0;
    }
    if (json_is_object(loc.parent))
        error = json_object_set_new(loc.parent, loc.key, value);
    else
        error = json_array_insert_new(loc.parent, loc.idx, value);
    return error < 0 ? op_fail(op, text, "cannot be set") : 0;
}

/* Removes the value at ptr; *taken (if not NULL) receives a reference to it. */
static int jp_take(json_t *root, const jp_op *op, const jp_ptr *ptr, const char *text,
                   json_t **taken)
{
    jp_loc loc;
    int error = jp_locate(root, op, ptr, text, &loc);
    if (error < 0)
        return error;
    if (!loc.child)
        return op_fail(op, text, "not found");
    if (!loc.parent)
        return op_fail(op, text, "cannot be removed (it is the whole document)");
    if (taken)
        *taken = json_incref(loc.child);
    if (json_is_object(loc.parent))
        json_object_del(loc.parent, loc.key);
    else
        json_array_remove(loc.parent, loc.idx);
    return 0;
}

static int jp_replace(json_t **root, const jp_op *op)
{
    jp_loc loc;
    int error = jp_check_depth(op, &op->ptr, op->value);
    if (error == 0)
        error = jp_locate(*root, op, &op->ptr, op->path, &loc);
    if (error < 0)
        return error;
    if (!loc.child)
        return op_fail(op, op->path, "not found");
    json_t *value = json_deep_copy(op->value);
    if (!loc.parent) {
        json_decref(*root);
        *root = value;
        return value ? 0 : op_fail(op, op->path, "cannot be set");
    }
    if (json_is_object(loc.parent))
        error = json_object_set_new(loc.parent, loc.key, value);
    else
        error = json_array_set_new(loc.parent, loc.idx, value);
    return error < 0 ? op_fail(op, op->path, "cannot be set") : 0;
}

/* JSON equality as RFC 6902 "test" means it: numbers compare by value (1 equals 1.0). */
static bool jp_equal(const json_t *a, const json_t *b, int depth)
{
    const char *key;
    json_t *av;
    size_t i;
    if (depth > SW_PATCH_MAX_DEPTH)
        return false;
    if (json_is_integer(a) && json_is_integer(b))
        return json_integer_value(a) == json_integer_value(b);
    if (json_is_number(a) && json_is_number(b))
        return json_number_value(a) == json_number_value(b);
    if (json_is_object(a) && json_is_object(b)) {
        if (json_object_size(a) != json_object_size(b))
            return false;
        json_object_foreach(sw_patch__mut(a), key, av)
        {
            const json_t *bv = json_object_get(b, key);
            if (!bv || !jp_equal(av, bv, depth + 1))
                return false;
        }
        return true;
    }
    if (json_is_array(a) && json_is_array(b)) {
        if (json_array_size(a) != json_array_size(b))
            return false;
        json_array_foreach(a, i, av)
        {
            if (!jp_equal(av, json_array_get(b, i), depth + 1))
                return false;
        }
        return true;
    }
    return json_equal(a, b);
}

static int jp_test(json_t *root, const jp_op *op)
{
    jp_loc loc;
    int error = jp_locate(root, op, &op->ptr, op->path, &loc);
    if (error < 0)
        return error;
    if (!loc.child)
        return op_fail(op, op->path, "not found");
    if (!jp_equal(loc.child, op->value, 0))
        return op_fail(op, op->path, "failed the test: the value differs");
    return 0;
}

static int jp_move(json_t **root, const jp_op *op)
{
    char shown[SW_PATCH_SHOW_MAX + 4];
    json_t *value = NULL;
    if (ptr_equal(&op->from_ptr, &op->ptr)) {
        if (!ptr_walk(*root, &op->ptr, op->ptr.n))
            return op_fail(op, op->from, "not found");
        return 0;
    }
    if (ptr_is_proper_prefix(&op->from_ptr, &op->ptr))
        return sw_error_set(SW_EINVALID, "json patch op %zu: cannot move \"%s\" into its own child",
                            op->index, sw_patch__show(shown, sizeof(shown), op->from));
    int error = jp_take(*root, op, &op->from_ptr, op->from, &value);
    if (error < 0)
        return error;
    return jp_add_at(root, op, &op->ptr, op->path, value);
}

/* Approximate encoded size of v in bytes, saturating at limit. */
static size_t approx_size(const json_t *v, size_t limit, int depth)
{
    size_t total = 8;
    const char *key;
    json_t *child;
    size_t i;
    if (depth > SW_PATCH_MAX_DEPTH)
        return limit;
    if (json_is_string(v))
        total += json_string_length(v);
    if (json_is_object(v)) {
        json_object_foreach(sw_patch__mut(v), key, child)
        {
            total += strlen(key) + approx_size(child, limit, depth + 1);
            if (total >= limit)
                return limit;
        }
    }
    if (json_is_array(v)) {
        json_array_foreach(v, i, child)
        {
            total += approx_size(child, limit, depth + 1);
            if (total >= limit)
                return limit;
        }
    }
    return total < limit ? total : limit;
}

static int jp_copy(json_t **root, const jp_op *op, size_t *copied)
{
    json_t *src = ptr_walk(*root, &op->from_ptr, op->from_ptr.n);
    if (!src)
        return op_fail(op, op->from, "not found");
    size_t budget = SW_PATCH_MAX_COPY_BYTES - *copied;
    size_t size = approx_size(src, budget + 1, 0);
    if (size > budget)
        return sw_error_set(SW_EINVALID, "json patch op %zu: copies exceed the limit of %u bytes",
                            op->index, SW_PATCH_MAX_COPY_BYTES);
    *copied += size;
    json_t *value = json_deep_copy(src);
    if (!value)
        return op_fail(op, op->from, "cannot be copied");
    return jp_add_at(root, op, &op->ptr, op->path, value);
}

static void op_dispose(jp_op *op)
{
    ptr_dispose(&op->ptr);
    ptr_dispose(&op->from_ptr);
}

/* Reads and checks the members of one operation object. */
static int op_parse(const json_t *j, size_t index, jp_op *op)
{
    char shown[SW_PATCH_SHOW_MAX + 4];
    size_t k;
    memset(op, 0, sizeof(*op));
    op->index = index;
    if (!json_is_object(j))
        return sw_error_set(SW_EINVALID, "json patch op %zu: not a JSON object", index);
    const char *name = json_string_value(json_object_get(j, "op"));
    if (!name)
        return sw_error_set(SW_EINVALID, "json patch op %zu: missing \"op\"", index);
    for (k = 0; k < sizeof(jp_kinds) / sizeof(jp_kinds[0]); k++)
        if (strcmp(name, jp_kinds[k].name) == 0)
            break;
    if (k == sizeof(jp_kinds) / sizeof(jp_kinds[0]))
        return sw_error_set(SW_EINVALID, "json patch op %zu: unknown op \"%s\"", index,
                            sw_patch__show(shown, sizeof(shown), name));
    op->kind = jp_kinds[k].kind;
    op->path = json_string_value(json_object_get(j, "path"));
    if (!op->path)
        return sw_error_set(SW_EINVALID, "json patch op %zu: missing \"path\"", index);
    if (ptr_parse(op->path, &op->ptr) < 0)
        return op_fail(op, op->path, "is not a JSON pointer");
    op->value = json_object_get(j, "value");
    if (jp_kinds[k].value && !op->value)
        return sw_error_set(SW_EINVALID, "json patch op %zu: missing \"value\"", index);
    if (!jp_kinds[k].from)
        return 0;
    op->from = json_string_value(json_object_get(j, "from"));
    if (!op->from)
        return sw_error_set(SW_EINVALID, "json patch op %zu: missing \"from\"", index);
    if (ptr_parse(op->from, &op->from_ptr) < 0)
        return op_fail(op, op->from, "is not a JSON pointer");
    return 0;
}

static int op_apply(json_t **root, const jp_op *op, size_t *copied)
{
    switch (op->kind) {
    case JP_ADD: {
        json_t *value = json_deep_copy(op->value);
        if (!value)
            return op_fail(op, op->path, "cannot be set");
        return jp_add_at(root, op, &op->ptr, op->path, value);
    }
    case JP_REMOVE:
        return jp_take(*root, op, &op->ptr, op->path, NULL);
    case JP_REPLACE:
        return jp_replace(root, op);
    case JP_MOVE:
        return jp_move(root, op);
    case JP_COPY:
        return jp_copy(root, op, copied);
    case JP_TEST:
        return jp_test(*root, op);
    }
    return sw_error_set(SW_EINVALID, "json patch op %zu: unknown op", op->index);
}

int sw_patch_json(const json_t *doc, const json_t *patch, json_t **out)
{
    json_t *root = NULL;
    size_t copied = 0;
    int error = 0;
    if (!doc || !json_is_array(patch))
        return sw_error_set(SW_EINVALID, "json patch must be a JSON array of operations");
    if (json_array_size(patch) > SW_PATCH_MAX_OPS)
        return sw_error_set(SW_EINVALID, "json patch has %zu operations, more than the limit of %d",
                            json_array_size(patch), SW_PATCH_MAX_OPS);
    root = json_deep_copy(doc);
    if (!root)
        return sw_error_set(SW_EINVALID, "json patch: cannot copy the document");
    for (size_t i = 0; i < json_array_size(patch); i++) {
        jp_op op;
        error = op_parse(json_array_get(patch, i), i, &op);
        if (error == 0)
            error = op_apply(&root, &op, &copied);
        op_dispose(&op);
        if (error < 0)
            goto done;
    }
    *out = root;
    root = NULL;
done:
    json_decref(root);
    return error;
}
