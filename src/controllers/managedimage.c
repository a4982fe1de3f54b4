/* managedimage: the ManagedImage controller (see managedimage.h). A reconcile of ns/name runs
 * in order: the owned ImageStream (create, adopt, put back its spec), the owned BuildConfig
 * (the same), the newest build (adopt its image when it completed), the registry check of the
 * image (every verifyIntervalSeconds, or at once when the stream's tag says it was deleted),
 * the inputs now (spec, base image digest, source commit), then one decision: Ready, wait for
 * the running build, wait out the backoff after a failure, or start one build. Status and
 * Events are written last, from what the steps found. */
#include "controllers/managedimage.h"

#include "controllers/events.h"
#include "client/informer.h"
#include "controllers/gitref.h"
#include "kinds/build.h"
#include "kinds/imagestream.h"
#include "kinds/managedimage.h"
#include "registry/ref.h"
#include "registry/dockercfg.h"
#include "util/alloc.h"
#include "util/buf.h"
#include "util/error.h"
#include "util/json.h"
#include "util/log.h"
#include "util/str.h"
#include "util/time.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define COMPONENT "slipway-managedimage-controller"
#define RETRY_UNAVAILABLE_MS 10000 /* registry unreachable: look again after this long */
#define OUTPUT_SECRET "spec.output.pushSecret.name"
#define BASE_SECRET "spec.strategy.dockerStrategy.pullSecret.name"
#define GIT_TIMEOUT_MS 10000 /* a git remote that does not answer in this long is unavailable */
#define GIT_PENDING_MAX 8    /* ls-remotes still hanging after their deadline, at most */

struct sw_mi_controller {
    sw_client *client;
    sw_registry *registry;
    bool own_registry;
    sw_informer *mis, *streams, *configs, *builds;
    sw_controller *loop;
    int64_t backoff_base_ms, backoff_max_ms;
    pthread_mutex_t mu;
    /* "ns/name" → {verified: ms, missing: digest, base: digest, baseAt: ms, rev, revAt} */
    json_t *memory;
};

/* What one reconcile found and decided. */
typedef struct rec {
    sw_mi_controller *m;
    const char *key, *ns, *name;
    json_t *mi;     /* as cached */
    json_t *status; /* the status being written (a copy) */
    char stream[256], tag[256];
    json_t *stream_obj;  /* the owned stream, when there is one */
    json_t *bc;          /* the owned BuildConfig */
    const char *blocked; /* a reason nothing can proceed (an object owned by someone else) */
    char blocked_msg[512];
    int64_t next_ms;    /* look again after this long; INT64_MAX: only on a change */
    bool verify_now;    /* the stream says the image was deleted */
    bool registry_down; /* this pass's verification could not reach the registry */
} rec;

int64_t sw_mi_backoff_ms(int failures, bool lost, int64_t base, int64_t max)
{
    if (failures <= 0 || (lost && failures == 1))
        return 0;
    int64_t d = base;
    for (int i = 1; i < failures && d < max; i++)
        d *= 2;
    return d < max ? d : max;
}

static void requeue(rec *r, int64_t ms)
{
    if (ms < 0)
        ms = 0;
    if (ms < r->next_ms)
        r->next_ms = ms;
}

/* ---- per-ManagedImage memory ---- */

static int64_t mem_int(sw_mi_controller *m, const char *key, const char *field)
{
    pthread_mutex_lock(&m->mu);
    json_int_t v = json_integer_value(json_object_get(json_object_get(m->memory, key), field));
    pthread_mutex_unlock(&m->mu);
    return (int64_t)v;
}

/* A copy of the string field into out ("" when unset). */
static void mem_str(sw_mi_controller *m, const char *key, const char *field, char *out, size_t n)
{
    pthread_mutex_lock(&m->mu);
    const char *s = json_string_value(json_object_get(json_object_get(m->memory, key), field));
    sw_strlcpy(out, s ? s : "", n);
    pthread_mutex_unlock(&m->mu);
}

/* Sets field (v stolen; NULL deletes it). */
static void mem_set(sw_mi_controller *m, const char *key, const char *field, json_t *v)
{
    pthread_mutex_lock(&m->mu);
    json_t *e = json_object_get(m->memory, key);
    if (!e) {
        e = json_object();
        json_object_set_new(m->memory, key, e);
    }
    if (v)
        json_object_set_new(e, field, v);
    else
        json_object_del(e, field);
    pthread_mutex_unlock(&m->mu);
}

static void mem_forget(sw_mi_controller *m, const char *key)
{
    pthread_mutex_lock(&m->mu);
    json_object_del(m->memory, key);
    pthread_mutex_unlock(&m->mu);
}

/* ---- small readers ---- */

static const char *ann(const json_t *obj, const char *key)
{
    return json_string_value(json_object_get(sw_json_at(obj, "metadata.annotations"), key));
}

static json_t *owner_ref(const json_t *mi)
{
    return json_pack("{s:s, s:s, s:s, s:s, s:b, s:b}", "apiVersion", SW_MI_API_VERSION, "kind",
                     SW_MI_KIND, "name", sw_json_str_at(mi, "metadata.name"), "uid",
                     sw_json_str_at(mi, "metadata.uid") ?: "", "controller", 1,
                     "blockOwnerDeletion", 1);
}

/* The ownerReference with controller: true, or NULL. */
static const json_t *controller_of(const json_t *obj)
{
    size_t i;
    json_t *ref;
    json_array_foreach(sw_json_at(obj, "metadata.ownerReferences"), i, ref)
    {
        if (sw_json_bool_at(ref, "controller"))
            return ref;
    }
    return NULL;
}

