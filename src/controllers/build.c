/* build: the build controller (see build.h). Work-queue keys are "c:<ns>/<config>" (every
 * decision about one BuildConfig and its builds, serialized by the queue) and "b:<ns>/<build>"
 * (builds without a config). Decisions list builds through the API rather than the informer
 * cache, so a reconcile never acts on a phase older than one it wrote itself. Each running
 * build has a runner thread (build_run.c) that ships the builder's output to builds/<n>/log
 * and turns its exit into a phase. */
#include "controllers/build_int.h"

#include "controllers/build_process.h"
#include "kinds/build.h"
#include "kinds/imagestream.h"
#include "registry/ref.h"
#include "util/alloc.h"
#include "util/error.h"
#include "util/json.h"
#include "util/log.h"
#include "util/metric.h"
#include "util/str.h"
#include "util/time.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define RES_BUILDS (&sw_res_builds)
#define RES_CONFIGS (&sw_res_buildconfigs)

/* ---- small readers ---- */

static const char *meta_map(const json_t *obj, const char *map, const char *key)
{
    return json_string_value(
        json_object_get(json_object_get(json_object_get(obj, "metadata"), map), key));
}

long long sw_build_number(const json_t *build)
{
    const char *s = meta_map(build, "annotations", "openshift.io/build.number");
    int64_t n;
    if (s && sw_str_to_i64(s, &n) == 0)
        return (long long)n;
    return -1;
}

const char *sw_build__phase(const json_t *build)
{
    const char *p = sw_json_str_at(build, "status.phase");
    return p && *p ? p : "New";
}

bool sw_build__active(const char *phase)
{
    return sw_str_eq(phase, "Pending") || sw_str_eq(phase, "Running");
}

/* The BuildConfig a build belongs to, or NULL. */
static const char *config_of(const json_t *build)
{
    const char *bc = meta_map(build, "labels", "openshift.io/build-config.name");
    return bc ? bc : sw_json_str_at(build, "status.config.name");
}

void sw_build__queue_key(const json_t *build, char *out, size_t n)
{
    const char *ns = sw_json_str_at(build, "metadata.namespace");
    const char *bc = config_of(build);
    if (bc)
        snprintf(out, n, "c:%s/%s", ns ? ns : "", bc);
    else
        snprintf(out, n, "b:%s/%s", ns ? ns : "", sw_json_str_at(build, "metadata.name") ?: "");
}

/* Splits "<stream>:<tag>" (tag "latest" when absent) into out buffers. */
static bool split_istag(const char *name, char *stream, size_t ns, char *tag, size_t nt)
{
    const char *colon = name ? strrchr(name, ':') : NULL;
    if (!name || !*name || (colon && (colon == name || !colon[1])))
        return false;
    size_t len = colon ? (size_t)(colon - name) : strlen(name);
    if (len >= ns)
        return false;
    memcpy(stream, name, len);
    stream[len] = '\0';
    sw_strlcpy(tag, colon ? colon + 1 : "latest", nt);
    return true;
}

/* ---- the runPolicy decision ---- */

static int by_number(const void *a, const void *b)
{
    const json_t *x = *(json_t *const *)a, *y = *(json_t *const *)b;
    long long nx = sw_build_number(x), ny = sw_build_number(y);
    if (nx != ny)
        return nx < ny ? -1 : 1;
    return strcmp(sw_json_str_at(x, "metadata.name") ?: "",
                  sw_json_str_at(y, "metadata.name") ?: "");
}

void sw_build_runnable(const json_t *builds, const char *policy, json_t **start, json_t **cancel)
{
    size_t n = json_array_size(builds), nnew = 0, active = 0, i;
    json_t **news = sw_calloc(n ? n : 1, sizeof(*news)), *b;
    json_array_foreach(builds, i, b)
    {
        const char *phase = sw_build__phase(b);
        if (sw_build__active(phase))
            active++;
        else if (sw_str_eq(phase, "New") && !sw_json_bool_at(b, "status.cancelled"))
            news[nnew++] = b;
    }
    qsort(news, nnew, sizeof(*news), by_number);
    *start = json_array();
    *cancel = json_array();
    if (sw_str_eq(policy, "Parallel")) {
        for (i = 0; i < nnew; i++)
            json_array_append(*start, news[i]);
    } else if (sw_str_eq(policy, "SerialLatestOnly")) {
        for (i = 0; i + 1 < nnew; i++)
            json_array_append(*cancel, news[i]);
        if (!active && nnew)
            json_array_append(*start, news[nnew - 1]);
    } else if (!active && nnew) {
        json_array_append(*start, news[0]);
    }
    sw_free(news);
}

/* ---- runners table ---- */

sw_build__runner *sw_build__runner_reserve(sw_build_controller *ctl, const json_t *build)
{
    const char *ns = sw_json_str_at(build, "metadata.namespace");
    const char *name = sw_json_str_at(build, "metadata.name");
    sw_build__runner *r = NULL;
    if (!ns || !name)
        return NULL;
    pthread_mutex_lock(&ctl->mu);
    if (ctl->stopping)
        goto done;
    for (r = ctl->runners; r; r = r->next)
        if (!strcmp(r->ns, ns) && !strcmp(r->name, name))
            break;
    if (r) {
        r = NULL; /* already ours */
        goto done;
    }
    if (ctl->nrunners >= ctl->max_running) {
        /* the host's cap: stays New; runner_done requeues its config when one ends */
        char key[sizeof(r->queue_key)];
        sw_build__queue_key(build, key, sizeof(key));
        json_object_set_new(ctl->deferred, key, json_true());
        goto done;
    }
    r = sw_calloc(1, sizeof(*r));
    r->ctl = ctl;
    sw_strlcpy(r->ns, ns, sizeof(r->ns));
    sw_strlcpy(r->name, name, sizeof(r->name));
    snprintf(r->key, sizeof(r->key), "%s/%s", ns, name);
    sw_build__queue_key(build, r->queue_key, sizeof(r->queue_key));
    r->next = ctl->runners;
    ctl->runners = r;
    ctl->nrunners++;
done:
    pthread_mutex_unlock(&ctl->mu);
    return r;
}

void sw_build__runner_unlink(sw_build_controller *ctl, sw_build__runner *r)
{
    pthread_mutex_lock(&ctl->mu);
    for (sw_build__runner **p = &ctl->runners; *p; p = &(*p)->next) {
        if (*p == r) {
            *p = r->next;
            break;
        }
    }
    pthread_mutex_unlock(&ctl->mu);
}

void sw_build__runner_done(sw_build_controller *ctl, sw_build__runner *r)
{
    if (r->run)
        ctl->strategy->forget(ctl->strategy->self, r->run);
    sw_free(r);
    /* The slot is free first (a requeued build must find it), then the builds refused for the
     * cap are requeued; `requeuing` keeps the controller's free from freeing the queue under
     * us (it waits for both counts to reach 0). */
    pthread_mutex_lock(&ctl->mu);
    ctl->nrunners--;
    ctl->requeuing++;
    json_t *waiting = ctl->deferred;
    ctl->deferred = json_object();
    pthread_mutex_unlock(&ctl->mu);
    const char *key;
    json_t *v;
    json_object_foreach(waiting, key, v) sw_controller_enqueue(ctl->loop, key);
    json_decref(waiting);
    pthread_mutex_lock(&ctl->mu);
    ctl->requeuing--;
    pthread_cond_broadcast(&ctl->cond);
    pthread_mutex_unlock(&ctl->mu);
}

