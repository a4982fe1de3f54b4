/* imagestreamimport: image.openshift.io/v1 ImageStreamImport, the virtual create that imports
 * images (spec.images[]) and repositories (spec.repository, at most 50 tags, the rest reported in
 * additionalTags) into a stream (openshift-api.md §2, §3.2). import:false is a dry run.
 * Results land in the stream's status through AddTagEventToImageStream: a success adds a tag
 * event (or only moves its generation when the digest did not change), a failure writes an
 * ImportSuccess=False condition whose generation is the one attempted, and keeps the items. */
#include "kinds/imagestreamimport.h"

#include "kinds/core.h"
#include "kinds/imagestream.h"
#include "meta/event.h"
#include "registry/ref.h"
#include "util/alloc.h"
#include "util/error.h"
#include "util/json.h"
#include "util/log.h"
#include "util/str.h"
#include "util/time.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>

#define MAX_REPOSITORY_TAGS 50
#define MAX_IMAGES 1000
#define MAX_WORKERS 8
#define WORKER_STACK (1024 * 1024)
#define IMPORT_DEADLINE_MS (120 * 1000) /* one ImageStreamImport starts no request after this */

typedef struct import_job {
    sw_import_req req;
    sw_import_result res;
    char *from;    /* owned copy of req.from */
    char *to;      /* destination tag (NULL: image-only dry run) */
    char *known;   /* the tag's current image, or NULL */
    sw_objects *o; /* for job_known's lookups */
    json_t *spec;  /* the request's entry (borrowed) */
} import_job;

typedef struct import_batch {
    const sw_kind_ctx *ctx;
    const sw_creds *creds;
    import_job *jobs;
    size_t n;
    size_t next; /* atomic */
} import_batch;

static void *import_worker(void *arg)
{
    import_batch *b = arg;
    for (;;) {
        size_t i = __atomic_fetch_add(&b->next, 1, __ATOMIC_RELAXED);
        if (i >= b->n)
            return NULL;
        import_job *j = &b->jobs[i];
        sw_import_image(b->ctx->registry, b->creds, &j->req, &j->res);
    }
}

/* Imports every job, up to MAX_WORKERS at a time (the registry client bounds each host). */
static void run_jobs(import_batch *b)
{
    pthread_t th[MAX_WORKERS];
    pthread_attr_t attr;
    size_t nth = b->n < MAX_WORKERS ? b->n : MAX_WORKERS, started = 0;
    /* Small stacks: glibc keeps ~40 MiB of freed stacks for reuse, which is five default
     * 8 MiB stacks but forty of these, so busy imports stop mapping a stack per worker. */
    pthread_attr_init(&attr);
    pthread_attr_setstacksize(&attr, WORKER_STACK);
    for (; started + 1 < nth; started++)
        if (pthread_create(&th[started], &attr, import_worker, b) != 0)
            break;
    pthread_attr_destroy(&attr);
    import_worker(b);
    for (size_t i = 0; i < started; i++)
        pthread_join(th[i], NULL);
}

/* Pull credentials: every dockerconfigjson/dockercfg Secret of the namespace. */
static int collect_creds(sw_objects *o, const char *ns, sw_creds **out)
{
    json_t *secrets = NULL;
    int error = sw_creds_new(out);
    if (error == 0)
        error = o->list(o, &sw_kind_secret, ns, &secrets);
    size_t i;
    json_t *s;
    json_array_foreach(secrets, i, s)
    {
        const char *type = sw_json_str_at(s, "type");
        const char *key = sw_str_eq(type, "kubernetes.io/dockerconfigjson") ? ".dockerconfigjson"
                          : sw_str_eq(type, "kubernetes.io/dockercfg")      ? ".dockercfg"
                                                                            : NULL;
        const char *b64 =
            key ? json_string_value(json_object_get(json_object_get(s, "data"), key)) : NULL;
        unsigned char *raw = NULL;
        size_t len = 0;
        if (!b64 || sw_base64_decode(b64, strlen(b64), &raw, &len) < 0)
            continue;
        if (sw_creds_add_secret(*out, type, (const char *)raw, len) < 0)
            sw_log(SW_LOG_INFO, "secret %s/%s: unusable registry credentials: %s", ns,
                   sw_json_str_at(s, "metadata.name"), sw_error_msg());
        sw_free(raw);
    }
    json_decref(secrets);
    return error;
}

