/* alloc: checked allocation wrappers; OOM is fatal (see alloc.h). */
#include "util/alloc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void *oom(size_t n)
{
    fprintf(stderr, "slipway: fatal: out of memory allocating %zu bytes\n", n);
    abort();
}

void *sw_malloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    return p ? p : oom(n);
}

void *sw_calloc(size_t count, size_t size)
{
    void *p = calloc(count ? count : 1, size ? size : 1);
    return p ? p : oom(count * size);
}

void *sw_realloc(void *p, size_t n)
{
    void *q = realloc(p, n ? n : 1);
    return q ? q : oom(n);
}

char *sw_strndup(const char *s, size_t n)
{
    char *p = sw_malloc(n + 1);
    memcpy(p, s, n);
    p[n] = '\0';
    return p;
}

char *sw_strdup(const char *s)
{
    return sw_strndup(s, strlen(s));
}

void sw_free(void *p)
{
    free(p);
}
