/* import: the import controller (see import.h). Spec-driven imports go through the controller
 * scaffold's work queue; scheduled ones through a per-stream due time checked every second and
 * a token bucket. */
#include "controllers/import.h"

#include "client/informer.h"
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

#define IMPORT_BATCH 1000 /* images per ImageStreamImport (its own cap) */

typedef struct schedule {
    char *key;
    int64_t due_ms;
} schedule;

struct sw_import_controller {
    sw_client *client;
    sw_import_controller_opts opts;
    sw_informer *informer; /* the factory's ImageStreams */
    sw_controller *ctl;
    pthread_t scheduler;
    bool scheduler_running;
    pthread_mutex_t mu;
    pthread_cond_t cond;
    bool stopping;
    schedule *sched; /* streams with scheduled tags */
    size_t nsched, capsched;
    double tokens; /* scheduled-import token bucket */
    int64_t tokens_ms;
};

static bool importable(const json_t *tag)
{
    return sw_str_eq(sw_json_str_at(tag, "from.kind"), "DockerImage") &&
           !sw_json_bool_at(tag, "reference");
}

static const json_t *status_tag(const json_t *stream, const char *name)
{
    size_t i;
    json_t *st;
    json_array_foreach(sw_json_at(stream, "status.tags"), i, st)
    {
        if (sw_str_eq(sw_json_str_at(st, "tag"), name))
            return st;
    }
    return NULL;
}

/* observed = max(items[0].generation, ImportSuccess condition generation) */
static int64_t observed_generation(const json_t *stream, const char *tag)
{
    const json_t *st = status_tag(stream, tag);
    int64_t obs = 0, g;
    size_t i;
    json_t *c;
    if (sw_json_int_at(json_array_get(json_object_get(st, "items"), 0), "generation", &g))
        obs = g;
    json_array_foreach(json_object_get(st, "conditions"), i, c)
    {
        if (sw_str_eq(sw_json_str_at(c, "type"), "ImportSuccess") &&
            sw_json_int_at(c, "generation", &g) && g > obs)
            obs = g;
    }
    return obs;
}

json_t *sw_import_pending_tags(const json_t *stream)
{
    json_t *out = json_array();
    size_t i;
    json_t *t;
    json_array_foreach(sw_json_at(stream, "spec.tags"), i, t)
    {
        int64_t gen = 0;
        const char *name = sw_json_str_at(t, "name");
        if (name && importable(t) && sw_json_int_at(t, "generation", &gen) &&
            gen > observed_generation(stream, name))
            json_array_append_new(out, json_string(name));
    }
    return out;
}

static bool has_scheduled(const json_t *stream)
{
    size_t i;
    json_t *t;
    json_array_foreach(sw_json_at(stream, "spec.tags"), i, t)
    {
        if (importable(t) && sw_json_bool_at(t, "importPolicy.scheduled"))
            return true;
    }
    return false;
}

/* ---- importing ---- */

static json_t *isi_for(const json_t *stream, const json_t *tags)
{
    json_t *images = json_array();
    size_t i;
    json_t *name;
    json_array_foreach(tags, i, name)
    {
        size_t j;
        json_t *t;
        json_array_foreach(sw_json_at(stream, "spec.tags"), j, t)
        {
            if (!sw_str_eq(sw_json_str_at(t, "name"), json_string_value(name)))
                continue;
            json_t *e =
                json_pack("{s:{s:s, s:s}, s:{s:s}}", "from", "kind", "DockerImage", "name",
                          sw_json_str_at(t, "from.name"), "to", "name", json_string_value(name));
            if (json_object_get(t, "importPolicy"))
                json_object_set(e, "importPolicy", json_object_get(t, "importPolicy"));
            if (json_object_get(t, "referencePolicy"))
                json_object_set(e, "referencePolicy", json_object_get(t, "referencePolicy"));
            json_array_append_new(images, e);
        }
    }
    return json_pack(
        "{s:s, s:s, s:{s:s, s:s, s:s}, s:{s:b, s:o}}", "apiVersion", "image.openshift.io/v1",
        "kind", "ImageStreamImport", "metadata", "name", sw_json_str_at(stream, "metadata.name"),
        "namespace", sw_json_str_at(stream, "metadata.namespace"), "uid",
        sw_json_str_at(stream, "metadata.uid") ?: "", "spec", "import", 1, "images", images);
}

