/* store/sqlite: the SQLite backend of store.h, an append-only revision log in the style of kine.
 * Every write appends one row to `log` (its rowid is the global revision); `kv` points at the
 * newest live row of each key. Writes go through one connection with leader/follower group
 * commit; reads use a small pool of WAL read connections; watches replay the log, then receive
 * live events from the committing leader. Design note: docs/internals/store.md. */
#include "store/store.h"

#include "util/alloc.h"
#include "util/error.h"
#include "util/log.h"
#include "util/str.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <semaphore.h>
#include <sqlite3.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#define SQ_MAX_KEY 1024                                     /* bytes, like etcd's practical limit */
#define SQ_MAX_VALUE ((size_t)3 * 1024 * 1024 + 512 * 1024) /* 3 MiB objects plus slack */
#define SQ_READERS 4                                        /* read connections in the pool */
#define SQ_BUSY_MS 10000
#define SQ_COMPACT_BATCH 1000 /* revisions per compaction transaction */
#define SQ_MSG 256
#define SQ_WAL_LIMIT (64 * 1024 * 1024)
/* Commits between checkpoints run on the committing writer: 4000 pages (16 MiB of WAL) instead
 * of SQLite's 1000 makes them a quarter as frequent (+2-4% writes/s at 16 in flight). */
#define SQ_WAL_CHECKPOINT_PAGES 4000

typedef struct sq_reader {
    sqlite3 *db;
    sqlite3_stmt *get;     /* latest version of one key */
    sqlite3_stmt *state;   /* head revision and compacted revision */
    sqlite3_stmt *begin;   /* BEGIN */
    sqlite3_stmt *end;     /* ROLLBACK (a read transaction has nothing to keep) */
    sqlite3_stmt *list[8]; /* list queries by shape (sq_list_shape), prepared on first use */
} sq_reader;

/* One pending write, owned by the calling thread (on its stack) until its semaphore is posted. */
typedef struct sq_op {
    int type; /* SW_STORE_CREATE/UPDATE/DELETE */
    const char *key;
    const char *value; /* caller's bytes (create/update) */
    size_t len;
    int64_t expected; /* CAS revision, 0 for any */
    int result;       /* 0 or a negative SW_E* code, set by the leader */
    char msg[SQ_MSG]; /* error message, copied into the caller's thread-local error */
    int64_t rev, create_rev, prev_rev;
    char *prev_value; /* owned copy of the replaced value (delete, or update with watchers) */
    size_t prev_len;
    char *ev_value; /* owned NUL-terminated copy of value for live events (watchers only) */
    bool lead;      /* handed leadership: run the queue instead of waiting for a result */
    sem_t wake;     /* posted once: the op is done, or it leads the next batch */
    struct sq_op *next;
} sq_op;

struct sw_store_watcher {
    char *prefix;
    size_t prefix_len;
    sw_store_event_fn fn;
    void *payload;
    int64_t last_rev; /* newest revision delivered (or skipped as before the start) */
    struct sw_store_watcher *next;
};

typedef struct sq_store {
    sw_store base;
    int lock_fd;  /* flock'd <path>-lock: one process owns the database (revisions live here) */
    sqlite3 *wdb; /* the one write connection; used only under write_mu */
    sqlite3_stmt *w_cur, *w_ins, *w_kv_put, *w_kv_del, *w_begin, *w_commit, *w_get;
    pthread_mutex_t write_mu; /* owns wdb, the watcher list and advancing rev */
    pthread_mutex_t queue_mu; /* owns queue and leader */
    sq_op *queue_head, *queue_tail;
    bool leader; /* a leader is running a batch */
    pthread_mutex_t pool_mu;
    pthread_cond_t pool_cv;
    sq_reader readers[SQ_READERS];
    int free_idx[SQ_READERS];
    int nfree;
    pthread_mutex_t compact_mu; /* serializes compactions */
    sw_store_watcher *watchers; /* under write_mu */
    _Atomic int64_t rev;        /* newest committed revision */
    _Atomic int leader_waiting; /* a batch is queued on write_mu: gets leave the writer alone */
    _Atomic bool broken; /* a COMMIT failed: its outcome is unknown until a restart recovers */
    _Atomic bool disk_failing; /* the last batch failed on the disk (full, I/O error) */
    _Atomic int64_t compact_rev;
    int64_t compact_done; /* physical compaction progress (under compact_mu) */
} sq_store;

static const char SQ_SCHEMA[] =
    /* Each commit writes as few pages as it can: no AUTOINCREMENT (its sqlite_sequence row is
     * one more page per commit; revisions come from our own counter), no index on kv.rev
     * (compaction, the only reader, can afford a scan). */
    "CREATE TABLE IF NOT EXISTS log(rev INTEGER PRIMARY KEY, key TEXT NOT NULL,"
    " create_rev INTEGER NOT NULL, prev_rev INTEGER NOT NULL, deleted INTEGER NOT NULL, value "
    "BLOB);"
    "CREATE INDEX IF NOT EXISTS log_key_rev ON log(key, rev);"
    "CREATE TABLE IF NOT EXISTS kv(key TEXT PRIMARY KEY, rev INTEGER NOT NULL) WITHOUT ROWID;"
    "DROP INDEX IF EXISTS kv_rev;"
    "CREATE TABLE IF NOT EXISTS meta(name TEXT PRIMARY KEY, value INTEGER NOT NULL) WITHOUT ROWID;"
    "INSERT OR IGNORE INTO meta(name, value) VALUES ('schema', 1), ('compact_rev', 0),"
    " ('compact_done', 0);";

/* The head revision is the newest log row, or the compacted revision when compaction removed
 * the newest rows (a deleted key's tombstone at the head): never lower than any revision given
 * out. */
static const char SQ_STATE_SQL[] = "SELECT MAX(COALESCE((SELECT MAX(rev) FROM log), 0),"
                                   " (SELECT value FROM meta WHERE name = 'compact_rev')),"
                                   " (SELECT value FROM meta WHERE name = 'compact_rev'),"
                                   " (SELECT value FROM meta WHERE name = 'compact_done')";

static const char SQ_GET_SQL[] = "SELECT l.value, l.rev, l.create_rev FROM kv JOIN log l"
                                 " ON l.rev = kv.rev WHERE kv.key = ?1";

/* ---- small helpers ---- */

static sq_store *sq_of(sw_store *base)
{
    return (sq_store *)base;
}

static int sq_fail(sqlite3 *db, const char *what)
{
    return sw_error_set(SW_ERROR, "sqlite: %s: %s (%d)", what, sqlite3_errmsg(db),
                        sqlite3_extended_errcode(db));
}

