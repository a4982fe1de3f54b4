/* Unit tests for src/client/controller: what each reconcile answer does to a key (done,
 * look again after a delay, backoff without an error, an error retried with backoff), one call
 * per key at a time, stop discarding queued keys, and sw_retry_on_conflict. No server needed. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "client/controller.h"
#include "util/error.h"
#include "util/json.h"
#include "util/time.h"

#include <pthread.h>
#include <string.h>

typedef struct rec {
    pthread_mutex_t mu;
    json_t *calls; /* key -> count */
    int running, max_running;
} rec;

static int calls(rec *r, const char *key)
{
    pthread_mutex_lock(&r->mu);
    int n = (int)json_integer_value(json_object_get(r->calls, key));
    pthread_mutex_unlock(&r->mu);
    return n;
}

static int reconcile(void *ctx, const char *key)
{
    rec *r = ctx;
    pthread_mutex_lock(&r->mu);
    int n = (int)json_integer_value(json_object_get(r->calls, key));
    json_object_set_new(r->calls, key, json_integer(n + 1));
    r->running++;
    if (r->running > r->max_running)
        r->max_running = r->running;
    pthread_mutex_unlock(&r->mu);
    sw_time_sleep_ms(5);
    pthread_mutex_lock(&r->mu);
    r->running--;
    pthread_mutex_unlock(&r->mu);
    if (!strcmp(key, "done"))
        return 0;
    if (!strcmp(key, "later"))
        return n == 0 ? 100 : 0;
    if (!strcmp(key, "wait"))
        return n < 2 ? SW_RECONCILE_BACKOFF : 0;
    if (!strcmp(key, "fail"))
        return n < 3 ? sw_error_set(SW_EUNAVAILABLE, "not yet") : 0;
    return 0;
}

static bool wait_calls(rec *r, const char *key, int n, int ms)
{
    int64_t end = sw_time_mono_ms() + ms;
    while (sw_time_mono_ms() < end) {
        if (calls(r, key) >= n)
            return true;
        sw_time_sleep_ms(5);
    }
    return calls(r, key) >= n;
}

static void test_answers(void **state)
{
    rec r = {.mu = PTHREAD_MUTEX_INITIALIZER, .calls = json_object()};
    sw_controller *c = NULL;
    sw_controller_opts o = {.name = "test",
                            .workers = 4,
                            .reconcile = reconcile,
                            .ctx = &r,
                            .queue = {.base_delay_ms = 10, .max_delay_ms = 100}};
    assert_int_equal(sw_controller_new(&c, &o), 0);
    sw_controller_enqueue(c, "early"); /* before start: kept */
    assert_int_equal(sw_controller_start(c), 0);
    assert_int_equal(sw_controller_start(c), SW_EINVALID);
    int64_t t0 = sw_time_mono_ms();
    sw_controller_enqueue(c, "done");
    sw_controller_enqueue(c, "later");
    sw_controller_enqueue(c, "wait");
    sw_controller_enqueue(c, "fail");
    assert_true(wait_calls(&r, "early", 1, 2000));
    assert_true(wait_calls(&r, "later", 2, 2000));
    assert_true(sw_time_mono_ms() - t0 >= 100); /* looked at again after its delay */
    assert_true(wait_calls(&r, "wait", 3, 2000));
    assert_true(wait_calls(&r, "fail", 4, 2000));
    sw_time_sleep_ms(200);
    assert_int_equal(calls(&r, "done"), 1);
    assert_int_equal(calls(&r, "later"), 2);
    assert_int_equal(calls(&r, "wait"), 3);
    assert_int_equal(calls(&r, "fail"), 4); /* three errors, then done: not retried again */
    /* one key, added while it is being reconciled: never two calls at once */
    r.max_running = 0;
    for (int i = 0; i < 50; i++) {
        sw_controller_enqueue(c, "same");
        sw_time_sleep_ms(1);
    }
    assert_true(wait_calls(&r, "same", 2, 2000));
    sw_time_sleep_ms(50);
    assert_int_equal(r.max_running, 1);
    sw_controller_stop(c);
    sw_controller_stop(c); /* idempotent */
    assert_true(sw_controller_stopping(c));
    int before = calls(&r, "after-stop");
    sw_controller_enqueue(c, "after-stop");
    sw_time_sleep_ms(50);
    assert_int_equal(calls(&r, "after-stop"), before);
    sw_controller_free(c);
    json_decref(r.calls);
}

/* Queued keys are dropped by stop, not worked through. */
static void test_stop_discards(void **state)
{
    rec r = {.mu = PTHREAD_MUTEX_INITIALIZER, .calls = json_object()};
    sw_controller *c = NULL;
    sw_controller_opts o = {.name = "test", .workers = 1, .reconcile = reconcile, .ctx = &r};
    assert_int_equal(sw_controller_new(&c, &o), 0);
    char key[32];
    for (int i = 0; i < 1000; i++) {
        snprintf(key, sizeof(key), "k%d", i);
        sw_controller_enqueue(c, key);
    }
    assert_int_equal(sw_controller_pending(c), 1000);
    assert_int_equal(sw_controller_start(c), 0);
    sw_time_sleep_ms(20);
    int64_t t0 = sw_time_mono_ms();
    sw_controller_free(c); /* 1000 keys of 5 ms would take 5 s */
    assert_true(sw_time_mono_ms() - t0 < 1000);
    assert_true(json_object_size(r.calls) < 1000);
    json_decref(r.calls);
}

static int conflicts_left;
static int tries;

static int flaky(void *ctx)
{
    tries++;
    return conflicts_left-- > 0 ? SW_ECONFLICT : *(int *)ctx;
}

static void test_retry_on_conflict(void **state)
{
    int ok = 0, other = SW_EINVALID;
    conflicts_left = 2, tries = 0;
    assert_int_equal(sw_retry_on_conflict(0, flaky, &ok), 0);
    assert_int_equal(tries, 3);
    conflicts_left = 100, tries = 0;
    assert_int_equal(sw_retry_on_conflict(4, flaky, &ok), SW_ECONFLICT);
    assert_int_equal(tries, 4);
    conflicts_left = 0, tries = 0;
    assert_int_equal(sw_retry_on_conflict(0, flaky, &other), SW_EINVALID); /* not retried */
    assert_int_equal(tries, 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_answers),
        cmocka_unit_test(test_stop_discards),
        cmocka_unit_test(test_retry_on_conflict),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
