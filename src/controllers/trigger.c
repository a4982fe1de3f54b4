/* trigger: the image trigger controller (see trigger.h). Work-queue keys are
 * "<index into watched[]>|<ns>/<name>". Each workload informer indexes its objects by the
 * "<ns>/<stream>" of their active triggers, so an ImageStream's change touches only the
 * workloads that name it; a workload's own change is reconciled too (a manual image edit is
 * put back, a new trigger applied). */
#include "controllers/trigger.h"

#include "controllers/events.h"
#include "client/informer.h"
#include "controllers/rollouthook.h"
#include "kinds/imagestream.h"
#include "kinds/podspec.h"
#include "registry/ref.h"
#include "util/alloc.h"
#include "util/error.h"
#include "util/json.h"
#include "util/log.h"
#include "util/str.h"
#include "util/time.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define COMPONENT "slipway-image-trigger-controller"
#define MAX_TRIGGERS 256

typedef struct watched {
    const sw_resource *res;
    const char *kind;
} watched;

static const watched kinds[] = {
    {&sw_res_deployments, "Deployment"},
    {&sw_res_statefulsets, "StatefulSet"},
    {&sw_res_daemonsets, "DaemonSet"},
    {&sw_res_cronjobs, "CronJob"},
    {&sw_res_pods, "Pod"},
};
#define NKINDS (sizeof(kinds) / sizeof(kinds[0]))

typedef struct handler {
    struct sw_trigger_controller *tc;
    size_t k;
} handler;

struct sw_trigger_controller {
    sw_client *client;
    sw_rollout_hook *hook;
    handler h[NKINDS]; /* the payloads of the workload informers' handlers */
    sw_controller *loop;
    sw_informer *streams;
    sw_informer *inf[NKINDS];
    pthread_mutex_t mu;
    json_t *reported; /* key → the problem last reported in an Event */
};

/* ---- parsing ---- */

/* `?(@.name=="N")` → N, or an index; false when sel is neither. */
static bool parse_selector(const char *sel, size_t len, sw_trigger *t)
{
    static const char pre[] = "?(@.name==\"", post[] = "\")";
    if (len && len <= 9 && strspn(sel, "0123456789") == len) {
        char num[12];
        memcpy(num, sel, len);
        num[len] = '\0';
        t->index = strtol(num, NULL, 10);
        return true;
    }
    size_t lp = strlen(pre), lq = strlen(post);
    if (len <= lp + lq || strncmp(sel, pre, lp) || strncmp(sel + len - lq, post, lq))
        return false;
    size_t n = len - lp - lq;
    if (n >= sizeof(t->container) || memchr(sel + lp, '"', n) || memchr(sel + lp, '\\', n))
        return false;
    memcpy(t->container, sel + lp, n);
    t->container[n] = '\0';
    t->index = -1;
    return true;
}

/* 1: parsed into t; 0: under another pod spec (skipped); SW_EINVALID: malformed. */
static int parse_field_path(const char *kind, const char *fp, sw_trigger *t)
{
    const char *base = sw_podspec_path(kind);
    size_t bl = base ? strlen(base) : 0;
    if (!base || strncmp(fp, base, bl) || fp[bl] != '.')
        return 0;
    const char *p = fp + bl + 1;
    if (sw_str_prefix(p, "containers[")) {
        p += strlen("containers[");
        t->init = false;
    } else if (sw_str_prefix(p, "initContainers[")) {
        p += strlen("initContainers[");
        t->init = true;
    } else {
        return sw_error_set(SW_EINVALID, "field path is not valid: %.300s", fp);
    }
    const char *close = strstr(p, "].");
    if (!close || strcmp(close, "].image") || !parse_selector(p, (size_t)(close - p), t))
        return sw_error_set(SW_EINVALID, "field path is not valid: %.300s", fp);
    sw_strlcpy(t->field_path, fp, sizeof(t->field_path));
    return 1;
}

