/* build_run: one thread per running build (see build_int.h). It reads the builder's output,
 * ships it to builds/<n>/log at most every 100 ms (or per 64 KiB), keeps the tail for logSnippet,
 * enforces completionDeadlineSeconds and status.cancelled (SIGTERM, SIGKILL after the grace
 * period), and turns the exit into the build's final phase; a Complete build with an ImageStreamTag
 * output and a digest gets its ImageStreamMapping. */
#include "controllers/build_int.h"

#include "kinds/build.h"
#include "util/alloc.h"
#include "util/buf.h"
#include "util/error.h"
#include "util/json.h"
#include "util/log.h"
#include "util/str.h"
#include "util/time.h"

#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#define LOG_CHUNK (64 * 1024)
#define LOG_FLUSH_MS 100
#define READ_WAIT_MS 100
#define TAIL_MAX (32 * 1024)
#define EXIT_DRAIN_MS 2000 /* output still open this long after the exit: give up on it */
#define SNIPPET_LINES 5
#define SNIPPET_WIDTH 120
#define RETRY_MIN_MS 200  /* the end of a build is retried this often at first... */
#define RETRY_MAX_MS 5000 /* ...then up to this */

typedef enum why { WHY_EXIT, WHY_CANCEL, WHY_DEADLINE } why;

typedef struct watch {
    char pend[LOG_CHUNK]; /* output not shipped yet */
    size_t plen;
    char tail[TAIL_MAX]; /* the output's last bytes */
    size_t tlen;
    bool cut; /* tail lost its beginning */
    int64_t last_flush;
    sw_build_state state;
    int value;
    int64_t exit_ms, end_us;
    why why;
    bool term_sent, kill_sent;
    int64_t term_ms;
    bool abandoned; /* stopping or deleted: no status */
    bool log_failed;
    bool retrying; /* pend could not be sent for now: kept, tried again later */
} watch;

/* ---- logSnippet ---- */

static void put_line(sw_buf *out, const char *p, size_t len)
{
    if (len && p[len - 1] == '\r')
        len--;
    if (out->len)
        sw_buf_putc(out, '\n');
    if (len <= SNIPPET_WIDTH) {
        sw_buf_put(out, p, len);
        return;
    }
    size_t head = (SNIPPET_WIDTH - 3) / 2, rest = SNIPPET_WIDTH - 3 - head;
    sw_buf_put(out, p, head);
    sw_buf_puts(out, "...");
    sw_buf_put(out, p + len - rest, rest);
}

char *sw_build_log_snippet(const char *tail, size_t len)
{
    sw_buf out = SW_BUF_INIT(SNIPPET_LINES * (SNIPPET_WIDTH + 1) + 16);
    while (len && (tail[len - 1] == '\n' || tail[len - 1] == '\r'))
        len--;
    size_t start = len;
    int lines = 0;
    while (start > 0 && !(tail[start - 1] == '\n' && ++lines == SNIPPET_LINES))
        start--;
    const char *p = tail + start, *end = tail + len;
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        size_t l = nl ? (size_t)(nl - p) : (size_t)(end - p);
        put_line(&out, p, l);
        p += l + (nl ? 1 : 0);
    }
    char *s = out.len ? sw_buf_detach(&out, NULL) : sw_strdup("");
    sw_buf_dispose(&out);
    return s;
}

static char *snippet_of(const watch *w)
{
    const char *t = w->tail;
    size_t n = w->tlen;
    const char *nl = w->cut ? memchr(t, '\n', n) : NULL;
    if (nl) { /* the first line lost its beginning */
        n -= (size_t)(nl + 1 - t);
        t = nl + 1;
    }
    return sw_build_log_snippet(t, n);
}

static void tail_add(watch *w, const char *data, size_t n)
{
    if (n >= TAIL_MAX) {
        memcpy(w->tail, data + n - TAIL_MAX, TAIL_MAX);
        w->tlen = TAIL_MAX;
        w->cut = true;
        return;
    }
    if (w->tlen + n > TAIL_MAX) {
        size_t drop = w->tlen + n - TAIL_MAX;
        memmove(w->tail, w->tail + drop, w->tlen - drop);
        w->tlen -= drop;
        w->cut = true;
    }
    memcpy(w->tail + w->tlen, data, n);
    w->tlen += n;
}

/* ---- shipping the log ---- */