static int sq_exec(sqlite3 *db, const char *sql, const char *what)
{
    if (sqlite3_exec(db, sql, NULL, NULL, NULL) != SQLITE_OK)
        return sq_fail(db, what);
    return 0;
}

static int sq_prepare(sqlite3 *db, const char *sql, sqlite3_stmt **out)
{
    if (sqlite3_prepare_v3(db, sql, -1, SQLITE_PREPARE_PERSISTENT, out, NULL) != SQLITE_OK)
        return sq_fail(db, "prepare");
    return 0;
}

/* Steps a statement that returns no row, then resets it. */
static int sq_step_done(sqlite3 *db, sqlite3_stmt *st, const char *what)
{
    int rc = sqlite3_step(st);
    int err = rc == SQLITE_DONE ? 0 : sq_fail(db, what);
    sqlite3_reset(st);
    sqlite3_clear_bindings(st);
    return err;
}

/* Ends a read or write transaction left open by an error path. */
static void sq_end_txn(sqlite3 *db)
{
    if (!sqlite3_get_autocommit(db))
        sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
}

/* A NUL-terminated sw_malloc'd copy of n bytes (p may be NULL when n is 0). */
static char *sq_dup_bytes(const void *p, size_t n)
{
    size_t size;
    if (!sw_size_add(&size, n, 1))
        abort();
    char *c = sw_malloc(size);
    if (n)
        memcpy(c, p, n);
    c[n] = '\0';
    return c;
}

/* Column col as bytes; never NULL (SQLite returns NULL for empty blobs and NULL values). */
static const char *sq_col_bytes(sqlite3_stmt *st, int col, size_t *len)
{
    const char *p = (const char *)sqlite3_column_blob(st, col);
    *len = (size_t)sqlite3_column_bytes(st, col);
    return p ? p : "";
}

static int sq_check_key(const char *key)
{
    if (!key || !key[0])
        return sw_error_set(SW_EINVALID, "store: empty key");
    if (strnlen(key, SQ_MAX_KEY + 1) > SQ_MAX_KEY)
        return sw_error_set(SW_ELIMIT, "store: key longer than %d bytes", SQ_MAX_KEY);
    return 0;
}

static int sq_check_value(const char *value, size_t len)
{
    if (len > SQ_MAX_VALUE)
        return sw_error_set(SW_ELIMIT, "store: value of %zu bytes exceeds the limit of %zu", len,
                            SQ_MAX_VALUE);
    if (len && !value)
        return sw_error_set(SW_EINVALID, "store: NULL value with length %zu", len);
    return 0;
}

/* The smallest string greater than every string starting with prefix, or NULL if none
 * (empty prefix or all 0xFF bytes). Caller frees. */
static char *sq_prefix_end(const char *prefix)
{
    size_t n = strlen(prefix);
    while (n > 0 && (unsigned char)prefix[n - 1] == 0xFF)
        n--;
    if (n == 0)
        return NULL;
    char *end = sw_strndup(prefix, n);
    end[n - 1] = (char)((unsigned char)end[n - 1] + 1);
    return end;
}

static bool sq_has_prefix(const char *key, const char *prefix, size_t prefix_len)
{
    return strncmp(key, prefix, prefix_len) == 0;
}

/* ---- connections ---- */

/* Takes an exclusive flock on <path>-lock so a second process cannot append revisions that this
 * one does not know about. The lock goes away with the process, also on kill -9. */
static int sq_lock_path(const char *path, int *fd_out)
{
    char lock[4096];
    int n = snprintf(lock, sizeof(lock), "%s-lock", path);
    if (n < 0 || (size_t)n >= sizeof(lock))
        return sw_error_set(SW_EINVALID, "store: database path too long");
    int fd = open(lock, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (fd < 0)
        return sw_error_set(SW_ERROR, "store: open %s: %s", lock, sw_strerror(errno));
    if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
        int e = errno;
        close(fd);
        if (e == EWOULDBLOCK)
            return sw_error_set(SW_EUNAVAILABLE, "store: %s is in use by another process", path);
        return sw_error_set(SW_ERROR, "store: lock %s: %s", lock, sw_strerror(e));
    }
    *fd_out = fd;
    return 0;
}

/* The database, its WAL and shared-memory index hold every Secret: 0600 whatever the umask.
 * SQLite gives the WAL and -shm the database file's mode, so the database is created here
 * (an empty file is a new database) and files of an older, laxer run are narrowed. */
static int sq_private_files(const char *path)
{
    static const char *const suffixes[] = {"", "-wal", "-shm"};
    char f[4096];
    for (size_t i = 0; i < sizeof(suffixes) / sizeof(suffixes[0]); i++) {
        int n = snprintf(f, sizeof(f), "%s%s", path, suffixes[i]);
        if (n < 0 || (size_t)n >= sizeof(f))
            return sw_error_set(SW_EINVALID, "store: database path too long");
        int fd = open(f, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | (i == 0 ? O_CREAT : 0), 0600);
        if (fd < 0 && errno == ENOENT)
            continue;
        if (fd < 0 || fchmod(fd, 0600) < 0) {
            int e = errno;
            if (fd >= 0)
                close(fd);
            return sw_error_set(SW_ERROR, "store: %s: %s", f, sw_strerror(e));
        }
        close(fd);
    }
    return 0;
}

static int sq_open_conn(const char *path, sqlite3 **out)
{
    int flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX;
    int rc = sqlite3_open_v2(path, out, flags, "unix-excl");
    if (rc != SQLITE_OK) {
        int err = sw_error_set(SW_ERROR, "sqlite: open %s: %s", path,
                               *out ? sqlite3_errmsg(*out) : sqlite3_errstr(rc));
        sqlite3_close(*out);
        *out = NULL;
        return err;
    }
    sqlite3_extended_result_codes(*out, 1);
    sqlite3_busy_timeout(*out, SQ_BUSY_MS);
    return 0;
}

static int sq_check_wal(sqlite3 *db)
{
    sqlite3_stmt *st = NULL;
    int err = 0;
    if (sqlite3_prepare_v2(db, "PRAGMA journal_mode=WAL", -1, &st, NULL) != SQLITE_OK)
        return sq_fail(db, "journal_mode");
    if (sqlite3_step(st) != SQLITE_ROW) {
        err = sq_fail(db, "journal_mode");
        goto done;
    }
    const char *mode = (const char *)sqlite3_column_text(st, 0);
    if (!mode || strcmp(mode, "wal") != 0)
        err = sw_error_set(SW_ERROR, "sqlite: cannot enable WAL mode (got %s)", mode ? mode : "?");
done:
    sqlite3_finalize(st);
    return err;
}