/* Posts one ImageStreamImport for tags of stream (the server records each new failure as a
 * Warning Event, whoever imports). */
static int import_tags(sw_import_controller *ic, const json_t *stream, const json_t *tags)
{
    char path[700];
    const char *ns = sw_json_str_at(stream, "metadata.namespace");
    json_t *isi = isi_for(stream, tags), *out = NULL;
    long status = 0;
    snprintf(path, sizeof(path), "/apis/image.openshift.io/v1/namespaces/%s/imagestreamimports",
             ns);
    int error = sw_client_request(ic->client, "POST", path, isi, NULL, &status, &out);
    json_decref(isi);
    json_decref(out);
    return error;
}

static int reconcile(void *ctx, const char *key)
{
    sw_import_controller *ic = ctx;
    json_t *stream = sw_informer_get(ic->informer, key);
    if (!stream)
        return 0;
    json_t *tags = sw_import_pending_tags(stream);
    int error = 0;
    /* One ImageStreamImport takes at most IMPORT_BATCH images: a stream with more tags to
     * import is imported in several (one request for all of them would be refused forever). */
    for (size_t off = 0; off < json_array_size(tags) && error == 0; off += IMPORT_BATCH) {
        json_t *batch = json_array();
        for (size_t i = off; i < json_array_size(tags) && i < off + IMPORT_BATCH; i++)
            json_array_append(batch, json_array_get(tags, i));
        error = import_tags(ic, stream, batch);
        json_decref(batch);
    }
    json_decref(tags);
    json_decref(stream);
    return error;
}

/* ---- scheduled imports ---- */

static void schedule_set(sw_import_controller *ic, const char *key, bool scheduled)
{
    pthread_mutex_lock(&ic->mu);
    size_t i;
    for (i = 0; i < ic->nsched && strcmp(ic->sched[i].key, key); i++)
        ;
    if (scheduled && i == ic->nsched) {
        if (ic->nsched == ic->capsched) {
            ic->capsched = ic->capsched ? ic->capsched * 2 : 64;
            ic->sched = sw_realloc(ic->sched, ic->capsched * sizeof(*ic->sched));
        }
        /* New streams get a random first slot in the interval so passes spread out. */
        int64_t interval = (int64_t)ic->opts.scheduled_interval_s * 1000;
        ic->sched[ic->nsched].key = sw_strdup(key);
        ic->sched[ic->nsched].due_ms = sw_time_mono_ms() + (int64_t)(random() % (interval + 1));
        ic->nsched++;
    } else if (!scheduled && i < ic->nsched) {
        sw_free(ic->sched[i].key);
        ic->sched[i] = ic->sched[--ic->nsched];
    }
    pthread_mutex_unlock(&ic->mu);
}

static bool take_token(sw_import_controller *ic, int64_t now)
{
    double rate = ic->opts.max_scheduled_per_minute / 60000.0; /* tokens per ms */
    double burst = 2.0 * ic->opts.max_scheduled_per_minute;
    ic->tokens += (double)(now - ic->tokens_ms) * rate;
    if (ic->tokens > burst)
        ic->tokens = burst;
    ic->tokens_ms = now;
    if (ic->tokens < 1.0)
        return false;
    ic->tokens -= 1.0;
    return true;
}

static json_t *scheduled_tags(const json_t *stream)
{
    json_t *out = json_array();
    size_t i;
    json_t *t;
    json_array_foreach(sw_json_at(stream, "spec.tags"), i, t)
    {
        if (importable(t) && sw_json_bool_at(t, "importPolicy.scheduled"))
            json_array_append_new(out, json_string(sw_json_str_at(t, "name")));
    }
    return out;
}

/* One pass: every due stream that gets a token is imported (HEAD-only when unchanged). */
static void scheduler_pass(sw_import_controller *ic)
{
    int64_t now = sw_time_mono_ms();
    char *due[64];
    size_t ndue = 0;
    pthread_mutex_lock(&ic->mu);
    for (size_t i = 0; i < ic->nsched && ndue < 64; i++) {
        if (ic->sched[i].due_ms > now)
            continue;
        if (!take_token(ic, now))
            break; /* over the per-minute cap: the rest wait for the next pass */
        ic->sched[i].due_ms = now + (int64_t)ic->opts.scheduled_interval_s * 1000;
        due[ndue++] = sw_strdup(ic->sched[i].key);
    }
    pthread_mutex_unlock(&ic->mu);
    for (size_t i = 0; i < ndue; i++) {
        json_t *stream = sw_informer_get(ic->informer, due[i]);
        json_t *tags = stream ? scheduled_tags(stream) : NULL;
        if (tags && json_array_size(tags) && import_tags(ic, stream, tags) < 0)
            sw_log(SW_LOG_WARN, "scheduled import of %s failed: %s", due[i], sw_error_msg());
        json_decref(tags);
        json_decref(stream);
        sw_free(due[i]);
    }
}