static void mark_deleted(sw_build_controller *ctl, sw_build__runner *r)
{
    pthread_mutex_lock(&ctl->mu);
    r->deleted = true;
    pthread_mutex_unlock(&ctl->mu);
}

static bool transient(int error)
{
    return error == SW_EUNAVAILABLE || error == SW_ETIMEOUT;
}

/* Sends the pending output. On a transient failure it is kept (w->retrying) and sent again
 * RETRY_MIN_MS later; meanwhile a full buffer stops reading, so the builder waits on its pipe
 * rather than its output being lost. Other failures drop the chunk. */
static int ship(sw_build_controller *ctl, sw_build__runner *r, watch *w)
{
    sw_buf path = SW_BUF_INIT(2048);
    if (!w->plen)
        return 0;
    sw_client_path(&path, &sw_res_builds, r->ns, r->name, "log");
    int error = sw_buf_error(&path);
    if (error == 0)
        error = sw_client_request_raw(ctl->client, "POST", sw_buf_cstr(&path), w->pend, w->plen,
                                      "text/plain", NULL, NULL, NULL, NULL);
    if (error == SW_ENOTFOUND)
        mark_deleted(ctl, r);
    else if (error < 0 && !w->log_failed)
        sw_log(SW_LOG_WARN, "build %s: cannot append to its log: %s", r->key, sw_error_msg());
    w->log_failed |= error < 0;
    w->retrying = transient(error);
    if (!w->retrying)
        w->plen = 0;
    w->last_flush = sw_time_mono_ms();
    sw_buf_dispose(&path);
    return error;
}

/* ---- supervision ---- */

static bool cancel_requested(sw_build_controller *ctl, sw_build__runner *r)
{
    json_t *b = sw_informer_get(ctl->builds, r->key);
    bool c = b && sw_json_bool_at(b, "status.cancelled");
    json_decref(b);
    return c;
}

/* Whether the runner must leave without writing anything. */
static bool abandon(sw_build_controller *ctl, sw_build__runner *r)
{
    pthread_mutex_lock(&ctl->mu);
    bool a = ctl->stopping || r->deleted;
    pthread_mutex_unlock(&ctl->mu);
    return a;
}

/* Cancellation and the deadline: SIGTERM first, SIGKILL after the grace period. */
static void enforce(sw_build_controller *ctl, sw_build__runner *r, watch *w, int64_t now)
{
    const sw_build_strategy *s = ctl->strategy;
    if (!w->term_sent) {
        if (cancel_requested(ctl, r))
            w->why = WHY_CANCEL;
        else if (now - r->start_ms >= r->deadline_ms)
            w->why = WHY_DEADLINE;
        else
            return;
        sw_log(SW_LOG_INFO, "build %s: %s, stopping its builder", r->key,
               w->why == WHY_CANCEL ? "cancelled" : "past its deadline");
        s->cancel(s->self, r->run, false);
        w->term_sent = true;
        w->term_ms = now;
    } else if (!w->kill_sent && now - w->term_ms >= ctl->grace_ms) {
        sw_log(SW_LOG_INFO, "build %s: the builder ignored SIGTERM, killing it", r->key);
        s->cancel(s->self, r->run, true);
        w->kill_sent = true;
    }
}

/* Runs until the builder exited and its output ended (or the runner must leave). */
static void supervise(sw_build_controller *ctl, sw_build__runner *r, watch *w)
{
    const sw_build_strategy *s = ctl->strategy;
    w->last_flush = sw_time_mono_ms() - LOG_FLUSH_MS; /* the first output goes out at once */
    for (;;) {
        size_t got = 0;
        bool eof = false;
        /* output waiting to be shipped: wake up when it is due, not a whole read wait later */
        int64_t due = w->last_flush + LOG_FLUSH_MS - sw_time_mono_ms();
        int wait_ms = !w->plen             ? READ_WAIT_MS
                      : due < 1            ? 1
                      : due < READ_WAIT_MS ? (int)due
                                           : READ_WAIT_MS;
        if (w->plen < LOG_CHUNK) {
            s->read_output(s->self, r->run, w->pend + w->plen, LOG_CHUNK - w->plen, wait_ms, &got,
                           &eof);
        } else { /* full and not sent yet: the builder waits on its pipe meanwhile */
            const struct timespec pause = {0, READ_WAIT_MS * 1000000L};
            nanosleep(&pause, NULL);
        }
        if (got) {
            tail_add(w, w->pend + w->plen, got);
            w->plen += got;
        }
        int64_t now = sw_time_mono_ms();
        int64_t gap = w->retrying ? RETRY_MIN_MS : LOG_FLUSH_MS;
        if (w->plen && (now - w->last_flush >= gap || (w->plen == LOG_CHUNK && !w->retrying)))
            ship(ctl, r, w);
        if (abandon(ctl, r)) {
            w->abandoned = true;
            return;
        }
        if (w->state == SW_BUILD_RUNNING) {
            if (s->poll(s->self, r->run, &w->state, &w->value) < 0)
                sw_log(SW_LOG_WARN, "build %s: %s", r->key, sw_error_msg());
            if (w->state != SW_BUILD_RUNNING) {
                w->exit_ms = now;
                w->end_us = sw_time_now_micro();
            }
        }
        if (w->state == SW_BUILD_RUNNING)
            enforce(ctl, r, w, now);
        else if (w->retrying && w->plen == LOG_CHUNK)
            w->exit_ms = now; /* not reading: the drain time starts when the server takes it */
        else if (eof || now - w->exit_ms >= EXIT_DRAIN_MS)
            break;
    }
}