/* Reads the head revision, compacted revision and compaction progress in db's current view. */
static int sq_read_state(sqlite3 *db, sqlite3_stmt *st, int64_t *head, int64_t *crev,
                         int64_t *cdone)
{
    int err = 0;
    if (sqlite3_step(st) != SQLITE_ROW) {
        err = sq_fail(db, "read state");
        goto done;
    }
    *head = sqlite3_column_int64(st, 0);
    *crev = sqlite3_column_int64(st, 1);
    if (cdone)
        *cdone = sqlite3_column_int64(st, 2);
done:
    sqlite3_reset(st);
    return err;
}

static int sq_writer_statements(sq_store *s)
{
    static const struct {
        size_t off;
        const char *sql;
    } stmts[] = {
        {offsetof(sq_store, w_cur), "SELECT l.rev, l.create_rev, l.value FROM kv JOIN log l"
                                    " ON l.rev = kv.rev WHERE kv.key = ?1"},
        {offsetof(sq_store, w_ins),
         "INSERT INTO log(rev, key, create_rev, prev_rev, deleted, value)"
         " VALUES (?1, ?2, ?3, ?4, ?5, ?6)"},
        {offsetof(sq_store, w_kv_put), "INSERT OR REPLACE INTO kv(key, rev) VALUES (?1, ?2)"},
        {offsetof(sq_store, w_kv_del), "DELETE FROM kv WHERE key = ?1"},
        {offsetof(sq_store, w_get), SQ_GET_SQL},
        {offsetof(sq_store, w_begin), "BEGIN IMMEDIATE"},
        {offsetof(sq_store, w_commit), "COMMIT"},
    };
    for (size_t i = 0; i < sizeof(stmts) / sizeof(stmts[0]); i++) {
        sqlite3_stmt **slot = (sqlite3_stmt **)((char *)s + stmts[i].off);
        int err = sq_prepare(s->wdb, stmts[i].sql, slot);
        if (err < 0)
            return err;
    }
    return 0;
}

static int sq_setup_writer(sq_store *s, const char *path, const sw_sqlite_opts *opts)
{
    char pragmas[160];
    sqlite3_stmt *st = NULL;
    int64_t crev = 0;
    int err = sq_open_conn(path, &s->wdb);
    if (err < 0)
        goto done;
    err = sq_check_wal(s->wdb);
    if (err < 0)
        goto done;
    snprintf(pragmas, sizeof(pragmas),
             "PRAGMA synchronous=%s; PRAGMA journal_size_limit=%d; PRAGMA wal_autocheckpoint=%d;",
             opts && opts->sync_full ? "FULL" : "NORMAL", SQ_WAL_LIMIT, SQ_WAL_CHECKPOINT_PAGES);
    err = sq_exec(s->wdb, pragmas, "pragmas");
    if (err < 0)
        goto done;
    err = sq_exec(s->wdb, "BEGIN IMMEDIATE", "schema");
    if (err == 0)
        err = sq_exec(s->wdb, SQ_SCHEMA, "schema");
    if (err == 0)
        err = sq_exec(s->wdb, "COMMIT", "schema");
    if (err < 0)
        goto done;
    err = sq_prepare(s->wdb, SQ_STATE_SQL, &st);
    if (err < 0)
        goto done;
    int64_t head = 0;
    err = sq_read_state(s->wdb, st, &head, &crev, &s->compact_done);
    if (err < 0)
        goto done;
    atomic_store(&s->rev, head);
    atomic_store(&s->compact_rev, crev);
    err = sq_writer_statements(s);
done:
    sqlite3_finalize(st);
    if (s->wdb)
        sq_end_txn(s->wdb);
    return err;
}

static int sq_setup_reader(sq_reader *r, const char *path)
{
    int err = sq_open_conn(path, &r->db);
    if (err == 0)
        err = sq_exec(r->db, "PRAGMA query_only=1", "query_only");
    if (err == 0)
        err = sq_prepare(r->db, SQ_GET_SQL, &r->get);
    if (err == 0)
        err = sq_prepare(r->db, SQ_STATE_SQL, &r->state);
    if (err == 0)
        err = sq_prepare(r->db, "BEGIN", &r->begin);
    if (err == 0)
        err = sq_prepare(r->db, "ROLLBACK", &r->end);
    return err;
}

static sq_reader *sq_reader_acquire(sq_store *s)
{
    pthread_mutex_lock(&s->pool_mu);
    while (s->nfree == 0)
        pthread_cond_wait(&s->pool_cv, &s->pool_mu);
    sq_reader *r = &s->readers[s->free_idx[--s->nfree]];
    pthread_mutex_unlock(&s->pool_mu);
    return r;
}

static void sq_reader_release(sq_store *s, sq_reader *r)
{
    if (!sqlite3_get_autocommit(r->db)) {
        sqlite3_step(r->end);
        sqlite3_reset(r->end);
    }
    pthread_mutex_lock(&s->pool_mu);
    s->free_idx[s->nfree++] = (int)(r - s->readers);
    pthread_cond_signal(&s->pool_cv);
    pthread_mutex_unlock(&s->pool_mu);
}

/* ---- reads ---- */

static void sq_row_to_kv(sqlite3_stmt *st, const char *key, int vcol, sw_kv *out)
{
    size_t len;
    const char *v = sq_col_bytes(st, vcol, &len);
    out->key = sw_strdup(key);
    out->value = sq_dup_bytes(v, len);
    out->value_len = len;
    out->mod_rev = sqlite3_column_int64(st, vcol + 1);
    out->create_rev = sqlite3_column_int64(st, vcol + 2);
}

/* One SQ_GET_SQL lookup on db with its prepared statement st. */
static int sq_get_on(sqlite3 *db, sqlite3_stmt *st, const char *key, sw_kv *out)
{
    int err = 0;
    sqlite3_bind_text(st, 1, key, -1, SQLITE_STATIC);
    int rc = sqlite3_step(st);
    if (rc == SQLITE_ROW)
        sq_row_to_kv(st, key, 0, out);
    else if (rc == SQLITE_DONE)
        err = sw_error_set(SW_ENOTFOUND, "store: key %s not found", key);
    else
        err = sq_fail(db, "get");
    sqlite3_reset(st);
    sqlite3_clear_bindings(st);
    return err;
}

/* A get runs on the write connection when no batch holds it or waits for it: a commit
 * invalidates the page cache of every other connection (WAL mode), so a reader re-reads each
 * page it touches after each write, while the writer's cache stays warm. Busy writer: a pooled
 * reader (gets never make a batch wait for them more than one lookup). */
