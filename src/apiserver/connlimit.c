/* connlimit: header deadline, per-address cap and eviction of unauthenticated connections
 * (see connlimit.h). A fixed table of max + SLACK entries, scanned linearly: admit and the
 * reaper are O(max), a few microseconds for 2,000 connections. */
#include "apiserver/connlimit.h"

#include "util/alloc.h"
#include "util/error.h"
#include "util/log.h"
#include "util/time.h"

#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdint.h>
#include <string.h>

#define SLACK 64    /* cut connections still closing while their successors open */
#define REAP_MS 250 /* how often the reaper looks for overdue headers */

enum conn_state { FREE = 0, WAITING, BUSY, TRUSTED };

struct sw_connlimit_conn {
    enum conn_state state;
    bool cut;           /* shut down, its thread is closing it */
    bool authenticated; /* carried a credential once */
    int fd;
    unsigned char addr[16];
    int64_t since_ms; /* WAITING: when the header deadline started */
};

struct sw_connlimit {
    sw_connlimit_opts opts;
    pthread_mutex_t mu;
    pthread_cond_t cond; /* CLOCK_MONOTONIC: stopping */
    bool stopping;
    pthread_t reaper;
    size_t n;
    sw_connlimit_conn *conns;
};

static void addr_key(const struct sockaddr *addr, socklen_t len, unsigned char out[16])
{
    memset(out, 0, 16);
    if (addr && addr->sa_family == AF_INET && len >= (socklen_t)sizeof(struct sockaddr_in))
        memcpy(out, &((const struct sockaddr_in *)addr)->sin_addr, 4);
    else if (addr && addr->sa_family == AF_INET6 && len >= (socklen_t)sizeof(struct sockaddr_in6))
        memcpy(out, &((const struct sockaddr_in6 *)addr)->sin6_addr, 16);
}

/* Under mu. */
static void cut(sw_connlimit_conn *c, const char *why)
{
    if (c->cut)
        return;
    c->cut = true;
    shutdown(c->fd, SHUT_RDWR);
    sw_log(SW_LOG_DEBUG, "connection cut: %s", why);
}

static void *reaper_main(void *arg)
{
    sw_connlimit *l = arg;
    pthread_mutex_lock(&l->mu);
    while (!l->stopping) {
        struct timespec until = sw_time_mono_deadline(REAP_MS);
        while (!l->stopping && pthread_cond_timedwait(&l->cond, &l->mu, &until) != ETIMEDOUT)
            ;
        int64_t now = sw_time_mono_ms();
        for (size_t i = 0; i < l->n && l->opts.header_timeout_ms; i++) {
            sw_connlimit_conn *c = &l->conns[i];
            if (c->state == WAITING && now - c->since_ms > (int64_t)l->opts.header_timeout_ms)
                cut(c, "no complete request header in time");
        }
    }
    pthread_mutex_unlock(&l->mu);
    return NULL;
}

int sw_connlimit_new(sw_connlimit **out, const sw_connlimit_opts *opts)
{
    sw_connlimit *l = sw_calloc(1, sizeof(*l));
    l->opts = *opts;
    l->n = (size_t)opts->max + SLACK;
    l->conns = sw_calloc(l->n, sizeof(*l->conns));
    pthread_mutex_init(&l->mu, NULL);
    sw_time_cond_init(&l->cond);
    if (pthread_create(&l->reaper, NULL, reaper_main, l) != 0) {
        pthread_cond_destroy(&l->cond);
        pthread_mutex_destroy(&l->mu);
        sw_free(l->conns);
        sw_free(l);
        return sw_error_set(SW_ERROR, "cannot start the connection reaper thread");
    }
    *out = l;
    return 0;
}

void sw_connlimit_free(sw_connlimit *l)
{
    if (!l)
        return;
    pthread_mutex_lock(&l->mu);
    l->stopping = true;
    pthread_cond_broadcast(&l->cond);
    pthread_mutex_unlock(&l->mu);
    pthread_join(l->reaper, NULL);
    pthread_cond_destroy(&l->cond);
    pthread_mutex_destroy(&l->mu);
    sw_free(l->conns);
    sw_free(l);
}

bool sw_connlimit_admit(sw_connlimit *l, const struct sockaddr *addr, socklen_t len)
{
    unsigned char key[16];
    addr_key(addr, len, key);
    unsigned live = 0, same = 0;
    sw_connlimit_conn *oldest = NULL, *oldest_same = NULL;
    pthread_mutex_lock(&l->mu);
    for (size_t i = 0; i < l->n; i++) {
        sw_connlimit_conn *c = &l->conns[i];
        if (c->state == FREE || c->cut)
            continue;
        live++;
        if (!c->authenticated && !memcmp(c->addr, key, 16)) {
            same++;
            if (c->state == WAITING && (!oldest_same || c->since_ms < oldest_same->since_ms))
                oldest_same = c;
        }
        if (c->state == WAITING && (!oldest || c->since_ms < oldest->since_ms) && !c->authenticated)
            oldest = c;
    }
    /* an address at its cap makes room from its own oldest unauthenticated connection: the
     * clients behind one address (a NAT, loopback) are not locked out by one of them */
    bool ok = same < l->opts.per_address || oldest_same != NULL;
    if (same >= l->opts.per_address && oldest_same) {
        cut(oldest_same, "the address's connection cap is reached: its oldest unauthenticated "
                         "connection makes room");
        live--;
        if (oldest == oldest_same)
            oldest = NULL;
    }
    if (ok && live >= l->opts.max) {
        ok = oldest != NULL;
        if (ok)
            cut(oldest, "the connection limit is reached: the oldest idle unauthenticated "
                        "connection makes room");
    }
    pthread_mutex_unlock(&l->mu);
    if (!ok)
        sw_log(SW_LOG_DEBUG, "connection refused: %s",
               same >= l->opts.per_address ? "too many from its address" : "the server is full");
    return ok;
}

sw_connlimit_conn *sw_connlimit_opened(sw_connlimit *l, int fd, const struct sockaddr *addr,
                                       socklen_t len)
{
    sw_connlimit_conn *c = NULL;
    pthread_mutex_lock(&l->mu);
    for (size_t i = 0; i < l->n && !c; i++)
        if (l->conns[i].state == FREE)
            c = &l->conns[i];
    if (c) {
        memset(c, 0, sizeof(*c));
        c->state = WAITING;
        c->fd = fd;
        c->since_ms = sw_time_mono_ms();
        addr_key(addr, len, c->addr);
    }
    pthread_mutex_unlock(&l->mu);
    return c;
}

void sw_connlimit_request(sw_connlimit *l, sw_connlimit_conn *c, bool authenticated)
{
    if (!c)
        return;
    pthread_mutex_lock(&l->mu);
    c->authenticated = c->authenticated || authenticated;
    /* an anonymous request (a health probe) keeps the deadline through its body and answer */
    if (c->authenticated)
        c->state = BUSY;
    pthread_mutex_unlock(&l->mu);
}

void sw_connlimit_idle(sw_connlimit *l, sw_connlimit_conn *c)
{
    if (!c)
        return;
    pthread_mutex_lock(&l->mu);
    c->state = c->authenticated ? TRUSTED : WAITING;
    c->since_ms = sw_time_mono_ms();
    pthread_mutex_unlock(&l->mu);
}

void sw_connlimit_closed(sw_connlimit *l, sw_connlimit_conn *c)
{
    if (!c)
        return;
    pthread_mutex_lock(&l->mu);
    memset(c, 0, sizeof(*c));
    pthread_mutex_unlock(&l->mu);
}
