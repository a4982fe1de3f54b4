/* oasformat: string formats and RE2-spelled patterns for CRD schemas (openapischema.h); see
 * oasformat.c for what is checked and what is refused. */
#ifndef SW_META_OASFORMAT_H
#define SW_META_OASFORMAT_H

#include <jansson.h>
#include <regex.h>
#include <stdbool.h>

/* The id of a checked format (> 0), or 0 for a name that is not checked. */
int sw_oas_format_find(const char *name);
const char *sw_oas_format_name(int fmt);
/* Whether v satisfies format fmt (values of other types always do). */
bool sw_oas_format_ok(int fmt, const json_t *v);
/* Compiles an RE2-spelled pattern into out (regfree it): 0, SW_ELIMIT past
 * SW_OAS_MAX_PATTERN bytes, SW_EINVALID when it does not translate or compile. */
int sw_oas_regcomp(const char *re, regex_t *out);
/* Whether a compiled pattern matches somewhere in s (UTF-8). */
bool sw_oas_regmatch(const regex_t *re, const char *s);

#endif