/* The image the tag points at now (items[0].image), or NULL. */
static char *current_image(const json_t *stream, const char *tag)
{
    json_t *head =
        json_array_get(json_object_get(sw_imagestream_status_tag(stream, tag), "items"), 0);
    const char *id = sw_json_str_at(head, "image");
    return id && *id ? sw_strdup(id) : NULL;
}

/* Was digest imported last time? Usually it is the tag's image itself; for a Legacy list import
 * it is the index digest recorded on that Image, looked up only in that case. */
static bool job_known(void *payload, const char *digest)
{
    import_job *j = payload;
    json_t *img = NULL;
    bool known = false;
    if (!j->known)
        return false;
    if (sw_str_eq(j->known, digest))
        return true;
    if (j->o->get(j->o, &sw_kind_image, NULL, j->known, &img) == 0)
        known = sw_str_eq(json_string_value(json_object_get(sw_json_at(img, "metadata.annotations"),
                                                            SW_IMPORT_INDEX_ANNOTATION)),
                          digest);
    json_decref(img);
    return known;
}

/* The request's own fields, checked before any registry work: a request that will be refused
 * must not fetch anything or write Images first. */
static int check_entry(const char *field, const json_t *entry, const char *to)
{
    static const char *const modes[] = {"Legacy", "PreserveOriginal", NULL};
    static const char *const refs[] = {"Source", "Local", NULL};
    const char *mode = sw_json_str_at(entry, "importPolicy.importMode");
    const char *ref = sw_json_str_at(entry, "referencePolicy.type");
    int error = 0; /* "" is the default, as absent */
    if (mode && *mode)
        error = sw_kind_check_enum(entry, field, "importPolicy.importMode", modes, false);
    if (error == 0 && ref && *ref)
        error = sw_kind_check_enum(entry, field, "referencePolicy.type", refs, false);
    if (error == 0 && to && !sw_imagestream_tag_name_ok(to))
        error = sw_error_set(
            SW_EINVALID,
            "%s.to.name: Invalid value: \"%.128s\": a tag name ([A-Za-z0-9_][A-Za-z0-9_.-]"
            "{0,127})",
            field, to);
    return error;
}

static int add_job(import_job *jobs, size_t *n, const json_t *entry, const char *from,
                   const char *to, const json_t *stream, sw_objects *o)
{
    if (*n >= MAX_IMAGES)
        return sw_error_set(SW_EINVALID, "spec.images: Too many: at most %d images", MAX_IMAGES);
    import_job *j = &jobs[(*n)++];
    memset(j, 0, sizeof(*j));
    const json_t *policy = json_object_get(entry, "importPolicy");
    json_t *spec_tag = stream && to ? sw_imagestream_spec_tag(stream, to) : NULL;
    json_t *ann = json_object_get(spec_tag, "annotations");
    j->spec = (json_t *)entry;
    j->to = to ? sw_strdup(to) : NULL;
    j->known = stream && to ? current_image(stream, to) : NULL;
    j->o = o;
    j->from = sw_strdup(from);
    j->req.from = j->from;
    j->req.insecure = sw_json_bool_at(policy, "insecure");
    j->req.preserve_original = sw_str_eq(sw_json_str_at(policy, "importMode"), "PreserveOriginal");
    j->req.prefer_arch =
        json_string_value(json_object_get(ann, "importer.image.openshift.io/prefer-arch"));
    j->req.prefer_os =
        json_string_value(json_object_get(ann, "importer.image.openshift.io/prefer-os"));
    j->req.is_known = j->known ? job_known : NULL; /* nothing known: no HEAD to compare */
    j->req.known_payload = j;
    return 0;
}

static void jobs_dispose(import_job *jobs, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        sw_import_result_dispose(&jobs[i].res);
        sw_free(jobs[i].from);
        sw_free(jobs[i].to);
        sw_free(jobs[i].known);
    }
    sw_free(jobs);
}

