/* notify: the distribution registry's notification webhook (POST /notifications/registry).
 * Authenticated by a bearer token read from --registry-notifications-token-file; anything else
 * gets 401. Each manifest push by tag and each manifest delete is queued for a worker thread,
 * which finds the streams naming the event's repository through an index (repoindex.h).
 * A push re-imports, at once, every scheduled ImageStream tag that names the pushed
 * repository:tag on that registry. The registry sends the event before it moves the tag
 * (distribution 2.x), so an import that still sees the old digest (or no tag) is retried a few
 * times within about a second. A delete marks every stream tag whose newest event is the
 * deleted manifest in that repository with ImportSuccess=False, reason NotFound, and records a
 * Warning Event ImageDeleted: whoever consumes the tag can see the image is gone. */
#include "apiserver/notify.h"

#include "apiserver/repoindex.h"
#include "kinds/core.h"
#include "kinds/imagestream.h"
#include "kinds/imagestreamimport.h"
#include "meta/event.h"
#include "registry/ref.h"
#include "util/alloc.h"
#include "util/error.h"
#include "util/json.h"
#include "util/log.h"
#include "util/str.h"
#include "util/time.h"

#include <openssl/crypto.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#define QUEUE_MAX 4096
#define STALE_RETRIES 6         /* re-imports while the registry still shows the old tag */
#define STALE_FIRST_DELAY_MS 25 /* doubled per retry: 25 ms .. 800 ms, 1.6 s in all */

typedef struct push {
    bool deleted; /* a manifest delete (by digest), not a push */
    char host[256];
    char repository[256];
    char tag[129];
    char digest[80]; /* target.digest, "" if absent */
} push;

struct sw_notifier {
    sw_api *api;
    sw_repoindex *index; /* the streams naming each repository */
    char token[256];
    pthread_mutex_t mu;
    pthread_cond_t cond;
    push *queue;
    size_t head, count;
    bool stopping;
    pthread_t worker;
};

bool sw_notify_matches(const char *path)
{
    return !strcmp(path, "/notifications/registry");
}

static bool token_ok(const sw_notifier *n, const char *auth)
{
    size_t len = strlen(n->token);
    return len && auth && !strncmp(auth, "Bearer ", 7) && strlen(auth + 7) == len &&
           CRYPTO_memcmp(auth + 7, n->token, len) == 0;
}

/* "http://host:port/v2/..." → host:port */
static void url_host(const char *url, char *out, size_t n)
{
    const char *p = url ? strstr(url, "://") : NULL;
    out[0] = '\0';
    if (!p)
        return;
    p += 3;
    size_t len = strcspn(p, "/");
    if (len < n) {
        memcpy(out, p, len);
        out[len] = '\0';
    }
}

static void enqueue(sw_notifier *n, const push *p)
{
    pthread_mutex_lock(&n->mu);
    if (n->count < QUEUE_MAX) {
        n->queue[(n->head + n->count) % QUEUE_MAX] = *p;
        n->count++;
        pthread_cond_signal(&n->cond);
    } else {
        sw_log(SW_LOG_WARN, "registry notification dropped: queue full (%s:%s)", p->repository,
               p->tag);
    }
    pthread_mutex_unlock(&n->mu);
}

/* Queues the pushes in an events envelope; returns how many. */
static int parse_events(sw_notifier *n, const json_t *env)
{
    size_t i, queued = 0;
    json_t *ev;
    json_array_foreach(json_object_get(env, "events"), i, ev)
    {
        push p = {0};
        const char *action = sw_json_str_at(ev, "action");
        const char *repo = sw_json_str_at(ev, "target.repository");
        const char *tag = sw_json_str_at(ev, "target.tag");
        p.deleted = sw_str_eq(action, "delete");
        if (p.deleted) {
            /* a manifest deleted by digest; a deleted tag (target.tag) leaves the image */
            if (!repo || (tag && *tag) ||
                !sw_ref_digest_valid(sw_json_str_at(ev, "target.digest") ?: ""))
                continue;
            tag = "";
        } else if (!sw_str_eq(action, "push") || !repo || !tag || !*tag) {
            continue;
        }
        url_host(sw_json_str_at(ev, "target.url"), p.host, sizeof(p.host));
        if (!p.host[0])
            sw_strlcpy(p.host, sw_json_str_at(ev, "request.host") ?: "", sizeof(p.host));
        if (!p.host[0])
            continue; /* a push of which registry? never every registry's repo:tag */
        if (sw_strlcpy(p.repository, repo, sizeof(p.repository)) >= sizeof(p.repository) ||
            sw_strlcpy(p.tag, tag, sizeof(p.tag)) >= sizeof(p.tag))
            continue;
        if (sw_strlcpy(p.digest, sw_json_str_at(ev, "target.digest") ?: "", sizeof(p.digest)) >=
            sizeof(p.digest))
            p.digest[0] = '\0';
        enqueue(n, &p);
        queued++;
    }
    return (int)queued;
}