static int sq_get(sw_store *base, const char *key, sw_kv *out)
{
    sq_store *s = sq_of(base);
    memset(out, 0, sizeof(*out));
    int err = sq_check_key(key);
    if (err < 0)
        return err;
    if (!atomic_load(&s->leader_waiting) && pthread_mutex_trylock(&s->write_mu) == 0) {
        err = sq_get_on(s->wdb, s->w_get, key, out);
        pthread_mutex_unlock(&s->write_mu);
        return err;
    }
    sq_reader *r = sq_reader_acquire(s);
    err = sq_get_on(r->db, r->get, key, out);
    sq_reader_release(s, r);
    return err;
}

/* Builds the list query. Latest: kv JOIN log. Historical: newest log row per key at or below
 * ?4, skipping tombstones. ?1 lower bound (exclusive if lo_excl), ?2 upper bound, ?3 limit. */
static int sq_list_sql(char *sql, size_t n, bool historical, bool lo_excl, bool has_hi)
{
    const char *lo = lo_excl ? ">" : ">=";
    int w;
    if (historical)
        w = snprintf(sql, n,
                     "SELECT l.key, l.value, l.rev, l.create_rev FROM (SELECT key, MAX(rev) AS mr"
                     " FROM log WHERE key %s ?1%s AND rev <= ?4 GROUP BY key) g"
                     " JOIN log l ON l.rev = g.mr WHERE l.deleted = 0 ORDER BY g.key LIMIT ?3",
                     lo, has_hi ? " AND key < ?2" : "");
    else
        w = snprintf(sql, n,
                     "SELECT kv.key, l.value, l.rev, l.create_rev FROM kv JOIN log l"
                     " ON l.rev = kv.rev WHERE kv.key %s ?1%s ORDER BY kv.key LIMIT ?3",
                     lo, has_hi ? " AND kv.key < ?2" : "");
    if (w < 0 || (size_t)w >= n)
        return sw_error_set(SW_ERROR, "store: list query too long");
    return 0;
}

static int sq_list_collect(sqlite3 *db, sqlite3_stmt *st, size_t limit, sw_kv_list *out)
{
    size_t cap = 0;
    for (;;) {
        int rc = sqlite3_step(st);
        if (rc == SQLITE_DONE)
            return 0;
        if (rc != SQLITE_ROW)
            return sq_fail(db, "list");
        if (limit && out->count == limit) {
            out->more = true;
            return 0;
        }
        if (out->count == cap) {
            size_t bytes;
            cap = cap ? cap * 2 : 16;
            if (!sw_size_mul(&bytes, cap, sizeof(sw_kv)))
                return sw_error_set(SW_ELIMIT, "store: list too large");
            out->items = sw_realloc(out->items, bytes);
        }
        const char *key = (const char *)sqlite3_column_text(st, 0);
        sq_row_to_kv(st, key ? key : "", 1, &out->items[out->count++]);
    }
}

/* The reader's list statement of one shape, prepared the first time it is needed. */
static int sq_list_stmt(sq_reader *r, bool historical, bool lo_excl, bool has_hi,
                        sqlite3_stmt **out)
{
    char sql[512];
    sqlite3_stmt **slot = &r->list[(historical ? 4 : 0) | (lo_excl ? 2 : 0) | (has_hi ? 1 : 0)];
    if (!*slot) {
        int err = sq_list_sql(sql, sizeof(sql), historical, lo_excl, has_hi);
        if (err < 0)
            return err;
        if (sqlite3_prepare_v3(r->db, sql, -1, SQLITE_PREPARE_PERSISTENT, slot, NULL) != SQLITE_OK)
            return sq_fail(r->db, "prepare list");
    }
    *out = *slot;
    return 0;
}

/* Runs the list query inside the reader's open transaction; at_rev 0 means latest. */
static int sq_list_query(sq_reader *r, const sw_store_list_opts *o, int64_t at_rev, sw_kv_list *out)
{
    sqlite3_stmt *st = NULL;
    char *end = sq_prefix_end(o->prefix);
    bool lo_excl = o->start_after && strcmp(o->start_after, o->prefix) >= 0;
    int err = sq_list_stmt(r, at_rev != 0, lo_excl, end != NULL, &st);
    if (err < 0)
        goto done;
    sqlite3_bind_text(st, 1, lo_excl ? o->start_after : o->prefix, -1, SQLITE_STATIC);
    if (end)
        sqlite3_bind_text(st, 2, end, -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 3,
                       o->limit && o->limit < (size_t)INT64_MAX ? (int64_t)o->limit + 1 : -1);
    if (at_rev)
        sqlite3_bind_int64(st, 4, at_rev);
    err = sq_list_collect(r->db, st, o->limit, out);
    sqlite3_reset(st);
    sqlite3_clear_bindings(st);
done:
    sw_free(end);
    return err;
}

static int sq_list(sw_store *base, const sw_store_list_opts *o, sw_kv_list *out)
{
    sq_store *s = sq_of(base);
    int64_t head = 0, crev = 0;
    memset(out, 0, sizeof(*out));
    if (!o || !o->prefix)
        return sw_error_set(SW_EINVALID, "store: list needs a prefix");
    if (o->rev < 0)
        return sw_error_set(SW_EINVALID, "store: negative revision %lld", (long long)o->rev);
    sq_reader *r = sq_reader_acquire(s);
    int err = sq_step_done(r->db, r->begin, "begin read");
    if (err == 0)
        err = sq_read_state(r->db, r->state, &head, &crev, NULL);
    if (err < 0)
        goto done;
    if (o->rev > head) {
        err = sw_error_set(SW_EINVALID, "store: revision %lld is newer than the current %lld",
                           (long long)o->rev, (long long)head);
        goto done;
    }
    if (o->rev != 0 && o->rev < crev) {
        err = sw_error_set(SW_EGONE, "store: revision %lld is compacted (oldest %lld)",
                           (long long)o->rev, (long long)crev);
        goto done;
    }
    bool historical = o->rev != 0 && o->rev < head;
    err = sq_list_query(r, o, historical ? o->rev : 0, out);
    out->rev = historical ? o->rev : head;
done:
    sq_reader_release(s, r);
    if (err < 0)
        sw_kv_list_dispose(out);
    return err;
}

static int64_t sq_current_revision(sw_store *base)
{
    return atomic_load(&sq_of(base)->rev);
}

static int64_t sq_compacted_revision(sw_store *base)
{
    return atomic_load(&sq_of(base)->compact_rev);
}

