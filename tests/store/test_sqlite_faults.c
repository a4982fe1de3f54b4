/* The SQLite backend under a storage fault: a shim over the "unix-excl" VFS the store opens
 * with fails fsync on demand. A COMMIT whose fsync fails may still be in the WAL whole, so its
 * outcome is unknown until recovery: the write must say so, the store must take no further
 * writes (it would hand the same revision out again), reads must go on, and a reopened store
 * must be consistent and writable. A compaction cut short the same way is finished by the next
 * call with the same target. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "store/store.h"
#include "util/alloc.h"
#include "util/error.h"
#include "util/path.h"

#include <sqlite3.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static sqlite3_vfs g_shim;  /* "unix-excl", found before the real one */
static sqlite3_vfs *g_real; /* the real "unix-excl" */
/* The real file method tables seen (the database and its WAL may differ), and a copy of each
 * with xSync replaced. */
#define MAX_TABLES 4
static const sqlite3_io_methods *g_real_io[MAX_TABLES];
static sqlite3_io_methods g_shim_io[MAX_TABLES];
static int g_ntables;
static atomic_bool g_fail_sync;
/* 1: armed, writes fail after the next sync (one commit goes through, the next one cannot
 * write its frames); 2: writes fail; 0: off */
static atomic_int g_fail_write;

static const sqlite3_io_methods *real_io(const sqlite3_file *f)
{
    for (int i = 0; i < g_ntables; i++)
        if (f->pMethods == &g_shim_io[i])
            return g_real_io[i];
    fail_msg("a file the shim did not open");
    return NULL;
}

static int shim_sync(sqlite3_file *f, int flags)
{
    if (atomic_load(&g_fail_sync))
        return SQLITE_IOERR_FSYNC;
    int rc = real_io(f)->xSync(f, flags);
    int armed = 1;
    atomic_compare_exchange_strong(&g_fail_write, &armed, 2);
    return rc;
}

static int shim_write(sqlite3_file *f, const void *buf, int n, sqlite3_int64 off)
{
    if (atomic_load(&g_fail_write) == 2)
        return SQLITE_IOERR_WRITE;
    return real_io(f)->xWrite(f, buf, n, off);
}

/* Opens with the real VFS into the caller's file (same size), then swaps in our methods. */
static int shim_open(sqlite3_vfs *vfs, const char *name, sqlite3_file *f, int flags, int *out_flags)
{
    (void)vfs;
    int rc = g_real->xOpen(g_real, name, f, flags, out_flags);
    if (rc != SQLITE_OK || !f->pMethods)
        return rc;
    int i = 0;
    while (i < g_ntables && g_real_io[i] != f->pMethods)
        i++;
    if (i == g_ntables) {
        assert_true(g_ntables < MAX_TABLES);
        g_real_io[i] = f->pMethods;
        g_shim_io[i] = *f->pMethods;
        g_shim_io[i].xSync = shim_sync;
        g_shim_io[i].xWrite = shim_write;
        g_ntables++;
    }
    f->pMethods = &g_shim_io[i];
    return rc;
}

static int register_shim(void **state)
{
    (void)state;
    g_real = sqlite3_vfs_find("unix-excl");
    assert_non_null(g_real);
    g_shim = *g_real;
    g_shim.xOpen = shim_open;
    g_shim.pNext = NULL;
    assert_int_equal(sqlite3_vfs_register(&g_shim, 0), SQLITE_OK);
    assert_ptr_equal(sqlite3_vfs_find("unix-excl"), &g_shim);
    return 0;
}

static void check_value(sw_store *s, const char *key, const char *value)
{
    sw_kv kv = {0};
    assert_int_equal(sw_store_get(s, key, &kv), 0);
    assert_int_equal(kv.value_len, strlen(value));
    assert_memory_equal(kv.value, value, kv.value_len);
    sw_kv_dispose(&kv);
}

static const sw_sqlite_opts g_opts = {.sync_full = true};

/* A fresh store (fsync on every commit) in a new directory made from dir's template. */
static sw_store *open_fresh(char *dir, char *path, size_t n)
{
    sw_store *s = NULL;
    assert_non_null(mkdtemp(dir));
    snprintf(path, n, "%s/store.db", dir);
    assert_int_equal(sw_store_sqlite_open(&s, path, &g_opts), 0);
    return s;
}