bool sw_notify_authorized(const sw_notifier *n, const char *auth)
{
    return n && token_ok(n, auth);
}

void sw_notify_handle(sw_notifier *n, const sw_request *req, const char *auth, sw_response *resp)
{
    json_t *env = NULL;
    if (!n || !token_ok(n, auth)) {
        sw_response_error(resp, SW_EUNAUTHORIZED, "Unauthorized", NULL, NULL);
        return;
    }
    if (strcmp(req->method, "POST")) {
        sw_response_error(resp, SW_EMETHOD, "registry notifications must be POSTed", NULL, NULL);
        return;
    }
    int error = sw_json_parse(req->body, req->body_len, 16, 0, &env);
    if (error == 0 && !json_is_array(json_object_get(env, "events")))
        error = sw_error_set(SW_EBADREQUEST, "a notification envelope needs an events array");
    if (error < 0) {
        sw_response_error(resp, error, sw_error_msg(), NULL, NULL);
    } else {
        int q = parse_events(n, env);
        json_t *st = json_pack("{s:s, s:s, s:{}, s:s, s:s}", "kind", "Status", "apiVersion", "v1",
                               "metadata", "status", "Success", "message", "");
        char msg[64];
        snprintf(msg, sizeof(msg), "%d event(s) queued", q);
        json_object_set_new(st, "message", json_string(msg));
        sw_response_json(resp, 200, st);
        json_decref(st);
    }
    json_decref(env);
}

/* Does spec tag t (scheduled, DockerImage) name the pushed image? */
static bool tag_matches(const json_t *t, const push *p)
{
    sw_ref ref;
    if (!sw_json_bool_at(t, "importPolicy.scheduled") || sw_json_bool_at(t, "reference") ||
        !sw_str_eq(sw_json_str_at(t, "from.kind"), "DockerImage") ||
        sw_ref_parse(sw_json_str_at(t, "from.name") ?: "", &ref) < 0)
        return false;
    return !strcmp(ref.repository, p->repository) && !strcmp(ref.tag, p->tag) &&
           !strcmp(ref.registry, p->host);
}

/* Does the tag's newest event stand for digest (its image, or the index it was picked from)? */
static bool tag_shows(sw_objects *o, const json_t *stream, const char *tag, const char *digest)
{
    json_t *st = sw_imagestream_status_tag(stream, tag);
    const char *id = sw_json_str_at(json_array_get(json_object_get(st, "items"), 0), "image");
    json_t *img = NULL;
    bool shows = false;
    if (!id)
        return false;
    if (sw_str_eq(id, digest))
        return true;
    if (o->get(o, &sw_kind_image, NULL, id, &img) == 0)
        shows = sw_str_eq(json_string_value(json_object_get(sw_json_at(img, "metadata.annotations"),
                                                            SW_IMPORT_INDEX_ANNOTATION)),
                          digest);
    json_decref(img);
    return shows;
}

/* Did the import run before the registry moved the tag? Then a tag came back unchanged although
 * it does not show the pushed digest, or the tag was not found yet. */
static bool stale(sw_objects *o, const json_t *isi, const push *p)
{
    const json_t *stream = sw_json_at(isi, "status.import");
    size_t i;
    json_t *item;
    if (!p->digest[0])
        return false;
    json_array_foreach(sw_json_at(isi, "status.images"), i, item)
    {
        const char *tag = sw_json_str_at(item, "tag");
        if (sw_str_eq(sw_json_str_at(item, "status.status"), "Success")) {
            if (!json_object_get(item, "image") && tag && !tag_shows(o, stream, tag, p->digest))
                return true;
        } else if (sw_str_eq(sw_json_str_at(item, "status.reason"), "NotFound")) {
            return true;
        }
    }
    return false;
}