int sw_trigger_parse_entry(const json_t *e, size_t i, const char *kind, const char *obj_ns,
                           sw_trigger *t)
{
    const json_t *from = json_object_get(e, "from");
    const char *fk = sw_json_str_at(from, "kind"), *name = sw_json_str_at(from, "name");
    const char *ns = sw_json_str_at(from, "namespace"), *av = sw_json_str_at(from, "apiVersion");
    const char *fp = sw_json_str_at(e, "fieldPath");
    const json_t *paused = json_object_get(e, "paused");
    memset(t, 0, sizeof(*t));
    if (!json_is_object(e))
        return sw_error_set(SW_EINVALID, "trigger %zu is not an object", i);
    if (!sw_str_eq(fk, "ImageStreamTag"))
        return sw_error_set(SW_EINVALID,
                            "trigger %zu: from.kind must be ImageStreamTag, not \"%.64s\"", i,
                            fk ? fk : "");
    if (av && *av)
        return sw_error_set(SW_EINVALID, "trigger %zu: from.apiVersion must be empty", i);
    if (paused && !json_is_boolean(paused))
        return sw_error_set(SW_EINVALID, "trigger %zu: paused must be a boolean", i);
    t->paused = json_is_true(paused);
    if (!name || sw_imagestream_split_tag_name(name, t->stream, sizeof(t->stream), t->tag,
                                               sizeof(t->tag)) < 0)
        return sw_error_set(SW_EINVALID,
                            "trigger %zu: from.name must be <stream>:<tag>, not \"%.200s\"", i,
                            name ? name : "");
    sw_strlcpy(t->ns, ns && *ns ? ns : obj_ns ? obj_ns : "", sizeof(t->ns));
    if (!fp || !*fp)
        return sw_error_set(SW_EINVALID, "trigger %zu: fieldPath is required", i);
    return parse_field_path(kind, fp, t);
}

int sw_triggers_parse(const json_t *obj, sw_trigger **out, size_t *n)
{
    const char *text = json_string_value(
        json_object_get(sw_json_at(obj, "metadata.annotations"), SW_TRIGGERS_ANNOTATION));
    const char *kind = sw_json_str_at(obj, "kind");
    json_t *list = NULL;
    *out = NULL;
    *n = 0;
    if (!text)
        return 0;
    if (sw_json_parse(text, strlen(text), 8, 0, &list) < 0 || !json_is_array(list)) {
        json_decref(list);
        return sw_error_set(SW_EINVALID, "the %s annotation must be a JSON array of triggers",
                            SW_TRIGGERS_ANNOTATION);
    }
    if (json_array_size(list) > MAX_TRIGGERS) {
        json_decref(list);
        return sw_error_set(SW_EINVALID, "at most %d triggers", MAX_TRIGGERS);
    }
    sw_trigger *ts = sw_calloc(json_array_size(list) + 1, sizeof(*ts));
    size_t count = 0, i;
    json_t *e;
    int error = 0;
    json_array_foreach(list, i, e)
    {
        int r = sw_trigger_parse_entry(e, i, kind, sw_json_str_at(obj, "metadata.namespace"),
                                       &ts[count]);
        if (r < 0) {
            error = r;
            break;
        }
        if (r == 0)
            continue;
        for (size_t j = 0; j < count; j++)
            if (!strcmp(ts[j].field_path, ts[count].field_path)) {
                error = sw_error_set(SW_EINVALID, "duplicate triggers are not allowed (%.300s)",
                                     ts[count].field_path);
                break;
            }
        if (error < 0)
            break;
        count++;
    }
    json_decref(list);
    if (error < 0 || count == 0) {
        sw_free(ts);
        return error;
    }
    *out = ts;
    *n = count;
    return 0;
}

/* ---- applying ---- */

/* The container list t's path selects from. */
static json_t *container_list(const json_t *obj, const sw_trigger *t)
{
    char path[128];
    snprintf(path, sizeof(path), "%s.%s", sw_podspec_path(sw_json_str_at(obj, "kind")) ?: "spec",
             t->init ? "initContainers" : "containers");
    return sw_json_at(obj, path);
}