static bool owned(sw_build_controller *ctl, const json_t *build)
{
    const char *ns = sw_json_str_at(build, "metadata.namespace") ?: "";
    const char *name = sw_json_str_at(build, "metadata.name") ?: "";
    bool found = false;
    pthread_mutex_lock(&ctl->mu);
    for (sw_build__runner *r = ctl->runners; r && !found; r = r->next)
        found = !strcmp(r->ns, ns) && !strcmp(r->name, name);
    pthread_mutex_unlock(&ctl->mu);
    return found;
}

bool sw_build__stopping(sw_build_controller *ctl)
{
    pthread_mutex_lock(&ctl->mu);
    bool s = ctl->stopping;
    pthread_mutex_unlock(&ctl->mu);
    return s;
}

/* ---- status transitions ---- */

/* A JSON string of text that may not be UTF-8: invalid bytes become '?'. New reference. */
json_t *sw_build__text(const char *s)
{
    json_t *j = json_string(s);
    if (j)
        return j;
    char *copy = sw_strdup(s);
    for (char *p = copy; *p; p++)
        if ((unsigned char)*p >= 0x80)
            *p = '?';
    j = json_string(copy);
    sw_free(copy);
    return j;
}

static void set_completion(json_t *st, const sw_build__transition *t)
{
    char ts[32];
    int64_t end_us = t->end_us ? t->end_us : sw_time_now_micro(), start_us = t->start_us, secs;
    sw_time_format(end_us / 1000000, ts, sizeof(ts));
    json_object_set_new(st, "completionTimestamp", json_string(ts));
    const char *started = sw_json_str_at(st, "startTimestamp");
    if (!start_us && started && sw_time_parse(started, &secs) == 0)
        start_us = secs * 1000000;
    if (start_us && end_us >= start_us)
        json_object_set_new(st, "duration", json_integer((end_us - start_us) * 1000));
}

static bool failed_phase(const char *phase)
{
    return sw_str_eq(phase, "Failed") || sw_str_eq(phase, "Error");
}

/* A build the builder already finished through details: fills in what is missing. */
static bool complete_finished(json_t *st, const char *phase, const sw_build__transition *t)
{
    bool changed = false;
    if (!t->complete)
        return false;
    if (!json_object_get(st, "completionTimestamp") || !json_object_get(st, "duration")) {
        set_completion(st, t);
        changed = true;
    }
    if (t->snippet && *t->snippet && failed_phase(phase) && !sw_json_str_at(st, "logSnippet")) {
        json_object_set_new(st, "logSnippet", sw_build__text(t->snippet));
        changed = true;
    }
    return changed;
}

static void set_text(json_t *st, const char *key, const char *value)
{
    if (!value)
        return;
    if (*value)
        json_object_set_new(st, key, sw_build__text(value));
    else
        json_object_del(st, key);
}

/* Applies t to build b; false when it does not apply (nothing to write). */
static bool apply(json_t *b, const sw_build__transition *t)
{
    json_t *st = sw_json_obj_path(b, "status");
    const char *phase = sw_build__phase(b);
    char ts[32];
    if (sw_build_phase_terminal(phase))
        return complete_finished(st, phase, t);
    if ((t->only_active && !sw_build__active(phase)) || (t->only_new && strcmp(phase, "New")))
        return false;
    if (sw_str_eq(phase, t->phase) && !t->reason && !t->message && !t->output_ref)
        return false;
    bool keep = t->keep_reported && sw_json_str_at(st, "reason") && *sw_json_str_at(st, "reason");
    json_object_set_new(st, "phase", json_string(t->phase));
    if (!keep) {
        set_text(st, "reason", t->reason);
        set_text(st, "message", t->message);
    }
    if (t->output_ref)
        set_text(st, "outputDockerImageReference", t->output_ref);
    if (t->cancelled)
        json_object_set_new(st, "cancelled", json_true());
    if (t->start) {
        sw_time_format(t->start_us ? t->start_us / 1000000 : sw_time_now(), ts, sizeof(ts));
        json_object_set_new(st, "startTimestamp", json_string(ts));
    }
    if (t->complete)
        set_completion(st, t);
    if (t->snippet && *t->snippet)
        json_object_set_new(st, "logSnippet", sw_build__text(t->snippet));
    return true;
}

static const sw_metric_desc m_builds = {
    "slipway_builds_finished_total",
    "Builds that reached a final phase (Complete, Failed, Error, Cancelled), by phase and reason.",
    SW_METRIC_COUNTER,
    {"phase", "reason", "strategy"},
    NULL,
    0};
static const sw_metric_desc m_build_seconds = {
    "slipway_build_duration_seconds",
    "Build durations in seconds (status.duration: start to completion), by final phase.",
    SW_METRIC_HISTOGRAM,
    {"phase"},
    sw_metric_slow_buckets,
    12};
static const sw_metric_desc m_build_phases = {
    "slipway_build_phase_transitions_total",
    "Phases the build controller moved builds to (New -> Pending -> Running -> final).",
    SW_METRIC_COUNTER,
    {"phase"},
    NULL,
    0};

/* Counts a transition the controller wrote: saved is the build as stored, from its phase
 * before. */
static void count_transition(const char *from, const json_t *saved)
{
    const char *phase = sw_build__phase(saved);
    const char *labels[] = {phase};
    if (sw_str_eq(from, phase))
        return;
    sw_metric_add(&m_build_phases, labels, 1);
    if (!sw_build_phase_terminal(phase) || sw_build_phase_terminal(from))
        return;
    const char *fin[] = {phase, sw_json_str_at(saved, "status.reason") ?: "",
                         sw_json_str_at(saved, "spec.strategy.type") ?: ""};
    sw_metric_add(&m_builds, fin, 1);
    int64_t ns = 0;
    if (sw_json_int_at(saved, "status.duration", &ns))
        sw_metric_observe(&m_build_seconds, labels, (double)ns / 1e9);
}

int sw_build__transition_apply(sw_build_controller *ctl, const json_t *build,
                               const sw_build__transition *t, json_t **out)
{
    char ns[256], name[256];
    sw_strlcpy(ns, sw_json_str_at(build, "metadata.namespace") ?: "", sizeof(ns));
    sw_strlcpy(name, sw_json_str_at(build, "metadata.name") ?: "", sizeof(name));
    json_t *cur = json_deep_copy(build), *saved = NULL;
    int error = 0;
    for (int attempt = 0; attempt < 8; attempt++) {
        if (!apply(cur, t))
            break;
        error = sw_client_update_status(ctl->client, RES_BUILDS, ns, cur, &saved);
        if (error != SW_ECONFLICT)
            break;
        json_decref(cur);
        cur = NULL;
        if ((error = sw_client_get(ctl->client, RES_BUILDS, ns, name, &cur)) < 0)
            break;
    }
    if (error == 0 && saved) {
        char from[32];
        sw_strlcpy(from, sw_build__phase(build), sizeof(from));
        count_transition(from, saved);
    }
    if (error < 0)
        sw_log(SW_LOG_WARN, "build %s/%s: cannot set phase %s: %s", ns, name, t->phase,
               sw_error_msg());
    else if (saved)
        sw_log(SW_LOG_INFO, "build %s/%s: %s%s%s", ns, name, t->phase,
               t->reason && *t->reason ? " " : "", t->reason ? t->reason : "");
    if (out)
        *out = saved;
    else
        json_decref(saved);
    json_decref(cur);
    return error;
}

