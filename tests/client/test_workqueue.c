/* Work queue tests: dedup, re-add while processing, processing exclusivity under several
 * workers, add_after timing and dedup, rate limiter backoff growth, token bucket and forget,
 * and shutdown waking blocked getters. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "client/workqueue.h"
#include "util/alloc.h"
#include "util/error.h"
#include "util/time.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static char *get_key(sw_workqueue *q)
{
    char *k = NULL;
    assert_int_equal(sw_workqueue_get(q, &k), 0);
    return k;
}

static void test_dedup(void **state)
{
    sw_workqueue *q = NULL;
    assert_int_equal(sw_workqueue_new(&q, NULL), 0);
    sw_workqueue_add(q, "a");
    sw_workqueue_add(q, "b");
    sw_workqueue_add(q, "a");
    assert_int_equal(sw_workqueue_len(q), 2);
    char *k = get_key(q);
    assert_string_equal(k, "a");
    sw_workqueue_done(q, k);
    sw_free(k);
    k = get_key(q);
    assert_string_equal(k, "b");
    sw_workqueue_done(q, k);
    sw_free(k);
    assert_int_equal(sw_workqueue_len(q), 0);
    sw_workqueue_free(q);
}

static void test_readd_while_processing(void **state)
{
    sw_workqueue *q = NULL;
    sw_workqueue_new(&q, NULL);
    sw_workqueue_add(q, "a");
    char *k = get_key(q);
    sw_workqueue_add(q, "a"); /* not handed out while "a" is processed */
    sw_workqueue_add(q, "a");
    assert_int_equal(sw_workqueue_len(q), 0);
    sw_workqueue_done(q, k);
    sw_free(k);
    assert_int_equal(sw_workqueue_len(q), 1);
    k = get_key(q);
    assert_string_equal(k, "a");
    sw_workqueue_done(q, k);
    sw_free(k);
    assert_int_equal(sw_workqueue_len(q), 0);
    sw_workqueue_free(q);
}

/* ---- exclusivity ---- */

#define NKEYS 8
#define NWORKERS 4

typedef struct excl {
    sw_workqueue *q;
    atomic_int active[NKEYS];
    atomic_int processed[NKEYS];
    atomic_int violations;
} excl;

static void *worker(void *arg)
{
    excl *x = arg;
    char *k;
    while (sw_workqueue_get(x->q, &k) == 0) {
        int i = k[1] - '0';
        if (atomic_fetch_add(&x->active[i], 1) != 0)
            atomic_fetch_add(&x->violations, 1);
        usleep(200);
        atomic_fetch_sub(&x->active[i], 1);
        atomic_fetch_add(&x->processed[i], 1);
        sw_workqueue_done(x->q, k);
        sw_free(k);
    }
    return NULL;
}

static void test_exclusive_processing(void **state)
{
    excl x = {0};
    pthread_t t[NWORKERS];
    sw_workqueue_new(&x.q, NULL);
    for (int i = 0; i < NWORKERS; i++)
        pthread_create(&t[i], NULL, worker, &x);
    char key[3] = "k0";
    for (int n = 0; n < 3000; n++) {
        key[1] = (char)('0' + n % NKEYS);
        sw_workqueue_add(x.q, key);
        if (n % 64 == 0)
            usleep(100);
    }
    for (int i = 0; i < 500 && sw_workqueue_len(x.q) > 0; i++)
        usleep(2000);
    usleep(5000);
    sw_workqueue_shutdown(x.q);
    for (int i = 0; i < NWORKERS; i++)
        pthread_join(t[i], NULL);
    assert_int_equal(atomic_load(&x.violations), 0);
    for (int i = 0; i < NKEYS; i++)
        assert_true(atomic_load(&x.processed[i]) >= 1);
    sw_workqueue_free(x.q);
}

/* ---- delays ---- */

static void test_add_after(void **state)
{
    sw_workqueue *q = NULL;
    sw_workqueue_new(&q, NULL);
    int64_t t0 = sw_time_mono_ms();
    sw_workqueue_add_after(q, "x", 100);
    assert_int_equal(sw_workqueue_len(q), 0);
    char *k = get_key(q);
    int64_t dt = sw_time_mono_ms() - t0;
    assert_string_equal(k, "x");
    assert_true(dt >= 95);
    assert_true(dt < 1000);
    sw_workqueue_done(q, k);
    sw_free(k);

    /* The earlier of two schedules wins, and the key fires once. */
    t0 = sw_time_mono_ms();
    sw_workqueue_add_after(q, "y", 250);
    sw_workqueue_add_after(q, "y", 30);
    k = get_key(q);
    dt = sw_time_mono_ms() - t0;
    assert_string_equal(k, "y");
    assert_true(dt >= 25 && dt < 240);
    sw_workqueue_done(q, k);
    sw_free(k);
    usleep(300 * 1000);
    assert_int_equal(sw_workqueue_len(q), 0);

    /* A delayed key already queued is not queued twice. */
    sw_workqueue_add(q, "z");
    sw_workqueue_add_after(q, "z", 1);
    usleep(10 * 1000);
    assert_int_equal(sw_workqueue_len(q), 1);
    sw_workqueue_free(q);
}