static void event(rec *r, const char *type, const char *reason, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void event(rec *r, const char *type, const char *reason, const char *fmt, ...)
{
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    sw_event_record(r->m->client, r->mi, type, reason, COMPONENT, msg);
}

/* ---- conditions ---- */

static json_t *find_cond(json_t *status, const char *type)
{
    size_t i;
    json_t *c;
    json_array_foreach(json_object_get(status, "conditions"), i, c)
    {
        if (sw_str_eq(sw_json_str_at(c, "type"), type))
            return c;
    }
    return NULL;
}

/* Sets condition type; lastTransitionTime moves only when status does. */
static void set_cond(rec *r, const char *type, const char *status, const char *reason,
                     const char *message)
{
    char now[32];
    int64_t gen = 0;
    sw_json_int_at(r->mi, "metadata.generation", &gen);
    json_t *conds = json_object_get(r->status, "conditions");
    if (!json_is_array(conds)) {
        conds = json_array();
        json_object_set_new(r->status, "conditions", conds);
    }
    json_t *c = find_cond(r->status, type);
    const char *since = NULL;
    if (c && sw_str_eq(sw_json_str_at(c, "status"), status))
        since = sw_json_str_at(c, "lastTransitionTime");
    sw_time_format(sw_time_now(), now, sizeof(now));
    json_t *nc =
        json_pack("{s:s, s:s, s:s, s:s, s:s, s:I}", "type", type, "status", status, "reason",
                  reason, "message", message ? message : "", "lastTransitionTime",
                  since ? since : now, "observedGeneration", (json_int_t)gen);
    if (c) {
        json_object_update(c, nc);
        json_decref(nc);
    } else {
        json_array_append_new(conds, nc);
    }
}

/* ---- the registry ---- */

/* The credentials of the dockerconfigjson Secret the ManagedImage names at path (the output's
 * pushSecret, the base's pullSecret); NULL when none or unreadable. */
static sw_creds *secret_creds(rec *r, const char *path)
{
    const char *secret = sw_json_str_at(r->mi, path);
    json_t *s = NULL;
    sw_creds *c = NULL;
    unsigned char *raw = NULL;
    size_t len = 0;
    if (!secret || !*secret || sw_client_get(r->m->client, &sw_res_secrets, r->ns, secret, &s) < 0)
        goto done;
    const char *b64 =
        json_string_value(json_object_get(json_object_get(s, "data"), ".dockerconfigjson"));
    if (b64 && sw_base64_decode(b64, strlen(b64), &raw, &len) == 0 && sw_creds_new(&c) == 0 &&
        sw_creds_add_secret(c, "kubernetes.io/dockerconfigjson", (const char *)raw, len) < 0) {
        sw_creds_free(c);
        c = NULL;
    }
done:
    sw_free(raw);
    json_decref(s);
    return c;
}

/* HEAD of pull spec ref with the credentials of the Secret at secret_path: 0 (digest set when
 * wanted), SW_ENOTFOUND, or another error. */
static int head(rec *r, const char *ref, const char *secret_path, char digest[80])
{
    sw_ref parsed;
    char d[80];
    int error = sw_ref_parse(ref, &parsed);
    if (error < 0)
        return error;
    sw_creds *creds = secret_creds(r, secret_path);
    sw_registry_call call = {.creds = creds};
    error = sw_registry_head_manifest(r->m->registry, &call, &parsed, d, NULL, NULL);
    sw_creds_free(creds);
    if (error == 0 && digest)
        sw_strlcpy(digest, d, 80);
    return error;
}

/* Asks the registry whether latestImage still exists when it is due. */
static void verify(rec *r)
{
    const char *img = sw_json_str_at(r->status, "latestImage");
    char missing[80];
    if (!img || !*img)
        return;
    mem_str(r->m, r->key, "missing", missing, sizeof(missing));
    if (sw_str_eq(missing, sw_ref_digest_of(img)))
        return; /* known gone: a rebuild is on its way */
    int64_t interval = sw_mi_verify_interval(r->mi) * 1000, now = sw_time_mono_ms();
    int64_t last = mem_int(r->m, r->key, "verified");
    if (!r->verify_now && last && (interval == 0 || now - last < interval)) {
        if (interval)
            requeue(r, last + interval - now);
        return;
    }
    if (!r->verify_now && !last && interval == 0) {
        mem_set(r->m, r->key, "verified", json_integer(now)); /* notifications only */
        return;
    }
    int error = head(r, img, OUTPUT_SECRET, NULL);
    if (error == SW_ENOTFOUND) {
        mem_set(r->m, r->key, "missing", json_string(sw_ref_digest_of(img)));
        event(r, "Warning", "ImageMissing", "the image %s is gone from the registry: rebuilding",
              img);
    } else if (error < 0) {
        char msg[600];
        snprintf(msg, sizeof(msg), "cannot ask the registry about %s: %s", img, sw_error_msg());
        set_cond(r, "ImageAvailable", "Unknown", "RegistryUnavailable", msg);
        r->registry_down = true;
        requeue(r, RETRY_UNAVAILABLE_MS);
    } else {
        mem_set(r->m, r->key, "verified", json_integer(now));
        if (interval)
            requeue(r, interval);
    }
}

/* ---- the owned ImageStream ---- */

/* Records latestImage as the stream's tag (the stream was recreated or its tag moved). */
static int put_tag(rec *r, const char *img)
{
    json_t *ism = json_pack("{s:s, s:s, s:{s:s, s:s}, s:s, s:{s:{s:s}, s:s}}", "apiVersion",
                            "image.openshift.io/v1", "kind", "ImageStreamMapping", "metadata",
                            "name", r->stream, "namespace", r->ns, "tag", r->tag, "image",
                            "metadata", "name", sw_ref_digest_of(img), "dockerImageReference", img);
    int error = sw_client_create(r->m->client, &sw_res_imagestreammappings, r->ns, ism, NULL);
    json_decref(ism);
    return error;
}

/* Takes obj (a stream or BuildConfig) as ours: true when it is (adopting one without a
 * controller); false with r->blocked set when another controller owns it. */
static bool claim(rec *r, const sw_resource *res, const char *what, json_t **obj)
{
    const json_t *ctl = controller_of(*obj);
    const char *uid = sw_json_str_at(r->mi, "metadata.uid");
    if (ctl && sw_str_eq(sw_json_str_at(ctl, "uid"), uid))
        return true;
    if (ctl) {
        r->blocked = "OwnedElsewhere";
        snprintf(r->blocked_msg, sizeof(r->blocked_msg),
                 "%s %s is controlled by %s %s: delete it, or give the ManagedImage another "
                 "output",
                 what, sw_json_str_at(*obj, "metadata.name") ?: "", sw_json_str_at(ctl, "kind"),
                 sw_json_str_at(ctl, "name"));
        return false;
    }
    json_t *copy = json_deep_copy(*obj), *saved = NULL;
    json_t *refs = sw_json_at(copy, "metadata.ownerReferences");
    if (!json_is_array(refs)) {
        refs = json_array();
        sw_json_set_path(copy, "metadata.ownerReferences", refs);
    }
    json_array_append_new(refs, owner_ref(r->mi));
    int error = sw_client_update(r->m->client, res, r->ns, copy, &saved);
    json_decref(copy);
    if (error < 0) {
        requeue(r, 1000);
        return false;
    }
    event(r, "Normal", "Adopted", "adopted %s %s", what, sw_json_str_at(saved, "metadata.name"));
    json_decref(*obj);
    *obj = saved;
    return true;
}

/* The cached object ns/name of inf, else the API's (the cache may not have seen our own
 * create yet); NULL when there is none. */
static int lookup(rec *r, sw_informer *inf, const sw_resource *res, const char *name, json_t **out)
{
    char key[600];
    snprintf(key, sizeof(key), "%s/%s", r->ns, name);
    *out = sw_informer_get(inf, key);
    if (*out)
        return 0;
    int error = sw_client_get(r->m->client, res, r->ns, name, out);
    if (error == SW_ENOTFOUND) {
        *out = NULL;
        return 0;
    }
    return error;
}

/* Whether img is in this stream's repository (<registry>/<ns>/<stream>): after the output was
 * renamed, the old stream's image is not put into the new stream. */
static bool same_repository(const rec *r, const char *img)
{
    sw_ref ref;
    char want[600];
    snprintf(want, sizeof(want), "%s/%s", r->ns, r->stream);
    return sw_ref_parse(img, &ref) == 0 && !strcmp(ref.repository, want);
}

static int ensure_stream(rec *r)
{
    json_t *s = NULL;
    int error = lookup(r, r->m->streams, &sw_res_imagestreams, r->stream, &s);
    if (error < 0)
        return error;
    const char *img = sw_json_str_at(r->status, "latestImage");
    if (!s) {
        json_t *obj = json_pack("{s:s, s:s, s:{s:s, s:s, s:[o]}, s:{s:{s:b}}}", "apiVersion",
                                "image.openshift.io/v1", "kind", "ImageStream", "metadata", "name",
                                r->stream, "namespace", r->ns, "ownerReferences", owner_ref(r->mi),
                                "spec", "lookupPolicy", "local", 0);
        error = sw_client_create(r->m->client, &sw_res_imagestreams, r->ns, obj, &s);
        json_decref(obj);
        if (error < 0)
            return error;
        if (img && *img && same_repository(r, img) && head(r, img, OUTPUT_SECRET, NULL) == 0 &&
            put_tag(r, img) == 0) {
            mem_set(r->m, r->key, "verified", json_integer(sw_time_mono_ms()));
            event(r, "Normal", "Recreated",
                  "recreated ImageStream %s with tag %s at %s (the image is still in the "
                  "registry: no rebuild)",
                  r->stream, r->tag, img);
        } else {
            event(r, "Normal", "Created", "created ImageStream %s", r->stream);
        }
        r->stream_obj = s;
        return 0;
    }
    if (!claim(r, &sw_res_imagestreams, "ImageStream", &s)) {
        json_decref(s);
        return 0;
    }
    /* the stream's spec is the ManagedImage's: its tag comes from builds, so no spec tag may
     * redirect it and no dockerImageRepository may stand in for it */
    size_t ntags = json_array_size(sw_json_at(s, "spec.tags"));
    const char *repo = sw_json_str_at(s, "spec.dockerImageRepository");
    if (ntags || (repo && *repo)) {
        sw_buf names = SW_BUF_INIT(1024);
        size_t i;
        json_t *t;
        json_array_foreach(sw_json_at(s, "spec.tags"), i, t)
            sw_buf_printf(&names, "%s%s", i ? ", " : "", sw_json_str_at(t, "name") ?: "");
        json_t *copy = json_deep_copy(s), *saved = NULL;
        json_object_set_new(json_object_get(copy, "spec"), "tags", json_array());
        json_object_del(json_object_get(copy, "spec"), "dockerImageRepository");
        error = sw_client_update(r->m->client, &sw_res_imagestreams, r->ns, copy, &saved);
        if (error == 0) {
            event(r, "Normal", "Reverted",
                  "ImageStream %s: removed spec.tags [%s]%s (the ManagedImage's builds fill "
                  "tag %s)",
                  r->stream, sw_buf_cstr(&names), repo && *repo ? " and dockerImageRepository" : "",
                  r->tag);
            json_decref(s);
            s = saved;
        }
        json_decref(copy);
        sw_buf_dispose(&names);
        if (error < 0) {
            json_decref(s);
            return error;
        }
    }
    /* a tag condition saying the image was deleted from the registry: verify now */
    const json_t *st = sw_imagestream_status_tag(s, r->tag);
    const json_t *cond = json_array_get(json_object_get(st, "conditions"), 0);
    if (img && sw_str_eq(sw_json_str_at(cond, "reason"), "NotFound") &&
        strstr(sw_json_str_at(cond, "message") ?: "", sw_ref_digest_of(img)))
        r->verify_now = true;
    r->stream_obj = s;
    return 0;
}

/* After the build decision: the tag shows latestImage, unless a build is about to move it. */
static void check_tag(rec *r, bool building)
{
    const char *img = sw_json_str_at(r->status, "latestImage");
    char missing[80];
    if (!r->stream_obj || !img || !*img || building || !same_repository(r, img))
        return;
    mem_str(r->m, r->key, "missing", missing, sizeof(missing));
    if (sw_str_eq(missing, sw_ref_digest_of(img)))
        return;
    const json_t *st = sw_imagestream_status_tag(r->stream_obj, r->tag);
    const char *now = sw_json_str_at(json_array_get(json_object_get(st, "items"), 0), "image");
    if (sw_str_eq(now, sw_ref_digest_of(img)))
        return;
    /* the cache may be behind the builder's own ImageStreamMapping: ask the server */
    json_t *fresh = NULL;
    if (sw_client_get(r->m->client, &sw_res_imagestreams, r->ns, r->stream, &fresh) < 0)
        return;
    st = sw_imagestream_status_tag(fresh, r->tag);
    now = sw_json_str_at(json_array_get(json_object_get(st, "items"), 0), "image");
    if (!sw_str_eq(now, sw_ref_digest_of(img)) && put_tag(r, img) == 0)
        event(r, "Normal", "Reverted", "ImageStream %s: tag %s pointed at %s; put back %s",
              r->stream, r->tag, now ? now : "nothing", img);
    json_decref(fresh);
}

/* ---- the owned BuildConfig ---- */

static int ensure_bc(rec *r)
{
    json_t *bc = NULL, *want = sw_mi_bc_spec(r->mi);
    int error = lookup(r, r->m->configs, &sw_res_buildconfigs, r->name, &bc);
    if (error < 0)
        goto done;
    char gen[24];
    int64_t g = 0;
    sw_json_int_at(r->mi, "metadata.generation", &g);
    snprintf(gen, sizeof(gen), "%lld", (long long)g);
    if (!bc) {
        json_t *obj = json_pack("{s:s, s:s, s:{s:s, s:s, s:{s:s}, s:[o]}, s:O}", "apiVersion",
                                "build.openshift.io/v1", "kind", "BuildConfig", "metadata", "name",
                                r->name, "namespace", r->ns, "annotations", SW_MI_ANN_GENERATION,
                                gen, "ownerReferences", owner_ref(r->mi), "spec", want);
        error = sw_client_create(r->m->client, &sw_res_buildconfigs, r->ns, obj, &bc);
        json_decref(obj);
        goto done;
    }
    if (!claim(r, &sw_res_buildconfigs, "BuildConfig", &bc))
        goto done;
    if (!json_equal(json_object_get(bc, "spec"), want)) {
        sw_buf fields = SW_BUF_INIT(1024);
        const char *k;
        json_t *v;
        json_t *have = json_object_get(bc, "spec");
        json_object_foreach(want, k, v)
        {
            if (!sw_json_same(json_object_get(have, k), v))
                sw_buf_printf(&fields, "%sspec.%s", *sw_buf_cstr(&fields) ? ", " : "", k);
        }
        json_object_foreach(have, k, v)
        {
            if (!json_object_get(want, k))
                sw_buf_printf(&fields, "%sspec.%s", *sw_buf_cstr(&fields) ? ", " : "", k);
        }
        /* the BuildConfig was written for an older generation: the ManagedImage changed, this
         * is an update; for this one, somebody else edited it: a revert */
        bool update = !sw_str_eq(ann(bc, SW_MI_ANN_GENERATION), gen);
        json_t *copy = json_deep_copy(bc), *saved = NULL;
        json_object_set(copy, "spec", want);
        json_object_set_new(sw_json_obj_path(copy, "metadata.annotations"), SW_MI_ANN_GENERATION,
                            json_string(gen));
        error = sw_client_update(r->m->client, &sw_res_buildconfigs, r->ns, copy, &saved);
        json_decref(copy);
        if (error == 0 && update) {
            event(r, "Normal", "Updated", "BuildConfig %s: %s set from generation %s", r->name,
                  sw_buf_cstr(&fields), gen);
            json_decref(bc);
            bc = saved;
        } else if (error == 0) {
            event(r, "Normal", "Reverted",
                  "BuildConfig %s: put back %s as the ManagedImage "
                  "says",
                  r->name, sw_buf_cstr(&fields));
            json_decref(bc);
            bc = saved;
        }
        sw_buf_dispose(&fields);
    }
done:
    json_decref(want);
    if (error < 0) {
        json_decref(bc);
        bc = NULL;
    }
    r->bc = bc;
    return error;
}

/* ---- inputs ---- */

typedef struct inputs {
    char spec_hash[80];
    char base[80]; /* digest, "" when unknown or not followed */
    char rev[41];  /* git commit, "" when unknown */
} inputs;

/* The base image's digest now: an ImageStreamTag's newest image, a DockerImage's HEAD (at
 * most once per verify interval), an ImageStreamImage's own digest. */
static void resolve_base(rec *r, char out[80])
{
    const json_t *from = sw_json_at(r->mi, "spec.strategy.dockerStrategy.from");
    const char *kind = sw_json_str_at(from, "kind"), *name = sw_json_str_at(from, "name");
    out[0] = '\0';
    if (!from || !name || !sw_mi_rebuild_on_base(r->mi))
        return;
    if (sw_str_eq(kind, "ImageStreamTag")) {
        char stream[256], tag[256], key[600];
        if (sw_imagestream_split_tag_name(name, stream, sizeof(stream), tag, sizeof(tag)) < 0)
            return;
        const char *ns = sw_json_str_at(from, "namespace");
        snprintf(key, sizeof(key), "%s/%s", ns && *ns ? ns : r->ns, stream);
        json_t *s = sw_informer_get(r->m->streams, key);
        const json_t *st = sw_imagestream_status_tag(s, tag);
        sw_strlcpy(out,
                   sw_json_str_at(json_array_get(json_object_get(st, "items"), 0), "image") ?: "",
                   80);
        json_decref(s);
    } else if (sw_str_eq(kind, "ImageStreamImage")) {
        const char *at = strchr(name, '@');
        sw_strlcpy(out, at ? at + 1 : "", 80);
    } else if (sw_str_eq(kind, "DockerImage")) {
        if (strchr(name, '@')) {
            sw_strlcpy(out, sw_ref_digest_of(name), 80);
            return;
        }
        int64_t interval = sw_mi_verify_interval(r->mi) * 1000, now = sw_time_mono_ms();
        int64_t at = mem_int(r->m, r->key, "baseAt");
        char was_for[1024];
        mem_str(r->m, r->key, "baseFor", was_for, sizeof(was_for));
        mem_str(r->m, r->key, "base", out, 80);
        if (strcmp(was_for, name)) { /* the spec names another base now: resolve it */
            at = 0;
            out[0] = '\0';
        }
        int64_t retry = mem_int(r->m, r->key, "baseRetry");
        if (!strcmp(was_for, name) && retry > now) { /* unreachable a moment ago */
            out[0] = '\0';
            requeue(r, retry - now);
            return;
        }
        if (at && out[0] && (interval == 0 || now - at < interval)) {
            if (interval)
                requeue(r, at + interval - now);
            return;
        }
        if (head(r, name, BASE_SECRET, out) == 0) {
            mem_set(r->m, r->key, "base", json_string(out));
            mem_set(r->m, r->key, "baseAt", json_integer(now));
            mem_set(r->m, r->key, "baseFor", json_string(name));
            if (interval)
                requeue(r, interval);
        } else {
            /* unreachable: no digest (nothing rebuilds for it) and no new HEAD until the retry */
            out[0] = '\0';
            mem_set(r->m, r->key, "base", json_string(""));
            mem_set(r->m, r->key, "baseRetry", json_integer(now + RETRY_UNAVAILABLE_MS));
            mem_set(r->m, r->key, "baseFor", json_string(name));
            requeue(r, RETRY_UNAVAILABLE_MS);
        }
    }
}

/* The commit a Git source's ref names now (ls-remote at most once per verify interval). */
static void resolve_rev(rec *r, char out[41])
{
    const char *uri = sw_json_str_at(r->mi, "spec.source.git.uri");
    out[0] = '\0';
    if (!sw_str_eq(sw_json_str_at(r->mi, "spec.source.type"), "Git") || !uri)
        return;
    int64_t interval = sw_mi_verify_interval(r->mi) * 1000, now = sw_time_mono_ms();
    int64_t at = mem_int(r->m, r->key, "revAt");
    char want_for[1400], was_for[1400];
    snprintf(want_for, sizeof(want_for), "%.1000s#%.300s", uri,
             sw_json_str_at(r->mi, "spec.source.git.ref") ?: "");
    mem_str(r->m, r->key, "revFor", was_for, sizeof(was_for));
    mem_str(r->m, r->key, "rev", out, 41);
    if (strcmp(was_for, want_for)) { /* another remote or ref now: resolve it */
        at = 0;
        out[0] = '\0';
    }
    if (at && out[0] && (interval == 0 || now - at < interval)) {
        if (interval)
            requeue(r, at + interval - now);
        return;
    }
    char commit[41];
    if (sw_gitref_resolve(uri, sw_json_str_at(r->mi, "spec.source.git.ref"), commit, GIT_TIMEOUT_MS,
                          GIT_PENDING_MAX) == 0) {
        sw_strlcpy(out, commit, 41);
        mem_set(r->m, r->key, "rev", json_string(commit));
        mem_set(r->m, r->key, "revAt", json_integer(now));
        mem_set(r->m, r->key, "revFor", json_string(want_for));
        if (interval)
            requeue(r, interval);
    } else {
        sw_log(SW_LOG_INFO, "managedimage %s: %s", r->key, sw_error_msg());
        if (strcmp(was_for, want_for))
            out[0] = '\0'; /* never the old ref's commit for the new ref */
        requeue(r, RETRY_UNAVAILABLE_MS);
    }
}

/* The inputs a build was started for (its annotations; the base as the build resolved it). */
static void build_inputs(const json_t *b, inputs *in)
{
    const char *from = sw_json_str_at(b, "spec.strategy.dockerStrategy.from.name");
    const char *base = ann(b, SW_MI_ANN_BASE);
    const char *rev = ann(b, SW_MI_ANN_REVISION);
    sw_strlcpy(in->spec_hash, ann(b, SW_MI_ANN_SPEC_HASH) ?: "", sizeof(in->spec_hash));
    /* what the build resolved and used wins over what it was started for */
    sw_strlcpy(in->base, from && strchr(from, '@') ? sw_ref_digest_of(from) : base ?: "",
               sizeof(in->base));
    if (!rev || !*rev)
        rev = sw_json_str_at(b, "spec.revision.git.commit");
    sw_strlcpy(in->rev, rev ? rev : "", sizeof(in->rev));
}

/* Why inputs now differ from have (NULL when they do not); unknown parts never differ. */
static const char *changed(const inputs *have, const inputs *now)
{
    if (strcmp(have->spec_hash, now->spec_hash))
        return "SpecChanged";
    if (now->base[0] && strcmp(have->base, now->base))
        return "BaseImageChanged";
    if (now->rev[0] && strcmp(have->rev, now->rev))
        return "SourceChanged";
    return NULL;
}

static void status_inputs(const json_t *status, inputs *in)
{
    const json_t *i = json_object_get(status, "inputs");
    sw_strlcpy(in->spec_hash, sw_json_str_at(i, "specHash") ?: "", sizeof(in->spec_hash));
    sw_strlcpy(in->base, sw_ref_digest_of(sw_json_str_at(i, "baseImage")), sizeof(in->base));
    sw_strlcpy(in->rev, sw_json_str_at(i, "sourceRevision") ?: "", sizeof(in->rev));
}

/* ---- builds ---- */

static int get_build(rec *r, int64_t number, json_t **out)
{
    char name[320];
    snprintf(name, sizeof(name), "%s-%lld", r->name, (long long)number);
    int error = sw_client_get(r->m->client, &sw_res_builds, r->ns, name, out);
    if (error == SW_ENOTFOUND) {
        *out = NULL;
        return 0;
    }
    return error;
}

static const char *phase_of(const json_t *b)
{
    const char *p = sw_json_str_at(b, "status.phase");
    return p && *p ? p : "New";
}

static bool failed(const char *phase)
{
    return sw_build_phase_terminal(phase) && !sw_str_eq(phase, "Complete");
}

/* A completed build's image becomes latestImage, with the inputs it was built from (what the
 * build does not record — one started by hand on the owned BuildConfig — is taken from now,
 * the inputs as they are: it just ran on them). */
static void adopt(rec *r, const json_t *b, const inputs *now)
{
    const char *digest = sw_json_str_at(b, "status.output.to.imageDigest");
    const char *ref = sw_json_str_at(b, "status.outputDockerImageReference");
    const char *bname = sw_json_str_at(b, "metadata.name");
    char img[700];
    sw_ref parsed;
    if (!digest || !ref || sw_ref_parse(ref, &parsed) < 0)
        return;
    snprintf(img, sizeof(img), "%s/%s@%s", parsed.registry, parsed.repository, digest);
    if (sw_str_eq(sw_json_str_at(r->status, "latestBuild"), bname) &&
        sw_str_eq(sw_json_str_at(r->status, "latestImage"), img))
        return;
    inputs in;
    build_inputs(b, &in);
    if (!in.spec_hash[0])
        sw_strlcpy(in.spec_hash, now->spec_hash, sizeof(in.spec_hash));
    if (!in.base[0] && !ann(b, SW_MI_ANN_BASE))
        sw_strlcpy(in.base, now->base, sizeof(in.base));
    if (!in.rev[0] && !ann(b, SW_MI_ANN_REVISION))
        sw_strlcpy(in.rev, now->rev, sizeof(in.rev));
    int64_t gen = 0;
    const char *g = ann(b, SW_MI_ANN_GENERATION);
    if (g)
        sw_str_to_i64(g, &gen);
    json_object_set_new(r->status, "latestImage", json_string(img));
    json_object_set_new(r->status, "latestBuild", json_string(bname));
    json_t *inp = json_pack("{s:I, s:s}", "generation", (json_int_t)gen, "specHash", in.spec_hash);
    sw_ref base;
    if (in.base[0] &&
        sw_ref_parse(sw_json_str_at(b, "spec.strategy.dockerStrategy.from.name") ?: "", &base) ==
            0) {
        char spec[700];
        snprintf(spec, sizeof(spec), "%s/%s@%s", base.registry, base.repository, in.base);
        json_object_set_new(inp, "baseImage", json_string(spec));
    } else if (in.base[0]) {
        json_object_set_new(inp, "baseImage", json_string(in.base));
    }
    if (in.rev[0])
        json_object_set_new(inp, "sourceRevision", json_string(in.rev));
    json_object_set_new(r->status, "inputs", inp);
    mem_set(r->m, r->key, "missing", NULL);
    mem_set(r->m, r->key, "fails", NULL);
    mem_set(r->m, r->key, "failKey", NULL);
    mem_set(r->m, r->key, "failBuild", NULL);
    mem_set(r->m, r->key, "verified", json_integer(sw_time_mono_ms())); /* just pushed */
}

/* The inputs as one string, to recognize a failure streak with the same inputs. */
static void inputs_key(const inputs *in, char *out, size_t n)
{
    snprintf(out, n, "%s|%s|%s", in->spec_hash, in->base, in->rev);
}

/* Counts failed build b (once per build) into the key's failure streak, kept in memory rather
 * than read back from builds, which history pruning deletes. *fails, *at_ms (when the newest
 * failure ended) and *lost (it was a lost builder) describe the streak after it. */
static void note_failure(rec *r, const json_t *b, const char *key, int64_t *fails, int64_t *at_ms,
                         bool *lost)
{
    char seen[320], fkey[400];
    const char *name = sw_json_str_at(b, "metadata.name") ?: "";
    mem_str(r->m, r->key, "failBuild", seen, sizeof(seen));
    mem_str(r->m, r->key, "failKey", fkey, sizeof(fkey));
    if (strcmp(seen, name)) {
        int64_t n = strcmp(fkey, key) ? 1 : mem_int(r->m, r->key, "fails") + 1;
        int64_t done_s = 0;
        const char *ct = sw_json_str_at(b, "status.completionTimestamp");
        if (!ct || sw_time_parse(ct, &done_s) < 0)
            done_s = sw_time_now();
        mem_set(r->m, r->key, "fails", json_integer(n));
        mem_set(r->m, r->key, "failKey", json_string(key));
        mem_set(r->m, r->key, "failBuild", json_string(name));
        mem_set(r->m, r->key, "failAt", json_integer(done_s * 1000));
        mem_set(r->m, r->key, "failLost",
                json_boolean(sw_str_eq(sw_json_str_at(b, "status.reason"), "BuilderLost")));
    }
    *fails = mem_int(r->m, r->key, "fails");
    *at_ms = mem_int(r->m, r->key, "failAt");
    pthread_mutex_lock(&r->m->mu);
    *lost = json_is_true(json_object_get(json_object_get(r->m->memory, r->key), "failLost"));
    pthread_mutex_unlock(&r->m->mu);
}

static int start(rec *r, int64_t last_version, const inputs *in, const char *why)
{
    char path[700], gen[24];
    int64_t g = 0;
    sw_json_int_at(r->mi, "metadata.generation", &g);
    snprintf(gen, sizeof(gen), "%lld", (long long)g);
    json_t *annotations = json_pack("{s:s, s:s, s:s, s:s, s:s}", SW_MI_ANN_OWNER, r->name,
                                    SW_MI_ANN_SPEC_HASH, in->spec_hash, SW_MI_ANN_BASE, in->base,
                                    SW_MI_ANN_REVISION, in->rev, SW_MI_ANN_GENERATION, gen);
    json_t *req = json_pack("{s:s, s:s, s:{s:s, s:s, s:o}, s:I, s:[{s:s}]}", "kind", "BuildRequest",
                            "apiVersion", "build.openshift.io/v1", "metadata", "name", r->name,
                            "namespace", r->ns, "annotations", annotations, "lastVersion",
                            (json_int_t)last_version, "triggeredBy", "message", why);
    if (in->rev[0])
        json_object_set_new(req, "revision",
                            json_pack("{s:s, s:{s:s}}", "type", "Git", "git", "commit", in->rev));
    json_t *out = NULL;
    snprintf(path, sizeof(path),
             "/apis/build.openshift.io/v1/namespaces/%s/buildconfigs/%s/instantiate", r->ns,
             r->name);
    int error = sw_client_request(r->m->client, "POST", path, req, NULL, NULL, &out);
    if (error == 0) {
        event(r, "Normal", "BuildStarted", "started build %s: %s",
              sw_json_str_at(out, "metadata.name") ?: "?", why);
        set_cond(r, "Building", "True", "BuildStarted", why);
    }
    json_decref(req);
    json_decref(out);
    return error;
}

/* The decision, once the owned objects are in place. */
static int decide(rec *r)
{
    int64_t last = 0;
    json_t *b = NULL;
    sw_json_int_at(r->bc, "status.lastVersion", &last);
    int error = last > 0 ? get_build(r, last, &b) : 0;
    if (error < 0)
        return error;
    const char *phase = b ? phase_of(b) : NULL;
    bool active = b && !sw_build_phase_terminal(phase);
    inputs now = {0}, have = {0};
    sw_mi_spec_hash(r->mi, now.spec_hash, sizeof(now.spec_hash));
    resolve_base(r, now.base);
    resolve_rev(r, now.rev);
    if (b && sw_str_eq(phase, "Complete"))
        adopt(r, b, &now);
    verify(r);
    status_inputs(r->status, &have);
    const char *img = sw_json_str_at(r->status, "latestImage");
    char missing[80];
    mem_str(r->m, r->key, "missing", missing, sizeof(missing));
    bool gone = img && *img && sw_str_eq(missing, sw_ref_digest_of(img));
    const char *why = !img || !*img ? "NotBuilt" : gone ? "ImageMissing" : changed(&have, &now);

    if (gone) {
        char msg[800];
        snprintf(msg, sizeof(msg), "%s is gone from the registry", img);
        set_cond(r, "ImageAvailable", "False", "ImageMissing", msg);
    } else if (!img || !*img) {
        set_cond(r, "ImageAvailable", "False", "NotBuilt", "no build has completed yet");
    } else if (!r->registry_down) {
        set_cond(r, "ImageAvailable", "True", "InRegistry", img);
    }

    /* a build that completed a moment ago: the build controller records its image in the
     * stream right after, so a tag still showing the previous one is not drift yet */
    int64_t done_s = 0;
    bool settling =
        b && sw_str_eq(phase, "Complete") &&
        sw_time_parse(sw_json_str_at(b, "status.completionTimestamp") ?: "", &done_s) == 0 &&
        sw_time_now() - done_s < 30;
    if (settling)
        requeue(r, 30000);
    if (!why) {
        set_cond(r, "Building", active ? "True" : "False", active ? "BuildRunning" : "UpToDate",
                 active ? sw_json_str_at(b, "metadata.name")
                        : "the image is built from the "
                          "current inputs");
        check_tag(r, active || settling);
        goto done;
    }
    if (active) {
        char msg[400];
        snprintf(msg, sizeof(msg), "build %s is %s", sw_json_str_at(b, "metadata.name"), phase);
        set_cond(r, "Building", "True", "BuildRunning", msg);
        check_tag(r, true);
        goto done;
    }
    inputs bi = {0};
    char key[400], fkey[400];
    inputs_key(&now, key, sizeof(key));
    if (b)
        build_inputs(b, &bi);
    int64_t fails = 0, at_ms = 0;
    bool lost = false, backing_off = false;
    if (b && failed(phase) && !changed(&bi, &now) && !strcmp(bi.spec_hash, now.spec_hash)) {
        note_failure(r, b, key, &fails, &at_ms, &lost);
        backing_off = true;
    } else if (!b && last > 0) {
        /* the newest build is gone (pruned at failedBuildsHistoryLimit): the streak is ours */
        mem_str(r->m, r->key, "failKey", fkey, sizeof(fkey));
        fails = mem_int(r->m, r->key, "fails");
        at_ms = mem_int(r->m, r->key, "failAt");
        backing_off = fails > 0 && !strcmp(fkey, key);
    }
    if (backing_off) {
        int64_t wait =
            sw_mi_backoff_ms((int)fails, lost, r->m->backoff_base_ms, r->m->backoff_max_ms);
        int64_t left = at_ms + wait - sw_time_now() * 1000;
        const char *snippet = b ? sw_json_str_at(b, "status.logSnippet") : NULL;
        char msg[1200], when[32];
        if (b)
            snprintf(msg, sizeof(msg), "build %s %s (%s)%s%s", sw_json_str_at(b, "metadata.name"),
                     phase, sw_json_str_at(b, "status.reason") ?: "",
                     snippet && *snippet ? ": " : "", snippet ? snippet : "");
        else
            snprintf(msg, sizeof(msg), "the last build failed (its record was pruned)");
        if (left > 0) {
            char wmsg[1300];
            /* an absolute time: the message (and so the status) stays the same while waiting */
            sw_time_format((at_ms + wait + 999) / 1000, when, sizeof(when));
            snprintf(wmsg, sizeof(wmsg), "%s; next try at %s (%lld failed in a row)", msg, when,
                     (long long)fails);
            set_cond(r, "Building", "False", "BuildFailed", wmsg);
            requeue(r, left);
            goto done;
        }
        set_cond(r, "Building", "False", "BuildFailed", msg);
    }
    char cause[300];
    snprintf(cause, sizeof(cause), "ManagedImage %s: %s", r->name, why);
    error = start(r, last, &now, cause);
    if (error == SW_ECONFLICT) { /* another start won: look at its build */
        error = 0;
        requeue(r, 100);
    }
done:
    json_decref(b);
    return error;
}

/* ---- the reconcile ---- */

static void set_ready(rec *r, const char *old_reason, const char *old_status)
{
    const json_t *avail = find_cond(r->status, "ImageAvailable");
    const json_t *building = find_cond(r->status, "Building");
    const char *reason, *msg;
    bool ready = false;
    if (r->blocked) {
        reason = r->blocked;
        msg = r->blocked_msg;
    } else if (sw_str_eq(sw_json_str_at(building, "reason"), "BuildFailed")) {
        reason = "BuildFailed"; /* also before any image exists: the failure says why */
        msg = sw_json_str_at(building, "message") ?: "";
    } else if (!sw_str_eq(sw_json_str_at(avail, "status"), "True")) {
        reason = sw_json_str_at(avail, "reason") ?: "NotBuilt";
        msg = sw_json_str_at(avail, "message") ?: "";
    } else if (sw_str_eq(sw_json_str_at(building, "status"), "True")) {
        reason =
            sw_str_eq(sw_json_str_at(building, "status"), "True") ? "Rebuilding" : "BuildFailed";
        msg = sw_json_str_at(building, "message") ?: "";
    } else {
        ready = true;
        reason = "ImageAvailable";
        msg = sw_json_str_at(r->status, "latestImage") ?: "";
    }
    set_cond(r, "Ready", ready ? "True" : "False", reason, msg);
    if (sw_str_eq(old_status, ready ? "True" : "False") && sw_str_eq(old_reason, reason))
        return;
    /* the cache may not show our last status write yet: an Event per transition, once */
    char last[200], now[200];
    snprintf(now, sizeof(now), "%s|%s|%.120s", ready ? "True" : "False", reason, ready ? msg : "");
    mem_str(r->m, r->key, "readyEvent", last, sizeof(last));
    if (!strcmp(last, now))
        return;
    mem_set(r->m, r->key, "readyEvent", json_string(now));
    if (ready)
        event(r, "Normal", "Ready", "the image %s is available", msg);
    else if (sw_str_eq(reason, "BuildFailed") || r->blocked)
        event(r, "Warning", reason, "%s", msg);
}

/* Writes r->status. The cache may not have our own last status write yet: on a conflict the
 * status goes onto the current object when its spec is still the one reconciled (otherwise
 * the newer spec's own reconcile is already queued). */
static int write_status(rec *r)
{
    json_t *cur = json_deep_copy(r->mi);
    int error = 0;
    for (int attempt = 0; attempt < 3; attempt++) {
        json_object_set(cur, "status", r->status);
        error = sw_client_update_status(r->m->client, &sw_res_managedimages, r->ns, cur, NULL);
        if (error != SW_ECONFLICT)
            break;
        json_decref(cur);
        cur = NULL;
        int64_t g0 = 0, g1 = 0;
        if ((error = sw_client_get(r->m->client, &sw_res_managedimages, r->ns, r->name, &cur)) < 0)
            break;
        sw_json_int_at(r->mi, "metadata.generation", &g0);
        sw_json_int_at(cur, "metadata.generation", &g1);
        if (g0 != g1)
            break;
    }
    json_decref(cur);
    return error == SW_ENOTFOUND ? 0 : error;
}

static int reconcile(void *arg, const char *key)
{
    sw_mi_controller *m = arg;
    rec r = {.m = m, .key = key, .next_ms = INT64_MAX};
    char ns[256], name[256];
    const char *slash = strchr(key, '/');
    if (!slash || (size_t)(slash - key) >= sizeof(ns) || strlen(slash + 1) >= sizeof(name))
        return 0;
    memcpy(ns, key, (size_t)(slash - key));
    ns[slash - key] = '\0';
    sw_strlcpy(name, slash + 1, sizeof(name));
    r.ns = ns;
    r.name = name;
    r.mi = sw_informer_get(m->mis, key);
    if (!r.mi) {
        mem_forget(m, key);
        return 0;
    }
    int error = 0;
    if (sw_json_at(r.mi, "metadata.deletionTimestamp") ||
        !sw_mi_output(r.mi, r.stream, sizeof(r.stream), r.tag, sizeof(r.tag)))
        goto done; /* being deleted: the garbage collector takes what it owns */
    json_t *old = json_object_get(r.mi, "status");
    r.status = json_is_object(old) ? json_deep_copy(old) : json_object();
    const json_t *ready = find_cond(r.status, "Ready");
    char old_reason[64], old_status[16];
    sw_strlcpy(old_reason, sw_json_str_at(ready, "reason") ?: "", sizeof(old_reason));
    sw_strlcpy(old_status, sw_json_str_at(ready, "status") ?: "", sizeof(old_status));

    error = ensure_stream(&r);
    if (error == 0 && !r.blocked)
        error = ensure_bc(&r);
    if (error == 0 && !r.blocked && r.bc)
        error = decide(&r);
    if (error < 0 && !r.blocked) {
        char msg[600];
        snprintf(msg, sizeof(msg), "%s", sw_error_msg());
        set_cond(&r, "Building", "Unknown", "ReconcileError", msg);
    }
    set_ready(&r, old_reason, old_status);
    int64_t gen = 0;
    sw_json_int_at(r.mi, "metadata.generation", &gen);
    json_object_set_new(r.status, "observedGeneration", json_integer(gen));
    if (!json_equal(r.status, old)) {
        int werr = write_status(&r);
        if (error == 0)
            error = werr;
    }
done:
    json_decref(r.mi);
    json_decref(r.status);
    json_decref(r.stream_obj);
    json_decref(r.bc);
    if (error < 0)
        return error;
    return r.next_ms == INT64_MAX ? 0
                                  : (int)(r.next_ms < 1          ? 1
                                          : r.next_ms > 86400000 ? 86400000
                                                                 : r.next_ms);
}

/* ---- wake-ups ---- */

static void enqueue_obj(sw_mi_controller *m, const json_t *obj)
{
    char *key = sw_informer_key(obj);
    if (key)
        sw_controller_enqueue(m->loop, key);
    sw_free(key);
}

/* An owned object changed: its ManagedImage looks again. */
static void enqueue_owner(sw_mi_controller *m, const json_t *obj)
{
    const json_t *ctl = controller_of(obj);
    const char *ns = sw_json_str_at(obj, "metadata.namespace");
    char key[600];
    if (!ctl || !ns || !sw_str_eq(sw_json_str_at(ctl, "kind"), SW_MI_KIND) ||
        !sw_str_eq(sw_json_str_at(ctl, "apiVersion"), SW_MI_API_VERSION))
        return;
    snprintf(key, sizeof(key), "%s/%s", ns, sw_json_str_at(ctl, "name") ?: "");
    sw_controller_enqueue(m->loop, key);
}

static void mi_added(json_t *obj, void *p)
{
    enqueue_obj(p, obj);
}
static void mi_deleted(json_t *obj, void *p)
{
    char *key = sw_informer_key(obj);
    if (key)
        mem_forget(p, key); /* a ManagedImage made again with this name starts afresh */
    sw_free(key);
}
static void mi_changed(json_t *old, json_t *obj, void *p)
{
    enqueue_obj(p, obj);
}
/* A BuildConfig has its ManagedImage's name: its change wakes that one, owned or in the way. */
static void config_event(json_t *obj, void *p)
{
    enqueue_owner(p, obj);
    enqueue_obj(p, obj);
}

static void config_changed(json_t *old, json_t *obj, void *p)
{
    config_event(obj, p);
}

/* A stream changed: its owner, and every ManagedImage built on one of its tags. */
static void stream_event(sw_mi_controller *m, const json_t *obj)
{
    enqueue_owner(m, obj);
    char key[600];
    snprintf(key, sizeof(key), "%s/%s", sw_json_str_at(obj, "metadata.namespace") ?: "",
             sw_json_str_at(obj, "metadata.name") ?: "");
    /* the ones built on it, and the ones whose output it is (owned or in the way) */
    static const char *const indexes[] = {"base", "output"};
    for (size_t x = 0; x < 2; x++) {
        json_t *users = sw_informer_by_index(m->mis, indexes[x], key);
        size_t i;
        json_t *u;
        json_array_foreach(users, i, u) enqueue_obj(m, u);
        json_decref(users);
    }
}

static void stream_added(json_t *obj, void *p)
{
    stream_event(p, obj);
}
static void stream_changed(json_t *old, json_t *obj, void *p)
{
    stream_event(p, obj);
}

/* A build's ManagedImage: the owner of its BuildConfig, which has the ManagedImage's name. */
static void build_event(sw_mi_controller *m, const json_t *obj)
{
    const char *mi = ann(obj, SW_MI_ANN_OWNER);
    if (!mi) /* a build started by hand on the owned BuildConfig, which has the MI's name */
        mi = json_string_value(
            json_object_get(sw_json_at(obj, "metadata.labels"), "openshift.io/build-config.name"));
    const char *ns = sw_json_str_at(obj, "metadata.namespace");
    char key[600];
    if (!mi || !ns)
        return;
    snprintf(key, sizeof(key), "%s/%s", ns, mi);
    sw_controller_enqueue(m->loop, key);
}

static void build_added(json_t *obj, void *p)
{
    build_event(p, obj);
}
static void build_changed(json_t *old, json_t *obj, void *p)
{
    build_event(p, obj);
}

/* Index "output": the ns/stream a ManagedImage keeps its image in. */
static json_t *output_index(const json_t *mi)
{
    char stream[256], tag[256], key[600];
    if (!sw_mi_output(mi, stream, sizeof(stream), tag, sizeof(tag)))
        return NULL;
    snprintf(key, sizeof(key), "%s/%s", sw_json_str_at(mi, "metadata.namespace") ?: "", stream);
    return json_pack("[s]", key);
}

/* Index "base": the ns/stream of a ManagedImage's ImageStreamTag base. */
static json_t *base_index(const json_t *mi)
{
    const json_t *from = sw_json_at(mi, "spec.strategy.dockerStrategy.from");
    char stream[256], tag[256], key[600];
    if (!sw_str_eq(sw_json_str_at(from, "kind"), "ImageStreamTag") ||
        sw_imagestream_split_tag_name(sw_json_str_at(from, "name") ?: "", stream, sizeof(stream),
                                      tag, sizeof(tag)) < 0)
        return NULL;
    const char *ns = sw_json_str_at(from, "namespace");
    snprintf(key, sizeof(key), "%s/%s",
             ns && *ns ? ns : sw_json_str_at(mi, "metadata.namespace") ?: "", stream);
    return json_pack("[s]", key);
}

int sw_mi_controller_new(sw_mi_controller **out, sw_client *c, sw_informers *f,
                         const sw_mi_controller_opts *opts)
{
    sw_mi_controller_opts o = {0};
    if (opts)
        o = *opts;
    sw_mi_controller *m = sw_calloc(1, sizeof(*m));
    m->client = c;
    m->memory = json_object();
    pthread_mutex_init(&m->mu, NULL);
    int64_t base = 0;
    const char *env = getenv("SW_MI_BACKOFF_MS");
    m->backoff_base_ms = o.backoff_base_ms > 0 ? o.backoff_base_ms : 10000;
    if (o.backoff_base_ms <= 0 && env && sw_str_to_i64(env, &base) == 0 && base > 0 &&
        base < 3600000)
        m->backoff_base_ms = base;
    m->backoff_max_ms = o.backoff_max_ms > 0 ? o.backoff_max_ms : 300000;
    int error = 0;
    if (o.registry) {
        m->registry = o.registry;
    } else {
        sw_registry_opts ro = {.insecure_hosts = o.insecure_registries};
        error = sw_registry_new(&m->registry, &ro);
        m->own_registry = error == 0;
    }
    sw_controller_opts co = {.name = "managedimage controller",
                             .workers = o.workers > 0 ? o.workers : 4,
                             .reconcile = reconcile,
                             .ctx = m,
                             .queue = {.base_delay_ms = 200, .max_delay_ms = 60000}};
    if (error == 0)
        error = sw_controller_new(&m->loop, &co);
    sw_informer_opts io = {.resync_ms = 300000};
    if (error == 0) {
        m->mis = sw_informers_get(f, &sw_res_managedimages, false, &io);
        m->streams = sw_informers_get(f, &sw_res_imagestreams, false, NULL);
        m->configs = sw_informers_get(f, &sw_res_buildconfigs, false, &io);
        m->builds = sw_informers_get(f, &sw_res_builds, false, &io);
        sw_informer_handlers hm = {
            .on_add = mi_added, .on_update = mi_changed, .on_delete = mi_deleted, .payload = m};
        sw_informer_handlers hs = {.on_add = stream_added,
                                   .on_update = stream_changed,
                                   .on_delete = stream_added,
                                   .payload = m};
        sw_informer_handlers ho = {.on_add = config_event,
                                   .on_update = config_changed,
                                   .on_delete = config_event,
                                   .payload = m};
        sw_informer_handlers hb = {.on_add = build_added, .on_update = build_changed, .payload = m};
        error = sw_informer_add_handlers(m->mis, &hm);
        if (error == 0)
            error = sw_informer_add_handlers(m->streams, &hs);
        if (error == 0)
            error = sw_informer_add_handlers(m->configs, &ho);
        if (error == 0)
            error = sw_informer_add_handlers(m->builds, &hb);
        if (error == 0)
            error = sw_informer_add_index(m->mis, "base", base_index);
        if (error == 0)
            error = sw_informer_add_index(m->mis, "output", output_index);
    }
    if (error < 0) {
        sw_mi_controller_free(m);
        return error;
    }
    *out = m;
    return 0;
}

int sw_mi_controller_start(sw_mi_controller *m)
{
    return sw_controller_start(m->loop);
}

void sw_mi_controller_free(sw_mi_controller *m)
{
    if (!m)
        return;
    sw_controller_free(m->loop);
    if (m->own_registry)
        sw_registry_free(m->registry);
    json_decref(m->memory);
    pthread_mutex_destroy(&m->mu);
    sw_free(m);
}