/* ---- resolving references before a start (openshift-api.md §5.2) ---- */

typedef struct plan {
    char *base;       /* the strategy's from as a pull spec, when it was a stream reference */
    char *output_ref; /* status.outputDockerImageReference */
    char *push_auth;  /* docker config.json from the push secret */
    char *pull_auth;
    char *insecure_base;     /* the base's registry host when its tag says importPolicy.insecure */
    const char *fail_reason; /* the build ends as Error */
    const char *wait_reason; /* the build stays New; retried later */
    char msg[700];
} plan;

static void plan_dispose(plan *p)
{
    sw_free(p->base);
    sw_free(p->output_ref);
    sw_free(p->push_auth);
    sw_free(p->pull_auth);
    sw_free(p->insecure_base);
}

/* p->insecure_base when tag tag of stream obj says importPolicy.insecure: the builder pulls
 * pull spec ref from that registry the way the tag was imported. */
static void tag_insecure(const json_t *obj, const char *tag, const char *ref, plan *p)
{
    sw_ref parsed;
    if (!p->insecure_base &&
        sw_json_bool_at(sw_imagestream_spec_tag(obj, tag), "importPolicy.insecure") &&
        sw_ref_parse(ref, &parsed) == 0)
        p->insecure_base = sw_strdup(parsed.registry);
}

/* A DockerImage base an ImageChange trigger put in (the tag's image): the tag it came from
 * (triggeredBy's fromRef) says whether it is pulled insecurely. */
static void base_insecure_from_trigger(sw_build_controller *ctl, const json_t *build,
                                       const char *image, plan *p)
{
    const json_t *ref = sw_json_at(json_array_get(sw_json_at(build, "spec.triggeredBy"), 0),
                                   "imageChangeBuild.fromRef");
    const char *ns = sw_json_str_at(ref, "namespace"), *name = sw_json_str_at(ref, "name");
    char stream[256], tag[256], key[600];
    if (!image || !sw_str_eq(sw_json_str_at(ref, "kind"), "ImageStreamTag") || !name ||
        !split_istag(name, stream, sizeof(stream), tag, sizeof(tag)))
        return;
    snprintf(key, sizeof(key), "%s/%s", ns && *ns ? ns : sw_json_str_at(build, "metadata.namespace") ?: "",
             stream);
    json_t *obj = sw_informer_get(ctl->streams, key);
    tag_insecure(obj, tag, image, p);
    json_decref(obj);
}

static int resolve_base(sw_build_controller *ctl, const json_t *build, plan *p)
{
    const json_t *from = sw_build_strategy_from(build);
    const char *kind = sw_json_str_at(from, "kind");
    const char *name = sw_json_str_at(from, "name");
    const char *ns = sw_json_str_at(from, "namespace");
    const sw_resource *r = sw_str_eq(kind, "ImageStreamTag")     ? &sw_res_imagestreamtags
                           : sw_str_eq(kind, "ImageStreamImage") ? &sw_res_imagestreamimages
                                                                 : NULL;
    json_t *obj = NULL;
    char stream[256], tag[256], spec[1024] = "";
    if (from && !r)
        base_insecure_from_trigger(ctl, build, name, p);
    if (!from || !r)
        return 0; /* no base, or a DockerImage pull spec used as is */
    if (!ns || !*ns)
        ns = sw_json_str_at(build, "metadata.namespace");
    int error = SW_ENOTFOUND;
    const char *ref = NULL;
    if (r == &sw_res_imagestreamtags &&
        split_istag(name, stream, sizeof(stream), tag, sizeof(tag))) {
        /* from the stream, as OpenShift's build controller does (LatestTaggedImage): a
         * reference tag has a pull spec but no image, so no ImageStreamTag to read */
        error = sw_client_get(ctl->client, &sw_res_imagestreams, ns, stream, &obj);
        json_t *head =
            json_array_get(json_object_get(sw_imagestream_status_tag(obj, tag), "items"), 0);
        if (head)
            sw_imagestream_pull_spec(obj, tag, head, spec, sizeof(spec));
        ref = spec;
        /* the tag was imported over plain HTTP or unverified TLS: the builder pulls it so too */
        tag_insecure(obj, tag, spec, p);
    } else if (r == &sw_res_imagestreamimages && name && *name) {
        error = sw_client_get(ctl->client, r, ns, name, &obj);
        ref = sw_json_str_at(obj, "image.dockerImageReference");
    }
    if ((error == SW_ENOTFOUND || error == 0) && (!ref || !*ref)) {
        p->wait_reason = "InvalidImageReference";
        snprintf(p->msg, sizeof(p->msg),
                 "Referenced image could not be resolved: %s %s/%s has no image yet; the build "
                 "starts once it has one",
                 kind, ns, name ? name : "");
        error = 0;
    } else if (error == 0) {
        p->base = sw_strdup(ref);
    }
    json_decref(obj);
    return error;
}

/* The output stream, created when missing (OpenShift waits for it; slipway creates it). */
static int output_stream(sw_build_controller *ctl, const char *ns, const char *stream, json_t **out)
{
    int error = sw_client_get(ctl->client, &sw_res_imagestreams, ns, stream, out);
    if (error != SW_ENOTFOUND)
        return error;
    json_t *s =
        json_pack("{s:s, s:s, s:{s:s, s:s}, s:{}}", "apiVersion", "image.openshift.io/v1", "kind",
                  "ImageStream", "metadata", "name", stream, "namespace", ns, "spec");
    error = sw_client_create(ctl->client, &sw_res_imagestreams, ns, s, out);
    json_decref(s);
    if (error == SW_EEXISTS)
        error = sw_client_get(ctl->client, &sw_res_imagestreams, ns, stream, out);
    return error;
}