/* Spec tags the import writes (images[].to and repository tags), as oc import-image does. */
static bool ensure_spec_tags(json_t *stream, const import_job *jobs, size_t n)
{
    bool changed = false;
    json_t *tags = sw_json_at(stream, "spec.tags");
    if (!json_is_array(tags)) {
        tags = json_array();
        sw_json_set_path(stream, "spec.tags", tags);
    }
    for (size_t i = 0; i < n; i++) {
        const import_job *j = &jobs[i];
        if (!j->to)
            continue;
        json_t *t = sw_imagestream_spec_tag(stream, j->to);
        json_t *from = json_pack("{s:s, s:s}", "kind", "DockerImage", "name", j->req.from);
        if (t && json_equal(json_object_get(t, "from"), from)) {
            json_decref(from);
            continue;
        }
        if (!t) {
            t = json_pack("{s:s}", "name", j->to);
            json_array_append_new(tags, t);
        }
        json_object_set_new(t, "from", from);
        json_t *ip = json_object_get(j->spec, "importPolicy");
        json_t *rp = json_object_get(j->spec, "referencePolicy");
        if (ip)
            json_object_set(t, "importPolicy", ip);
        if (rp)
            json_object_set(t, "referencePolicy", rp);
        json_object_del(t, "generation");
        changed = true;
    }
    return changed;
}

/* Sets the tag's failed ImportSuccess condition; true when the failure is new (no condition
 * before, or another reason or message). */
static bool set_condition(json_t *stream, const char *tag, const import_job *j, int64_t gen)
{
    bool fresh = true;
    char now[32];
    sw_time_format(sw_time_now(), now, sizeof(now));
    json_t *st = sw_imagestream_status_tag(stream, tag);
    if (!st) {
        json_t *tags = sw_json_at(stream, "status.tags");
        if (!json_is_array(tags)) {
            tags = json_array();
            sw_json_set_path(stream, "status.tags", tags);
        }
        st = json_pack("{s:s, s:[]}", "tag", tag, "items");
        json_array_append_new(tags, st);
    }
    json_t *cond =
        json_pack("{s:s, s:s, s:s, s:s, s:s, s:I}", "type", "ImportSuccess", "status", "False",
                  "lastTransitionTime", now, "reason", sw_error_reason(j->res.code), "message",
                  j->res.message, "generation", (json_int_t)gen);
    json_t *old = json_array_get(json_object_get(st, "conditions"), 0);
    if (old && sw_str_eq(sw_json_str_at(old, "message"), j->res.message) &&
        sw_str_eq(sw_json_str_at(old, "reason"), sw_error_reason(j->res.code))) {
        json_object_set_new(cond, "lastTransitionTime",
                            json_string(sw_json_str_at(old, "lastTransitionTime")));
        fresh = false;
    }
    json_object_set_new(st, "conditions", json_pack("[o]", cond));
    return fresh;
}

/* Applies every result to the stream's status; true when something changed. Each failure
 * not recorded before is appended to fresh as {tag, reason, message}. */
