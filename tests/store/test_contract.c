/* Store contract tests: one backend-generic suite (tests take the sw_store made by a backend's
 * factory) that every backend of store.h must pass; main() runs it against SQLite on a fresh
 * temporary directory per test, and against a real etcd (Debian's /usr/bin/etcd, started
 * afresh for each test on loopback ports, stopped afterwards). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "store/store.h"
#include "util/alloc.h"
#include "util/error.h"
#include "util/str.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* ---- backend factories ---- */

typedef struct contract_backend {
    const char *name;
    void *(*setup)(void);                   /* a fresh, empty store location */
    int (*open)(void *ctx, sw_store **out); /* opens (or reopens) the store at ctx */
    void (*teardown)(void *ctx);            /* removes the location */
} contract_backend;

static const contract_backend *g_backend;

typedef struct sqlite_ctx {
    char dir[64];
    char path[96];
    bool sync_full;
} sqlite_ctx;

static void *sqlite_setup_mode(bool sync_full)
{
    sqlite_ctx *c = sw_calloc(1, sizeof(*c));
    sw_strlcpy(c->dir, "/tmp/sw-store-test-XXXXXX", sizeof(c->dir));
    if (!mkdtemp(c->dir))
        abort();
    snprintf(c->path, sizeof(c->path), "%s/store.db", c->dir);
    c->sync_full = sync_full;
    return c;
}

static void *sqlite_setup(void)
{
    return sqlite_setup_mode(false);
}

static int sqlite_open(void *ctx, sw_store **out)
{
    sqlite_ctx *c = ctx;
    sw_sqlite_opts opts = {.sync_full = c->sync_full};
    return sw_store_sqlite_open(out, c->path, &opts);
}

static void sqlite_teardown(void *ctx)
{
    sqlite_ctx *c = ctx;
    static const char *suffixes[] = {"", "-wal", "-shm", "-journal", "-lock"};
    for (size_t i = 0; i < sizeof(suffixes) / sizeof(suffixes[0]); i++) {
        char p[128];
        snprintf(p, sizeof(p), "%s%s", c->path, suffixes[i]);
        unlink(p);
    }
    rmdir(c->dir);
    sw_free(c);
}

static const contract_backend sqlite_backend = {"sqlite", sqlite_setup, sqlite_open,
                                                sqlite_teardown};

/* ---- etcd: a fresh single-member etcd per test ---- */

#define ETCD_BIN "/usr/bin/etcd"

typedef struct etcd_ctx {
    char dir[64];
    char endpoint[64];
    pid_t pid;
} etcd_ctx;

/* A loopback port nobody listens on now. */
static int free_port(void)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof(a);
    if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof(a)) < 0 ||
        getsockname(fd, (struct sockaddr *)&a, &len) < 0)
        abort();
    close(fd);
    return ntohs(a.sin_port);
}

static void *etcd_setup(void)
{
    etcd_ctx *c = sw_calloc(1, sizeof(*c));
    sw_strlcpy(c->dir, "/tmp/sw-etcd-test-XXXXXX", sizeof(c->dir));
    if (!mkdtemp(c->dir))
        abort();
    int cport = free_port(), pport = free_port();
    char curl[64], purl[64], cluster[96], data[96], log[96];
    snprintf(c->endpoint, sizeof(c->endpoint), "127.0.0.1:%d", cport);
    snprintf(curl, sizeof(curl), "http://127.0.0.1:%d", cport);
    snprintf(purl, sizeof(purl), "http://127.0.0.1:%d", pport);
    snprintf(cluster, sizeof(cluster), "default=%s", purl);
    snprintf(data, sizeof(data), "%s/data", c->dir);
    snprintf(log, sizeof(log), "%s/etcd.log", c->dir);
    c->pid = fork();
    if (c->pid == 0) {
        int fd = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        if (fd >= 0) {
            dup2(fd, 1);
            dup2(fd, 2);
        }
        execl(ETCD_BIN, "etcd", "--data-dir", data, "--listen-client-urls", curl,
              "--advertise-client-urls", curl, "--listen-peer-urls", purl,
              "--initial-advertise-peer-urls", purl, "--initial-cluster", cluster,
              "--max-request-bytes", "4194304", (char *)NULL);
        _exit(127);
    }
    return c;
}

static int etcd_open(void *ctx, sw_store **out)
{
    etcd_ctx *c = ctx;
    sw_etcd_opts o = {.endpoints = c->endpoint};
    int error = SW_EUNAVAILABLE;
    for (int i = 0; i < 200 && error < 0; i++) { /* up to 10 s for etcd to start */
        error = sw_store_etcd_open(out, &o);
        if (error < 0)
            usleep(50 * 1000);
    }
    return error;
}

static void etcd_teardown(void *ctx)
{
    etcd_ctx *c = ctx;
    char cmd[128];
    if (c->pid > 0) {
        kill(c->pid, SIGKILL);
        waitpid(c->pid, NULL, 0);
    }
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", c->dir);
    if (system(cmd) != 0)
        fprintf(stderr, "could not remove %s\n", c->dir);
    sw_free(c);
}

static const contract_backend etcd_backend = {"etcd", etcd_setup, etcd_open, etcd_teardown};

typedef struct fixture {
    void *ctx;
    sw_store *s;
} fixture;

static int fx_setup(void **state)
{
    fixture *f = sw_calloc(1, sizeof(*f));
    f->ctx = g_backend->setup();
    if (g_backend->open(f->ctx, &f->s) != 0) {
        fprintf(stderr, "open %s store: %s\n", g_backend->name, sw_error_msg());
        return -1;
    }
    *state = f;
    return 0;
}

static int fx_teardown(void **state)
{
    fixture *f = *state;
    sw_store_close(f->s);
    g_backend->teardown(f->ctx);
    sw_free(f);
    return 0;
}

/* ---- watch recorder ---- */