static int resolve_output(sw_build_controller *ctl, const json_t *build, plan *p)
{
    const json_t *to = sw_json_at(build, "spec.output.to");
    const char *kind = sw_json_str_at(to, "kind");
    const char *name = sw_json_str_at(to, "name");
    const char *ns = sw_json_str_at(to, "namespace");
    char stream[256], tag[256];
    json_t *is = NULL;
    if (!to)
        return 0;
    if (!ns || !*ns)
        ns = sw_json_str_at(build, "metadata.namespace");
    if (sw_str_eq(kind, "DockerImage") && name && *name) {
        p->output_ref = sw_strdup(name);
        return 0;
    }
    if (!sw_str_eq(kind, "ImageStreamTag") ||
        !split_istag(name, stream, sizeof(stream), tag, sizeof(tag))) {
        p->fail_reason = "InvalidOutputReference";
        snprintf(p->msg, sizeof(p->msg),
                 "Output image could not be resolved: %s \"%s\" is not "
                 "a DockerImage or an ImageStreamTag <stream>:<tag>",
                 kind ? kind : "", name ? name : "");
        return 0;
    }
    int error = output_stream(ctl, ns, stream, &is);
    const char *repo = sw_json_str_at(is, "status.dockerImageRepository");
    if (error == SW_EINVALID || error == SW_ENOTFOUND) {
        /* a stream that cannot exist ends the build; a missing namespace may come later: both
         * say why instead of being retried without a word */
        snprintf(p->msg, sizeof(p->msg),
                 "Output image could not be resolved: image stream %s/%s cannot be created: %s", ns,
                 stream, sw_error_msg());
        if (error == SW_EINVALID)
            p->fail_reason = "InvalidOutputReference";
        else
            p->wait_reason = "InvalidOutputReference";
        error = 0;
    } else if (error == 0 && (!repo || !*repo)) {
        p->fail_reason = "InvalidOutputReference";
        snprintf(p->msg, sizeof(p->msg),
                 "Output image could not be resolved: image stream %s/%s has no "
                 "status.dockerImageRepository (the server runs without --image-registry); "
                 "push to a DockerImage output instead",
                 ns, stream);
    } else if (error == 0) {
        size_t n = strlen(repo) + strlen(tag) + 2;
        p->output_ref = sw_malloc(n);
        snprintf(p->output_ref, n, "%s:%s", repo, tag);
    }
    json_decref(is);
    return error;
}

/* A kubernetes.io/dockerconfigjson Secret's config.json, for --push-auth / --pull-auth. */
static int resolve_secret(sw_build_controller *ctl, const json_t *build, const char *path,
                          const char *what, char **out, plan *p)
{
    const char *name = sw_json_str_at(build, path);
    const char *ns = sw_json_str_at(build, "metadata.namespace");
    json_t *s = NULL;
    unsigned char *raw = NULL;
    size_t len = 0;
    if (!name || !*name)
        return 0;
    int error = sw_client_get(ctl->client, &sw_res_secrets, ns, name, &s);
    const char *type = sw_json_str_at(s, "type");
    const char *b64 =
        json_string_value(json_object_get(json_object_get(s, "data"), ".dockerconfigjson"));
    if (error == SW_ENOTFOUND) {
        p->wait_reason = "MissingPushSecret";
        snprintf(p->msg, sizeof(p->msg), "Missing %s secret: secret %s/%s not found", what, ns,
                 name);
        error = 0;
    } else if (error == 0 && (!sw_str_eq(type, "kubernetes.io/dockerconfigjson") || !b64 ||
                              sw_base64_decode(b64, strlen(b64), &raw, &len) < 0)) {
        p->fail_reason = "MissingPushSecret";
        snprintf(p->msg, sizeof(p->msg),
                 "Invalid %s secret: %s/%s must be of type kubernetes.io/dockerconfigjson with "
                 "a .dockerconfigjson key",
                 what, ns, name);
    } else if (error == 0) {
        *out = sw_strndup((const char *)raw, len);
    }
    sw_free(raw);
    json_decref(s);
    return error;
}

static int make_plan(sw_build_controller *ctl, const json_t *build, plan *p)
{
    char pull[64];
    snprintf(pull, sizeof(pull), "%s.pullSecret.name", sw_build_strategy_path(build));
    int error = resolve_base(ctl, build, p);
    if (error == 0 && !p->wait_reason)
        error = resolve_output(ctl, build, p);
    if (error == 0 && !p->wait_reason && !p->fail_reason)
        error = resolve_secret(ctl, build, "spec.output.pushSecret.name", "push", &p->push_auth, p);
    if (error == 0 && !p->wait_reason && !p->fail_reason)
        error = resolve_secret(ctl, build, pull, "pull", &p->pull_auth, p);
    return error;
}

/* ---- starting a build ---- */

static int mint_token(sw_build_controller *ctl, const char *ns, const char *name, char **out)
{
    sw_buf path = SW_BUF_INIT(2048);
    json_t *resp = NULL;
    sw_client_path(&path, RES_BUILDS, ns, name, "token");
    int error = sw_buf_error(&path);
    if (error == 0)
        error = sw_client_request(ctl->client, "POST", sw_buf_cstr(&path), NULL, NULL, NULL, &resp);
    const char *tok = sw_json_str_at(resp, "token");
    if (error == 0 && (!tok || !*tok))
        error = sw_error_set(SW_ERROR, "the server answered builds/%s/token without a token", name);
    if (error == 0)
        *out = sw_strdup(tok);
    json_decref(resp);
    sw_buf_dispose(&path);
    return error;
}

/* Writes the resolved base into the spec (a normal update), then phase Pending. *out: the
 * Pending build, NULL when it was no longer New. */
static int mark_pending(sw_build_controller *ctl, const json_t *build, const plan *p, json_t **out)
{
    json_t *cur = json_incref((json_t *)build), *next = NULL;
    int error = 0;
    *out = NULL;
    if (p->base) {
        json_t *copy = json_deep_copy(build);
        char path[64];
        snprintf(path, sizeof(path), "%s.from", sw_build_strategy_path(build));
        sw_json_set_path(copy, path,
                         json_pack("{s:s, s:s}", "kind", "DockerImage", "name", p->base));
        error = sw_client_update(ctl->client, RES_BUILDS, NULL, copy, &next);
        json_decref(copy);
        if (error < 0)
            goto done;
        json_decref(cur);
        cur = next;
    }
    sw_build__transition t = {.phase = "Pending",
                              .reason = "",
                              .message = "",
                              .only_new = true,
                              .output_ref = p->output_ref};
    error = sw_build__transition_apply(ctl, cur, &t, out);
done:
    json_decref(cur);
    return error;
}

static void fail_started(sw_build_controller *ctl, const json_t *build, const char *why)
{
    char msg[700];
    snprintf(msg, sizeof(msg), "cannot start the builder: %s", why);
    sw_build__transition t = {.phase = "Error",
                              .reason = "CannotCreateBuildPod",
                              .message = msg,
                              .only_active = true,
                              .complete = true};
    sw_build__transition_apply(ctl, build, &t, NULL);
}