static void test_rate_limited_backoff(void **state)
{
    sw_workqueue_opts o = {.base_delay_ms = 5, .max_delay_ms = 40, .qps = 1000, .burst = 1000};
    sw_workqueue *q = NULL;
    sw_workqueue_new(&q, &o);
    const int64_t want[] = {5, 10, 20, 40, 40, 40};
    for (int i = 0; i < 6; i++)
        assert_int_equal(sw_workqueue_when(q, "k"), want[i]);
    assert_int_equal(sw_workqueue_num_requeues(q, "k"), 6);
    assert_int_equal(sw_workqueue_when(q, "other"), 5); /* per key */
    sw_workqueue_forget(q, "k");
    assert_int_equal(sw_workqueue_num_requeues(q, "k"), 0);
    assert_int_equal(sw_workqueue_when(q, "k"), 5);

    /* add_rate_limited really waits. */
    sw_workqueue_forget(q, "r");
    sw_workqueue_when(q, "r");
    sw_workqueue_when(q, "r");
    sw_workqueue_when(q, "r"); /* next delay: 40 */
    int64_t t0 = sw_time_mono_ms();
    sw_workqueue_add_rate_limited(q, "r");
    char *k = get_key(q);
    assert_true(sw_time_mono_ms() - t0 >= 35);
    sw_workqueue_done(q, k);
    sw_free(k);
    sw_workqueue_free(q);

    /* Default limits: 5 ms doubling up to 1000 s. */
    sw_workqueue_new(&q, NULL);
    int64_t d = 0;
    for (int i = 0; i < 40; i++)
        d = sw_workqueue_when(q, "k");
    assert_int_equal(d, 1000 * 1000);
    sw_workqueue_free(q);
}

static void test_token_bucket(void **state)
{
    sw_workqueue_opts o = {.base_delay_ms = 1, .max_delay_ms = 1000, .qps = 10, .burst = 2};
    sw_workqueue *q = NULL;
    sw_workqueue_new(&q, &o);
    assert_int_equal(sw_workqueue_when(q, "a"), 1);
    assert_int_equal(sw_workqueue_when(q, "b"), 1);
    int64_t c = sw_workqueue_when(q, "c"), d = sw_workqueue_when(q, "d");
    /* 100 ms and 200 ms ahead, less whatever refilled while this thread was descheduled. */
    assert_true(c >= 50 && c <= 101);
    assert_true(d >= c + 50 && d <= 201);
    sw_workqueue_free(q);
}

/* ---- shutdown ---- */

typedef struct getter {
    sw_workqueue *q;
    int rc;
} getter;

static void *blocked_get(void *arg)
{
    getter *g = arg;
    char *k = NULL;
    g->rc = sw_workqueue_get(g->q, &k);
    sw_free(k);
    return NULL;
}

static void test_shutdown(void **state)
{
    sw_workqueue *q = NULL;
    sw_workqueue_new(&q, NULL);
    getter g[3];
    pthread_t t[3];
    for (int i = 0; i < 3; i++) {
        g[i] = (getter){q, 1};
        pthread_create(&t[i], NULL, blocked_get, &g[i]);
    }
    usleep(50 * 1000);
    sw_workqueue_add_after(q, "later", 60 * 1000);
    int64_t t0 = sw_time_mono_ms();
    sw_workqueue_shutdown(q);
    for (int i = 0; i < 3; i++) {
        pthread_join(t[i], NULL);
        assert_int_equal(g[i].rc, SW_EUNAVAILABLE);
    }
    assert_true(sw_time_mono_ms() - t0 < 1000);
    sw_workqueue_free(q);

    /* Keys queued before shutdown are still handed out; later adds are ignored. */
    sw_workqueue_new(&q, NULL);
    sw_workqueue_add(q, "a");
    sw_workqueue_shutdown(q);
    sw_workqueue_add(q, "b");
    char *k = get_key(q);
    assert_string_equal(k, "a");
    sw_workqueue_done(q, k);
    sw_free(k);
    assert_int_equal(sw_workqueue_get(q, &k), SW_EUNAVAILABLE);
    sw_workqueue_free(q);
}

/* discard: queued keys are dropped, and a key re-added while processing is not queued again. */
static void test_discard(void **state)
{
    (void)state;
    sw_workqueue *q = NULL;
    char *k;
    sw_workqueue_new(&q, NULL);
    sw_workqueue_add(q, "busy");
    k = get_key(q);
    sw_workqueue_add(q, "busy"); /* dirty while processing */
    for (int i = 0; i < 1000; i++) {
        char key[16];
        snprintf(key, sizeof(key), "k%d", i);
        sw_workqueue_add(q, key);
    }
    sw_workqueue_discard(q);
    sw_workqueue_done(q, k);
    sw_free(k);
    assert_int_equal(sw_workqueue_len(q), 0);
    assert_int_equal(sw_workqueue_get(q, &k), SW_EUNAVAILABLE);
    sw_workqueue_free(q);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_dedup),
        cmocka_unit_test(test_readd_while_processing),
        cmocka_unit_test(test_exclusive_processing),
        cmocka_unit_test(test_add_after),
        cmocka_unit_test(test_rate_limited_backoff),
        cmocka_unit_test(test_token_bucket),
        cmocka_unit_test(test_shutdown),
        cmocka_unit_test(test_discard),
    };
    return cmocka_run_group_tests_name("client/workqueue", tests, NULL, NULL);
}