/* ---- the end ---- */

/* The pull spec's repository: "reg/ns/is:tag" or "reg/ns/is@sha256:..." → "reg/ns/is". */
static void repository_of(const char *ref, char *out, size_t n)
{
    sw_strlcpy(out, ref, n);
    char *slash = strrchr(out, '/'), *name = slash ? slash + 1 : out;
    char *at = strchr(name, '@'), *colon = strchr(name, ':');
    if (at)
        *at = '\0';
    else if (colon)
        *colon = '\0';
}

/* POST imagestreammappings so the output stream gets the tag event. */
static int record_image(sw_build_controller *ctl, const json_t *b)
{
    const char *to_name = sw_json_str_at(b, "spec.output.to.name");
    const char *to_ns = sw_json_str_at(b, "spec.output.to.namespace");
    const char *digest = sw_json_str_at(b, "status.output.to.imageDigest");
    const char *ref = sw_json_str_at(b, "status.outputDockerImageReference");
    char stream[256], repo[1024], pull[1200], path[700];
    if (!sw_str_eq(sw_json_str_at(b, "spec.output.to.kind"), "ImageStreamTag") || !digest ||
        !*digest || !ref || !*ref || !to_name)
        return 0;
    const char *colon = strrchr(to_name, ':');
    size_t len = colon ? (size_t)(colon - to_name) : strlen(to_name);
    if (len >= sizeof(stream))
        return 0;
    memcpy(stream, to_name, len);
    stream[len] = '\0';
    if (!to_ns || !*to_ns)
        to_ns = sw_json_str_at(b, "metadata.namespace");
    repository_of(ref, repo, sizeof(repo));
    snprintf(pull, sizeof(pull), "%s@%s", repo, digest);
    snprintf(path, sizeof(path), "/apis/image.openshift.io/v1/namespaces/%s/imagestreammappings",
             to_ns);
    json_t *m = json_pack("{s:s, s:s, s:{s:s, s:s}, s:s, s:{s:{s:s}, s:s}}", "apiVersion",
                          "image.openshift.io/v1", "kind", "ImageStreamMapping", "metadata", "name",
                          stream, "namespace", to_ns, "tag", colon ? colon + 1 : "latest", "image",
                          "metadata", "name", digest, "dockerImageReference", pull);
    int error = sw_client_request(ctl->client, "POST", path, m, NULL, NULL, NULL);
    if (error < 0)
        sw_log(SW_LOG_WARN, "build %s/%s: cannot tag %s into %s/%s: %s",
               sw_json_str_at(b, "metadata.namespace"), sw_json_str_at(b, "metadata.name"), pull,
               to_ns, to_name, sw_error_msg());
    json_decref(m);
    return error;
}

static void describe_signal(int sig, char *out, size_t n)
{
    const char *abbrev = sigabbrev_np(sig);
    if (abbrev)
        snprintf(out, n, "The builder was killed by signal %d (SIG%s)", sig, abbrev);
    else
        snprintf(out, n, "The builder was killed by signal %d", sig);
}