/* Pending → token → builder → Running → runner thread. */
static int launch(sw_build_controller *ctl, const json_t *build, const plan *p)
{
    sw_build__runner *r = sw_build__runner_reserve(ctl, build);
    json_t *pending = NULL, *running = NULL;
    char *token = NULL;
    if (!r)
        return 0; /* stopping, or ours already */
    int error = mark_pending(ctl, build, p, &pending);
    if (error < 0 || !pending)
        goto fail;
    if ((error = mint_token(ctl, r->ns, r->name, &token)) < 0) {
        fail_started(ctl, pending, sw_error_msg());
        goto fail;
    }
    size_t ninsecure = 0;
    while (ctl->insecure && ctl->insecure[ninsecure])
        ninsecure++;
    const char **insecure = sw_calloc(ninsecure + 2, sizeof(*insecure));
    for (size_t i = 0; i < ninsecure; i++)
        insecure[i] = ctl->insecure[i];
    insecure[ninsecure] = p->insecure_base; /* NULL when there is none */
    sw_build_env env = {.server = ctl->server,
                        .ca_pem = ctl->ca,
                        .ca_len = ctl->ca_len,
                        .push_auth = p->push_auth,
                        .pull_auth = p->pull_auth,
                        .insecure_registries = insecure,
                        .backends = ctl->backends};
    error = ctl->strategy->start(ctl->strategy->self, pending, token, &env, &r->run);
    sw_free(insecure);
    memset(token, 0, strlen(token));
    if (error < 0) {
        fail_started(ctl, pending, sw_error_msg());
        goto fail;
    }
    r->start_us = sw_time_now_micro();
    r->start_ms = sw_time_mono_ms();
    int64_t deadline = 604800;
    if (sw_json_int_at(pending, "spec.completionDeadlineSeconds", &deadline) && deadline <= 0)
        deadline = 604800;
    r->deadline_ms = deadline > INT64_MAX / 1000 ? INT64_MAX / 1000 * 1000 : deadline * 1000;
    sw_build__transition t = {
        .phase = "Running", .start = true, .start_us = r->start_us, .only_active = true};
    sw_build__transition_apply(ctl, pending, &t, &running);
    if ((error = sw_build__runner_launch(ctl, r)) < 0) {
        fail_started(ctl, running ? running : pending, sw_error_msg());
        goto fail;
    }
    r = NULL;
fail:
    if (r) {
        sw_build__runner_unlink(ctl, r);
        sw_build__runner_done(ctl, r);
    }
    sw_free(token);
    json_decref(pending);
    json_decref(running);
    return error;
}

/* Resolves, then launches; *wait when the build must stay New for now. */
static int start_build(sw_build_controller *ctl, const json_t *build, bool *wait)
{
    plan p = {0};
    int error = make_plan(ctl, build, &p);
    if (error < 0)
        goto done;
    if (p.fail_reason) {
        sw_build__transition t = {.phase = "Error",
                                  .reason = p.fail_reason,
                                  .message = p.msg,
                                  .only_new = true,
                                  .complete = true};
        error = sw_build__transition_apply(ctl, build, &t, NULL);
    } else if (p.wait_reason) {
        *wait = true;
        if (!sw_str_eq(sw_json_str_at(build, "status.message"), p.msg)) {
            sw_build__transition t = {
                .phase = "New", .reason = p.wait_reason, .message = p.msg, .only_new = true};
            error = sw_build__transition_apply(ctl, build, &t, NULL);
        }
    } else {
        error = launch(ctl, build, &p);
    }
done:
    plan_dispose(&p);
    return error;
}

/* Finishes what needs no builder: a cancelled New build, and an active build with no builder
 * of ours (the controller restarted). True when b is finished (or now is). */
static bool sweep(sw_build_controller *ctl, const json_t *b)
{
    const char *phase = sw_build__phase(b);
    if (sw_str_eq(phase, "New") && sw_json_bool_at(b, "status.cancelled")) {
        sw_build__transition t = {.phase = "Cancelled",
                                  .reason = "CancelledBuild",
                                  .message = "The build was cancelled by the user.",
                                  .only_new = true,
                                  .complete = true};
        sw_build__transition_apply(ctl, b, &t, NULL);
        return true;
    }
    if (sw_build__active(phase) && !owned(ctl, b)) {
        sw_build__transition t = {
            .phase = "Error",
            .reason = "BuilderLost",
            .only_active = true,
            .complete = true,
            .message = "The builder process disappeared before the build finished (the "
                       "controller or the server restarted)"};
        sw_build__transition_apply(ctl, b, &t, NULL);
        return true;
    }
    return sw_build_phase_terminal(phase);
}

/* ---- history pruning ---- */

static int newest_first(const void *a, const void *b)
{
    return -by_number(a, b);
}

static void prune_set(sw_build_controller *ctl, const json_t *builds, bool complete, int64_t keep)
{
    size_t n = json_array_size(builds), m = 0, i;
    json_t **set = sw_calloc(n ? n : 1, sizeof(*set)), *b;
    json_array_foreach(builds, i, b)
    {
        const char *phase = sw_build__phase(b);
        if (complete ? sw_str_eq(phase, "Complete")
                     : sw_build_phase_terminal(phase) && !sw_str_eq(phase, "Complete"))
            set[m++] = b;
    }
    qsort(set, m, sizeof(*set), newest_first);
    for (i = keep < 0 ? 0 : (size_t)keep; i < m; i++) {
        const char *ns = sw_json_str_at(set[i], "metadata.namespace");
        const char *name = sw_json_str_at(set[i], "metadata.name");
        int error = sw_client_delete(ctl->client, RES_BUILDS, ns, name);
        if (error < 0 && error != SW_ENOTFOUND)
            sw_log(SW_LOG_WARN, "cannot prune build %s/%s: %s", ns, name, sw_error_msg());
        else
            sw_log(SW_LOG_INFO, "pruned build %s/%s", ns, name);
    }
    sw_free(set);
}

static void prune(sw_build_controller *ctl, const json_t *config, const json_t *builds)
{
    int64_t ok = 5, failed = 5;
    sw_json_int_at(config, "spec.successfulBuildsHistoryLimit", &ok);
    sw_json_int_at(config, "spec.failedBuildsHistoryLimit", &failed);
    prune_set(ctl, builds, true, ok);
    prune_set(ctl, builds, false, failed);
}

/* ---- triggers (openshift-api.md §4.3) ---- */

static int instantiate(sw_build_controller *ctl, const json_t *config, json_t *req)
{
    const char *ns = sw_json_str_at(config, "metadata.namespace");
    const char *name = sw_json_str_at(config, "metadata.name");
    sw_buf path = SW_BUF_INIT(2048);
    json_t *out = NULL;
    json_object_set_new(req, "kind", json_string("BuildRequest"));
    json_object_set_new(req, "apiVersion", json_string("build.openshift.io/v1"));
    json_object_set_new(req, "metadata", json_pack("{s:s, s:s}", "name", name, "namespace", ns));
    sw_client_path(&path, RES_CONFIGS, ns, name, "instantiate");
    int error = sw_buf_error(&path);
    if (error == 0)
        error = sw_client_request(ctl->client, "POST", sw_buf_cstr(&path), req, NULL, NULL, &out);
    if (error == 0)
        sw_log(SW_LOG_INFO, "buildconfig %s/%s: started %s (%s)", ns, name,
               sw_json_str_at(out, "metadata.name") ?: "?",
               sw_json_str_at(json_array_get(json_object_get(req, "triggeredBy"), 0), "message")
                   ?: "");
    json_decref(out);
    sw_buf_dispose(&path);
    return error;
}

/* The ImageStreamTag an ImageChange trigger follows: its own from, else the strategy's. */
static const json_t *trigger_from(const json_t *config, const json_t *trigger)
{
    const json_t *from = sw_json_at(trigger, "imageChange.from");
    if (!from || !sw_json_str_at(from, "name"))
        from = sw_build_strategy_from(config);
    return sw_str_eq(sw_json_str_at(from, "kind"), "ImageStreamTag") ? from : NULL;
}

