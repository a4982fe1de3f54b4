/* httpc: the project's one libcurl setup. Process-wide initialisation happens once, whoever
 * asks first; a pool is a bounded set of easy handles for one peer (its connection cache and
 * its concurrency limit: a take waits while every handle is out); the options every request
 * shares (no signals, connect timeout, keep-alive, user agent) are set in one place; a response
 * body lands in a capped sw_buf. Thread-safe; a handle is used by one thread at a time. */
#ifndef SW_HTTPC_H
#define SW_HTTPC_H

#include "util/buf.h"

#include <curl/curl.h>
#include <stdbool.h>

typedef struct sw_httpc_pool sw_httpc_pool;

/* curl_global_init, once per process (aborts if libcurl cannot start). */
void sw_httpc_global_init(void);

/* A pool handing out at most max_out handles at once (0: no limit) and keeping up to max_idle
 * of them (with their connections) between requests. */
sw_httpc_pool *sw_httpc_pool_new(int max_out, int max_idle);
/* A handle with no request options set (reset, connection kept), waiting while max_out are
 * out; NULL once the pool is shut down. */
CURL *sw_httpc_take(sw_httpc_pool *p);
/* Returns a handle from sw_httpc_take; discard drops its connection (a peer that failed). */
void sw_httpc_give(sw_httpc_pool *p, CURL *c, bool discard);
/* Wakes every waiter; later takes return NULL. Handles out stay valid until given back. */
void sw_httpc_pool_shutdown(sw_httpc_pool *p);
/* Frees the pool; every handle must have been given back. NULL is a no-op. */
void sw_httpc_pool_free(sw_httpc_pool *p);

/* The options every slipway request has: no signals, 10 s to connect, TCP keep-alive, the
 * slipway user agent, and timeout_ms for the whole transfer (0: none, for streams). */
void sw_httpc_defaults(CURL *c, long timeout_ms);
/* CURLOPT_WRITEFUNCTION appending to the sw_buf in CURLOPT_WRITEDATA; a full buffer ends the
 * transfer (CURLE_WRITE_ERROR, and the buffer's sticky SW_ELIMIT). */
size_t sw_httpc_buf_write(char *data, size_t size, size_t n, void *buf);

#endif
