/* benchlib: what the two bench tools, sw-loadgen (bench/loadgen.c) and sw-importgen
 * (bench/importgen.c), share and src/util does not have: a nanosecond monotonic clock with
 * sleeps and condition variables on it, a latency recorder with nearest-rank percentiles, one
 * keep-alive libcurl connection with a capped response buffer and one captured header, a pool
 * of worker threads that each own such a connection, an NDJSON (watch stream) line splitter,
 * throttled stderr diagnostics and command-line option helpers. Linked into the bench tools
 * only, never into swcore or slipway. See bench/README.md. */
#ifndef BENCH_BENCHLIB_H
#define BENCH_BENCHLIB_H

#include "util/buf.h"

#include <curl/curl.h>
#include <jansson.h>
#include <pthread.h>

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#define BENCH_NS_PER_SEC 1000000000LL

/* ---------- clock (CLOCK_MONOTONIC, nanoseconds) ---------- */

int64_t bench_now(void);
/* Sleeps ns nanoseconds (nothing when ns <= 0), resuming after signals. */
void bench_sleep_ns(int64_t ns);
/* Sleeps until bench_now() reaches t. */
void bench_sleep_until(int64_t t);
/* A condition variable whose timed waits run on the same clock as bench_now(). */
void bench_cond_init(pthread_cond_t *c);
/* The bench_now() time t as a pthread_cond_timedwait deadline for bench_cond_init's variables. */
struct timespec bench_abstime(int64_t t);
/* xorshift64*: the next pseudo-random number of *state (which must not be 0). */
uint64_t bench_rand(uint64_t *state);

/* ---------- diagnostics and options ---------- */

/* Names the tool in every diagnostic ("sw-loadgen: ..."); call once, first thing in main. */
void bench_set_prog(const char *name);
/* One diagnostic line on stderr, the first 10 per process only (then one "further errors not
 * shown"), so a dead server cannot flood the logs. Thread-safe. */
