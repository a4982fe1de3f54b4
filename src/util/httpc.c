/* httpc: libcurl initialisation, handle pools and shared options (see httpc.h). */
#include "util/httpc.h"

#include "util/alloc.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#ifndef SW_VERSION
#define SW_VERSION "0"
#endif

struct sw_httpc_pool {
    pthread_mutex_t mu;
    pthread_cond_t cond;
    int max_out, max_idle, out, n_idle;
    bool down;
    CURL **idle;
};

static pthread_once_t g_once = PTHREAD_ONCE_INIT;

static void global_init(void)
{
    if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
        fprintf(stderr, "slipway: fatal: curl_global_init failed\n");
        abort();
    }
}

void sw_httpc_global_init(void)
{
    pthread_once(&g_once, global_init);
}

sw_httpc_pool *sw_httpc_pool_new(int max_out, int max_idle)
{
    sw_httpc_global_init();
    sw_httpc_pool *p = sw_calloc(1, sizeof(*p));
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->cond, NULL);
    p->max_out = max_out < 0 ? 0 : max_out;
    p->max_idle = max_idle < 1 ? 1 : max_idle;
    p->idle = sw_calloc((size_t)p->max_idle, sizeof(*p->idle));
    return p;
}

CURL *sw_httpc_take(sw_httpc_pool *p)
{
    pthread_mutex_lock(&p->mu);
    while (p->max_out && p->out >= p->max_out && !p->down)
        pthread_cond_wait(&p->cond, &p->mu);
    if (p->down) {
        pthread_mutex_unlock(&p->mu);
        return NULL;
    }
    p->out++;
    CURL *c = p->n_idle ? p->idle[--p->n_idle] : NULL;
    pthread_mutex_unlock(&p->mu);
    if (!c && !(c = curl_easy_init())) {
        fprintf(stderr, "slipway: fatal: curl_easy_init failed\n");
        abort();
    }
    return c;
}

void sw_httpc_give(sw_httpc_pool *p, CURL *c, bool discard)
{
    if (!c)
        return;
    if (!discard)
        curl_easy_reset(c); /* keeps its connection, DNS and TLS session caches */
    pthread_mutex_lock(&p->mu);
    if (!discard && p->n_idle < p->max_idle) {
        p->idle[p->n_idle++] = c;
        c = NULL;
    }
    p->out--;
    pthread_cond_signal(&p->cond);
    pthread_mutex_unlock(&p->mu);
    if (c)
        curl_easy_cleanup(c);
}

void sw_httpc_pool_shutdown(sw_httpc_pool *p)
{
    pthread_mutex_lock(&p->mu);
    p->down = true;
    pthread_cond_broadcast(&p->cond);
    pthread_mutex_unlock(&p->mu);
}

void sw_httpc_pool_free(sw_httpc_pool *p)
{
    if (!p)
        return;
    for (int i = 0; i < p->n_idle; i++)
        curl_easy_cleanup(p->idle[i]);
    pthread_mutex_destroy(&p->mu);
    pthread_cond_destroy(&p->cond);
    sw_free(p->idle);
    sw_free(p);
}

void sw_httpc_defaults(CURL *c, long timeout_ms)
{
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, 10000L);
    curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, timeout_ms);
    curl_easy_setopt(c, CURLOPT_TCP_KEEPALIVE, 1L);
    curl_easy_setopt(c, CURLOPT_USERAGENT, "slipway/" SW_VERSION);
}

size_t sw_httpc_buf_write(char *data, size_t size, size_t n, void *buf)
{
    return sw_buf_put(buf, data, size * n) == 0 ? size * n : 0;
}
