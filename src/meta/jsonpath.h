/* jsonpath: the subset of kubectl's JSONPath that CustomResourceDefinitions use in
 * additionalPrinterColumns and selectableFields: `.a.b` fields, `['a.b']` quoted fields, `[n]`
 * indexes (negative from the end), `[*]` every element, and `[?(@.k=="v")]` (also `!=`, and
 * nested `@.a.b`) filters; an optional `{...}` wrapper. Evaluation gives the first match, which is
 * what a printer column shows. */
#ifndef SW_META_JSONPATH_H
#define SW_META_JSONPATH_H

#include <jansson.h>
#include <stddef.h>

/* 0 when path is one this evaluator understands (it must start with '.'), else SW_EINVALID with a
 * message saying what is wrong at which offset. */
int sw_jsonpath_check(const char *path);

/* The first value path selects in obj (borrowed), or NULL when nothing matches or path does not
 * parse. Bounded: at most 10,000 candidates are looked at. */
const json_t *sw_jsonpath_first(const json_t *obj, const char *path);

/* The cell text of a printer column: strings as they are, numbers and booleans as JSON, objects
 * and arrays as compact JSON; "" for NULL. Into out (n bytes, cut and terminated). */
void sw_jsonpath_text(const json_t *v, char *out, size_t n);

#endif
