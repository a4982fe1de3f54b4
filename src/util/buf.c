/* buf: capped growable buffer with sticky error (see buf.h). */
#include "util/buf.h"

#include "util/alloc.h"
#include "util/error.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

void sw_buf_init(sw_buf *b, size_t limit)
{
    b->ptr = NULL;
    b->len = b->cap = 0;
    b->limit = limit;
    b->err = 0;
}

static int grow(sw_buf *b, size_t extra)
{
    size_t need;
    if (b->err)
        return b->err;
    if (!sw_size_add(&need, b->len, extra) || need > b->limit) {
        b->err = SW_ELIMIT;
        return sw_error_set(SW_ELIMIT, "buffer limit of %zu bytes exceeded", b->limit);
    }
    if (need + 1 <= b->cap)
        return 0;
    size_t cap = b->cap ? b->cap : 64;
    while (cap < need + 1)
        cap = cap > SIZE_MAX / 2 ? need + 1 : cap * 2;
    b->ptr = sw_realloc(b->ptr, cap);
    b->cap = cap;
    return 0;
}

int sw_buf_reserve(sw_buf *b, size_t n)
{
    return grow(b, n);
}

int sw_buf_put(sw_buf *b, const void *data, size_t n)
{
    int error = grow(b, n);
    if (error < 0)
        return error;
    if (n)
        memcpy(b->ptr + b->len, data, n);
    b->len += n;
    b->ptr[b->len] = '\0';
    return 0;
}

int sw_buf_puts(sw_buf *b, const char *s)
{
    return sw_buf_put(b, s, strlen(s));
}

int sw_buf_putc(sw_buf *b, char c)
{
    return sw_buf_put(b, &c, 1);
}

int sw_buf_vprintf(sw_buf *b, const char *fmt, va_list ap)
{
    va_list ap2;
    va_copy(ap2, ap);
    int n = vsnprintf(NULL, 0, fmt, ap2);
    va_end(ap2);
    if (n < 0)
        return sw_error_set(SW_ERROR, "format error");
    int error = grow(b, (size_t)n);
    if (error < 0)
        return error;
    vsnprintf(b->ptr + b->len, (size_t)n + 1, fmt, ap);
    b->len += (size_t)n;
    return 0;
}

int sw_buf_printf(sw_buf *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int error = sw_buf_vprintf(b, fmt, ap);
    va_end(ap);
    return error;
}

int sw_buf_error(const sw_buf *b)
{
    return b->err;
}

const char *sw_buf_cstr(const sw_buf *b)
{
    return b->ptr ? b->ptr : "";
}

char *sw_buf_detach(sw_buf *b, size_t *len_out)
{
    char *p = b->ptr ? b->ptr : sw_strdup("");
    if (len_out)
        *len_out = b->len;
    b->ptr = NULL;
    b->len = b->cap = 0;
    b->err = 0;
    return p;
}

void sw_buf_clear(sw_buf *b)
{
    b->len = 0;
    b->err = 0;
    if (b->ptr)
        b->ptr[0] = '\0';
}

void sw_buf_dispose(sw_buf *b)
{
    sw_free(b->ptr);
    b->ptr = NULL;
    b->len = b->cap = 0;
    b->err = 0;
}
