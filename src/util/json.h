/* json: the jansson wrapper: bounded parsing of untrusted input and dotted-path accessors.
 * Paths are dot-separated object keys ("metadata.name"); keys containing dots (labels) must be
 * read with jansson directly. Returned json_t pointers are borrowed unless the name says new. */
#ifndef SW_JSON_H
#define SW_JSON_H

#include "util/buf.h"

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#define SW_JSON_MAX_DEPTH 64

enum { SW_JSON_STRICT_DUPLICATES = 1 };

/* Parses len bytes; rejects nesting deeper than max_depth before parsing. The error message
 * says where (line/column) and what. Returns 0, or SW_EBADREQUEST. */
int sw_json_parse(const char *data, size_t len, int max_depth, int flags, json_t **out);
/* As sw_json_parse without flags (a duplicate key: the last value wins), and a duplicate key is
 * described in warning ("" when there is none), as kube-apiserver warns of one. */
int sw_json_parse_warn(const char *data, size_t len, int max_depth, json_t **out, char *warning,
                       size_t n);
/* How deep containers nest in v (a scalar 0, {} or [] 1, {"a":[]} 2), counted no further than
 * limit + 1, so the walk never recurses deeper than that whatever v holds. */
int sw_json_depth(const json_t *v, int limit);
/* Compact encoding, sw_malloc'd, NUL-terminated. Never NULL for a valid json_t. */
char *sw_json_dumps(const json_t *j, size_t *len_out);
/* Appends the compact encoding to b. */
int sw_json_dump_buf(const json_t *j, sw_buf *b);

json_t *sw_json_at(const json_t *root, const char *path);
const char *sw_json_str_at(const json_t *root, const char *path); /* NULL unless a string */
/* json_equal where a missing value (NULL) and JSON null are equal to each other: jansson's
 * json_equal(NULL, NULL) is false, which makes "nothing changed" look like a change. */
bool sw_json_same(const json_t *a, const json_t *b);
/* "object", "array", "string", "integer", "number" (a real), "boolean" or "null". */
const char *sw_json_type_name(const json_t *v);
bool sw_json_int_at(const json_t *root, const char *path, int64_t *out);
/* The integer at path, or dflt when there is none. */
int64_t sw_json_int_or(const json_t *root, const char *path, int64_t dflt);
bool sw_json_bool_at(const json_t *root, const char *path); /* false unless true */
/* Gets or creates the object at path (replacing non-objects). Borrowed. */
json_t *sw_json_obj_path(json_t *root, const char *path);
/* Sets root[path] = value (steals value), creating intermediate objects. */
void sw_json_set_path(json_t *root, const char *path, json_t *value);
void sw_json_del_path(json_t *root, const char *path);
/* obj[key] = value (stolen) unless obj has a non-null key already (then value is freed): a
 * server-side default. */
void sw_json_default(json_t *obj, const char *key, json_t *value);

/* sw_error_set, with Kubernetes' details.causes kept alongside (causes: a JSON array of
 * {"reason","message","field"}, taken): the 422 Status of the error carries them. */
int sw_error_set_causes(int code, json_t *causes, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* The causes kept with the current error (borrowed), or NULL. */
const json_t *sw_error_causes(void);

#endif