static bool apply_results(sw_objects *o, json_t *stream, const import_job *jobs, size_t n,
                          json_t *fresh)
{
    bool changed = false;
    char now[32];
    sw_time_format(sw_time_now(), now, sizeof(now));
    for (size_t i = 0; i < n; i++) {
        const import_job *j = &jobs[i];
        if (!j->to)
            continue;
        int64_t gen = 1;
        sw_json_int_at(stream, "metadata.generation", &gen);
        sw_json_int_at(sw_imagestream_spec_tag(stream, j->to), "generation", &gen);
        json_t *st = sw_imagestream_status_tag(stream, j->to);
        json_t *head = json_array_get(json_object_get(st, "items"), 0);
        if (j->res.code < 0) {
            json_t *before = json_deep_copy(st);
            if (set_condition(stream, j->to, j, gen))
                json_array_append_new(fresh, json_pack("{s:s, s:s, s:s}", "tag", j->to, "reason",
                                                       sw_error_reason(j->res.code), "message",
                                                       j->res.message));
            changed |= !json_equal(before, sw_imagestream_status_tag(stream, j->to));
            json_decref(before);
            continue;
        }
        json_t *ev;
        if (j->res.unchanged && head) {
            ev = json_deep_copy(head);
            json_object_set_new(ev, "generation", json_integer(gen));
            /* the same image reached from another repository (the tag's source moved to a
             * mirror or an alias): the event names where it now comes from, as OpenShift's
             * re-import would (the image itself, and so its digest, is unchanged) */
            sw_ref src, was;
            const char *img = sw_json_str_at(head, "image");
            if (img && sw_ref_parse(j->from, &src) == 0 &&
                sw_ref_parse(sw_json_str_at(head, "dockerImageReference") ?: "", &was) == 0 &&
                (strcmp(src.registry, was.registry) || strcmp(src.repository, was.repository))) {
                char spec[700];
                snprintf(spec, sizeof(spec), "%s/%s@%s", src.registry, src.repository, img);
                json_object_set_new(ev, "dockerImageReference", json_string(spec));
            }
        } else {
            ev = json_pack("{s:s, s:s, s:s, s:I}", "created", now, "dockerImageReference",
                           j->res.pull_spec, "image",
                           sw_json_str_at(j->res.image, "metadata.name") ?: j->res.digest,
                           "generation", (json_int_t)gen);
        }
        changed |= sw_imagestream_add_tag_event(stream, j->to, ev);
        json_decref(ev);
        st = sw_imagestream_status_tag(stream, j->to);
        if (json_object_get(st, "conditions")) {
            json_object_del(st, "conditions");
            changed = true;
        }
        changed |= sw_imagestream_update_tracking_tags(stream, j->to);
    }
    return changed;
}

/* A Legacy list import's Image names the index it came from (change detection compares that
 * digest). When the Image was stored before without it (imported by digest, or as a
 * PreserveOriginal child), the annotation is added, or every re-import would GET again. */
static void note_index_digest(sw_objects *o, const json_t *image)
{
    const char *idx = json_string_value(
        json_object_get(sw_json_at(image, "metadata.annotations"), SW_IMPORT_INDEX_ANNOTATION));
    const char *name = sw_json_str_at(image, "metadata.name");
    json_t *stored = NULL;
    if (!idx || !name || o->get(o, &sw_kind_image, NULL, name, &stored) < 0)
        return;
    json_t *ann = sw_json_obj_path(stored, "metadata.annotations");
    if (!sw_str_eq(json_string_value(json_object_get(ann, SW_IMPORT_INDEX_ANNOTATION)), idx)) {
        json_object_set_new(ann, SW_IMPORT_INDEX_ANNOTATION, json_string(idx));
        if (o->update(o, &sw_kind_image, stored, NULL) < 0)
            sw_log(SW_LOG_INFO, "image %s: cannot record its index digest: %s", name,
                   sw_error_msg());
    }
    json_decref(stored);
}

static void store_images(sw_objects *o, const import_job *jobs, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        const sw_import_result *r = &jobs[i].res;
        size_t k;
        json_t *child;
        if (r->code < 0 || r->unchanged)
            continue;
        json_array_foreach(r->manifests, k, child) o->create(o, &sw_kind_image, child, NULL);
        if (r->image && o->create(o, &sw_kind_image, r->image, NULL) == SW_EEXISTS)
            note_index_digest(o, r->image);
    }
}

static json_t *item_status(const import_job *j)
{
    json_t *st;
    if (j->res.code < 0)
        st = json_pack("{s:s, s:s, s:s, s:i}", "status", "Failure", "message", j->res.message,
                       "reason", sw_error_reason(j->res.code), "code",
                       sw_error_http_status(j->res.code));
    else
        st = json_pack("{s:s, s:i}", "status", "Success", "code", 200);
    json_t *item = json_pack("{s:o}", "status", st);
    if (j->to)
        json_object_set_new(item, "tag", json_string(j->to));
    if (j->res.image)
        json_object_set(item, "image", j->res.image);
    if (j->res.manifests)
        json_object_set(item, "manifests", j->res.manifests);
    return item;
}

static const char *default_tag(const char *from, char *buf, size_t n)
{
    sw_ref ref;
    if (sw_ref_parse(from, &ref) == 0 && ref.tag[0])
        sw_strlcpy(buf, ref.tag, n);
    else
        sw_strlcpy(buf, "latest", n);
    return buf;
}

