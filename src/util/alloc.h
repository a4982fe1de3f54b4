/* alloc: checked allocation for all of slipway.
 * Policy (chosen once, project-wide): an allocation failure is fatal. Every allocation goes
 * through these wrappers, which log and abort() on OOM, so no caller ever sees NULL.
 * Size arithmetic goes through sw_size_add/sw_size_mul, which fail on overflow. */
#ifndef SW_ALLOC_H
#define SW_ALLOC_H

#include <stdbool.h>
#include <stddef.h>

void *sw_malloc(size_t n);
void *sw_calloc(size_t count, size_t size);
void *sw_realloc(void *p, size_t n);
char *sw_strdup(const char *s);
char *sw_strndup(const char *s, size_t n);
void sw_free(void *p);

/* Overflow-checked size maths: return false (and leave *out untouched) on overflow. */
static inline bool sw_size_add(size_t *out, size_t a, size_t b)
{
    return !__builtin_add_overflow(a, b, out);
}
static inline bool sw_size_mul(size_t *out, size_t a, size_t b)
{
    return !__builtin_mul_overflow(a, b, out);
}

#endif