static void test_commit_with_failed_fsync(void **state)
{
    (void)state;
    char dir[] = "/tmp/sw-store-fault-XXXXXX", path[96];
    sw_store *s = open_fresh(dir, path, sizeof(path));
    int64_t rev = 0;
    assert_int_equal(sw_store_create(s, "/a/k1", "one", 3, &rev), 0);
    assert_int_equal(sw_store_health(s), 0);

    atomic_store(&g_fail_sync, true);
    assert_int_equal(sw_store_create(s, "/a/k2", "two", 3, &rev), SW_ERROR);
    assert_non_null(strstr(sw_error_msg(), "outcome of this write is unknown"));
    atomic_store(&g_fail_sync, false);

    /* No write is taken any more, whatever it is; reads go on. */
    assert_int_equal(sw_store_create(s, "/a/k3", "three", 5, &rev), SW_EUNAVAILABLE);
    assert_non_null(strstr(sw_error_msg(), "restart"));
    assert_int_equal(sw_store_compact(s, 1), SW_EUNAVAILABLE); /* compaction writes too */
    check_value(s, "/a/k1", "one");
    /* and the store says so: /readyz turns 500 */
    assert_int_equal(sw_store_health(s), SW_EUNAVAILABLE);
    sw_store_close(s);

    /* A restart: recovery decides about k2; either way the store is consistent and writable,
     * and k2, if it is there, has the revision after k1's. */
    assert_int_equal(sw_store_sqlite_open(&s, path, &g_opts), 0);
    check_value(s, "/a/k1", "one");
    sw_kv kv = {0};
    int error = sw_store_get(s, "/a/k2", &kv);
    assert_true(error == 0 || error == SW_ENOTFOUND);
    if (error == 0)
        assert_int_equal(kv.mod_rev, 2);
    sw_kv_dispose(&kv);
    assert_int_equal(sw_store_create(s, "/a/k3", "three", 5, &rev), 0);
    assert_int_equal(rev, error == 0 ? 3 : 2);
    assert_int_equal(sw_store_health(s), 0);
    sw_store_close(s);
    assert_int_equal(sw_path_remove_tree(dir), 0);
}

/* Rows in the log table of the (closed) store at path. */
static int log_rows(const char *path)
{
    sqlite3 *db = NULL;
    sqlite3_stmt *st = NULL;
    assert_int_equal(sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    assert_int_equal(sqlite3_prepare_v2(db, "SELECT COUNT(*) FROM log", -1, &st, NULL), SQLITE_OK);
    assert_int_equal(sqlite3_step(st), SQLITE_ROW);
    int n = sqlite3_column_int(st, 0);
    sqlite3_finalize(st);
    sqlite3_close(db);
    return n;
}

/* A compaction whose window fails to commit (its WAL writes fail) is finished by the next call
 * with the same target (it used to be skipped, leaving the rows until a higher target). */
static void test_compaction_retried(void **state)
{
    (void)state;
    char dir[] = "/tmp/sw-store-fault-XXXXXX", path[96];
    sw_store *s = open_fresh(dir, path, sizeof(path));
    int64_t rev = 0;
    assert_int_equal(sw_store_create(s, "/a/k", "v1", 2, &rev), 0);
    for (int i = 2; i <= 6; i++)
        assert_int_equal(sw_store_update(s, "/a/k", "vN", 2, rev, &rev), 0);
    assert_int_equal(rev, 6);
    /* the mark (compact_rev = 4) commits; the window's commit then writes nothing */
    atomic_store(&g_fail_write, 1);
    assert_true(sw_store_compact(s, 4) < 0);
    assert_non_null(strstr(sw_error_msg(), "compact"));
    atomic_store(&g_fail_write, 0);
    assert_int_equal(sw_store_compact(s, 4), 0);
    sw_store_close(s);
    assert_int_equal(log_rows(path), 3); /* revisions 4, 5 and 6 */
    assert_int_equal(sw_path_remove_tree(dir), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_commit_with_failed_fsync),
        cmocka_unit_test(test_compaction_retried),
    };
    return cmocka_run_group_tests_name("store/sqlite_faults", tests, register_shim, NULL);
}