/* Jobs for spec.images[]. */
static int image_jobs(const json_t *spec, bool do_import, const json_t *stream, sw_objects *o,
                      import_job *jobs, size_t *n)
{
    size_t i;
    json_t *e;
    json_array_foreach(json_object_get(spec, "images"), i, e)
    {
        const char *kind = sw_json_str_at(e, "from.kind");
        const char *from = sw_json_str_at(e, "from.name");
        const char *to = sw_json_str_at(e, "to.name");
        char tagbuf[129];
        if (!sw_str_eq(kind, "DockerImage"))
            return sw_error_set(SW_EINVALID,
                                "spec.images[%zu].from.kind: Unsupported value: \"%s\": supported "
                                "values: \"DockerImage\"",
                                i, kind ? kind : "");
        if (!from || !*from)
            return sw_error_set(SW_EINVALID, "spec.images[%zu].from.name: Required value", i);
        if (!to && do_import)
            to = default_tag(from, tagbuf, sizeof(tagbuf));
        char field[40];
        snprintf(field, sizeof(field), "spec.images[%zu]", i);
        int error = check_entry(field, e, to);
        if (error == 0)
            error = add_job(jobs, n, e, from, to, stream, o);
        if (error < 0)
            return error;
    }
    return 0;
}

/* Jobs for spec.repository: its tags in priority order, at most 50. */
static int repository_jobs(const sw_kind_ctx *ctx, const sw_creds *creds, const json_t *spec,
                           const json_t *stream, sw_objects *o, import_job *jobs, size_t *n,
                           json_t *repo_status, int64_t deadline_ms)
{
    json_t *repo = json_object_get(spec, "repository");
    const char *from = sw_json_str_at(repo, "from.name");
    char **tags = NULL, **more = NULL;
    size_t count = 0, nmore = 0;
    if (!repo)
        return 0;
    if (!sw_str_eq(sw_json_str_at(repo, "from.kind"), "DockerImage") || !from || !*from)
        return sw_error_set(SW_EINVALID, "spec.repository.from: Invalid value: must be a "
                                         "DockerImage repository");
    int error = check_entry("spec.repository", repo, NULL);
    if (error < 0)
        return error;
    error = sw_import_list_tags(ctx->registry, creds, from,
                                sw_json_bool_at(repo, "importPolicy.insecure"), deadline_ms,
                                MAX_REPOSITORY_TAGS, &tags, &count, &more, &nmore);
    if (error < 0) {
        json_object_set_new(repo_status, "status",
                            json_pack("{s:s, s:s, s:s, s:i}", "status", "Failure", "message",
                                      sw_error_msg(), "reason", sw_error_reason(error), "code",
                                      sw_error_http_status(error)));
        return 0;
    }
    json_t *extra = json_array();
    for (size_t i = 0; i < count && error == 0; i++) {
        char ref[1024];
        snprintf(ref, sizeof(ref), "%s:%s", from, tags[i]);
        error = add_job(jobs, n, repo, ref, tags[i], stream, o);
    }
    for (size_t i = 0; i < nmore; i++)
        json_array_append_new(extra, json_string(more[i]));
    json_object_set_new(repo_status, "additionalTags", extra);
    json_object_set_new(repo_status, "status",
                        json_pack("{s:s, s:i}", "status", "Success", "code", 200));
    for (size_t i = 0; i < count; i++)
        sw_free(tags[i]);
    for (size_t i = 0; i < nmore; i++)
        sw_free(more[i]);
    sw_free(tags);
    sw_free(more);
    return error;
}

static json_t *new_stream(const char *ns, const char *name)
{
    return json_pack("{s:s, s:s, s:{s:s, s:s}, s:{s:[]}}", "apiVersion", "image.openshift.io/v1",
                     "kind", "ImageStream", "metadata", "name", name, "namespace", ns, "spec",
                     "tags");
}

/* A Warning Event on the stream for each failure in fresh: whoever asked for the import (the
 * import controller, `slipway import-image`, a registry notification), a failure is reported
 * once, when it is first recorded. */