/* Re-imports the tags of stream that name the push; true when it should be tried again. */
static bool reimport(sw_notifier *n, sw_objects *o, const json_t *stream, const push *p)
{
    bool again = false;
    json_t *images = json_array(), *out = NULL;
    size_t i;
    json_t *t;
    json_array_foreach(sw_json_at(stream, "spec.tags"), i, t)
    {
        if (!tag_matches(t, p))
            continue;
        json_t *e =
            json_pack("{s:{s:s, s:s}, s:{s:s}}", "from", "kind", "DockerImage", "name",
                      sw_json_str_at(t, "from.name"), "to", "name", sw_json_str_at(t, "name"));
        if (json_object_get(t, "importPolicy"))
            json_object_set(e, "importPolicy", json_object_get(t, "importPolicy"));
        json_array_append_new(images, e);
    }
    const char *ns = sw_json_str_at(stream, "metadata.namespace");
    const char *name = sw_json_str_at(stream, "metadata.name");
    if (json_array_size(images)) {
        json_t *isi =
            json_pack("{s:s, s:s, s:{s:s, s:s}, s:{s:b, s:O}}", "apiVersion",
                      "image.openshift.io/v1", "kind", "ImageStreamImport", "metadata", "name",
                      name, "namespace", ns, "spec", "import", 1, "images", images);
        if (sw_imagestreamimport_run(&n->api->kctx, o, ns, isi, &out) < 0)
            sw_log(SW_LOG_WARN, "re-import of %s/%s after a push of %s:%s failed: %s", ns, name,
                   p->repository, p->tag, sw_error_msg());
        else if (!(again = stale(o, out, p)))
            sw_log(SW_LOG_INFO, "re-imported %s/%s after a push of %s/%s:%s", ns, name, p->host,
                   p->repository, p->tag);
        json_decref(isi);
        json_decref(out);
    }
    json_decref(images);
    return again;
}

/* Sleeps ms unless the notifier stops meanwhile; false when it does. */
static bool pause_ms(sw_notifier *n, int64_t ms)
{
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += (time_t)(ms / 1000);
    until.tv_nsec += (long)(ms % 1000) * 1000000L;
    if (until.tv_nsec >= 1000000000L) {
        until.tv_sec++;
        until.tv_nsec -= 1000000000L;
    }
    pthread_mutex_lock(&n->mu);
    while (!n->stopping && pthread_cond_timedwait(&n->cond, &n->mu, &until) == 0)
        ; /* woken by a new push: keep waiting */
    bool go_on = !n->stopping;
    pthread_mutex_unlock(&n->mu);
    return go_on;
}

/* Whether two registry hosts are one: equal, or loopback names (localhost, 127.0.0.1, [::1])
 * with the same port. A delete event names the host the deleting client used (distribution
 * sends no target.url for deletes), which need not be the one the stream recorded. */
static bool same_registry(const char *a, const char *b)
{
    static const char *const loop[] = {"localhost", "127.0.0.1", "[::1]", NULL};
    if (!strcmp(a, b))
        return true;
    const char *pa = strrchr(a, ':'), *pb = strrchr(b, ':');
    if (!pa || !pb || strcmp(pa, pb))
        return false;
    bool la = false, lb = false;
    for (size_t i = 0; loop[i]; i++) {
        size_t n = strlen(loop[i]);
        la |= (size_t)(pa - a) == n && !strncmp(a, loop[i], n);
        lb |= (size_t)(pb - b) == n && !strncmp(b, loop[i], n);
    }
    return la && lb;
}

/* The streams naming the event's repository on its registry, or on another loopback name of
 * it for a delete (new references). */