/* ---- writes: one batch, run by the leader under write_mu ---- */

static void sq_op_reject(sq_op *op, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Records an expected failure (conflict, not found, exists) for this op alone. */
static void sq_op_reject(sq_op *op, int code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(op->msg, sizeof(op->msg), fmt, ap);
    va_end(ap);
    op->result = code;
}

/* Looks up the key's live version; *found false if absent. Copies its value if want_value. */
static int sq_lookup(sq_store *s, sq_op *op, bool want_value, bool *found)
{
    sqlite3_stmt *st = s->w_cur;
    sqlite3_bind_text(st, 1, op->key, -1, SQLITE_STATIC);
    int rc = sqlite3_step(st);
    int err = 0;
    *found = rc == SQLITE_ROW;
    if (rc == SQLITE_ROW) {
        op->prev_rev = sqlite3_column_int64(st, 0);
        op->create_rev = sqlite3_column_int64(st, 1);
        if (want_value) {
            size_t len;
            const char *v = sq_col_bytes(st, 2, &len);
            op->prev_value = sq_dup_bytes(v, len);
            op->prev_len = len;
        }
    } else if (rc != SQLITE_DONE) {
        err = sq_fail(s->wdb, "lookup");
    }
    sqlite3_reset(st);
    sqlite3_clear_bindings(st);
    return err;
}

static int sq_insert_row(sq_store *s, sq_op *op, bool deleted, const char *v, size_t len)
{
    sqlite3_stmt *st = s->w_ins;
    sqlite3_bind_int64(st, 1, op->rev);
    sqlite3_bind_text(st, 2, op->key, -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 3, op->create_rev);
    sqlite3_bind_int64(st, 4, op->prev_rev);
    sqlite3_bind_int(st, 5, deleted ? 1 : 0);
    sqlite3_bind_blob64(st, 6, v ? v : "", (sqlite3_uint64)len, SQLITE_STATIC);
    return sq_step_done(s->wdb, st, "insert");
}

static int sq_kv_apply(sq_store *s, sq_op *op)
{
    if (op->type == SW_STORE_DELETE) {
        sqlite3_bind_text(s->w_kv_del, 1, op->key, -1, SQLITE_STATIC);
        return sq_step_done(s->wdb, s->w_kv_del, "kv delete");
    }
    sqlite3_bind_text(s->w_kv_put, 1, op->key, -1, SQLITE_STATIC);
    sqlite3_bind_int64(s->w_kv_put, 2, op->rev);
    return sq_step_done(s->wdb, s->w_kv_put, "kv put");
}

/* Checks the op's precondition against the live version; false (with op->result set) if the
 * op is rejected. */
static bool sq_precheck(sq_op *op, bool found)
{
    if (op->type == SW_STORE_CREATE) {
        if (found) {
            sq_op_reject(op, SW_EEXISTS, "store: key %s already exists", op->key);
            return false;
        }
        op->prev_rev = 0;
        return true;
    }
    if (!found) {
        sq_op_reject(op, SW_ENOTFOUND, "store: key %s not found", op->key);
        return false;
    }
    if (op->expected != 0 && op->expected != op->prev_rev) {
        sq_op_reject(op, SW_ECONFLICT, "store: key %s is at revision %lld, not %lld", op->key,
                     (long long)op->prev_rev, (long long)op->expected);
        return false;
    }
    return true;
}

/* Applies one op inside the batch transaction. Returns < 0 only for SQLite failures (the whole
 * batch then rolls back); expected failures are recorded in op->result. */
static int sq_apply(sq_store *s, sq_op *op, int64_t *next, bool capture)
{
    bool found = false;
    bool want_value = op->type == SW_STORE_DELETE || (capture && op->type == SW_STORE_UPDATE);
    int err = sq_lookup(s, op, want_value, &found);
    if (err < 0)
        return err;
    if (!sq_precheck(op, found))
        return 0;
    op->rev = *next + 1;
    if (op->type == SW_STORE_CREATE)
        op->create_rev = op->rev;
    if (op->type == SW_STORE_DELETE)
        err = sq_insert_row(s, op, true, op->prev_value, op->prev_len);
    else
        err = sq_insert_row(s, op, false, op->value, op->len);
    if (err == 0)
        err = sq_kv_apply(s, op);
    if (err < 0)
        return err;
    if (capture && op->type != SW_STORE_DELETE)
        op->ev_value = sq_dup_bytes(op->value, op->len);
    *next = op->rev;
    op->result = 0;
    return 0;
}

static void sq_fail_batch(sq_op *batch, int code)
{
    for (sq_op *op = batch; op; op = op->next) {
        op->result = code;
        sw_strlcpy(op->msg, sw_error_msg(), sizeof(op->msg));
    }
}

/* A COMMIT that fails may still have reached the WAL whole (an fsync error after the frames
 * were written): WAL recovery at the next open would then keep it, while this process has
 * rolled it back and would hand its revision out again. So the store stops taking writes;
 * only a restart (recovery) decides what committed. */
static void sq_break(sq_store *s)
{
    char why[SQ_MSG];
    sw_strlcpy(why, sw_error_msg(), sizeof(why));
    atomic_store(&s->broken, true);
    sw_log(SW_LOG_ERROR,
           "store: %s; no more writes are taken: restart slipway, and recovery decides whether "
           "the last batch committed",
           why);
    sw_error_set(SW_ERROR,
                 "%s: the outcome of this write is unknown until slipway restarts (the store "
                 "takes no more writes)",
                 why);
}

/* Calls every matching watcher for each committed op, in revision order. Under write_mu. */
static void sq_deliver(sq_store *s, sq_op *batch)
{
    for (sq_op *op = batch; op; op = op->next) {
        if (op->result != 0)
            continue;
        sw_store_event ev = {.type = op->type,
                             .rev = op->rev,
                             .create_rev = op->create_rev,
                             .prev_rev = op->prev_rev,
                             .key = op->key};
        if (op->type == SW_STORE_DELETE) {
            ev.value = ev.prev_value = op->prev_value;
            ev.value_len = ev.prev_value_len = op->prev_len;
        } else {
            ev.value = op->ev_value;
            ev.value_len = op->len;
            ev.prev_value = op->type == SW_STORE_UPDATE ? op->prev_value : NULL;
            ev.prev_value_len = op->type == SW_STORE_UPDATE ? op->prev_len : 0;
        }
        for (sw_store_watcher *w = s->watchers; w; w = w->next) {
            if (ev.rev <= w->last_rev || !sq_has_prefix(op->key, w->prefix, w->prefix_len))
                continue;
            w->fn(&ev, w->payload);
            w->last_rev = ev.rev;
        }
    }
}

/* Runs every op of the batch in one transaction, commits, then delivers live events. */
static void sq_run_batch(sq_store *s, sq_op *batch)
{
    atomic_store(&s->leader_waiting, 1);
    pthread_mutex_lock(&s->write_mu);
    atomic_store(&s->leader_waiting, 0);
    bool capture = s->watchers != NULL;
    int64_t next = atomic_load(&s->rev);
    int err = atomic_load(&s->broken)
                  ? sw_error_set(SW_EUNAVAILABLE, "store: no writes after a failed commit; "
                                                  "restart slipway")
                  : sq_step_done(s->wdb, s->w_begin, "begin");
    for (sq_op *op = batch; op && err == 0; op = op->next)
        err = sq_apply(s, op, &next, capture);
    bool committing = err == 0;
    if (err == 0)
        err = sq_step_done(s->wdb, s->w_commit, "commit");
    if (err < 0) {
        int ec = sqlite3_errcode(s->wdb);
        if (ec == SQLITE_FULL || ec == SQLITE_IOERR || ec == SQLITE_CANTOPEN)
            atomic_store(&s->disk_failing, true);
        if (committing)
            sq_break(s);
        sq_end_txn(s->wdb);
        sq_fail_batch(batch, err == SW_EUNAVAILABLE ? SW_EUNAVAILABLE : SW_ERROR);
    } else {
        atomic_store(&s->disk_failing, false);
        atomic_store(&s->rev, next);
        if (capture)
            sq_deliver(s, batch);
    }
    pthread_mutex_unlock(&s->write_mu);
    for (sq_op *op = batch; op; op = op->next) {
        sw_free(op->prev_value);
        sw_free(op->ev_value);
        op->prev_value = op->ev_value = NULL;
    }
}

/* Takes the whole queue as one batch (under queue_mu). */
static sq_op *sq_take_queue(sq_store *s)
{
    sq_op *batch = s->queue_head;
    s->queue_head = s->queue_tail = NULL;
    return batch;
}

/* Runs batches as the leader. Each op is woken on its own semaphore (no broadcast herd), and
 * when ops queued up meanwhile, the oldest of them is woken as the next leader; otherwise the
 * leader role is given up. */
static void sq_lead(sq_store *s, sq_op *self)
{
    pthread_mutex_lock(&s->queue_mu);
    sq_op *batch = sq_take_queue(s);
    pthread_mutex_unlock(&s->queue_mu);
    sq_run_batch(s, batch);
    for (sq_op *o = batch, *nx; o; o = nx) {
        nx = o->next; /* o may be gone once posted */
        if (o != self)
            sem_post(&o->wake);
    }
    pthread_mutex_lock(&s->queue_mu);
    sq_op *heir = s->queue_head;
    if (heir)
        heir->lead = true;
    else
        s->leader = false;
    pthread_mutex_unlock(&s->queue_mu);
    if (heir)
        sem_post(&heir->wake);
}

/* Queues op and waits for a leader to run it, or becomes the leader and runs the queue. */
static int sq_submit(sq_store *s, sq_op *op)
{
    sem_init(&op->wake, 0, 0);
    pthread_mutex_lock(&s->queue_mu);
    if (s->queue_tail)
        s->queue_tail->next = op;
    else
        s->queue_head = op;
    s->queue_tail = op;
    bool lead = !s->leader;
    s->leader = true;
    pthread_mutex_unlock(&s->queue_mu);
    if (!lead) {
        while (sem_wait(&op->wake) < 0 && errno == EINTR)
            ;
        lead = op->lead;
    }
    if (lead)
        sq_lead(s, op);
    sem_destroy(&op->wake);
    if (op->result < 0)
        return sw_error_set(op->result, "%s", op->msg);
    return 0;
}

static int sq_write(sq_store *s, sq_op *op, int64_t *rev_out)
{
    int err = sq_check_key(op->key);
    if (err == 0 && op->type != SW_STORE_DELETE)
        err = sq_check_value(op->value, op->len);
    if (err == 0 && op->expected < 0)
        err = sw_error_set(SW_EINVALID, "store: negative revision %lld", (long long)op->expected);
    if (err == 0)
        err = sq_submit(s, op);
    if (rev_out)
        *rev_out = err == 0 ? op->rev : 0;
    return err;
}

static int sq_create(sw_store *base, const char *key, const char *value, size_t len,
                     int64_t *rev_out)
{
    sq_op op = {.type = SW_STORE_CREATE, .key = key, .value = value, .len = len};
    return sq_write(sq_of(base), &op, rev_out);
}

static int sq_update(sw_store *base, const char *key, const char *value, size_t len,
                     int64_t expected_rev, int64_t *rev_out)
{
    sq_op op = {
        .type = SW_STORE_UPDATE, .key = key, .value = value, .len = len, .expected = expected_rev};
    return sq_write(sq_of(base), &op, rev_out);
}

static int sq_del(sw_store *base, const char *key, int64_t expected_rev, int64_t *rev_out)
{
    sq_op op = {.type = SW_STORE_DELETE, .key = key, .expected = expected_rev};
    return sq_write(sq_of(base), &op, rev_out);
}

/* ---- watch ---- */

/* Turns a replay row (rev, key, create_rev, prev_rev, deleted, value, prev value) into an event
 * whose pointers stay valid until the next step. */
static void sq_row_event(sqlite3_stmt *st, sw_store_event *ev)
{
    *ev = (sw_store_event){.rev = sqlite3_column_int64(st, 0),
                           .key = (const char *)sqlite3_column_text(st, 1),
                           .create_rev = sqlite3_column_int64(st, 2),
                           .prev_rev = sqlite3_column_int64(st, 3)};
    bool deleted = sqlite3_column_int(st, 4) != 0;
    /* column_text NUL-terminates; column_bytes after it gives the full length. */
    ev->value = (const char *)sqlite3_column_text(st, 5);
    ev->value_len = (size_t)sqlite3_column_bytes(st, 5);
    if (!ev->value)
        ev->value = "";
    if (deleted) {
        ev->type = SW_STORE_DELETE;
        ev->prev_value = ev->value;
        ev->prev_value_len = ev->value_len;
    } else if (ev->prev_rev == 0) {
        ev->type = SW_STORE_CREATE;
    } else {
        ev->type = SW_STORE_UPDATE;
        ev->prev_value = (const char *)sqlite3_column_text(st, 6);
        ev->prev_value_len = (size_t)sqlite3_column_bytes(st, 6);
    }
}

/* Delivers logged events with from < rev <= to under w's prefix, in revision order. */
static int sq_replay(sqlite3 *db, sw_store_watcher *w, int64_t from, int64_t to)
{
    char sql[400];
    sqlite3_stmt *st = NULL;
    char *end = sq_prefix_end(w->prefix);
    int err = 0;
    snprintf(sql, sizeof(sql),
             "SELECT l.rev, l.key, l.create_rev, l.prev_rev, l.deleted, l.value, p.value"
             " FROM log l LEFT JOIN log p ON p.rev = l.prev_rev"
             " WHERE l.rev > ?1 AND l.rev <= ?2 AND +l.key >= ?3%s ORDER BY l.rev",
             end ? " AND +l.key < ?4" : "");
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK) {
        err = sq_fail(db, "prepare watch");
        goto done;
    }
    sqlite3_bind_int64(st, 1, from);
    sqlite3_bind_int64(st, 2, to);
    sqlite3_bind_text(st, 3, w->prefix, -1, SQLITE_STATIC);
    if (end)
        sqlite3_bind_text(st, 4, end, -1, SQLITE_STATIC);
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        sw_store_event ev;
        sq_row_event(st, &ev);
        w->fn(&ev, w->payload);
        w->last_rev = ev.rev;
    }
    if (rc != SQLITE_DONE)
        err = sq_fail(db, "watch replay");