/* The final phase from how the builder ended. */
static void final_transition(const sw_build__runner *r, const watch *w, sw_build__transition *t,
                             char *msg, size_t n)
{
    t->complete = true;
    t->only_active = true;
    t->start_us = r->start_us;
    t->end_us = w->end_us;
    if (w->why == WHY_CANCEL) {
        t->phase = "Cancelled";
        t->reason = "CancelledBuild";
        t->message = "The build was cancelled by the user.";
        t->cancelled = true;
        t->snippet = NULL;
    } else if (w->why == WHY_DEADLINE) {
        t->phase = "Failed";
        t->reason = "DeadlineExceeded";
        snprintf(msg, n, "Build was running longer than its deadline (%llds)",
                 (long long)(r->deadline_ms / 1000));
        t->message = msg;
    } else if (w->state == SW_BUILD_EXITED && w->value == 0) {
        t->phase = "Complete";
        t->snippet = NULL;
    } else if (w->state == SW_BUILD_EXITED) {
        t->phase = "Failed";
        t->reason = "GenericBuildFailed";
        t->message = "Generic Build failure - check logs for details.";
        t->keep_reported = true;
    } else {
        t->phase = "Error";
        t->reason = "BuilderKilled";
        describe_signal(w->value, msg, n);
        t->message = msg;
    }
}

/* Waits *ms in 50 ms steps, then doubles it up to RETRY_MAX_MS; false when the runner must
 * leave instead (the controller stops, the build was deleted). */
static bool retry_wait(sw_build_controller *ctl, sw_build__runner *r, int *ms)
{
    const struct timespec step = {0, 50 * 1000000L};
    for (int waited = 0; waited < *ms; waited += 50) {
        if (abandon(ctl, r))
            return false;
        nanosleep(&step, NULL);
    }
    *ms = *ms >= RETRY_MAX_MS / 2 ? RETRY_MAX_MS : *ms * 2;
    return !abandon(ctl, r);
}

/* One try at the end: the final phase, then the tag event of a Complete build. */
static int finish_once(sw_build_controller *ctl, sw_build__runner *r, const watch *w)
{
    json_t *b = NULL, *saved = NULL;
    char msg[300];
    int error = sw_client_get(ctl->client, &sw_res_builds, r->ns, r->name, &b);
    if (error < 0)
        return error;
    char *snippet = snippet_of(w);
    sw_build__transition t = {.snippet = snippet};
    final_transition(r, w, &t, msg, sizeof(msg));
    error = sw_build__transition_apply(ctl, b, &t, &saved);
    const json_t *now = saved ? saved : b;
    if (error == 0 && sw_str_eq(sw_build__phase(now), "Complete"))
        error = record_image(ctl, now);
    sw_free(snippet);
    json_decref(saved);
    json_decref(b);
    return error;
}

/* The builder's last output and its outcome are delivered, whatever the API server is doing:
 * a transient failure is retried (the runner stays registered meanwhile, so no sweep takes the
 * build for lost) until it works, the build is gone, or the controller stops. */
static void finish(sw_build_controller *ctl, sw_build__runner *r, watch *w)
{
    int delay = RETRY_MIN_MS;
    if (w->abandoned)
        return;
    while (transient(ship(ctl, r, w)))
        if (!retry_wait(ctl, r, &delay))
            return;
    for (;;) {
        int error = finish_once(ctl, r, w);
        if (!transient(error))
            return; /* done, the build is gone, or nothing a retry would change (logged) */
        sw_log(SW_LOG_WARN, "build %s: cannot record how it ended (retrying): %s", r->key,
               sw_error_msg());
        if (!retry_wait(ctl, r, &delay))
            return;
    }
}

static void *runner_main(void *arg)
{
    sw_build__runner *r = arg;
    sw_build_controller *ctl = r->ctl;
    watch *w = sw_calloc(1, sizeof(*w));
    char key[sizeof(r->queue_key)];
    supervise(ctl, r, w);
    finish(ctl, r, w);
    sw_strlcpy(key, r->queue_key, sizeof(key));
    /* Unlinked first: the next reconcile sees a finished build that is no longer ours. */
    sw_build__runner_unlink(ctl, r);
    sw_controller_enqueue(ctl->loop, key);
    sw_build__runner_done(ctl, r);
    sw_free(w);
    return NULL;
}

int sw_build__runner_launch(sw_build_controller *ctl, sw_build__runner *r)
{
    pthread_attr_t attr;
    pthread_t t;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    int rc = pthread_create(&t, &attr, runner_main, r);
    pthread_attr_destroy(&attr);
    if (rc != 0)
        return sw_error_set(SW_ERROR, "cannot start a build runner thread");
    return 0;
}