static json_t *streams_of(sw_notifier *n, sw_objects *o, const push *p)
{
    static const char *const loop[] = {"localhost", "127.0.0.1", "[::1]", NULL};
    json_t *keys = sw_repoindex_lookup(n->index, p->host, p->repository), *out = json_array();
    const char *port = strrchr(p->host, ':');
    for (size_t l = 0; p->deleted && port && loop[l]; l++) {
        char alias[300];
        snprintf(alias, sizeof(alias), "%s%s", loop[l], port);
        if (strcmp(alias, p->host) && same_registry(alias, p->host)) {
            json_t *more = sw_repoindex_lookup(n->index, alias, p->repository);
            json_array_extend(keys, more);
            json_decref(more);
        }
    }
    size_t i;
    json_t *k;
    json_array_foreach(keys, i, k)
    {
        const char *key = json_string_value(k), *slash = strchr(key, '/');
        char ns[256];
        json_t *s = NULL;
        if (!slash || (size_t)(slash - key) >= sizeof(ns))
            continue;
        memcpy(ns, key, (size_t)(slash - key));
        ns[slash - key] = '\0';
        if (o->get(o, &sw_kind_imagestream, ns, slash + 1, &s) == 0)
            json_array_append_new(out, s);
    }
    json_decref(keys);
    return out;
}

static void handle_push(sw_notifier *n, const push *p)
{
    sw_objects *o = sw_api_objects_new(n->api);
    int64_t delay = STALE_FIRST_DELAY_MS;
    for (int attempt = 0;; attempt++) {
        json_t *streams = streams_of(n, o, p);
        size_t i;
        json_t *s;
        bool again = false;
        json_array_foreach(streams, i, s) again |= reimport(n, o, s, p);
        json_decref(streams);
        if (again && attempt == STALE_RETRIES)
            sw_log(SW_LOG_INFO, "after a push of %s/%s:%s the registry still does not show %s",
                   p->host, p->repository, p->tag, p->digest);
        if (!again || attempt == STALE_RETRIES || !pause_ms(n, delay))
            break;
        delay *= 2;
    }
    sw_api_objects_free(o);
}

/* Does the stream tag's newest event stand for the deleted manifest of p? */
static bool tag_deleted(sw_objects *o, const json_t *stream, const json_t *st, const push *p)
{
    const json_t *head = json_array_get(json_object_get(st, "items"), 0);
    sw_ref ref;
    if (!head || sw_ref_parse(sw_json_str_at(head, "dockerImageReference") ?: "", &ref) < 0)
        return false;
    return !strcmp(ref.repository, p->repository) && same_registry(ref.registry, p->host) &&
           tag_shows(o, stream, sw_json_str_at(st, "tag") ?: "", p->digest);
}

/* Marks the tags of stream that show the deleted manifest; writes the stream's status when
 * one changed (retrying conflicts) and records one Warning Event per newly marked tag. */
static void mark_deleted(sw_objects *o, const char *ns, const char *name, const push *p)
{
    char now[32], msg[700];
    sw_time_format(sw_time_now(), now, sizeof(now));
    snprintf(msg, sizeof(msg), "the image %s was deleted from the registry %s/%s", p->digest,
             p->host, p->repository);
    for (int attempt = 0; attempt < 10; attempt++) {
        json_t *stream = NULL, *marked = json_array(), *saved = NULL;
        int error = o->get(o, &sw_kind_imagestream, ns, name, &stream);
        size_t i;
        json_t *st;
        json_array_foreach(error == 0 ? sw_json_at(stream, "status.tags") : NULL, i, st)
        {
            const json_t *old = json_array_get(json_object_get(st, "conditions"), 0);
            if (!tag_deleted(o, stream, st, p) ||
                (sw_str_eq(sw_json_str_at(old, "reason"), "NotFound") &&
                 sw_str_eq(sw_json_str_at(old, "message"), msg)))
                continue;
            int64_t gen = 0;
            const char *tag = sw_json_str_at(st, "tag") ?: "";
            if (!sw_json_int_at(sw_imagestream_spec_tag(stream, tag), "generation", &gen))
                sw_json_int_at(json_array_get(json_object_get(st, "items"), 0), "generation", &gen);
            json_object_set_new(st, "conditions",
                                json_pack("[{s:s, s:s, s:s, s:s, s:s, s:I}]", "type",
                                          "ImportSuccess", "status", "False", "lastTransitionTime",
                                          now, "reason", "NotFound", "message", msg, "generation",
                                          (json_int_t)gen));
            json_array_append_new(marked, json_string(tag));
        }
        if (json_array_size(marked))
            error = o->update_status(o, &sw_kind_imagestream, stream, &saved);
        json_array_foreach(error == 0 ? marked : NULL, i, st)
        {
            char text[900];
            snprintf(text, sizeof(text), "tag %s: %s", json_string_value(st), msg);
            json_t *ev =
                sw_event_new(saved, "Warning", "ImageDeleted", "slipway-registry-notify", text);
            if (o->create(o, &sw_kind_event, ev, NULL) < 0)
                sw_log(SW_LOG_WARN, "cannot record the deletion of %s in %s/%s: %s", p->digest, ns,
                       name, sw_error_msg());
            json_decref(ev);
        }
        if (json_array_size(marked) && error == 0)
            sw_log(SW_LOG_INFO, "%s/%s: %zu tag(s) show %s, deleted from %s/%s", ns, name,
                   json_array_size(marked), p->digest, p->host, p->repository);
        json_decref(stream);
        json_decref(saved);
        json_decref(marked);
        if (error != SW_ECONFLICT)
            break;
    }
}

