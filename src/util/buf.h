/* buf: the one growable byte buffer, with a mandatory size cap and a sticky error.
 * Always NUL-terminated once anything was appended. A failed append (cap exceeded) marks the
 * buffer failed; later appends are no-ops and sw_buf_error() reports SW_ELIMIT once at the end. */
#ifndef SW_BUF_H
#define SW_BUF_H

#include <stdarg.h>
#include <stddef.h>

typedef struct sw_buf {
    char *ptr;
    size_t len;
    size_t cap;
    size_t limit; /* maximum len; appends past it fail */
    int err;      /* 0 or SW_ELIMIT, sticky */
} sw_buf;

#define SW_BUF_INIT(limit_)                                                                        \
    {                                                                                              \
        NULL, 0, 0, (limit_), 0                                                                    \
    }

void sw_buf_init(sw_buf *b, size_t limit);
/* Makes room for n more bytes at once (avoids regrowth when the final size is known). */
int sw_buf_reserve(sw_buf *b, size_t n);
int sw_buf_put(sw_buf *b, const void *data, size_t n);
int sw_buf_puts(sw_buf *b, const char *s);
int sw_buf_putc(sw_buf *b, char c);
int sw_buf_printf(sw_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
int sw_buf_vprintf(sw_buf *b, const char *fmt, va_list ap);
int sw_buf_error(const sw_buf *b);
/* The contents ("" when empty); valid until the next append. */
const char *sw_buf_cstr(const sw_buf *b);
/* Takes ownership of the storage (free with sw_free); the buffer is reset. Never NULL. */
char *sw_buf_detach(sw_buf *b, size_t *len_out);
void sw_buf_clear(sw_buf *b);
void sw_buf_dispose(sw_buf *b);

#endif
