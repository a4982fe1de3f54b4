/* selector: Kubernetes label and field selectors (the labelSelector= and fieldSelector= query
 * parameters): parsing with apimachinery's grammar and error wording, and matching against objects.
 * Parsed selectors are immutable and may be shared across threads. */
#ifndef SW_APISERVER_SELECTOR_H
#define SW_APISERVER_SELECTOR_H

#include <jansson.h>
#include <stdbool.h>

#define SW_SELECTOR_MAX_LEN 4096  /* bytes in a selector string */
#define SW_SELECTOR_MAX_REQS 64   /* requirements (terms) per selector */
#define SW_SELECTOR_MAX_VALUES 64 /* values in one in/notin set */

typedef struct sw_selector sw_selector; /* opaque */

/* Label selector: `k=v`, `k==v`, `k!=v`, `k in (a,b)`, `k notin (a,b)`, `k`, `!k`, and the numeric
 * `k>n`, `k<n`; comma = AND, whitespace between tokens tolerated as Kubernetes does. Keys are
 * checked as qualified names and values as label values. NULL or "" selects everything.
 * On success *out is a new selector (free with sw_selector_free). Otherwise SW_EBADREQUEST with
 * the apimachinery message, e.g. `unable to parse requirement: found 'x', expected: in, ...`. */
int sw_selector_parse_labels(const char *s, sw_selector **out);

/* Field selector: `f=v`, `f==v`, `f!=v`, comma = AND; values may escape `\\`, `\,` and `\=`
 * (apimachinery fields.ParseSelector). allowed is a NULL-terminated array of field paths such as
 * "metadata.name"; any other field gets SW_EBADREQUEST `field label not supported: <f>`.
 * allowed == NULL accepts every field. */
int sw_selector_parse_fields(const char *s, const char *const *allowed, sw_selector **out);

/* Label match against a metadata.labels object (NULL or non-object = no labels).
 * A NULL selector matches everything. */
bool sw_selector_match_labels(const sw_selector *sel, const json_t *labels);
/* A metav1.LabelSelector object ({matchLabels, matchExpressions with In, NotIn, Exists,
 * DoesNotExist}) against a metadata.labels object. An empty selector matches everything; a
 * malformed one (an unknown operator, a value that is not a string) matches nothing. */
bool sw_label_selector_match(const json_t *selector, const json_t *labels);
/* Field match against the whole object: each field is a dotted path whose value is its string,
 * an integer or boolean rendered as text, or "" when missing (or any other type). */
bool sw_selector_match_fields(const sw_selector *sel, const json_t *obj);

/* If the selector pins field with `=` or `==`, that value (borrowed from sel); NULL otherwise.
 * Lets a caller narrow a store range by metadata.namespace or metadata.name. */
const char *sw_selector_field_equals(const sw_selector *sel, const char *field);
/* True when the selector has no requirements (or is NULL). */
bool sw_selector_empty(const sw_selector *sel);
void sw_selector_free(sw_selector *sel);

#endif
