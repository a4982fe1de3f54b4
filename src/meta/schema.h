/* schema: the strict field schema of an API kind, for fieldValidation=Strict and OpenAPI v3.
 * Each kind declares the shape of its object in a compact JSON text; the server rejects unknown
 * fields and wrong JSON types with it, and emits OpenAPI v3 component schemas from it so that
 * `kubectl explain` works. See docs/internals/schema.md. */
#ifndef SW_META_SCHEMA_H
#define SW_META_SCHEMA_H

#include <jansson.h>

/* Schema text format (a JSON value):
 *   {"field": <schema>, ...}   a struct with exactly those fields
 *   [<schema>]                 a list of that
 *   "string" "integer" "number" "boolean"
 *   "any"                      anything, not checked
 *   "map"                      an object with any keys and string values
 * null is accepted for every field (Kubernetes treats null as unset). The top-level apiVersion,
 * kind and metadata (all ObjectMeta fields) are built in and may not be declared. */
typedef struct sw_schema sw_schema; /* opaque, immutable after parse; shareable across threads */

/* Parses the kind's schema text (a JSON object of its top-level fields other than apiVersion,
 * kind and metadata). Returns 0 and a new schema in *out, or SW_EINVALID naming the bad node. */
int sw_schema_parse(const char *text, sw_schema **out);

/* Checks obj against the schema. A wrong JSON type is reported first, as SW_EBADREQUEST
 * `spec.replicas: expected integer, got string`; otherwise unknown fields are reported as
 * SW_EBADREQUEST `strict decoding error: unknown field "spec.tags[0].fromm", unknown field "x"`
 * (up to 10). Map keys appear in brackets (`metadata.labels[app]`). NULL schema = accept all. */
int sw_schema_check(const sw_schema *schema, const json_t *obj);

/* OpenAPI v3 schema object for the kind (type/properties/items/additionalProperties) with
 * "x-kubernetes-group-version-kind": [{"group","version","kind"}] at the top. New reference.
 * A NULL schema gives an object that preserves unknown fields. */
/* A field's documentation for kubectl explain: path is dotted from the object's root, arrays
 * implied ("spec.tags.from" is the from of every tag); "" is the kind itself. */
typedef struct sw_field_doc {
    const char *path;
    const char *text;
} sw_field_doc;

/* Sets the description of each documented field in an OpenAPI schema from sw_schema_openapi
 * (docs ends with a {NULL, NULL} entry; paths the schema lacks are skipped). */
void sw_schema_describe(json_t *openapi, const sw_field_doc *docs);

json_t *sw_schema_openapi(const sw_schema *schema, const char *group, const char *version,
                          const char *kind);

/* Drops every field the schema does not know (what decoding into a typed struct does when
 * fieldValidation is Warn or Ignore); returns how many were dropped. */
size_t sw_schema_prune(const sw_schema *schema, json_t *obj);
void sw_schema_free(sw_schema *schema);

#endif