static const char *ref_ns(const json_t *config, const json_t *from)
{
    const char *ns = sw_json_str_at(from, "namespace");
    return ns && *ns ? ns : sw_json_str_at(config, "metadata.namespace");
}

static bool same_ref(const json_t *config, const json_t *a, const json_t *b)
{
    return a && b && sw_str_eq(sw_json_str_at(a, "name"), sw_json_str_at(b, "name")) &&
           sw_str_eq(ref_ns(config, a), ref_ns(config, b));
}

/* The status.imageChangeTriggers entry for from (borrowed), or NULL. */
static json_t *trigger_status(const json_t *config, const json_t *from)
{
    size_t i;
    json_t *e;
    json_array_foreach(sw_json_at(config, "status.imageChangeTriggers"), i, e)
    {
        if (same_ref(config, json_object_get(e, "from"), from))
            return e;
    }
    return NULL;
}

/* The current image of an ImageStreamTag from the stream cache: pull spec (new string). */
static char *tag_image(sw_build_controller *ctl, const char *ns, const char *name)
{
    char stream[256], tag[256], key[600];
    if (!split_istag(name, stream, sizeof(stream), tag, sizeof(tag)) || !strchr(name, ':'))
        return NULL;
    snprintf(key, sizeof(key), "%s/%s", ns, stream);
    json_t *is = sw_informer_get(ctl->streams, key), *st;
    char *ref = NULL;
    size_t i;
    json_array_foreach(sw_json_at(is, "status.tags"), i, st)
    {
        if (!sw_str_eq(sw_json_str_at(st, "tag"), tag))
            continue;
        json_t *head = json_array_get(json_object_get(st, "items"), 0);
        const char *r = sw_json_str_at(head, "dockerImageReference");
        const char *id = sw_json_str_at(head, "image");
        if (r && *r)
            ref = sw_strdup(r);
        else if (id && *id)
            ref = sw_strdup(id);
        break;
    }
    json_decref(is);
    return ref;
}

/* Records lastTriggeredImageID for from in the config's status (conflicts retried). */
static int record_trigger(sw_build_controller *ctl, const json_t *config, const json_t *from,
                          const char *image)
{
    const char *ns = sw_json_str_at(config, "metadata.namespace");
    const char *name = sw_json_str_at(config, "metadata.name");
    char now[32];
    int error = 0;
    sw_time_format(sw_time_now(), now, sizeof(now));
    for (int attempt = 0; attempt < 8; attempt++) {
        json_t *cur = NULL;
        if ((error = sw_client_get(ctl->client, RES_CONFIGS, ns, name, &cur)) < 0)
            break;
        json_t *e = trigger_status(cur, from);
        if (!e) {
            json_t *list = sw_json_at(cur, "status.imageChangeTriggers");
            if (!json_is_array(list)) {
                list = json_array();
                sw_json_set_path(cur, "status.imageChangeTriggers", list);
            }
            e = json_pack("{s:{s:s, s:s}}", "from", "namespace", ref_ns(config, from), "name",
                          sw_json_str_at(from, "name"));
            json_array_append_new(list, e);
        }
        json_object_set_new(e, "lastTriggeredImageID", json_string(image));
        json_object_set_new(e, "lastTriggerTime", json_string(now));
        error = sw_client_update_status(ctl->client, RES_CONFIGS, ns, cur, NULL);
        json_decref(cur);
        if (error != SW_ECONFLICT)
            break;
    }
    return error;
}

/* One ImageChange trigger: a build when the tag's image differs from the last one triggered. */
static int image_trigger(sw_build_controller *ctl, const json_t *config, const json_t *trigger,
                         bool *fired)
{
    const json_t *from = trigger_from(config, trigger);
    if (!from || sw_json_bool_at(trigger, "imageChange.paused"))
        return 0;
    const char *ns = ref_ns(config, from), *name = sw_json_str_at(from, "name");
    char *image = tag_image(ctl, ns, name);
    const json_t *seen = trigger_status(config, from);
    int error = 0;
    if (!image || sw_ref_same_image(sw_json_str_at(seen, "lastTriggeredImageID"), image) ||
        sw_ref_same_image(sw_json_str_at(trigger, "imageChange.lastTriggeredImageID"), image))
        goto done;
    json_t *req = json_pack("{s:[{s:s, s:{s:s, s:{s:s, s:s, s:s}}}], s:{s:s, s:s}}", "triggeredBy",
                            "message", "Image change", "imageChangeBuild", "imageID", image,
                            "fromRef", "kind", "ImageStreamTag", "namespace", ns, "name", name,
                            "triggeredByImage", "kind", "DockerImage", "name", image);
    if (same_ref(config, from, sw_build_strategy_from(config)))
        json_object_set_new(req, "from",
                            json_pack("{s:s, s:s}", "kind", "DockerImage", "name", image));
    error = instantiate(ctl, config, req);
    json_decref(req);
    if (error == 0) {
        *fired = true;
        error = record_trigger(ctl, config, from, image);
    }
done:
    sw_free(image);
    return error;
}

static bool has_trigger(const json_t *config, const char *type)
{
    size_t i;
    json_t *t;
    json_array_foreach(sw_json_at(config, "spec.triggers"), i, t)
    {
        if (sw_str_eq(sw_json_str_at(t, "type"), type))
            return true;
    }
    return false;
}

static int run_triggers(sw_build_controller *ctl, const json_t *config)
{
    size_t i;
    json_t *t;
    bool fired = false;
    int error = 0, e;
    if (sw_str_eq(meta_map(config, "annotations", "openshift.io/build-config.paused"), "true"))
        return 0;
    json_array_foreach(sw_json_at(config, "spec.triggers"), i, t)
    {
        if (sw_str_eq(sw_json_str_at(t, "type"), "ImageChange") &&
            (e = image_trigger(ctl, config, t, &fired)) < 0)
            error = e;
    }
    int64_t last = -1;
    sw_json_int_at(config, "status.lastVersion", &last);
    if (!fired && last == 0 && has_trigger(config, "ConfigChange")) {
        /* lastVersion 0 is a precondition: a trigger that got there first wins. */
        json_t *req = json_pack("{s:[{s:s}], s:i}", "triggeredBy", "message",
                                "Build configuration change", "lastVersion", 0);
        e = instantiate(ctl, config, req);
        json_decref(req);
        if (e < 0 && e != SW_ECONFLICT)
            error = e;
    }
    return error;
}

/* ---- reconciling ---- */

static int list_builds(sw_build_controller *ctl, const char *ns, const char *config, json_t **out)
{
    char sel[400];
    json_t *list = NULL, *b;
    size_t i;
    snprintf(sel, sizeof(sel), "openshift.io/build-config.name=%s", config);
    int error = sw_client_list(ctl->client, RES_BUILDS, ns, sel, &list);
    if (error < 0)
        return error;
    *out = json_array();
    json_array_foreach(json_object_get(list, "items"), i, b)
    {
        if (!json_object_get(b, "metadata"))
            continue;
        if (!sw_json_str_at(b, "metadata.namespace"))
            sw_json_set_path(b, "metadata.namespace", json_string(ns));
        if (sw_str_eq(config_of(b), config))
            json_array_append(*out, b);
    }
    json_decref(list);
    return 0;
}