done:
    sqlite3_finalize(st);
    sw_free(end);
    return err;
}

/* Phase 1: replays history from a read snapshot without blocking writers. *upto is the
 * revision the snapshot covers (at least after_rev). */
static int sq_watch_snapshot(sq_store *s, sw_store_watcher *w, int64_t after_rev, int64_t *upto)
{
    int64_t head = 0, crev = 0;
    sq_reader *r = sq_reader_acquire(s);
    int err = sq_step_done(r->db, r->begin, "begin read");
    if (err == 0)
        err = sq_read_state(r->db, r->state, &head, &crev, NULL);
    if (err < 0)
        goto done;
    if (after_rev < crev) {
        err = sw_error_set(SW_EGONE, "store: revision %lld is compacted (oldest %lld)",
                           (long long)after_rev, (long long)crev);
        goto done;
    }
    if (head > after_rev)
        err = sq_replay(r->db, w, after_rev, head);
    *upto = head > after_rev ? head : after_rev;
done:
    sq_reader_release(s, r);
    return err;
}

/* History events (phase 1, and phase 2 under write_mu) are delivered on the calling thread
 * before watch returns; live events on the committing writer's thread. If replay fails midway
 * (SQLite error), some history may already have been delivered: the caller drops the watch. */
static int sq_watch(sw_store *base, const char *prefix, int64_t after_rev, sw_store_event_fn fn,
                    void *payload, sw_store_watcher **out)
{
    sq_store *s = sq_of(base);
    int64_t upto = 0;
    *out = NULL;
    if (!prefix || !fn || after_rev < 0)
        return sw_error_set(SW_EINVALID, "store: watch needs a prefix, a callback and rev >= 0");
    sw_store_watcher *w = sw_calloc(1, sizeof(*w));
    w->prefix = sw_strdup(prefix);
    w->prefix_len = strlen(prefix);
    w->fn = fn;
    w->payload = payload;
    w->last_rev = after_rev;
    int err = sq_watch_snapshot(s, w, after_rev, &upto);
    if (err < 0)
        goto done;
    pthread_mutex_lock(&s->write_mu);
    int64_t head = atomic_load(&s->rev);
    if (atomic_load(&s->compact_rev) > upto)
        err = sw_error_set(SW_EGONE, "store: revision %lld was compacted during watch setup",
                           (long long)upto);
    else if (head > upto)
        err = sq_replay(s->wdb, w, upto, head);
    if (err == 0) {
        w->last_rev = head > upto ? head : upto;
        w->next = s->watchers;
        s->watchers = w;
    }
    pthread_mutex_unlock(&s->write_mu);
done:
    if (err < 0) {
        sw_free(w->prefix);
        sw_free(w);
        return err;
    }
    *out = w;
    return 0;
}