static void handle_delete(sw_notifier *n, const push *p)
{
    sw_objects *o = sw_api_objects_new(n->api);
    json_t *streams = streams_of(n, o, p);
    size_t i;
    json_t *s;
    json_array_foreach(streams, i, s)
    {
        size_t j;
        json_t *st;
        json_array_foreach(sw_json_at(s, "status.tags"), j, st)
        {
            if (tag_deleted(o, s, st, p)) {
                mark_deleted(o, sw_json_str_at(s, "metadata.namespace"),
                             sw_json_str_at(s, "metadata.name"), p);
                break;
            }
        }
    }
    json_decref(streams);
    sw_api_objects_free(o);
}

static void *worker_main(void *arg)
{
    sw_notifier *n = arg;
    pthread_mutex_lock(&n->mu);
    for (;;) {
        while (!n->stopping && n->count == 0)
            pthread_cond_wait(&n->cond, &n->mu);
        if (n->stopping)
            break;
        push p = n->queue[n->head];
        n->head = (n->head + 1) % QUEUE_MAX;
        n->count--;
        pthread_mutex_unlock(&n->mu);
        if (p.deleted)
            handle_delete(n, &p);
        else
            handle_push(n, &p);
        pthread_mutex_lock(&n->mu);
    }
    pthread_mutex_unlock(&n->mu);
    return NULL;
}

int sw_notifier_new(sw_notifier **out, sw_api *api, const char *token_file)
{
    FILE *f = fopen(token_file, "r");
    if (!f)
        return sw_error_set(SW_EINVALID, "--registry-notifications-token-file: cannot read %s",
                            token_file);
    sw_notifier *n = sw_calloc(1, sizeof(*n));
    size_t r = fread(n->token, 1, sizeof(n->token) - 1, f);
    fclose(f);
    n->token[r] = '\0';
    n->token[strcspn(n->token, "\r\n")] = '\0';
    if (strlen(n->token) < 16) {
        sw_free(n);
        return sw_error_set(SW_EINVALID,
                            "--registry-notifications-token-file: the token in %s "
                            "must be at least 16 characters",
                            token_file);
    }
    n->api = api;
    if (sw_repoindex_new(&n->index, api) < 0) {
        sw_free(n);
        return SW_ERROR;
    }
    n->queue = sw_calloc(QUEUE_MAX, sizeof(*n->queue));
    pthread_mutex_init(&n->mu, NULL);
    pthread_cond_init(&n->cond, NULL);
    if (pthread_create(&n->worker, NULL, worker_main, n) != 0) {
        sw_repoindex_free(n->index);
        sw_free(n->queue);
        sw_free(n);
        return sw_error_set(SW_ERROR, "cannot start the notification worker");
    }
    *out = n;
    return 0;
}

void sw_notifier_free(sw_notifier *n)
{
    if (!n)
        return;
    pthread_mutex_lock(&n->mu);
    n->stopping = true;
    pthread_cond_broadcast(&n->cond);
    pthread_mutex_unlock(&n->mu);
    pthread_join(n->worker, NULL);
    sw_repoindex_free(n->index);
    pthread_mutex_destroy(&n->mu);
    pthread_cond_destroy(&n->cond);
    sw_free(n->queue);
    sw_free(n);
}