static const char *policy_of(const json_t *config, const json_t *builds)
{
    const char *p = sw_json_str_at(config, "spec.runPolicy");
    if (p)
        return p;
    p = meta_map(json_array_get(builds, json_array_size(builds) - 1), "labels",
                 "openshift.io/build.start-policy");
    return p ? p : "Serial";
}

static int start_all(sw_build_controller *ctl, const json_t *start, bool *wait)
{
    size_t i;
    json_t *b;
    int error = 0, e;
    json_array_foreach(start, i, b)
    {
        if (sw_build__stopping(ctl))
            break;
        if ((e = start_build(ctl, b, wait)) < 0)
            error = e;
    }
    return error;
}

static void cancel_queued(sw_build_controller *ctl, const json_t *cancel, const char *config)
{
    size_t i;
    json_t *b;
    char msg[400];
    snprintf(msg, sizeof(msg),
             "The build was cancelled: a newer build of %s is queued (runPolicy SerialLatestOnly)",
             config);
    json_array_foreach(cancel, i, b)
    {
        sw_build__transition t = {.phase = "Cancelled",
                                  .reason = "CancelledBuild",
                                  .message = msg,
                                  .only_new = true,
                                  .complete = true,
                                  .cancelled = true};
        sw_build__transition_apply(ctl, b, &t, NULL);
    }
}

/* Everything about one BuildConfig: triggers, lost builds, runPolicy, pruning. */
static int sync_config(sw_build_controller *ctl, const char *ns, const char *name, bool *wait)
{
    json_t *config = NULL, *builds = NULL, *live = json_array(), *start = NULL, *cancel = NULL;
    int error = sw_client_get(ctl->client, RES_CONFIGS, ns, name, &config), terr = 0;
    size_t i;
    json_t *b;
    if (error == SW_ENOTFOUND)
        error = 0;
    if (error < 0)
        goto done;
    if (config && !sw_build__stopping(ctl))
        terr = run_triggers(ctl, config);
    if ((error = list_builds(ctl, ns, name, &builds)) < 0)
        goto done;
    json_array_foreach(builds, i, b)
    {
        if (!sweep(ctl, b))
            json_array_append(live, b);
    }
    sw_build_runnable(live, policy_of(config, builds), &start, &cancel);
    cancel_queued(ctl, cancel, name);
    error = start_all(ctl, start, wait);
    if (config)
        prune(ctl, config, builds);
    if (error == 0)
        error = terr;
done:
    json_decref(config);
    json_decref(builds);
    json_decref(live);
    json_decref(start);
    json_decref(cancel);
    return error;
}

/* A build without a BuildConfig runs as soon as it is New. */
static int sync_build(sw_build_controller *ctl, const char *ns, const char *name, bool *wait)
{
    json_t *b = NULL;
    int error = sw_client_get(ctl->client, RES_BUILDS, ns, name, &b);
    if (error == SW_ENOTFOUND)
        return 0;
    if (error == 0 && !config_of(b) && !sweep(ctl, b) && sw_str_eq(sw_build__phase(b), "New"))
        error = start_build(ctl, b, wait);
    json_decref(b);
    return error;
}

static int reconcile(void *arg, const char *key)
{
    sw_build_controller *ctl = arg;
    char ns[256], name[256];
    const char *slash = strlen(key) > 2 && key[1] == ':' ? strchr(key + 2, '/') : NULL;
    bool wait = false;
    if (!slash || (size_t)(slash - key - 2) >= sizeof(ns))
        return 0;
    memcpy(ns, key + 2, (size_t)(slash - key - 2));
    ns[slash - key - 2] = '\0';
    sw_strlcpy(name, slash + 1, sizeof(name));
    int error =
        key[0] == 'c' ? sync_config(ctl, ns, name, &wait) : sync_build(ctl, ns, name, &wait);
    return error < 0 ? error : wait ? SW_RECONCILE_BACKOFF : 0;
}

/* ---- informer handlers ---- */

static void enqueue_config(sw_build_controller *ctl, const char *ns, const char *name)
{
    char key[600];
    snprintf(key, sizeof(key), "c:%s/%s", ns ? ns : "", name ? name : "");
    sw_controller_enqueue(ctl->loop, key);
}

static void build_changed(json_t *old, json_t *obj, void *payload)
{
    sw_build_controller *ctl = payload;
    char key[600];
    /* A finished build that stays finished changes nothing the controller decides. */
    if (old && old != obj && sw_build_phase_terminal(sw_build__phase(old)) &&
        sw_build_phase_terminal(sw_build__phase(obj)))
        return;
    sw_build__queue_key(obj, key, sizeof(key));
    sw_controller_enqueue(ctl->loop, key);
}

static void build_added(json_t *obj, void *payload)
{
    build_changed(NULL, obj, payload);
}

static void build_deleted(json_t *obj, void *payload)
{
    sw_build_controller *ctl = payload;
    const char *ns = sw_json_str_at(obj, "metadata.namespace") ?: "";
    const char *name = sw_json_str_at(obj, "metadata.name") ?: "";
    pthread_mutex_lock(&ctl->mu);
    for (sw_build__runner *r = ctl->runners; r; r = r->next)
        if (!strcmp(r->ns, ns) && !strcmp(r->name, name))
            r->deleted = true;
    pthread_mutex_unlock(&ctl->mu);
    if (config_of(obj))
        enqueue_config(ctl, ns, config_of(obj));
}

static void config_changed(json_t *old, json_t *obj, void *payload)
{
    enqueue_config(payload, sw_json_str_at(obj, "metadata.namespace"),
                   sw_json_str_at(obj, "metadata.name"));
}

static void config_added(json_t *obj, void *payload)
{
    config_changed(NULL, obj, payload);
}

/* Appends "ns/stream" for ref (an ImageStreamTag or ImageStreamImage reference seen from
 * namespace dflt_ns) to out. */
static void add_stream_of(json_t *out, const json_t *ref, const char *dflt_ns)
{
    const char *kind = sw_json_str_at(ref, "kind"), *name = sw_json_str_at(ref, "name");
    const char *rns = sw_json_str_at(ref, "namespace");
    if (!name || !(sw_str_eq(kind, "ImageStreamTag") || sw_str_eq(kind, "ImageStreamImage")))
        return;
    char key[600];
    snprintf(key, sizeof(key), "%s/%.*s",
             rns && *rns ? rns
             : dflt_ns   ? dflt_ns
                         : "",
             (int)strcspn(name, ":@"), name);
    json_array_append_new(out, json_string(key));
}

/* Index "stream" of BuildConfigs: the streams a config follows (its base and the streams of its
 * ImageChange triggers), as "ns/name". */
static json_t *config_streams(const json_t *config)
{
    const char *cns = sw_json_str_at(config, "metadata.namespace");
    json_t *out = json_array(), *t;
    size_t i;
    add_stream_of(out, sw_build_strategy_from(config), cns);
    json_array_foreach(sw_json_at(config, "spec.triggers"), i, t)
        add_stream_of(out, sw_json_at(t, "imageChange.from"), cns);
    return out;
}