long sw_trigger_container(const json_t *obj, const sw_trigger *t)
{
    json_t *list = container_list(obj, t);
    if (t->index >= 0)
        return json_is_object(json_array_get(list, (size_t)t->index)) ? t->index : -1;
    size_t i;
    json_t *x;
    long found = -1;
    json_array_foreach(list, i, x)
    {
        if (sw_str_eq(sw_json_str_at(x, "name"), t->container))
            found = (long)i;
    }
    return found;
}

int sw_trigger_apply(json_t *obj, const sw_trigger *t, const char *image, char *old, size_t n)
{
    long at = sw_trigger_container(obj, t);
    json_t *c = at >= 0 ? json_array_get(container_list(obj, t), (size_t)at) : NULL;
    if (!json_is_object(c))
        return sw_error_set(SW_EINVALID, "no such container: %.300s", t->field_path);
    const char *now = sw_json_str_at(c, "image");
    if (*sw_ref_digest_of(image) && sw_str_eq(sw_ref_digest_of(now), sw_ref_digest_of(image)))
        return 0; /* the same image, whatever its repository is called here */
    if (old)
        sw_strlcpy(old, now ? now : "", n);
    json_object_set_new(c, "image", json_string(image));
    return 1;
}

/* The tag's image as <repository>@<digest>, from the stream cache; false when the tag has no
 * image yet (the trigger waits, as OpenShift's does). */
static bool resolve(sw_trigger_controller *tc, const sw_trigger *t, char *out, size_t n)
{
    char key[520];
    snprintf(key, sizeof(key), "%s/%s", t->ns, t->stream);
    json_t *s = sw_informer_get(tc->streams, key);
    bool ok = s && sw_imagestream_tag_image(s, t->tag, out, n);
    json_decref(s);
    return ok;
}

/* ---- the reconcile ---- */

/* The rollout notification of one container (rollouthook.h). */
static json_t *rollout_record(const json_t *obj, const sw_resource *res, const char *kind,
                              const sw_trigger *t, const char *old, const char *image)
{
    char av[400], now[32], tag[400];
    snprintf(av, sizeof(av), "%s%s%s", res->group, *res->group ? "/" : "", res->version);
    sw_time_format(sw_time_now(), now, sizeof(now));
    snprintf(tag, sizeof(tag), "%s:%s", t->stream, t->tag);
    return json_pack(
        "{s:s, s:s, s:{s:s, s:s, s:s, s:s, s:s}, s:s, s:s, s:s, s:s, s:{s:s, s:s, "
        "s:s}, s:s}",
        "apiVersion", "slipway.dev/v1", "kind", "RolloutNotification", "object", "apiVersion", av,
        "kind", kind, "namespace", sw_json_str_at(obj, "metadata.namespace") ?: "", "name",
        sw_json_str_at(obj, "metadata.name") ?: "", "uid",
        sw_json_str_at(obj, "metadata.uid") ?: "", "fieldPath", t->field_path, "container",
        t->index >= 0 ? "" : t->container, "oldImage", old, "newImage", image, "from", "kind",
        "ImageStreamTag", "namespace", t->ns, "name", tag, "time", now);
}

static void report(sw_trigger_controller *tc, const char *key, const json_t *obj, const char *msg)
{
    pthread_mutex_lock(&tc->mu);
    bool again = sw_str_eq(json_string_value(json_object_get(tc->reported, key)), msg);
    if (!again)
        json_object_set_new(tc->reported, key, json_string(msg));
    pthread_mutex_unlock(&tc->mu);
    if (!again)
        sw_event_record(tc->client, obj, "Warning", "InvalidImageTrigger", COMPONENT, msg);
}

static void forget(sw_trigger_controller *tc, const char *key)
{
    pthread_mutex_lock(&tc->mu);
    json_object_del(tc->reported, key);
    pthread_mutex_unlock(&tc->mu);
}