static void *scheduler_main(void *arg)
{
    sw_import_controller *ic = arg;
    pthread_mutex_lock(&ic->mu);
    while (!ic->stopping) {
        struct timespec until;
        clock_gettime(CLOCK_REALTIME, &until);
        until.tv_sec += 1;
        pthread_cond_timedwait(&ic->cond, &ic->mu, &until);
        if (ic->stopping)
            break;
        pthread_mutex_unlock(&ic->mu);
        scheduler_pass(ic);
        pthread_mutex_lock(&ic->mu);
    }
    pthread_mutex_unlock(&ic->mu);
    return NULL;
}

/* ---- informer handlers ---- */

static void observe(sw_import_controller *ic, json_t *obj)
{
    char *key = sw_informer_key(obj);
    if (!key)
        return;
    json_t *pending = sw_import_pending_tags(obj);
    if (json_array_size(pending))
        sw_controller_enqueue(ic->ctl, key);
    schedule_set(ic, key, has_scheduled(obj));
    json_decref(pending);
    sw_free(key);
}

static void on_add(json_t *obj, void *payload)
{
    observe(payload, obj);
}

static void on_update(json_t *old, json_t *obj, void *payload)
{
    observe(payload, obj);
}

static void on_delete(json_t *obj, void *payload)
{
    char *key = sw_informer_key(obj);
    if (key)
        schedule_set(payload, key, false);
    sw_free(key);
}

int sw_import_controller_new(sw_import_controller **out, sw_client *c, sw_informers *f,
                             const sw_import_controller_opts *opts)
{
    sw_import_controller *ic = sw_calloc(1, sizeof(*ic));
    ic->client = c;
    if (opts)
        ic->opts = *opts;
    if (ic->opts.workers <= 0)
        ic->opts.workers = 8;
    if (ic->opts.scheduled_interval_s <= 0)
        ic->opts.scheduled_interval_s = 900;
    if (ic->opts.max_scheduled_per_minute <= 0)
        ic->opts.max_scheduled_per_minute = 60;
    ic->tokens = ic->opts.max_scheduled_per_minute;
    ic->tokens_ms = sw_time_mono_ms();
    pthread_mutex_init(&ic->mu, NULL);
    pthread_cond_init(&ic->cond, NULL);
    sw_informer_handlers h = {
        .on_add = on_add, .on_update = on_update, .on_delete = on_delete, .payload = ic};
    sw_controller_opts co = {.name = "import controller",
                             .workers = ic->opts.workers,
                             .reconcile = reconcile,
                             .ctx = ic};
    int error = sw_controller_new(&ic->ctl, &co);
    ic->informer = sw_informers_get(f, &sw_res_imagestreams, false, NULL);
    if (error == 0)
        error = sw_informer_add_handlers(ic->informer, &h);
    if (error < 0) {
        sw_import_controller_free(ic);
        return error;
    }
    *out = ic;
    return 0;
}

int sw_import_controller_start(sw_import_controller *ic)
{
    int error = sw_controller_start(ic->ctl);
    if (error < 0)
        return error;
    if (pthread_create(&ic->scheduler, NULL, scheduler_main, ic) != 0)
        return sw_error_set(SW_ERROR, "cannot start the import scheduler");
    ic->scheduler_running = true;
    return 0;
}

void sw_import_controller_free(sw_import_controller *ic)
{
    if (!ic)
        return;
    pthread_mutex_lock(&ic->mu);
    ic->stopping = true;
    pthread_cond_broadcast(&ic->cond);
    pthread_mutex_unlock(&ic->mu);
    if (ic->scheduler_running)
        pthread_join(ic->scheduler, NULL);
    sw_controller_free(ic->ctl);
    for (size_t i = 0; i < ic->nsched; i++)
        sw_free(ic->sched[i].key);
    sw_free(ic->sched);
    pthread_mutex_destroy(&ic->mu);
    pthread_cond_destroy(&ic->cond);
    sw_free(ic);
}