void bench_complain(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* The value of the option at argv[*i] (advancing *i past it); -1, with a message, if missing. */
int bench_opt_value(int argc, char **argv, int *i, const char **out);

/* One numeric option: exactly one of u (a decimal integer up to the table's max) and d (a
 * non-negative decimal number, e.g. seconds or a rate) is set. */
struct bench_numopt {
    const char *flag; /* "--count" */
    uint64_t *u;      /* integer destination, or NULL */
    double *d;        /* number destination, or NULL */
};

/* Stores v through the entry for flag: 0 when stored, -1 when v is not a valid value, 1 when
 * flag is not in the table. Prints nothing. */
int bench_numopt_set(const struct bench_numopt *opts, size_t n, uint64_t max, const char *flag,
                     const char *v);

/* ---------- latency samples ---------- */

/* A growable set of durations; zero-initialise it ({0}), free it with bench_lat_dispose. */
struct bench_lat {
    int64_t *ns;   /* samples, nanoseconds */
    size_t n, cap; /* used and allocated entries */
    bool sorted;   /* ns is in ascending order */
};

void bench_lat_push(struct bench_lat *l, int64_t ns);
void bench_lat_merge(struct bench_lat *dst, const struct bench_lat *src);
void bench_lat_sort(struct bench_lat *l);
/* Nearest-rank percentile q (0..1; 1 is the maximum) in milliseconds, or `empty` when there are
 * no samples. Sorts l. */
double bench_lat_pct(struct bench_lat *l, double q, double empty);
void bench_lat_dispose(struct bench_lat *l);

/* ---------- one keep-alive HTTP connection ---------- */

/* How every connection of a tool is set up. */
struct bench_conn_opts {
    const char *token;   /* bearer token for API requests, or NULL */
    bool insecure_tls;   /* https without verifying the certificate (loopback benchmarks) */
    double timeout;      /* per request, seconds */
    size_t limit;        /* cap on one response body, bytes */
    const char *capture; /* lower-case header name with its colon ("docker-content-digest:")
                            whose value each response stores in header; NULL: none */
};

/* One libcurl easy handle reused for every request, so the socket stays open between them. */
struct bench_conn {
    CURL *curl;
    struct curl_slist *api_headers; /* JSON Content-Type and Accept, "Expect:", bearer token */
    sw_buf resp;                    /* body of the last response (sw_buf_error: over the cap) */
    long status;                    /* HTTP status of the last response, 0 if none arrived */
    const char *capture;            /* see bench_conn_opts */
    char header[128];               /* the captured header's value, "" when absent */
    bool quiet;                     /* transport errors are expected: not reported */
};

/* The headers every API (JSON) request carries; NULL only if libcurl is out of memory. */
struct curl_slist *bench_api_headers(const char *token);
/* Turns certificate verification off on curl when insecure is set. */
void bench_tls(CURL *curl, bool insecure);
/* Sets c up (c is overwritten); returns 0 or -1. Dispose of c in both cases. */
int bench_conn_init(struct bench_conn *c, const struct bench_conn_opts *o);
void bench_conn_dispose(struct bench_conn *c);
/* One request: method HEAD, GET, POST, PUT or DELETE; headers NULL means c->api_headers; body
 * may be NULL for HEAD and GET. Returns 0 when an HTTP response arrived (whatever its status, in
 * c->status; its body in c->resp), -1 (reported unless quiet) when none did. */
int bench_conn_do(struct bench_conn *c, const char *method, const char *url,
                  struct curl_slist *headers, const char *body, size_t len);
/* Reports an unexpected answer to `what` (status and the start of the body); returns -1. */
int bench_conn_unexpected(const struct bench_conn *c, const char *what);

/* ---------- worker pool ---------- */

struct bench_pool;

/* One worker thread. The pool owns it; jobs may use conn and the tallies. */
struct bench_worker {
    struct bench_pool *pool; /* internal */
    unsigned id;             /* 0 .. workers-1 */
    struct bench_conn conn;  /* this worker's keep-alive connection */
    struct bench_lat lat;    /* duration of every job that returned 0 */
    uint64_t done;           /* jobs run */
    uint64_t errors;         /* jobs that returned < 0 */
    uint64_t ok, bad;        /* the jobs' own tallies (operations, tags imported, conflicts...) */
    unsigned failing;        /* consecutive errors */
    uint64_t rng;            /* bench_rand state, seeded from id */
};

/* Runs job number `job` on w: 0 success (timed), > 0 done but not counted as a success
 * (e.g. a conflict: neither timed nor an error), < 0 an error. */
typedef int (*bench_job_fn)(struct bench_worker *w, uint64_t job, void *payload);
/* Untimed preparation of one worker before the clock starts; < 0 cancels the run. */
typedef int (*bench_setup_fn)(struct bench_worker *w, void *payload);

struct bench_pool_opts {
    unsigned workers;     /* threads (fewer when jobs is smaller) */
    uint64_t jobs;        /* job numbers 0..jobs-1; 0: until the deadline */
    double duration;      /* cap on the timed phase, seconds */
    unsigned max_failing; /* a worker stops after this many errors in a row (0: never) */
    const struct bench_conn_opts *conn; /* each worker's connection */
    bench_setup_fn setup;               /* NULL: none */
    bench_job_fn job;
    void *payload; /* passed to setup and job */
};

struct bench_pool_result {
    unsigned workers;               /* workers the run had */
    uint64_t done, errors, ok, bad; /* summed over the workers; errors + 1 per worker not started */
    double secs;                    /* from before the first job to after the last */
    struct bench_lat lat;           /* every worker's samples; bench_lat_dispose it */
};

/* Sets the workers up (connections, then setup), starts the clock and the threads and waits
 * for them. Returns 0 when the run took place (r filled in), -1 when the setup failed (r is
 * zeroed, nothing ran). */
int bench_pool_run(const struct bench_pool_opts *o, struct bench_pool_result *r);

/* ---------- NDJSON stream splitter (watch streams) ---------- */

/* Bytes go in as they arrive; complete lines come out parsed, in order. */
struct bench_ndjson {
    sw_buf buf;  /* bytes received and not dropped */
    size_t next; /* offset in buf of the first byte not yet handed out as a line */
};

void bench_ndjson_init(struct bench_ndjson *s, size_t limit);
/* Appends received bytes; -1 once more than limit bytes would be held. */
int bench_ndjson_feed(struct bench_ndjson *s, const char *data, size_t n);
/* The next complete non-empty line: true with *root (the parsed line, NULL if it is not JSON;
 * json_decref it) and *end (offset in buf just past its newline); false when no complete line is
 * left. Empty lines are skipped. */
bool bench_ndjson_next(struct bench_ndjson *s, json_t **root, size_t *end);
/* Drops the lines already handed out (offsets of later bytes shift down). */
void bench_ndjson_compact(struct bench_ndjson *s);
void bench_ndjson_dispose(struct bench_ndjson *s);

#endif