static int reconcile(void *arg, const char *key)
{
    sw_trigger_controller *tc = arg;
    const char *bar = strchr(key, '|');
    long k = bar ? strtol(key, NULL, 10) : -1;
    if (!bar || k < 0 || (size_t)k >= NKINDS)
        return 0;
    json_t *cached = sw_informer_get(tc->inf[k], bar + 1);
    /* the cache's objects are shared with the informer thread: never written, so a copy */
    json_t *obj = cached ? json_deep_copy(cached) : NULL;
    json_decref(cached);
    sw_trigger *ts = NULL;
    size_t n = 0;
    int error = 0;
    if (!obj || sw_json_at(obj, "metadata.deletionTimestamp")) {
        forget(tc, key);
        goto done;
    }
    if (!json_object_get(obj, "kind"))
        json_object_set_new(obj, "kind", json_string(kinds[k].kind));
    if (sw_triggers_parse(obj, &ts, &n) < 0) {
        char msg[700];
        snprintf(msg, sizeof(msg), "%s: %s", SW_TRIGGERS_ANNOTATION, sw_error_msg());
        report(tc, key, obj, msg);
        goto done;
    }
    /* two triggers on one container (an index and a name for it) would write it back and
     * forth: refused, as duplicate field paths are */
    for (size_t i = 0; i < n; i++)
        for (size_t j = i + 1; j < n; j++) {
            long a = sw_trigger_container(obj, &ts[i]), b = sw_trigger_container(obj, &ts[j]);
            if (a >= 0 && a == b && ts[i].init == ts[j].init) {
                char msg[1200];
                snprintf(msg, sizeof(msg),
                         "%s: duplicate triggers are not allowed: %s and %s update the same "
                         "container",
                         SW_TRIGGERS_ANNOTATION, ts[i].field_path, ts[j].field_path);
                report(tc, key, obj, msg);
                goto done;
            }
        }
    json_t *copy = json_deep_copy(obj), *records = json_array();
    int changed = 0;
    char applied[2048] = "";
    for (size_t i = 0; i < n; i++) {
        char image[1100], was[1100];
        if (ts[i].paused || !resolve(tc, &ts[i], image, sizeof(image)))
            continue;
        int r = sw_trigger_apply(copy, &ts[i], image, was, sizeof(was));
        if (r > 0 && tc->hook)
            json_array_append_new(
                records, rollout_record(obj, kinds[k].res, kinds[k].kind, &ts[i], was, image));
        if (r < 0) {
            char msg[700];
            snprintf(msg, sizeof(msg), "%s: %s", SW_TRIGGERS_ANNOTATION, sw_error_msg());
            report(tc, key, obj, msg);
            changed = 0;
            break;
        }
        if (r > 0)
            snprintf(applied + strlen(applied), sizeof(applied) - strlen(applied), "%s%s=%s",
                     changed++ ? ", " : "", ts[i].field_path, image);
    }
    if (changed && !json_equal(copy, obj)) {
        error = sw_client_update(tc->client, kinds[k].res,
                                 sw_json_str_at(obj, "metadata.namespace"), copy, NULL);
        if (error == 0) {
            sw_log(SW_LOG_INFO, "image trigger: %s %s: %s", kinds[k].kind, bar + 1, applied);
            forget(tc, key);
            size_t i;
            json_t *rec;
            json_array_foreach(records, i, rec) sw_rollout_hook_send(tc->hook, rec);
        } else if (error == SW_ENOTFOUND) {
            error = 0;
        }
    }
    json_decref(copy);
    json_decref(records);
done:
    sw_free(ts);
    json_decref(obj);
    return error;
}

/* ---- wake-ups ---- */

static void enqueue(sw_trigger_controller *tc, size_t k, const json_t *obj)
{
    char *name = sw_informer_key(obj);
    if (!name)
        return;
    char key[600];
    snprintf(key, sizeof(key), "%zu|%s", k, name);
    sw_controller_enqueue(tc->loop, key);
    sw_free(name);
}

static void obj_added(json_t *obj, void *p)
{
    handler *h = p;
    enqueue(h->tc, h->k, obj);
}

static void obj_changed(json_t *old, json_t *obj, void *p)
{
    handler *h = p;
    /* a resync (old == obj) changes nothing a stream change would not also bring */
    if (old != obj)
        enqueue(h->tc, h->k, obj);
}