static void record_failures(sw_objects *o, const json_t *stream, const json_t *fresh)
{
    size_t i;
    json_t *f;
    json_array_foreach(fresh, i, f)
    {
        char text[1200];
        snprintf(text, sizeof(text), "importing tag %s failed: %s", sw_json_str_at(f, "tag"),
                 sw_json_str_at(f, "message"));
        const char *reason = sw_json_str_at(f, "reason");
        json_t *ev = sw_event_new(stream, "Warning", reason && *reason ? reason : "ImportFailed",
                                  "slipway-image-import", text);
        if (o->create(o, &sw_kind_event, ev, NULL) < 0)
            sw_log(SW_LOG_WARN, "cannot record the import failure of %s/%s:%s: %s",
                   sw_json_str_at(stream, "metadata.namespace"),
                   sw_json_str_at(stream, "metadata.name"), sw_json_str_at(f, "tag"),
                   sw_error_msg());
        json_decref(ev);
    }
}

/* Writes spec tags and results into the stream, retrying on conflicts; *out is the result. */
static int write_stream(sw_objects *o, const char *ns, const char *name, const import_job *jobs,
                        size_t n, bool may_create, json_t **out)
{
    int error = 0;
    for (int attempt = 0; attempt < 10; attempt++) {
        json_t *stream = NULL, *saved = NULL, *fresh = json_array();
        error = o->get(o, &sw_kind_imagestream, ns, name, &stream);
        bool exists = error == 0;
        if (error == SW_ENOTFOUND && may_create) {
            stream = new_stream(ns, name);
            error = 0;
        }
        if (error == 0 && (ensure_spec_tags(stream, jobs, n) || !exists)) {
            error = exists ? o->update(o, &sw_kind_imagestream, stream, &saved)
                           : o->create(o, &sw_kind_imagestream, stream, &saved);
            if (error == 0) {
                json_decref(stream);
                stream = saved;
                saved = NULL;
            }
        }
        if (error == 0 && apply_results(o, stream, jobs, n, fresh))
            error = o->update_status(o, &sw_kind_imagestream, stream, &saved);
        if (error == 0) {
            record_failures(o, saved ? saved : stream, fresh);
            *out = saved ? saved : json_incref(stream);
            saved = NULL;
        }
        json_decref(fresh);
        json_decref(stream);
        json_decref(saved);
        if (error != SW_ECONFLICT && error != SW_EEXISTS)
            break;
    }
    return error;
}

/* ISI preconditions: resourceVersion must match (Conflict), uid must match (NotFound). */
static int check_preconditions(const json_t *isi, const json_t *stream, const char *name)
{
    const char *rv = sw_json_str_at(isi, "metadata.resourceVersion");
    const char *uid = sw_json_str_at(isi, "metadata.uid");
    if (uid && *uid && (!stream || !sw_str_eq(uid, sw_json_str_at(stream, "metadata.uid"))))
        return sw_error_set(SW_ENOTFOUND, "imagestreams.image.openshift.io \"%s\" not found", name);
    if (rv && *rv &&
        (!stream || !sw_str_eq(rv, sw_json_str_at(stream, "metadata.resourceVersion"))))
        return sw_error_set(SW_ECONFLICT,
                            "Operation cannot be fulfilled on imagestreams.image.openshift.io "
                            "\"%s\": the object has been modified; please apply your changes to "
                            "the latest version and try again",
                            name);
    return 0;
}

