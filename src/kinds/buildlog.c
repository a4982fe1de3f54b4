/* buildlog: builds/<n>/log. Logs live in <data dir>/logs/<ns>/<build>.log. GET serves them
 * (tailLines, limitBytes; follow streams until the build finishes; without nowait a build that
 * has not started is waited for, up to 30 s, as OpenShift does). POST appends text: the build
 * controller, an API client like any other, ships the builder's output this way (a slipway
 * extension; OpenShift reads pod logs instead). */
#include "kinds/build.h"

#include "util/alloc.h"
#include "util/buf.h"
#include "util/error.h"
#include "util/json.h"
#include "util/str.h"
#include "util/time.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define MAX_LOG (64 * 1024 * 1024)
#define START_WAIT_MS 30000
#define WAIT_MAX_MS 200     /* longest wait between two looks, changes or not */
#define FOLLOW_IDLE_MS 1000 /* a follower with nothing to send returns 0 this often */

static int log_path(const sw_kind_ctx *ctx, const char *ns, const char *name, char *out, size_t n,
                    bool create_dirs)
{
    if (!ctx->data_dir)
        return sw_error_set(SW_EUNAVAILABLE, "build logs are not available on this server");
    snprintf(out, n, "%s/logs", ctx->data_dir);
    if (create_dirs && mkdir(out, 0700) < 0 && errno != EEXIST)
        return sw_error_set(SW_ERROR, "cannot create %s: %s", out, sw_strerror(errno));
    snprintf(out, n, "%s/logs/%s", ctx->data_dir, ns);
    if (create_dirs && mkdir(out, 0700) < 0 && errno != EEXIST)
        return sw_error_set(SW_ERROR, "cannot create %s: %s", out, sw_strerror(errno));
    snprintf(out, n, "%s/logs/%s/%s.log", ctx->data_dir, ns, name);
    return 0;
}

void sw_build_log_remove(const sw_kind_ctx *ctx, const char *ns, const char *name)
{
    char path[4096];
    if (log_path(ctx, ns, name, path, sizeof(path), false) == 0)
        unlink(path);
}

static int append(const sw_kind_ctx *ctx, sw_objects *o, const sw_subreq *r)
{
    char path[4096];
    struct stat st;
    json_t *build = NULL;
    int error = o->get(o, &sw_kind_build, r->ns, r->name, &build);
    json_decref(build);
    if (error == 0 && o->dry_run)
        return 0; /* checked, not written */
    if (error == 0)
        error = log_path(ctx, r->ns, r->name, path, sizeof(path), true);
    if (error < 0)
        return error;
    int fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
    if (fd < 0)
        return sw_error_set(SW_ERROR, "cannot open the build log: %s", sw_strerror(errno));
    if (fstat(fd, &st) == 0 && (uint64_t)st.st_size + r->body_len > MAX_LOG) {
        close(fd);
        return sw_error_set(SW_ELIMIT, "the build log of %s/%s reached its %d-byte limit", r->ns,
                            r->name, MAX_LOG);
    }
    ssize_t w = r->body_len ? write(fd, r->body, r->body_len) : 0;
    close(fd);
    if (w < 0 || (size_t)w != r->body_len)
        return sw_error_set(SW_ERROR, "cannot write the build log: %s", sw_strerror(errno));
    sw_build_log_wake(r->ns, r->name);
    return 0;
}

static bool started(const char *phase)
{
    return phase && strcmp(phase, "New") && strcmp(phase, "Pending");
}

/* Readers wait for a change here instead of sleeping: every log append and every stored
 * Build bumps the counter of its build's bucket (builds hash into LOG_BUCKETS). A reader
 * samples its bucket before it looks, so a change between its look and its wait is never
 * missed, and a change to other builds wakes it only to see its bucket unchanged and sleep
 * again, without touching the log or the store. The wait is still bounded (WAIT_MAX_MS). */
#define LOG_BUCKETS 256

static struct {
    pthread_once_t once;
    pthread_mutex_t mu;
    pthread_cond_t cond;
    uint64_t changes[LOG_BUCKETS];
} g_log = {.once = PTHREAD_ONCE_INIT, .mu = PTHREAD_MUTEX_INITIALIZER};

static void log_init(void)
{
    sw_time_cond_init(&g_log.cond);
}

/* The bucket of build ns/name. */
static size_t log_bucket(const char *ns, const char *name)
{
    ns = ns ? ns : "";
    name = name ? name : "";
    uint64_t h = sw_fnv1a(SW_FNV1A_OFFSET, ns, strlen(ns));
    h = sw_fnv1a(sw_fnv1a(h, "/", 1), name, strlen(name));
    return (size_t)(h % LOG_BUCKETS);
}