static void stream_changed_obj(sw_trigger_controller *tc, const json_t *stream)
{
    char key[600];
    snprintf(key, sizeof(key), "%s/%s", sw_json_str_at(stream, "metadata.namespace") ?: "",
             sw_json_str_at(stream, "metadata.name") ?: "");
    for (size_t k = 0; k < NKINDS; k++) {
        json_t *users = sw_informer_by_index(tc->inf[k], "stream", key);
        size_t i;
        json_t *u;
        json_array_foreach(users, i, u) enqueue(tc, k, u);
        json_decref(users);
    }
}

static void stream_added(json_t *obj, void *p)
{
    stream_changed_obj(p, obj);
}

static void stream_changed(json_t *old, json_t *obj, void *p)
{
    stream_changed_obj(p, obj);
}

/* Index "stream": the <ns>/<stream> of each active trigger. The kind comes from the index
 * function's table position, as informer objects carry no kind. */
static json_t *index_for(const json_t *obj, const char *kind)
{
    json_t *copy =
        json_pack("{s:s, s:O}", "kind", kind, "metadata", json_object_get(obj, "metadata"));
    json_object_set(copy, "spec", json_object_get(obj, "spec"));
    sw_trigger *ts = NULL;
    size_t n = 0;
    json_t *out = NULL;
    if (sw_triggers_parse(copy, &ts, &n) == 0 && n) {
        out = json_array();
        for (size_t i = 0; i < n; i++) {
            char key[520];
            if (ts[i].paused)
                continue;
            snprintf(key, sizeof(key), "%s/%s", ts[i].ns, ts[i].stream);
            json_array_append_new(out, json_string(key));
        }
    }
    sw_free(ts);
    json_decref(copy);
    return out;
}

#define INDEX_FN(i)                                                                                \
    static json_t *index_##i(const json_t *obj)                                                    \
    {                                                                                              \
        return index_for(obj, kinds[i].kind);                                                      \
    }
INDEX_FN(0)
INDEX_FN(1)
INDEX_FN(2)
INDEX_FN(3)
INDEX_FN(4)
static const sw_index_fn index_fns[NKINDS] = {index_0, index_1, index_2, index_3, index_4};

int sw_trigger_controller_new(sw_trigger_controller **out, sw_client *c, sw_informers *f,
                              const sw_trigger_controller_opts *opts)
{
    sw_trigger_controller *tc = sw_calloc(1, sizeof(*tc));
    tc->client = c;
    tc->hook = opts ? opts->hook : NULL;
    tc->reported = json_object();
    pthread_mutex_init(&tc->mu, NULL);
    sw_controller_opts co = {.name = "image trigger controller",
                             .workers = opts && opts->workers > 0 ? opts->workers : 4,
                             .reconcile = reconcile,
                             .ctx = tc,
                             .queue = {.base_delay_ms = 1000, .max_delay_ms = 30000}};
    int error = sw_controller_new(&tc->loop, &co);
    if (error == 0) {
        tc->streams = sw_informers_get(f, &sw_res_imagestreams, false, NULL);
        sw_informer_handlers hs = {
            .on_add = stream_added, .on_update = stream_changed, .payload = tc};
        error = sw_informer_add_handlers(tc->streams, &hs);
    }
    for (size_t k = 0; error == 0 && k < NKINDS; k++) {
        tc->h[k] = (handler){tc, k};
        tc->inf[k] = sw_informers_get(f, kinds[k].res, false, NULL);
        sw_informer_handlers h = {
            .on_add = obj_added, .on_update = obj_changed, .payload = &tc->h[k]};
        error = sw_informer_add_handlers(tc->inf[k], &h);
        if (error == 0)
            error = sw_informer_add_index(tc->inf[k], "stream", index_fns[k]);
    }
    if (error < 0) {
        sw_trigger_controller_free(tc);
        return error;
    }
    *out = tc;
    return 0;
}

int sw_trigger_controller_start(sw_trigger_controller *tc)
{
    return sw_controller_start(tc->loop);
}

void sw_trigger_controller_free(sw_trigger_controller *tc)
{
    if (!tc)
        return;
    sw_controller_free(tc->loop);
    json_decref(tc->reported);
    pthread_mutex_destroy(&tc->mu);
    sw_free(tc);
}