static int64_t sq_watch_cancel(sw_store *base, sw_store_watcher *w)
{
    sq_store *s = sq_of(base);
    pthread_mutex_lock(&s->write_mu);
    for (sw_store_watcher **pp = &s->watchers; *pp; pp = &(*pp)->next) {
        if (*pp == w) {
            *pp = w->next;
            break;
        }
    }
    /* batches commit and deliver under write_mu: every revision up to the head was delivered */
    int64_t head = atomic_load(&s->rev);
    if (head < w->last_rev)
        head = w->last_rev;
    pthread_mutex_unlock(&s->write_mu);
    sw_free(w->prefix);
    sw_free(w);
    return head;
}

/* ---- compaction ---- */

static int sq_set_meta(sq_store *s, const char *name, int64_t value)
{
    sqlite3_stmt *st = NULL;
    int err = sq_prepare(s->wdb, "UPDATE meta SET value = ?2 WHERE name = ?1", &st);
    if (err < 0)
        return err;
    sqlite3_bind_text(st, 1, name, -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 2, value);
    err = sq_step_done(s->wdb, st, "update meta");
    sqlite3_finalize(st);
    return err;
}

/* Records the new compacted revision first, so readers see SW_EGONE before rows vanish. */
static int sq_compact_mark(sq_store *s, int64_t target, bool *skip)
{
    int err = 0;
    *skip = false;
    pthread_mutex_lock(&s->write_mu);
    if (target <= atomic_load(&s->compact_rev)) {
        *skip = true;
    } else if (target > atomic_load(&s->rev)) {
        err = sw_error_set(SW_EINVALID, "store: cannot compact to %lld beyond the current %lld",
                           (long long)target, (long long)atomic_load(&s->rev));
    } else {
        err = sq_set_meta(s, "compact_rev", target);
        if (err == 0)
            atomic_store(&s->compact_rev, target);
    }
    pthread_mutex_unlock(&s->write_mu);
    return err;
}

/* Deletes, for revisions in (lo, hi], the versions they superseded and the tombstones
 * themselves, in one transaction. A live key's newest row is never touched. */