typedef struct rec_event {
    int type;
    int64_t rev, create_rev, prev_rev;
    char *key;
    char *value;
    size_t value_len;
    char *prev_value; /* NULL when the event had none */
    size_t prev_len;
} rec_event;

typedef struct recorder {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    rec_event *ev;
    size_t n, cap;
    int64_t last_rev;
    int order_errors; /* events not in strictly increasing revision order */
} recorder;

static void rec_init(recorder *r)
{
    memset(r, 0, sizeof(*r));
    pthread_mutex_init(&r->mu, NULL);
    pthread_cond_init(&r->cv, NULL);
}

static void rec_dispose(recorder *r)
{
    for (size_t i = 0; i < r->n; i++) {
        sw_free(r->ev[i].key);
        sw_free(r->ev[i].value);
        sw_free(r->ev[i].prev_value);
    }
    sw_free(r->ev);
    pthread_mutex_destroy(&r->mu);
    pthread_cond_destroy(&r->cv);
}

static void rec_fn(const sw_store_event *ev, void *payload)
{
    recorder *r = payload;
    pthread_mutex_lock(&r->mu);
    if (ev->rev <= r->last_rev)
        r->order_errors++;
    r->last_rev = ev->rev;
    if (r->n == r->cap) {
        r->cap = r->cap ? r->cap * 2 : 64;
        r->ev = sw_realloc(r->ev, r->cap * sizeof(*r->ev));
    }
    rec_event *e = &r->ev[r->n++];
    *e = (rec_event){.type = ev->type,
                     .rev = ev->rev,
                     .create_rev = ev->create_rev,
                     .prev_rev = ev->prev_rev,
                     .key = sw_strdup(ev->key),
                     .value = sw_strndup(ev->value ? ev->value : "", ev->value_len),
                     .value_len = ev->value_len};
    if (ev->prev_value) {
        e->prev_value = sw_strndup(ev->prev_value, ev->prev_value_len);
        e->prev_len = ev->prev_value_len;
    }
    pthread_cond_broadcast(&r->cv);
    pthread_mutex_unlock(&r->mu);
}

/* Waits (up to 5 s) until the recorder has seen revision rev; returns whether it did. */
static bool rec_wait(recorder *r, int64_t rev)
{
    struct timespec deadline;
    clock_gettime(CLOCK_REALTIME, &deadline);
    deadline.tv_sec += 5;
    pthread_mutex_lock(&r->mu);
    while (r->last_rev < rev) {
        if (pthread_cond_timedwait(&r->cv, &r->mu, &deadline) == ETIMEDOUT)
            break;
    }
    bool ok = r->last_rev >= rev;
    pthread_mutex_unlock(&r->mu);
    return ok;
}

static size_t rec_count(recorder *r)
{
    pthread_mutex_lock(&r->mu);
    size_t n = r->n;
    pthread_mutex_unlock(&r->mu);
    return n;
}

/* ---- helpers ---- */