int sw_imagestreamimport_run(const sw_kind_ctx *ctx, sw_objects *o, const char *ns, json_t *isi,
                             json_t **out)
{
    const char *name = sw_json_str_at(isi, "metadata.name");
    json_t *spec = json_object_get(isi, "spec");
    bool do_import = sw_json_bool_at(spec, "import");
    json_t *stream = NULL, *result = NULL, *repo_status = json_object();
    sw_creds *creds = NULL;
    import_job *jobs = sw_calloc(MAX_IMAGES, sizeof(*jobs));
    size_t n = 0;
    int error = 0;
    /* Tag listing and every image fetch of this request start nothing after the deadline. */
    int64_t deadline = sw_time_mono_ms() + IMPORT_DEADLINE_MS;
    if (!name || !*name)
        error = sw_error_set(SW_EINVALID, "metadata.name: Required value: the stream's name");
    else if (!ctx->registry)
        error = sw_error_set(SW_EUNAVAILABLE, "image import is not available on this server");
    if (error == 0) {
        error = o->get(o, &sw_kind_imagestream, ns, name, &stream);
        if (error == SW_ENOTFOUND) /* import creates it; a dry run needs none (oc new-app) */
            error = 0;
    }
    if (error == 0)
        error = check_preconditions(isi, stream, name);
    if (error == 0)
        error = collect_creds(o, ns, &creds);
    if (error == 0)
        error = image_jobs(spec, do_import, stream, o, jobs, &n);
    if (error == 0)
        error = repository_jobs(ctx, creds, spec, stream, o, jobs, &n, repo_status, deadline);
    if (error < 0)
        goto done;
    for (size_t i = 0; i < n; i++)
        jobs[i].req.deadline_ms = deadline;
    import_batch batch = {.ctx = ctx, .creds = creds, .jobs = jobs, .n = n};
    run_jobs(&batch);
    if (sw_registry_is_down(ctx->registry)) {
        /* Cut short by a stop: recording "failed" would keep the tags from being imported
         * again after the restart, so nothing is written. */
        error = sw_error_set(SW_EUNAVAILABLE, "the server is stopping: the import was abandoned "
                                              "and nothing was recorded");
        goto done;
    }
    if (do_import) {
        store_images(o, jobs, n);
        /* With a uid precondition (the controller's imports) a stream deleted meanwhile stays
         * deleted; otherwise an import creates the stream, as OpenShift's does. */
        bool may_create =
            !sw_json_str_at(isi, "metadata.uid") || !*sw_json_str_at(isi, "metadata.uid");
        if ((error = write_stream(o, ns, name, jobs, n, may_create, &result)) < 0)
            goto done;
    }
    json_t *status = json_object(), *images = json_array(), *repo_images = json_array();
    size_t nimages = json_array_size(json_object_get(spec, "images"));
    for (size_t i = 0; i < n; i++)
        json_array_append_new(i < nimages ? images : repo_images, item_status(&jobs[i]));
    json_object_set_new(status, "images", images);
    if (json_object_get(spec, "repository")) {
        json_object_set_new(repo_status, "images", repo_images);
        json_object_set(status, "repository", repo_status);
    } else {
        json_decref(repo_images);
    }
    if (result)
        json_object_set(status, "import", result);
    *out = json_deep_copy(isi);
    json_object_set_new(*out, "status", status);
done:
    jobs_dispose(jobs, n);
    sw_creds_free(creds);
    json_decref(stream);
    json_decref(result);
    json_decref(repo_status);
    return error;
}

static int isi_create(const sw_kind_ctx *ctx, sw_objects *o, const char *ns, json_t *body,
                      json_t **out)
{
    return sw_imagestreamimport_run(ctx, o, ns, body, out);
}

static const sw_virtual_ops isi_ops = {.create = isi_create};
static const char *const isi_verbs[] = {"create", NULL};

const sw_kind sw_kind_imagestreamimport = {
    .group = "image.openshift.io",
    .version = "v1",
    .kind = "ImageStreamImport",
    .plural = "imagestreamimports",
    .singular = "imagestreamimport",
    .namespaced = true,
    .schema_text =
        "{\"spec\":{\"import\":\"boolean\",\"images\":[{\"from\":{\"kind\":\"string\","
        "\"name\":\"string\",\"namespace\":\"string\"},\"to\":{\"name\":\"string\"},"
        "\"importPolicy\":{\"insecure\":\"boolean\",\"scheduled\":\"boolean\","
        "\"importMode\":\"string\"},\"referencePolicy\":{\"type\":\"string\"},"
        "\"includeManifest\":\"boolean\"}],\"repository\":{\"from\":{\"kind\":\"string\","
        "\"name\":\"string\",\"namespace\":\"string\"},\"importPolicy\":{\"insecure\":\"boolean\","
        "\"scheduled\":\"boolean\",\"importMode\":\"string\"},\"referencePolicy\":{\"type\":"
        "\"string\"},\"includeManifest\":\"boolean\"}},\"status\":\"any\"}",
    .virt = &isi_ops,
    .verbs = isi_verbs,
};