static int sq_compact_window(sq_store *s, int64_t lo, int64_t hi)
{
    static const char sql[] =
        "DELETE FROM log WHERE rev IN (SELECT prev_rev FROM log WHERE rev > ?1 AND rev <= ?2"
        " AND prev_rev != 0) AND rev NOT IN (SELECT rev FROM kv);"
        "DELETE FROM log WHERE rev > ?1 AND rev <= ?2 AND deleted = 1;";
    const char *tail = sql;
    int err = 0;
    pthread_mutex_lock(&s->write_mu);
    err = sq_exec(s->wdb, "BEGIN IMMEDIATE", "compact");
    while (err == 0 && *tail) {
        sqlite3_stmt *st = NULL;
        if (sqlite3_prepare_v2(s->wdb, tail, -1, &st, &tail) != SQLITE_OK) {
            err = sq_fail(s->wdb, "prepare compact");
            break;
        }
        if (!st)
            break;
        sqlite3_bind_int64(st, 1, lo);
        sqlite3_bind_int64(st, 2, hi);
        err = sq_step_done(s->wdb, st, "compact");
        sqlite3_finalize(st);
    }
    if (err == 0)
        err = sq_set_meta(s, "compact_done", hi);
    if (err == 0)
        err = sq_exec(s->wdb, "COMMIT", "compact commit");
    sq_end_txn(s->wdb);
    pthread_mutex_unlock(&s->write_mu);
    return err;
}

static int sq_compact(sw_store *base, int64_t target_rev)
{
    sq_store *s = sq_of(base);
    bool skip = false;
    if (atomic_load(&s->broken))
        return sw_error_set(SW_EUNAVAILABLE, "store: no compaction after a failed commit; "
                                             "restart slipway");
    pthread_mutex_lock(&s->compact_mu);
    int err = sq_compact_mark(s, target_rev, &skip);
    /* A target already marked still runs when an earlier run stopped short of it (a failed
     * window): its rows would otherwise stay until a higher target comes. */
    if (err < 0 || (skip && s->compact_done >= atomic_load(&s->compact_rev)))
        goto done;
    int64_t target = atomic_load(&s->compact_rev);
    while (err == 0 && s->compact_done < target) {
        int64_t hi = target - s->compact_done > SQ_COMPACT_BATCH
                         ? s->compact_done + SQ_COMPACT_BATCH
                         : target;
        err = sq_compact_window(s, s->compact_done, hi);
        if (err == 0)
            s->compact_done = hi;
    }
    if (err < 0)
        goto done;
    pthread_mutex_lock(&s->write_mu);
    if (sqlite3_wal_checkpoint_v2(s->wdb, NULL, SQLITE_CHECKPOINT_PASSIVE, NULL, NULL) != SQLITE_OK)
        err = sq_fail(s->wdb, "checkpoint");
    pthread_mutex_unlock(&s->write_mu);
done:
    pthread_mutex_unlock(&s->compact_mu);
    return err;
}

static int sq_compact_round(sw_store *base, int64_t target_rev)
{
    int err = sq_compact(base, target_rev);
    return err < 0 ? err : 1;
}

static int sq_health(sw_store *base)
{
    sq_store *s = sq_of(base);
    if (atomic_load(&s->broken))
        return sw_error_set(SW_EUNAVAILABLE, "store: a commit failed; restart slipway");
    if (atomic_load(&s->disk_failing))
        return sw_error_set(SW_EUNAVAILABLE,
                            "store: the last write failed on the disk (full or I/O error)");
    return 0;
}

/* ---- lifecycle ---- */

static void sq_destroy(sq_store *s)
{
    sqlite3_stmt *w[] = {s->w_cur,   s->w_ins,    s->w_kv_put, s->w_kv_del,
                         s->w_begin, s->w_commit, s->w_get};
    for (size_t i = 0; i < sizeof(w) / sizeof(w[0]); i++)
        sqlite3_finalize(w[i]);
    for (int i = 0; i < SQ_READERS; i++) {
        sqlite3_finalize(s->readers[i].get);
        sqlite3_finalize(s->readers[i].state);
        sqlite3_finalize(s->readers[i].begin);
        sqlite3_finalize(s->readers[i].end);
        for (size_t k = 0; k < sizeof(s->readers[i].list) / sizeof(s->readers[i].list[0]); k++)
            sqlite3_finalize(s->readers[i].list[k]);
        sqlite3_close(s->readers[i].db);
    }
    sqlite3_close(s->wdb);
    while (s->watchers) {
        sw_store_watcher *w0 = s->watchers;
        s->watchers = w0->next;
        sw_free(w0->prefix);
        sw_free(w0);
    }
    pthread_mutex_destroy(&s->write_mu);
    pthread_mutex_destroy(&s->queue_mu);
    pthread_mutex_destroy(&s->pool_mu);
    pthread_cond_destroy(&s->pool_cv);
    pthread_mutex_destroy(&s->compact_mu);
    if (s->lock_fd >= 0)
        close(s->lock_fd);
    sw_free(s);
}

/* No call may be in flight; remaining watchers are dropped without further events. */
static void sq_close(sw_store *base)
{
    sq_destroy(sq_of(base));
}

static const struct sw_store_ops sq_ops = {
    .version = SW_STORE_OPS_VERSION,
    .get = sq_get,
    .list = sq_list,
    .create = sq_create,
    .update = sq_update,
    .del = sq_del,
    .watch = sq_watch,
    .watch_cancel = sq_watch_cancel,
    .compact = sq_compact,
    .compact_round = sq_compact_round,
    .current_revision = sq_current_revision,
    .compacted_revision = sq_compacted_revision,
    .health = sq_health,
    .close = sq_close,
};

int sw_store_sqlite_open(sw_store **out, const char *path, const sw_sqlite_opts *opts)
{
    *out = NULL;
    if (!path || !path[0])
        return sw_error_set(SW_EINVALID, "store: sqlite needs a database path");
    if (!sqlite3_threadsafe())
        return sw_error_set(SW_ERROR, "sqlite: library built without thread support");
    sq_store *s = sw_calloc(1, sizeof(*s));
    s->base.ops = &sq_ops;
    s->lock_fd = -1;
    pthread_mutex_init(&s->write_mu, NULL);
    pthread_mutex_init(&s->queue_mu, NULL);
    pthread_mutex_init(&s->pool_mu, NULL);
    pthread_cond_init(&s->pool_cv, NULL);
    pthread_mutex_init(&s->compact_mu, NULL);
    int err = sq_lock_path(path, &s->lock_fd);
    if (err == 0)
        err = sq_private_files(path);
    if (err == 0)
        err = sq_setup_writer(s, path, opts);
    for (int i = 0; i < SQ_READERS && err == 0; i++) {
        err = sq_setup_reader(&s->readers[i], path);
        s->free_idx[s->nfree++] = i;
    }
    if (err < 0) {
        sq_destroy(s);
        return err;
    }
    *out = &s->base;
    return 0;
}