/* Asserts e returned 0, printing the store's error message otherwise. */
#define assert_ok(e)                                                                               \
    do {                                                                                           \
        int rc_ = (e);                                                                             \
        if (rc_ != 0)                                                                              \
            fprintf(stderr, "%s: %d %s\n", #e, rc_, sw_error_msg());                               \
        assert_int_equal(rc_, 0);                                                                  \
    } while (0)

static int64_t put_new(sw_store *s, const char *key, const char *value)
{
    int64_t rev = 0;
    assert_int_equal(sw_store_create(s, key, value, strlen(value), &rev), 0);
    assert_true(rev > 0);
    return rev;
}

static int64_t put(sw_store *s, const char *key, const char *value, int64_t expected)
{
    int64_t rev = 0;
    assert_int_equal(sw_store_update(s, key, value, strlen(value), expected, &rev), 0);
    assert_true(rev > 0);
    return rev;
}

static int64_t del(sw_store *s, const char *key, int64_t expected)
{
    int64_t rev = 0;
    assert_int_equal(sw_store_delete(s, key, expected, &rev), 0);
    assert_true(rev > 0);
    return rev;
}

static void assert_kv(sw_store *s, const char *key, const char *value, int64_t mod_rev,
                      int64_t create_rev)
{
    sw_kv kv;
    assert_int_equal(sw_store_get(s, key, &kv), 0);
    assert_string_equal(kv.key, key);
    assert_int_equal(kv.value_len, strlen(value));
    assert_string_equal(kv.value, value);
    assert_int_equal(kv.mod_rev, mod_rev);
    assert_int_equal(kv.create_rev, create_rev);
    sw_kv_dispose(&kv);
}

/* Lists and checks the keys, in order, as a comma-separated string ("" for none). */
static void assert_list(sw_store *s, const sw_store_list_opts *o, const char *keys, bool more)
{
    sw_kv_list l;
    char got[512] = "";
    assert_ok(sw_store_list(s, o, &l));
    for (size_t i = 0; i < l.count; i++) {
        size_t n = strlen(got);
        snprintf(got + n, sizeof(got) - n, "%s%s", i ? "," : "", l.items[i].key);
    }
    assert_string_equal(got, keys);
    assert_int_equal(l.more, more);
    if (o->rev)
        assert_int_equal(l.rev, o->rev);
    else
        assert_int_equal(l.rev, sw_store_current_revision(s));
    sw_kv_list_dispose(&l);
}

/* ---- the contract ---- */

static void test_create_get(void **state)
{
    sw_store *s = ((fixture *)*state)->s;
    sw_kv kv;
    int64_t r0 = sw_store_current_revision(s);
    assert_true(r0 == 0 || r0 == 1); /* an empty etcd is at revision 1 */
    int64_t r1 = put_new(s, "/t/a", "v1");
    assert_int_equal(r1, r0 + 1);
    assert_int_equal(sw_store_current_revision(s), r1);
    assert_kv(s, "/t/a", "v1", r1, r1);
    assert_int_equal(sw_store_create(s, "/t/a", "x", 1, NULL), SW_EEXISTS);
    assert_int_equal(sw_error_code(), SW_EEXISTS);
    assert_int_equal(sw_store_current_revision(s), r1);
    assert_int_equal(sw_store_get(s, "/t/missing", &kv), SW_ENOTFOUND);

    /* Arbitrary bytes survive and come back NUL-terminated. */
    static const char bin[] = {'a', '\0', 'b', (char)0xff};
    assert_int_equal(sw_store_create(s, "/t/bin", bin, sizeof(bin), NULL), 0);
    assert_int_equal(sw_store_get(s, "/t/bin", &kv), 0);
    assert_int_equal(kv.value_len, sizeof(bin));
    assert_memory_equal(kv.value, bin, sizeof(bin));
    assert_int_equal(kv.value[sizeof(bin)], '\0');
    sw_kv_dispose(&kv);
    assert_int_equal(sw_store_create(s, "/t/empty", "", 0, NULL), 0);
    assert_int_equal(sw_store_get(s, "/t/empty", &kv), 0);
    assert_int_equal(kv.value_len, 0);
    assert_string_equal(kv.value, "");
    sw_kv_dispose(&kv);
}

static void test_update_cas(void **state)
{
    sw_store *s = ((fixture *)*state)->s;
    int64_t r1 = put_new(s, "/t/a", "v1");
    int64_t r2 = put(s, "/t/a", "v2", r1);
    assert_true(r2 > r1);
    assert_kv(s, "/t/a", "v2", r2, r1);
    int64_t rev = 99;
    assert_int_equal(sw_store_update(s, "/t/a", "v3", 2, r1, &rev), SW_ECONFLICT);
    assert_int_equal(sw_error_code(), SW_ECONFLICT);
    assert_true(sw_error_msg()[0] != '\0');
    assert_kv(s, "/t/a", "v2", r2, r1);
    assert_int_equal(sw_store_current_revision(s), r2);
    int64_t r3 = put(s, "/t/a", "v3", 0); /* 0: unconditional */
    assert_true(r3 > r2);
    assert_kv(s, "/t/a", "v3", r3, r1);
}

static void test_update_delete_not_found(void **state)
{
    sw_store *s = ((fixture *)*state)->s;
    int64_t r1 = put_new(s, "/t/a", "v1");
    assert_int_equal(sw_store_update(s, "/t/b", "x", 1, 0, NULL), SW_ENOTFOUND);
    assert_int_equal(sw_store_update(s, "/t/b", "x", 1, r1, NULL), SW_ENOTFOUND);
    assert_int_equal(sw_store_delete(s, "/t/b", 0, NULL), SW_ENOTFOUND);
    assert_int_equal(sw_error_code(), SW_ENOTFOUND);
    assert_int_equal(sw_store_current_revision(s), r1);
}

static void test_delete(void **state)
{
    sw_store *s = ((fixture *)*state)->s;
    sw_kv kv;
    int64_t r1 = put_new(s, "/t/a", "v1");
    int64_t r2 = put(s, "/t/a", "v2", r1);
    assert_int_equal(sw_store_delete(s, "/t/a", r1, NULL), SW_ECONFLICT);
    assert_kv(s, "/t/a", "v2", r2, r1);
    int64_t r3 = del(s, "/t/a", r2);
    assert_true(r3 > r2);
    assert_int_equal(sw_store_get(s, "/t/a", &kv), SW_ENOTFOUND);
    assert_int_equal(sw_store_update(s, "/t/a", "x", 1, 0, NULL), SW_ENOTFOUND);
    /* Re-creation starts a new life: create_rev is the new revision. */
    int64_t r4 = put_new(s, "/t/a", "again");
    assert_kv(s, "/t/a", "again", r4, r4);
    del(s, "/t/a", 0);
}

static void test_revisions_increase(void **state)
{
    sw_store *s = ((fixture *)*state)->s;
    int64_t last = sw_store_current_revision(s), rev;
    char key[32];
    for (int i = 0; i < 30; i++) {
        snprintf(key, sizeof(key), "/r/%d", i % 7);
        int err = sw_store_create(s, key, "c", 1, &rev);
        if (err == SW_EEXISTS) {
            if (i % 2)
                err = sw_store_update(s, key, "u", 1, 0, &rev);
            else
                err = sw_store_delete(s, key, 0, &rev);
        }
        assert_int_equal(err, 0);
        assert_true(rev > last);
        assert_int_equal(sw_store_current_revision(s), rev);
        last = rev;
        /* Failed writes leave the revision alone. */
        assert_int_equal(sw_store_update(s, "/r/none", "x", 1, 0, NULL), SW_ENOTFOUND);
        assert_int_equal(sw_store_current_revision(s), last);
    }
}

static void test_list(void **state)
{
    sw_store *s = ((fixture *)*state)->s;
    const char *keys[] = {"/l/a/3", "/l/a/1", "/l/ab/1", "/l/a/5", "/l/b/1", "/l/a/2", "/l/a/4"};
    for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
        put_new(s, keys[i], keys[i]);
    sw_store_list_opts o = {.prefix = "/l/a/"};
    assert_list(s, &o, "/l/a/1,/l/a/2,/l/a/3,/l/a/4,/l/a/5", false);
    o.limit = 2;
    assert_list(s, &o, "/l/a/1,/l/a/2", true);
    o.start_after = "/l/a/2";
    assert_list(s, &o, "/l/a/3,/l/a/4", true);
    o.start_after = "/l/a/4";
    assert_list(s, &o, "/l/a/5", false);
    o.start_after = "/l/a/3"; /* exactly the limit left: no more */
    assert_list(s, &o, "/l/a/4,/l/a/5", false);
    o.start_after = "/l/a/5";
    assert_list(s, &o, "", false);
    o = (sw_store_list_opts){.prefix = "/l/a/", .start_after = "/a"}; /* before the range */
    assert_list(s, &o, "/l/a/1,/l/a/2,/l/a/3,/l/a/4,/l/a/5", false);
    o = (sw_store_list_opts){.prefix = ""};
    assert_list(s, &o, "/l/a/1,/l/a/2,/l/a/3,/l/a/4,/l/a/5,/l/ab/1,/l/b/1", false);
    o = (sw_store_list_opts){.prefix = "/l/a"};
    assert_list(s, &o, "/l/a/1,/l/a/2,/l/a/3,/l/a/4,/l/a/5,/l/ab/1", false);
    o = (sw_store_list_opts){.prefix = "/zz/"};
    assert_list(s, &o, "", false);
    o = (sw_store_list_opts){.prefix = "/l/b/", .rev = sw_store_current_revision(s)};
    assert_list(s, &o, "/l/b/1", false);

    sw_kv_list l;
    o = (sw_store_list_opts){.prefix = "/l/ab/"};
    assert_ok(sw_store_list(s, &o, &l));
    assert_int_equal(l.count, 1);
    assert_string_equal(l.items[0].value, "/l/ab/1");
    assert_int_equal(l.items[0].mod_rev, l.items[0].create_rev);
    assert_true(l.items[0].mod_rev > 0);
    sw_kv_list_dispose(&l);
}

static void test_list_old_revision(void **state)
{
    sw_store *s = ((fixture *)*state)->s;
    sw_kv_list l;
    int64_t r1 = put_new(s, "/o/a", "a1");
    int64_t r2 = put(s, "/o/a", "a2", r1);
    int64_t r3 = put_new(s, "/o/b", "b1");
    int64_t r4 = del(s, "/o/a", 0);
    int64_t r5 = put_new(s, "/o/c", "c1");
    sw_store_list_opts o = {.prefix = "/o/", .rev = r1};
    assert_list(s, &o, "/o/a", false);
    o.rev = r2;
    assert_ok(sw_store_list(s, &o, &l));
    assert_int_equal(l.count, 1);
    assert_string_equal(l.items[0].value, "a2");
    assert_int_equal(l.items[0].mod_rev, r2);
    assert_int_equal(l.items[0].create_rev, r1);
    assert_int_equal(l.rev, r2);
    sw_kv_list_dispose(&l);
    o.rev = r3;
    assert_list(s, &o, "/o/a,/o/b", false);
    o.limit = 1;
    assert_list(s, &o, "/o/a", true);
    o.start_after = "/o/a";
    assert_list(s, &o, "/o/b", false);
    o = (sw_store_list_opts){.prefix = "/o/", .rev = r4};
    assert_list(s, &o, "/o/b", false);
    o.rev = r5;
    assert_list(s, &o, "/o/b,/o/c", false);
    o.rev = r5 + 100; /* the future is an error, not a guess */
    assert_true(sw_store_list(s, &o, &l) < 0);
}

static void test_compaction(void **state)
{
    sw_store *s = ((fixture *)*state)->s;
    sw_kv_list l;
    sw_store_watcher *w = NULL;
    recorder rec;
    int64_t r1 = put_new(s, "/c/a", "a1");
    int64_t r2 = put(s, "/c/a", "a2", r1);
    int64_t r3 = put(s, "/c/a", "a3", r2);
    put_new(s, "/c/b", "b1");
    int64_t r5 = del(s, "/c/b", 0);
    int64_t r6 = put_new(s, "/c/c", "c1");
    int64_t r7 = put(s, "/c/a", "a4", r3);
    assert_int_equal(sw_store_compacted_revision(s), 0);
    assert_int_equal(sw_store_compact(s, r6), 0);
    assert_int_equal(sw_store_compacted_revision(s), r6);

    sw_store_list_opts o = {.prefix = "/c/", .rev = r5};
    assert_int_equal(sw_store_list(s, &o, &l), SW_EGONE);
    assert_int_equal(sw_error_code(), SW_EGONE);
    /* The state at the compacted revision itself is intact, including a3, superseded later. */
    o.rev = r6;
    assert_ok(sw_store_list(s, &o, &l));
    assert_int_equal(l.count, 2);
    assert_string_equal(l.items[0].value, "a3");
    assert_int_equal(l.items[0].mod_rev, r3);
    assert_string_equal(l.items[1].key, "/c/c");
    sw_kv_list_dispose(&l);
    o.rev = 0;
    assert_list(s, &o, "/c/a,/c/c", false);
    assert_kv(s, "/c/a", "a4", r7, r1);
    assert_kv(s, "/c/c", "c1", r6, r6);

    rec_init(&rec);
    assert_int_equal(sw_store_watch(s, "/c/", r1, rec_fn, &rec, &w), SW_EGONE);
    assert_null(w);
    assert_int_equal(sw_store_watch(s, "/c/", r6, rec_fn, &rec, &w), 0);
    assert_true(rec_wait(&rec, r7));
    assert_int_equal(rec_count(&rec), 1);
    assert_int_equal(rec.ev[0].rev, r7);
    assert_int_equal(rec.ev[0].type, SW_STORE_UPDATE);
    assert_string_equal(rec.ev[0].value, "a4");
    assert_non_null(rec.ev[0].prev_value); /* the version current at the compacted revision */
    assert_string_equal(rec.ev[0].prev_value, "a3");
    int64_t r8 = put(s, "/c/c", "c2", r6);
    assert_true(r8 > r7);
    assert_true(rec_wait(&rec, r8));
    int64_t other = put_new(s, "/other/x", "x"); /* outside the prefix: covered, not delivered */
    /* cancel says through which revision the watcher was given every event of its prefix: at
     * least the last one delivered, at most the head (SQLite knows the head, etcd the last) */
    int64_t covered = sw_store_watch_cancel(s, w);
    assert_true(covered >= r8 && covered <= other);
    assert_int_equal(rec_count(&rec), 2);
    rec_dispose(&rec);

    assert_int_equal(sw_store_compact(s, r8), 0); /* a second compaction, up to the head */
    assert_int_equal(sw_store_compacted_revision(s), r8);
    assert_kv(s, "/c/a", "a4", r7, r1);
    assert_kv(s, "/c/c", "c2", r8, r6);
}

static void test_watch_history(void **state)
{
    sw_store *s = ((fixture *)*state)->s;
    sw_store_watcher *w = NULL;
    recorder rec;
    int64_t r1 = put_new(s, "/h/a", "1");
    int64_t r2 = put(s, "/h/a", "2", r1);
    int64_t r3 = del(s, "/h/a", r2);
    int64_t r4 = put_new(s, "/h/b", "b");
    rec_init(&rec);
    assert_int_equal(sw_store_watch(s, "", 0, rec_fn, &rec, &w), 0);
    assert_true(rec_wait(&rec, r4));
    assert_int_equal(rec.n, 4);
    assert_int_equal(rec.order_errors, 0);
    rec_event *e = rec.ev;
    assert_int_equal(e[0].type, SW_STORE_CREATE);
    assert_int_equal(e[0].rev, r1);
    assert_int_equal(e[0].create_rev, r1);
    assert_int_equal(e[0].prev_rev, 0);
    assert_string_equal(e[0].key, "/h/a");
    assert_string_equal(e[0].value, "1");
    assert_null(e[0].prev_value);
    assert_int_equal(e[1].type, SW_STORE_UPDATE);
    assert_int_equal(e[1].rev, r2);
    assert_int_equal(e[1].create_rev, r1);
    assert_int_equal(e[1].prev_rev, r1);
    assert_string_equal(e[1].value, "2");
    assert_string_equal(e[1].prev_value, "1");
    assert_int_equal(e[2].type, SW_STORE_DELETE);
    assert_int_equal(e[2].rev, r3);
    assert_int_equal(e[2].prev_rev, r2);
    assert_string_equal(e[2].key, "/h/a");
    assert_string_equal(e[2].value, "2"); /* the deleted value */
    assert_int_equal(e[3].type, SW_STORE_CREATE);
    assert_string_equal(e[3].key, "/h/b");
    sw_store_watch_cancel(s, w);
    rec_dispose(&rec);
}

static void test_watch_from_middle(void **state)
{
    sw_store *s = ((fixture *)*state)->s;
    sw_store_watcher *w = NULL, *w2 = NULL;
    recorder rec, rec2;
    int64_t r1 = put_new(s, "/m/a", "1");
    int64_t r2 = put(s, "/m/a", "2", r1);
    int64_t r3 = put(s, "/m/a", "3", r2);
    int64_t r4 = put_new(s, "/m/b", "b");
    rec_init(&rec);
    rec_init(&rec2);
    assert_int_equal(sw_store_watch(s, "/m/", r2, rec_fn, &rec, &w), 0);
    assert_int_equal(sw_store_watch(s, "/m/", r4, rec_fn, &rec2, &w2), 0);
    int64_t r5 = del(s, "/m/b", r4);
    assert_true(rec_wait(&rec, r5));
    assert_true(rec_wait(&rec2, r5));
    assert_int_equal(rec.n, 3);
    assert_int_equal(rec.ev[0].rev, r3);
    assert_string_equal(rec.ev[0].prev_value, "2");
    assert_int_equal(rec.ev[1].rev, r4);
    assert_int_equal(rec.ev[2].rev, r5);
    assert_int_equal(rec.ev[2].type, SW_STORE_DELETE);
    assert_string_equal(rec.ev[2].value, "b");
    assert_int_equal(rec2.n, 1); /* live only */
    assert_int_equal(rec2.ev[0].rev, r5);
    assert_int_equal(rec.order_errors + rec2.order_errors, 0);
    sw_store_watch_cancel(s, w);
    sw_store_watch_cancel(s, w2);
    rec_dispose(&rec);
    rec_dispose(&rec2);
}

enum { WRITERS = 4, WRITES_PER = 200 };

typedef struct writer_arg {
    sw_store *s;
    int id;
    int64_t revs[WRITES_PER];
    int errors;
} writer_arg;

/* Cycles create, update, delete over a few keys of its own. */
static void *writer_main(void *p)
{
    writer_arg *a = p;
    char key[48];
    for (int i = 0; i < WRITES_PER; i++) {
        snprintf(key, sizeof(key), "/w/%d/%d", a->id, (i / 3) % 5);
        int err;
        if (i % 3 == 0)
            err = sw_store_create(a->s, key, "c", 1, &a->revs[i]);
        else if (i % 3 == 1)
            err = sw_store_update(a->s, key, "u", 1, 0, &a->revs[i]);
        else
            err = sw_store_delete(a->s, key, 0, &a->revs[i]);
        if (err != 0)
            a->errors++;
    }
    return NULL;
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

static void test_watch_live_concurrent(void **state)
{
    sw_store *s = ((fixture *)*state)->s;
    sw_store_watcher *w = NULL;
    pthread_t th[WRITERS];
    writer_arg *args = sw_calloc(WRITERS, sizeof(*args));
    recorder rec;
    rec_init(&rec);
    int64_t start = put_new(s, "/other", "x"); /* outside the watched prefix */
    for (int i = 0; i < WRITERS; i++) {
        args[i] = (writer_arg){.s = s, .id = i};
        assert_int_equal(pthread_create(&th[i], NULL, writer_main, &args[i]), 0);
    }
    /* Register while the writers are busy: history and live events overlap. */
    while (sw_store_current_revision(s) < start + WRITERS * WRITES_PER / 4)
        usleep(200);
    assert_int_equal(sw_store_watch(s, "/w/", start, rec_fn, &rec, &w), 0);
    for (int i = 0; i < WRITERS; i++)
        pthread_join(th[i], NULL);
    int64_t *all = sw_calloc(WRITERS * WRITES_PER, sizeof(int64_t));
    for (int i = 0; i < WRITERS; i++) {
        assert_int_equal(args[i].errors, 0);
        memcpy(all + i * WRITES_PER, args[i].revs, sizeof(args[i].revs));
    }
    qsort(all, WRITERS * WRITES_PER, sizeof(int64_t), cmp_i64);
    assert_true(rec_wait(&rec, all[WRITERS * WRITES_PER - 1]));
    assert_int_equal(rec_count(&rec), WRITERS * WRITES_PER);
    assert_int_equal(rec.order_errors, 0);
    for (size_t i = 0; i < WRITERS * WRITES_PER; i++)
        assert_int_equal(rec.ev[i].rev, all[i]); /* every write exactly once, in order */
    sw_store_watch_cancel(s, w);
    sw_free(all);
    sw_free(args);
    rec_dispose(&rec);
}

enum { RACERS = 8, ATTEMPTS = 40 };

typedef struct racer_arg {
    sw_store *s;
    int wins, conflicts, errors;
} racer_arg;

/* Read-increment-CAS on one counter key. */
static void *racer_main(void *p)
{
    racer_arg *a = p;
    for (int i = 0; i < ATTEMPTS; i++) {
        sw_kv kv;
        int64_t n;
        char buf[32];
        if (sw_store_get(a->s, "/g/counter", &kv) != 0 || sw_str_to_i64(kv.value, &n) != 0) {
            a->errors++;
            continue;
        }
        int len = snprintf(buf, sizeof(buf), "%lld", (long long)(n + 1));
        int err = sw_store_update(a->s, "/g/counter", buf, (size_t)len, kv.mod_rev, NULL);
        sw_kv_dispose(&kv);
        if (err == 0)
            a->wins++;
        else if (err == SW_ECONFLICT)
            a->conflicts++;
        else
            a->errors++;
    }
    return NULL;
}

static void test_group_commit_cas(void **state)
{
    sw_store *s = ((fixture *)*state)->s;
    sw_store_watcher *w = NULL;
    pthread_t th[RACERS];
    racer_arg args[RACERS];
    recorder rec;
    rec_init(&rec);
    int64_t r0 = put_new(s, "/g/counter", "0");
    assert_int_equal(sw_store_watch(s, "/g/", r0, rec_fn, &rec, &w), 0);
    for (int i = 0; i < RACERS; i++) {
        args[i] = (racer_arg){.s = s};
        assert_int_equal(pthread_create(&th[i], NULL, racer_main, &args[i]), 0);
    }
    int wins = 0;
    for (int i = 0; i < RACERS; i++) {
        pthread_join(th[i], NULL);
        assert_int_equal(args[i].errors, 0);
        assert_int_equal(args[i].wins + args[i].conflicts, ATTEMPTS);
        wins += args[i].wins;
    }
    assert_true(wins > 0);
    int64_t final_rev = sw_store_current_revision(s);
    assert_int_equal(final_rev - r0, wins); /* one revision per successful CAS, none lost */
    char want[32];
    snprintf(want, sizeof(want), "%d", wins);
    assert_kv(s, "/g/counter", want, final_rev, r0);
    /* The watch sees one chain: each update replaces exactly the previous one. */
    assert_true(rec_wait(&rec, final_rev));
    assert_int_equal(rec_count(&rec), (size_t)wins);
    int64_t prev = r0;
    for (size_t i = 0; i < rec.n; i++) {
        int64_t v, pv;
        assert_int_equal(rec.ev[i].prev_rev, prev);
        assert_int_equal(sw_str_to_i64(rec.ev[i].value, &v), 0);
        assert_int_equal(sw_str_to_i64(rec.ev[i].prev_value, &pv), 0);
        assert_int_equal(v, pv + 1);
        prev = rec.ev[i].rev;
    }
    sw_store_watch_cancel(s, w);
    rec_dispose(&rec);
}

static void test_reopen(void **state)
{
    fixture *f = *state;
    int64_t r1 = put_new(f->s, "/p/a", "a1");
    int64_t r2 = put(f->s, "/p/a", "a2", r1);
    put_new(f->s, "/p/x", "x");
    int64_t r4 = del(f->s, "/p/x", 0);
    /* The newest log entries are a tombstone and its version; compacting drops both, and the
     * revision must still not go backwards after reopening. */
    assert_int_equal(sw_store_compact(f->s, r4), 0);
    sw_store_close(f->s);
    f->s = NULL;
    assert_int_equal(g_backend->open(f->ctx, &f->s), 0);
    assert_int_equal(sw_store_current_revision(f->s), r4);
    assert_int_equal(sw_store_compacted_revision(f->s), r4);
    assert_kv(f->s, "/p/a", "a2", r2, r1);
    sw_kv kv;
    assert_int_equal(sw_store_get(f->s, "/p/x", &kv), SW_ENOTFOUND);
    int64_t r5 = put_new(f->s, "/p/b", "b");
    assert_true(r5 > r4);
    sw_store_list_opts o = {.prefix = "/p/", .rev = r4};
    assert_list(f->s, &o, "/p/a", false);
    o.rev = 0;
    assert_list(f->s, &o, "/p/a,/p/b", false);
}

static void test_watch_prefix_isolation(void **state)
{
    sw_store *s = ((fixture *)*state)->s;
    sw_store_watcher *wa = NULL, *wall = NULL;
    recorder ra, rall;
    rec_init(&ra);
    rec_init(&rall);
    int64_t start = sw_store_current_revision(s);
    assert_int_equal(sw_store_watch(s, "/p/a/", start, rec_fn, &ra, &wa), 0);
    assert_int_equal(sw_store_watch(s, "/p/", start, rec_fn, &rall, &wall), 0);
    put_new(s, "/p/a/1", "1");
    put_new(s, "/p/ab/1", "x");
    put_new(s, "/p/b/1", "x");
    put_new(s, "/q/a/1", "x");
    put_new(s, "/p/a/2", "2");
    int64_t last = put_new(s, "/p/a/3", "3");
    assert_true(rec_wait(&ra, last));
    assert_true(rec_wait(&rall, last));
    assert_int_equal(rec_count(&ra), 3);
    for (size_t i = 0; i < ra.n; i++)
        assert_true(sw_str_prefix(ra.ev[i].key, "/p/a/"));
    assert_int_equal(rec_count(&rall), 5);
    /* After cancel returns, the callback never runs again. */
    sw_store_watch_cancel(s, wa);
    int64_t more = put_new(s, "/p/a/4", "4");
    assert_true(rec_wait(&rall, more));
    assert_int_equal(rec_count(&ra), 3);
    sw_store_watch_cancel(s, wall);
    rec_dispose(&ra);
    rec_dispose(&rall);
}

static void test_limits(void **state)
{
    sw_store *s = ((fixture *)*state)->s;
    char *key = sw_malloc(1100);
    memset(key, 'k', 1099);
    key[0] = '/';
    key[1099] = '\0';
    assert_int_equal(sw_store_create(s, key, "x", 1, NULL), SW_ELIMIT);
    key[1024] = '\0';
    assert_int_equal(sw_store_create(s, key, "x", 1, NULL), 0);
    size_t big = 4u * 1024 * 1024;
    char *v = sw_calloc(1, big);
    assert_int_equal(sw_store_create(s, "/big", v, big, NULL), SW_ELIMIT);
    assert_int_equal(sw_store_update(s, key, v, big, 0, NULL), SW_ELIMIT);
    int64_t r = 0;
    assert_int_equal(sw_store_create(s, "/big", v, 3u * 1024 * 1024, &r), 0);
    sw_kv kv;
    assert_int_equal(sw_store_get(s, "/big", &kv), 0);
    assert_int_equal(kv.value_len, 3u * 1024 * 1024);
    sw_kv_dispose(&kv);
    sw_free(v);
    sw_free(key);
}

/* ---- SQLite only ---- */

typedef struct sync_arg {
    sw_store *s;
    int id;
    int errors;
} sync_arg;

static void *sync_writer(void *p)
{
    sync_arg *a = p;
    char key[32];
    for (int i = 0; i < 10; i++) {
        snprintf(key, sizeof(key), "/s/%d/%d", a->id, i);
        if (sw_store_create(a->s, key, "v", 1, NULL) != 0)
            a->errors++;
    }
    return NULL;
}

static void test_sqlite_sync_full(void **state)
{
    sqlite_ctx *c = sqlite_setup_mode(true);
    sw_store *s = NULL;
    pthread_t th[4];
    sync_arg args[4];
    assert_int_equal(sqlite_open(c, &s), 0);
    for (int i = 0; i < 4; i++) {
        args[i] = (sync_arg){.s = s, .id = i};
        assert_int_equal(pthread_create(&th[i], NULL, sync_writer, &args[i]), 0);
    }
    for (int i = 0; i < 4; i++) {
        pthread_join(th[i], NULL);
        assert_int_equal(args[i].errors, 0);
    }
    assert_int_equal(sw_store_current_revision(s), 40);
    sw_store_close(s);
    assert_int_equal(sqlite_open(c, &s), 0);
    sw_kv_list l;
    sw_store_list_opts o = {.prefix = "/s/"};
    assert_ok(sw_store_list(s, &o, &l));
    assert_int_equal(l.count, 40);
    assert_int_equal(l.rev, 40);
    sw_kv_list_dispose(&l);
    sw_store_close(s);
    sqlite_teardown(c);
}

/* Compaction physically removes superseded rows across several batches and keeps the rest. */
static void test_sqlite_compaction_rows(void **state)
{
    sqlite_ctx *c = sqlite_setup_mode(false);
    sw_store *s = NULL;
    sqlite3 *db = NULL;
    sqlite3_stmt *st = NULL;
    assert_int_equal(sqlite_open(c, &s), 0);
    int64_t r1 = put_new(s, "/k/a", "0"), r2 = put_new(s, "/k/b", "0");
    int64_t ra = r1, rb = r2, rev = 0;
    char v[16];
    for (int i = 1; i <= 1100; i++) {
        snprintf(v, sizeof(v), "%d", i);
        ra = put(s, "/k/a", v, ra);
        rb = put(s, "/k/b", v, rb);
    }
    int64_t rd = put_new(s, "/k/gone", "x");
    del(s, "/k/gone", rd);
    assert_int_equal(sw_store_update(s, "/k/a", "last", 4, ra, &rev), 0);
    assert_int_equal(sw_store_compact(s, rev - 1), 0); /* everything but the last write */
    /* A second process may not open the same database. */
    sw_store *other = NULL;
    assert_int_equal(sqlite_open(c, &other), SW_EUNAVAILABLE);
    assert_int_equal(sqlite3_open(c->path, &db), SQLITE_OK);
    assert_int_equal(sqlite3_prepare_v2(db, "SELECT count(*) FROM log", -1, &st, NULL), SQLITE_OK);
    assert_int_equal(sqlite3_step(st), SQLITE_ROW);
    assert_int_equal(sqlite3_column_int64(st, 0), 3); /* a@ra, b@rb, a@rev */
    sqlite3_finalize(st);
    sqlite3_close(db);
    sw_store_list_opts o = {.prefix = "/k/", .rev = rev - 1};
    assert_list(s, &o, "/k/a,/k/b", false);
    assert_kv(s, "/k/a", "last", rev, r1);
    assert_kv(s, "/k/b", "1100", rb, r2);
    sw_store_close(s);
    sqlite_teardown(c);
}

static void test_sqlite_bad_path(void **state)
{
    sw_store *s = NULL;
    assert_int_equal(sw_store_sqlite_open(&s, "/nonexistent-dir/x/store.db", NULL), SW_ERROR);
    assert_null(s);
    assert_true(strstr(sw_error_msg(), "/nonexistent-dir/") != NULL);
}

/* get_recent: the latest version this handle saw, or (no cache, or not kept) a read. With one
 * writer it is always the current one; a deleted key is not handed out from a cache. */
static void test_get_recent(void **state)
{
    sw_store *s = ((fixture *)*state)->s;
    sw_kv kv;
    bool verified = false;
    int64_t r1 = put_new(s, "/t/a", "v1");
    assert_int_equal(sw_store_get_recent(s, "/t/a", &kv, &verified), 0);
    assert_string_equal(kv.value, "v1");
    assert_int_equal(kv.mod_rev, r1);
    assert_int_equal(kv.create_rev, r1);
    sw_kv_dispose(&kv);
    int64_t r2 = put(s, "/t/a", "v2", r1);
    assert_int_equal(sw_store_get_recent(s, "/t/a", &kv, &verified), 0);
    assert_string_equal(kv.value, "v2");
    assert_int_equal(kv.mod_rev, r2);
    assert_int_equal(kv.create_rev, r1); /* kept from the create: an update's reply lacks it */
    sw_kv_dispose(&kv);
    del(s, "/t/a", r2);
    assert_int_equal(sw_store_get_recent(s, "/t/a", &kv, &verified), SW_ENOTFOUND);
    assert_true(verified);
    assert_int_equal(sw_store_get_recent(s, "/t/never", &kv, &verified), SW_ENOTFOUND);
    assert_true(verified);
}

/* etcd, two handles as two servers: the recent copy goes stale when the other writes; a compare
 * on it fails and shows the current version, which is then the recent copy; a watch on the
 * handle refreshes it without a compare failing. */
static void test_etcd_recent_stale(void **state)
{
    fixture *f = *state;
    sw_store *a = f->s, *b = NULL;
    sw_kv kv;
    bool verified = true;
    assert_int_equal(g_backend->open(f->ctx, &b), 0);
    int64_t r1 = put_new(a, "/t/a", "v1");
    int64_t r2 = put(b, "/t/a", "v2", r1);
    assert_int_equal(sw_store_get_recent(a, "/t/a", &kv, &verified), 0);
    assert_false(verified);
    assert_string_equal(kv.value, "v1"); /* stale: b wrote since */
    assert_int_equal(sw_store_update(a, "/t/a", "v3", 2, kv.mod_rev, NULL), SW_ECONFLICT);
    sw_kv_dispose(&kv);
    assert_int_equal(sw_store_get_recent(a, "/t/a", &kv, &verified), 0);
    assert_string_equal(kv.value, "v2"); /* what the failed compare showed */
    assert_int_equal(kv.mod_rev, r2);
    assert_int_equal(kv.create_rev, r1);
    sw_kv_dispose(&kv);

    /* With a watch on a, b's writes reach a's copy. */
    recorder rec;
    rec_init(&rec);
    sw_store_watcher *w = NULL;
    assert_int_equal(sw_store_watch(a, "/", r2, rec_fn, &rec, &w), 0);
    int64_t r3 = put(b, "/t/a", "v3", r2);
    for (int i = 0; i < 500; i++) {
        assert_int_equal(sw_store_get_recent(a, "/t/a", &kv, &verified), 0);
        bool fresh = kv.mod_rev == r3;
        if (fresh)
            assert_string_equal(kv.value, "v3");
        sw_kv_dispose(&kv);
        if (fresh)
            break;
        usleep(10 * 1000);
        assert_true(i < 499);
    }
    del(b, "/t/a", r3);
    for (int i = 0; i < 500; i++) {
        int error = sw_store_get_recent(a, "/t/a", &kv, &verified);
        if (error == SW_ENOTFOUND)
            break;
        sw_kv_dispose(&kv);
        usleep(10 * 1000);
        assert_true(i < 499);
    }
    sw_store_watch_cancel(a, w);
    rec_dispose(&rec);
    sw_store_close(b);
}

#define CONTRACT(fn) cmocka_unit_test_setup_teardown(fn, fx_setup, fx_teardown)

static int run_contract(const contract_backend *b)
{
    const struct CMUnitTest tests[] = {
        CONTRACT(test_create_get),
        CONTRACT(test_update_cas),
        CONTRACT(test_update_delete_not_found),
        CONTRACT(test_delete),
        CONTRACT(test_revisions_increase),
        CONTRACT(test_list),
        CONTRACT(test_list_old_revision),
        CONTRACT(test_compaction),
        CONTRACT(test_watch_history),
        CONTRACT(test_watch_from_middle),
        CONTRACT(test_watch_live_concurrent),
        CONTRACT(test_group_commit_cas),
        CONTRACT(test_reopen),
        CONTRACT(test_watch_prefix_isolation),
        CONTRACT(test_limits),
        CONTRACT(test_get_recent),
    };
    g_backend = b;
    return cmocka_run_group_tests_name(b->name, tests, NULL, NULL);
}

int main(void)
{
    const struct CMUnitTest sqlite_tests[] = {
        cmocka_unit_test(test_sqlite_sync_full),
        cmocka_unit_test(test_sqlite_compaction_rows),
        cmocka_unit_test(test_sqlite_bad_path),
    };
    int failed = run_contract(&sqlite_backend);
    failed += cmocka_run_group_tests_name("sqlite", sqlite_tests, NULL, NULL);
    failed += run_contract(&etcd_backend);
    const struct CMUnitTest etcd_tests[] = {
        CONTRACT(test_etcd_recent_stale),
    };
    failed += cmocka_run_group_tests_name("etcd", etcd_tests, NULL, NULL);
    return failed;
}
