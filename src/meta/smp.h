/* smp: internals shared by patch.c (merge patch, JSON patch) and smp.c (strategic merge patch).
 * Not a public interface: include meta/patch.h instead. */
#ifndef SW_SMP_H
#define SW_SMP_H

#include <jansson.h>
#include <stddef.h>

/* Longest excerpt of untrusted text (a path, a key) quoted in an error message. */
#define SW_PATCH_SHOW_MAX 96

/* Copies s into dst (cap bytes, cap > 4) for an error message: control characters become '?',
 * text longer than SW_PATCH_SHOW_MAX (or cap) is cut and ends in "...". Returns dst. */
char *sw_patch__show(char *dst, size_t cap, const char *s);

/* json_object_set_new with a message on failure (value is stolen either way). 0 or SW_EINVALID. */
int sw_patch__obj_set(json_t *obj, const char *key, json_t *value);

/* For jansson iteration helpers that take a non-const json_t although they only read. */
static inline json_t *sw_patch__mut(const json_t *j)
{
    return (json_t *)j;
}

#endif
