/* store/recent: versions kept per key, newest wins, a delete forgets, the bounds hold. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "store/recent.h"
#include "util/error.h"

#include <stdio.h>
#include <string.h>

static void test_newest_wins(void **state)
{
    (void)state;
    sw_recent *r = sw_recent_new(64, 1024, 1 << 20);
    sw_kv kv;
    assert_int_equal(sw_recent_get(r, "/a", &kv), SW_ENOTFOUND);
    sw_recent_put(r, "/a", "v5", 2, 5, 3);
    sw_recent_put(r, "/a", "v4", 2, 4, 3); /* older: ignored */
    assert_int_equal(sw_recent_get(r, "/a", &kv), 0);
    assert_string_equal(kv.value, "v5");
    assert_int_equal(kv.mod_rev, 5);
    assert_int_equal(kv.create_rev, 3);
    sw_kv_dispose(&kv);
    sw_recent_put(r, "/a", "v6", 2, 6, 0); /* create_rev unknown: the slot's stays */
    assert_int_equal(sw_recent_get(r, "/a", &kv), 0);
    assert_int_equal(kv.create_rev, 3);
    sw_kv_dispose(&kv);
    sw_recent_drop(r, "/a", 5); /* a delete older than the copy: kept */
    assert_int_equal(sw_recent_get(r, "/a", &kv), 0);
    sw_kv_dispose(&kv);
    sw_recent_drop(r, "/a", 7);
    assert_int_equal(sw_recent_get(r, "/a", &kv), SW_ENOTFOUND);
    sw_recent_refresh(r, "/a", "v8", 2, 8, 3); /* refresh never fills */
    assert_int_equal(sw_recent_get(r, "/a", &kv), SW_ENOTFOUND);
    sw_recent_free(r);
}

static void test_bounds(void **state)
{
    (void)state;
    char big[200];
    memset(big, 'b', sizeof(big));
    sw_recent *r = sw_recent_new(1, 100, 1 << 20); /* one slot: every key collides */
    sw_kv kv;
    sw_recent_put(r, "/big", big, sizeof(big), 1, 1);
    assert_int_equal(sw_recent_get(r, "/big", &kv), SW_ENOTFOUND); /* over max_value */
    sw_recent_put(r, "/a", "1", 1, 2, 2);
    sw_recent_put(r, "/b", "2", 1, 3, 3); /* replaces /a */
    assert_int_equal(sw_recent_get(r, "/a", &kv), SW_ENOTFOUND);
    assert_int_equal(sw_recent_get(r, "/b", &kv), 0);
    sw_kv_dispose(&kv);
    sw_recent_free(r);

    r = sw_recent_new(1024, 1000, 100); /* 100 bytes in all */
    int kept = 0;
    for (int i = 0; i < 50; i++) {
        char key[16];
        snprintf(key, sizeof(key), "/k%02d", i);
        sw_recent_put(r, key, "0123456789", 10, i + 1, i + 1);
    }
    for (int i = 0; i < 50; i++) {
        char key[16];
        snprintf(key, sizeof(key), "/k%02d", i);
        if (sw_recent_get(r, key, &kv) == 0) {
            kept++;
            sw_kv_dispose(&kv);
        }
    }
    assert_true(kept > 0 && kept <= 100 / 14); /* 4-byte keys + 10-byte values */
    sw_recent_free(r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_newest_wins),
        cmocka_unit_test(test_bounds),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