static uint64_t log_changes(size_t bucket)
{
    pthread_once(&g_log.once, log_init);
    pthread_mutex_lock(&g_log.mu);
    uint64_t c = g_log.changes[bucket];
    pthread_mutex_unlock(&g_log.mu);
    return c;
}

void sw_build_log_wake(const char *ns, const char *name)
{
    size_t bucket = log_bucket(ns, name);
    pthread_once(&g_log.once, log_init);
    pthread_mutex_lock(&g_log.mu);
    g_log.changes[bucket]++;
    pthread_cond_broadcast(&g_log.cond);
    pthread_mutex_unlock(&g_log.mu);
}

/* Waits until the bucket changed since `seen` (a log_changes() value), at most ms. */
static void log_wait(size_t bucket, uint64_t seen, int64_t ms)
{
    struct timespec until = sw_time_mono_deadline(ms);
    pthread_mutex_lock(&g_log.mu);
    while (g_log.changes[bucket] == seen &&
           pthread_cond_timedwait(&g_log.cond, &g_log.mu, &until) != ETIMEDOUT)
        ;
    pthread_mutex_unlock(&g_log.mu);
}

static bool server_stopping(const sw_kind_ctx *ctx)
{
    return ctx && __atomic_load_n(&ctx->stopping, __ATOMIC_ACQUIRE);
}

/* Waits until the build has left New/Pending, the deadline passes or the server stops. */
static const char *wait_started(const sw_kind_ctx *ctx, sw_objects *o, const sw_subreq *r,
                                char *phase, size_t n)
{
    int64_t deadline = sw_time_mono_ms() + START_WAIT_MS;
    size_t bucket = log_bucket(r->ns, r->name);
    for (;;) {
        json_t *b = NULL;
        uint64_t seen = log_changes(bucket);
        if (o->get(o, &sw_kind_build, r->ns, r->name, &b) < 0)
            return NULL;
        sw_strlcpy(phase, sw_json_str_at(b, "status.phase") ?: "New", n);
        json_decref(b);
        int64_t left = deadline - sw_time_mono_ms();
        if (started(phase) || left <= 0 || server_stopping(ctx))
            return phase;
        log_wait(bucket, seen, left < WAIT_MAX_MS ? left : WAIT_MAX_MS);
    }
}

/* Where the last `lines` lines of the log file start (0, all of it, when lines < 0): read
 * backwards from the end in blocks, so a long log is never held in memory. The final newline
 * ends the last line; it does not start another one. */
static int64_t tail_offset(int fd, int64_t size, int64_t lines)
{
    char block[16384];
    if (lines < 0 || size <= 0)
        return 0;
    if (lines == 0)
        return size;
    int64_t end = size, seen = 0;
    while (end > 0) {
        int64_t start = end > (int64_t)sizeof(block) ? end - (int64_t)sizeof(block) : 0;
        ssize_t n = pread(fd, block, (size_t)(end - start), (off_t)start);
        if (n != end - start)
            return 0;
        for (int64_t i = n; i > 0; i--) {
            bool last_byte = start + i == size;
            if (block[i - 1] == '\n' && !last_byte && ++seen == lines)
                return start + i;
        }
        end = start;
    }
    return 0;
}

/* A plain read of [off, off + left) of the log file. */
typedef struct range_reader {
    int fd;
    int64_t off, left;
} range_reader;

static long range_next(void *state, char *buf, size_t max)
{
    range_reader *rr = state;
    if (rr->left <= 0)
        return -1;
    size_t want = (int64_t)max < rr->left ? max : (size_t)rr->left;
    ssize_t n = pread(rr->fd, buf, want, (off_t)rr->off);
    if (n <= 0)
        return -1;
    rr->off += n;
    rr->left -= n;
    return (long)n;
}

static void range_free(void *state)
{
    range_reader *rr = state;
    if (rr->fd >= 0)
        close(rr->fd);
    sw_free(rr);
}

typedef struct follower {
    const sw_kind_ctx *ctx; /* the server's; outlives every stream */
    sw_objects *o;
    char ns[256], name[256], path[4096];
    int64_t off;
    bool done;
} follower;

static void follower_free(void *state)
{
    follower *f = state;
    f->o->release(f->o);
    sw_free(f);
}

static bool finished(follower *f)
{
    json_t *b = NULL;
    if (f->o->get(f->o, &sw_kind_build, f->ns, f->name, &b) < 0)
        return true;
    bool fin = sw_build_phase_terminal(sw_json_str_at(b, "status.phase"));
    json_decref(b);
    return fin;
}