/* Index "stream" of Builds: the stream of a build's base. */
static json_t *build_stream(const json_t *build)
{
    json_t *out = json_array();
    add_stream_of(out, sw_build_strategy_from(build), sw_json_str_at(build, "metadata.namespace"));
    return out;
}

/* A stream changed: configs that follow it, and New builds waiting for it. */
static void stream_changed(json_t *old, json_t *obj, void *payload)
{
    sw_build_controller *ctl = payload;
    const char *ns = sw_json_str_at(obj, "metadata.namespace");
    const char *is = sw_json_str_at(obj, "metadata.name");
    char key[600];
    size_t i;
    json_t *x;
    if (!ns || !is ||
        (old && old != obj &&
         json_equal(json_object_get(old, "status"), json_object_get(obj, "status"))))
        return;
    snprintf(key, sizeof(key), "%s/%s", ns, is);
    json_t *list = sw_informer_by_index(ctl->configs, "stream", key);
    json_array_foreach(list, i, x) enqueue_config(ctl, sw_json_str_at(x, "metadata.namespace"),
                                                  sw_json_str_at(x, "metadata.name"));
    json_decref(list);
    list = sw_informer_by_index(ctl->builds, "stream", key);
    json_array_foreach(list, i, x)
    {
        if (sw_str_eq(sw_build__phase(x), "New")) {
            sw_build__queue_key(x, key, sizeof(key));
            sw_controller_enqueue(ctl->loop, key);
        }
    }
    json_decref(list);
}

static void stream_added(json_t *obj, void *payload)
{
    stream_changed(NULL, obj, payload);
}

/* ---- lifecycle ---- */

static void copy_insecure(sw_build_controller *ctl, const char *const *list)
{
    size_t n = 0;
    while (list && list[n])
        n++;
    ctl->insecure = sw_calloc(n + 1, sizeof(char *));
    for (size_t i = 0; i < n; i++)
        ctl->insecure[i] = sw_strdup(list[i]);
}

static int make_strategy(sw_build_controller *ctl, const sw_build_controller_opts *o)
{
    if (o->strategy) {
        ctl->strategy = o->strategy;
        return 0;
    }
    const char *bin = o->builder_bin ? o->builder_bin : getenv("SW_BUILDER_BIN");
    sw_build_process_opts po = {.builder_bin = bin && *bin ? bin : NULL};
    ctl->own_strategy = true;
    return sw_build_process_strategy_new(&ctl->strategy, &po);
}

static int make_informers(sw_build_controller *ctl, sw_informers *f)
{
    sw_informer_handlers hb = {.on_add = build_added,
                               .on_update = build_changed,
                               .on_delete = build_deleted,
                               .payload = ctl};
    sw_informer_handlers hc = {.on_add = config_added, .on_update = config_changed, .payload = ctl};
    sw_informer_handlers hs = {.on_add = stream_added, .on_update = stream_changed, .payload = ctl};
    sw_informer_opts io = {.resync_ms = 300000};
    ctl->builds = sw_informers_get(f, RES_BUILDS, false, &io);
    ctl->configs = sw_informers_get(f, RES_CONFIGS, false, &io);
    ctl->streams = sw_informers_get(f, &sw_res_imagestreams, false, NULL);
    int error = sw_informer_add_handlers(ctl->builds, &hb);
    if (error == 0)
        error = sw_informer_add_handlers(ctl->configs, &hc);
    if (error == 0)
        error = sw_informer_add_handlers(ctl->streams, &hs);
    /* a stream's change reaches the configs and builds that follow it without a scan */
    if (error == 0)
        error = sw_informer_add_index(ctl->configs, "stream", config_streams);
    if (error == 0)
        error = sw_informer_add_index(ctl->builds, "stream", build_stream);
    return error;
}

int sw_build_controller_new(sw_build_controller **out, sw_client *c, const sw_kubeconfig *kc,
                            sw_informers *f, const sw_build_controller_opts *opts)
{
    sw_build_controller_opts o = {0};
    sw_build_controller *ctl = sw_calloc(1, sizeof(*ctl));
    size_t ca_len = 0;
    const char *ca = kc ? sw_kubeconfig_ca(kc, &ca_len) : NULL;
    const char *grace = getenv("SW_BUILD_KILL_GRACE_MS");
    int64_t g = 0;
    if (opts)
        o = *opts;
    ctl->client = c;
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    ctl->max_running = o.max_running > 0 ? o.max_running : cpus > 2 ? (int)(2 * cpus) : 4;
    ctl->deferred = json_object();
    ctl->grace_ms = o.kill_grace_ms > 0 ? o.kill_grace_ms : 10000;
    if (o.kill_grace_ms <= 0 && grace && sw_str_to_i64(grace, &g) == 0 && g > 0 && g < 3600000)
        ctl->grace_ms = (int)g;
    ctl->server = sw_strdup(kc ? sw_kubeconfig_server(kc) : sw_client_server(c));
    if (ca && ca_len) {
        ctl->ca = sw_strndup(ca, ca_len);
        ctl->ca_len = ca_len;
    }
    copy_insecure(ctl, o.insecure_registries);
    ctl->backends = o.backends ? sw_strdup(o.backends) : NULL;
    pthread_mutex_init(&ctl->mu, NULL);
    pthread_cond_init(&ctl->cond, NULL);
    sw_controller_opts co = {.name = "build controller",
                             .workers = o.workers > 0 ? o.workers : 2,
                             .reconcile = reconcile,
                             .ctx = ctl,
                             .queue = {.base_delay_ms = 200, .max_delay_ms = 30000}};
    int error = make_strategy(ctl, &o);
    if (error == 0)
        error = sw_controller_new(&ctl->loop, &co);
    if (error == 0)
        error = make_informers(ctl, f);
    if (error < 0) {
        sw_build_controller_free(ctl);
        return error;
    }
    *out = ctl;
    return 0;
}

int sw_build_controller_start(sw_build_controller *ctl)
{
    return sw_controller_start(ctl->loop);
}

void sw_build_controller_free(sw_build_controller *ctl)
{
    if (!ctl)
        return;
    pthread_mutex_lock(&ctl->mu);
    ctl->stopping = true;
    pthread_mutex_unlock(&ctl->mu);
    sw_controller_stop(ctl->loop);
    /* Runners see `stopping`, kill their builders and leave. */
    pthread_mutex_lock(&ctl->mu);
    while (ctl->nrunners > 0 || ctl->requeuing > 0)
        pthread_cond_wait(&ctl->cond, &ctl->mu);
    pthread_mutex_unlock(&ctl->mu);
    sw_controller_free(ctl->loop);
    json_decref(ctl->deferred);
    if (ctl->own_strategy && ctl->strategy && ctl->strategy->free)
        ctl->strategy->free(ctl->strategy->self);
    for (size_t i = 0; ctl->insecure && ctl->insecure[i]; i++)
        sw_free(ctl->insecure[i]);
    sw_free(ctl->insecure);
    sw_free(ctl->backends);
    sw_free(ctl->server);
    sw_free(ctl->ca);
    pthread_mutex_destroy(&ctl->mu);
    pthread_cond_destroy(&ctl->cond);
    sw_free(ctl);
}
