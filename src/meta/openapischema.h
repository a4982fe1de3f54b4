/* openapischema: the OpenAPI v3 schemas of CustomResourceDefinitions (crd-gc.md §1.5-§1.8),
 * compiled once into a tree and then used for the custom-resource pipeline: prune, default
 * (non-nullable nulls dropped first), validate. Compiling checks that the schema is structural
 * and refuses what kube-apiserver refuses, with its field paths and messages; validation reports
 * every failure as a Kubernetes cause {reason, field, message}. Patterns are POSIX extended
 * regular expressions (with \d, \D, \s, \S, \w, \W accepted as in RE2), so a pattern using RE2
 * syntax beyond that is refused when the CRD is written, never silently skipped. Bounded on
 * hostile input: nesting, node count and pattern length are capped at compile time, and at most
 * SW_OAS_MAX_CAUSES causes are reported. A compiled schema is immutable and may be used from
 * many threads at once. */
#ifndef SW_META_OPENAPISCHEMA_H
#define SW_META_OPENAPISCHEMA_H

#include <jansson.h>
#include <stdbool.h>

typedef struct sw_oas sw_oas;

#define SW_OAS_MAX_DEPTH 64     /* nesting of schemas */
#define SW_OAS_MAX_NODES 20000  /* schemas in one tree */
#define SW_OAS_MAX_PATTERN 1024 /* bytes of one pattern */
#define SW_OAS_MAX_CAUSES 64    /* causes one validation reports */

/* Compiles schema (borrowed; copied where kept). field is the path the schema was found at
 * ("spec.versions[0].schema.openAPIV3Schema"), used in causes. status_subresource: the version
 * has /status (a root status property is then expected, not required).
 * 0 and *out (free with sw_oas_free), or SW_EINVALID and *causes: a new array of causes
 * {reason, field, message}, the first the one to report. */
int sw_oas_compile(const json_t *schema, const char *field, bool status_subresource, sw_oas **out,
                   json_t **causes);
/* The same for a schema already compiled once (a stored CRD's, at start or on re-registration):
 * patterns are compiled on first use, so starting with many CRDs costs little. */
int sw_oas_compile_lazy(const json_t *schema, const char *field, bool status_subresource,
                        sw_oas **out, json_t **causes);
void sw_oas_free(sw_oas *s);

/* The schema as written (borrowed, valid while s lives): what OpenAPI publication shows. */
const json_t *sw_oas_source(const sw_oas *s);
/* Whether any (sub)schema has a default. */
bool sw_oas_has_defaults(const sw_oas *s);

/* Removes every field the schema does not declare (apiVersion, kind and metadata kept at the root
 * and in embedded resources). When unknown is an array, the path of each removed field is
 * appended ("spec.foo", "spec.items[0].bar"). */
void sw_oas_prune(const sw_oas *s, json_t *obj, json_t *unknown);

/* Drops non-nullable nulls (replaced by the default when there is one) and fills absent
 * properties that have a default, recursing into defaulted values. */
void sw_oas_default(const sw_oas *s, json_t *obj);

/* 0 when obj satisfies every keyword, else SW_EINVALID and *causes: a new array of causes. */
int sw_oas_validate(const sw_oas *s, const json_t *obj, json_t **causes);
/* The same for an update from old: a value equal to the one at the same place in old is not
 * validated again (ratcheting), so only what the update changed can fail. */
int sw_oas_validate_update(const sw_oas *s, const json_t *obj, const json_t *old, json_t **causes);

#endif