/* The next bytes of the log; waits up to about a second for them (0: none yet, ask again), -1
 * once the build finished and everything was sent. */
static long follower_next(void *state, char *buf, size_t max)
{
    follower *f = state;
    int64_t deadline = sw_time_mono_ms() + FOLLOW_IDLE_MS;
    size_t bucket = log_bucket(f->ns, f->name);
    for (;;) {
        uint64_t seen = log_changes(bucket);
        int fd = open(f->path, O_RDONLY | O_CLOEXEC);
        ssize_t n = fd >= 0 ? pread(fd, buf, max, f->off) : 0;
        if (fd >= 0)
            close(fd);
        if (n > 0) {
            f->off += n;
            return (long)n;
        }
        if (f->done)
            return -1;
        /* Nothing new: one more read after the build finishes catches the last lines. */
        f->done = finished(f);
        int64_t left = deadline - sw_time_mono_ms();
        if (f->done)
            continue;
        if (server_stopping(f->ctx))
            return SW_STREAM_CUT; /* not ended: `oc logs -f` must not take it as complete */
        if (left <= 0)
            return 0;
        log_wait(bucket, seen, left < WAIT_MAX_MS ? left : WAIT_MAX_MS);
    }
}

static int serve(const sw_kind_ctx *ctx, sw_objects *o, const sw_subreq *r, sw_subresp *out)
{
    char path[4096], phase[32];
    bool follow = false, nowait = false;
    int64_t tail = -1, limit = -1;
    const char *q;
    if ((q = r->query(r->conn, "follow")) && sw_str_to_bool(q, &follow) < 0)
        return sw_error_set(SW_EBADREQUEST, "follow: invalid boolean %s", q);
    if ((q = r->query(r->conn, "nowait")) && sw_str_to_bool(q, &nowait) < 0)
        return sw_error_set(SW_EBADREQUEST, "nowait: invalid boolean %s", q);
    if ((q = r->query(r->conn, "tailLines")) && (sw_str_to_i64(q, &tail) < 0 || tail < 0))
        return sw_error_set(SW_EBADREQUEST, "tailLines: invalid value %s", q);
    if ((q = r->query(r->conn, "limitBytes")) && (sw_str_to_i64(q, &limit) < 0 || limit <= 0))
        return sw_error_set(SW_EBADREQUEST, "limitBytes: invalid value %s", q);
    int error = log_path(ctx, r->ns, r->name, path, sizeof(path), false);
    if (error < 0)
        return error;
    if (nowait) {
        json_t *b = NULL;
        error = o->get(o, &sw_kind_build, r->ns, r->name, &b); /* NotFound for a missing one */
        json_decref(b);
        if (error < 0)
            return error;
    } else if (!wait_started(ctx, o, r, phase, sizeof(phase))) {
        return sw_error_set(SW_ENOTFOUND, "builds.build.openshift.io \"%s\" not found", r->name);
    } else if (!started(phase) && server_stopping(ctx)) {
        return sw_error_set(SW_EUNAVAILABLE, "the server is stopping; the build has not started");
    }
    /* Served from the file as it is read, never copied whole into memory (logs reach 64 MiB) */
    struct stat st;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    int64_t size = fd >= 0 && fstat(fd, &st) == 0 ? (int64_t)st.st_size : 0;
    int64_t from = fd >= 0 ? tail_offset(fd, size, tail) : 0;
    int64_t len = size - from;
    if (limit > 0 && limit < len)
        len = limit;
    if (follow && limit < 0) {
        /* the follower streams from the tail offset on, then whatever is appended */
        follower *f = sw_calloc(1, sizeof(*f));
        f->ctx = ctx;
        f->o = o->hold(o);
        sw_strlcpy(f->ns, r->ns, sizeof(f->ns));
        sw_strlcpy(f->name, r->name, sizeof(f->name));
        sw_strlcpy(f->path, path, sizeof(f->path));
        f->off = from;
        out->next = follower_next;
        out->free = follower_free;
        out->state = f;
        if (fd >= 0)
            close(fd);
    } else {
        range_reader *rr = sw_malloc(sizeof(*rr));
        *rr = (range_reader){.fd = fd, .off = from, .left = len};
        out->next = range_next;
        out->free = range_free;
        out->state = rr;
    }
    out->content_type = "text/plain";
    return 0;
}

int sw_build_build_log(const sw_kind_ctx *ctx, sw_objects *o, const sw_subreq *r, sw_subresp *out)
{
    if (!strcmp(r->method, "GET"))
        return serve(ctx, o, r, out);
    if (!strcmp(r->method, "POST"))
        return append(ctx, o, r);
    return sw_error_set(SW_EMETHOD, "builds/log takes GET, or POST to append");
}
