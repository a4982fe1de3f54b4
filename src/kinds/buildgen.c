/* buildgen: the build generator behind buildconfigs/<n>/instantiate, builds/<n>/clone and the
 * webhooks (openshift-api.md §4.3, §5.2): the BuildConfig's lastVersion is bumped first (a race
 * fails there, not on the Build), then Build <bc>-<n> is created from the config's common spec,
 * the request's overrides and its causes. Also builds/<n>/details, through which a builder
 * reports its progress. */
#include "kinds/build.h"

#include "kinds/core.h"
#include "util/alloc.h"
#include "util/error.h"
#include "util/json.h"
#include "util/str.h"
#include "util/time.h"

#include <openssl/crypto.h>
#include <stdio.h>
#include <string.h>

#define MAX_REQUEST (1024 * 1024)

static int parse_request(const sw_subreq *r, json_t **out)
{
    return sw_subreq_json(r, "a BuildRequest", MAX_REQUEST, out);
}

/* Sets name=value in an env list (replacing an existing entry). */
static void env_set(json_t *list, const char *name, const json_t *entry)
{
    size_t i;
    json_t *e;
    json_array_foreach(list, i, e)
    {
        if (sw_str_eq(sw_json_str_at(e, "name"), name)) {
            json_array_set(list, i, (json_t *)entry);
            return;
        }
    }
    json_array_append(list, (json_t *)entry);
}

static void merge_env(json_t *spec, const char *path, const json_t *extra)
{
    size_t i;
    json_t *e;
    if (!json_array_size(extra))
        return;
    json_t *list = sw_json_at(spec, path);
    if (!json_is_array(list)) {
        list = json_array();
        sw_json_set_path(spec, path, list);
    }
    json_array_foreach(extra, i, e)
    {
        const char *name = sw_json_str_at(e, "name");
        if (name)
            env_set(list, name, e);
    }
}

/* The request's overrides on a Build spec. */
static void apply_request(json_t *spec, const json_t *req)
{
    bool source = sw_str_eq(sw_json_str_at(spec, "strategy.type"), "Source");
    merge_env(spec, source ? "strategy.sourceStrategy.env" : "strategy.dockerStrategy.env",
              json_object_get(req, "env"));
    /* dockerStrategyOptions are the Docker strategy's (OpenShift ignores them for Source) */
    if (!source)
        merge_env(spec, "strategy.dockerStrategy.buildArgs",
                  sw_json_at(req, "dockerStrategyOptions.buildArgs"));
    json_t *nc = sw_json_at(req, "dockerStrategyOptions.noCache");
    if (json_is_boolean(nc) && !source)
        sw_json_set_path(spec, "strategy.dockerStrategy.noCache", json_incref(nc));
    if (json_object_get(req, "from"))
        sw_json_set_path(spec,
                         source ? "strategy.sourceStrategy.from" : "strategy.dockerStrategy.from",
                         json_deep_copy(json_object_get(req, "from")));
    if (json_object_get(req, "revision"))
        json_object_set(spec, "revision", json_object_get(req, "revision"));
    if (sw_json_str_at(req, "binary.asFile")) /* instantiatebinary ?asFile= */
        sw_json_set_path(spec, "source.binary.asFile",
                         json_string(sw_json_str_at(req, "binary.asFile")));
    json_t *causes = json_object_get(req, "triggeredBy");
    json_object_set_new(spec, "triggeredBy",
                        json_array_size(causes)
                            ? json_deep_copy(causes)
                            : json_pack("[{s:s}]", "message", "Manually triggered"));
}

/* The Build <bc>-<number> for config bc with spec as its spec (stolen). */
static json_t *new_build(const json_t *bc, json_t *spec, int64_t number)
{
    const char *name = sw_json_str_at(bc, "metadata.name");
    char bname[300], num[24];
    snprintf(bname, sizeof(bname), "%s-%lld", name, (long long)number);
    snprintf(num, sizeof(num), "%lld", (long long)number);
    const char *policy = sw_json_str_at(bc, "spec.runPolicy");
    json_t *labels = json_deep_copy(sw_json_at(bc, "metadata.labels"));
    if (!json_is_object(labels)) {
        json_decref(labels);
        labels = json_object();
    }
    json_object_set_new(labels, "openshift.io/build-config.name", json_string(name));
    json_object_set_new(labels, "openshift.io/build.start-policy",
                        json_string(policy ? policy : "Serial"));
    static const char *const drop[] = {"triggers", "runPolicy", "successfulBuildsHistoryLimit",
                                       "failedBuildsHistoryLimit"};
    for (size_t i = 0; i < sizeof(drop) / sizeof(drop[0]); i++)
        json_object_del(spec, drop[i]);
    json_t *build = json_pack(
        "{s:s, s:s, s:{s:s, s:s, s:o, s:{s:s, s:s}, s:[{s:s, s:s, s:s, s:s, s:b, s:b}]}, s:o}",
        "apiVersion", "build.openshift.io/v1", "kind", "Build", "metadata", "name", bname,
        "namespace", sw_json_str_at(bc, "metadata.namespace"), "labels", labels, "annotations",
        "openshift.io/build-config.name", name, "openshift.io/build.number", num, "ownerReferences",
        "apiVersion", "build.openshift.io/v1", "kind", "BuildConfig", "name", name, "uid",
        sw_json_str_at(bc, "metadata.uid") ?: "", "controller", 1, "blockOwnerDeletion", 1, "spec",
        spec);
    /* the build backend's settings (docs/builds.md, "Backends") travel from config to build */
    static const char *const keep[] = {"build.slipway.dev/backend", "build.slipway.dev/network",
                                       "build.slipway.dev/target"};
    json_t *from = sw_json_at(bc, "metadata.annotations");
    for (size_t i = 0; i < sizeof(keep) / sizeof(keep[0]); i++) {
        json_t *v = json_object_get(from, keep[i]);
        if (json_is_string(v))
            json_object_set(sw_json_at(build, "metadata.annotations"), keep[i], v);
    }
    return build;
}

/* Bumps bc's lastVersion past floor (retrying conflicts): *saved is the BuildConfig after it,
 * *number the new version. want >= 0 must be the version found (the request's lastVersion). */
static int bump(sw_objects *o, const char *ns, const char *bc_name, int64_t want, int64_t floor,
                json_t **saved, int64_t *number)
{
    int error = 0;
    json_t *bc = NULL;
    for (int attempt = 0; attempt < 10; attempt++) {
        json_decref(bc);
        bc = NULL;
        if ((error = o->get(o, &sw_kind_buildconfig, ns, bc_name, &bc)) < 0)
            break;
        const char *paused = json_string_value(json_object_get(
            sw_json_at(bc, "metadata.annotations"), "openshift.io/build-config.paused"));
        if (sw_str_eq(paused, "true")) {
            error = sw_error_set(SW_EBADREQUEST,
                                 "can't instantiate from BuildConfig %s/%s: BuildConfig is paused",
                                 ns, bc_name);
            break;
        }
        int64_t n = 0;
        sw_json_int_at(bc, "status.lastVersion", &n);
        if (want >= 0 && want != n) {
            error = sw_error_set(SW_ECONFLICT, "the BuildConfig %s/%s is at version %lld, not %lld",
                                 ns, bc_name, (long long)n, (long long)want);
            break;
        }
        *number = (n > floor ? n : floor) + 1;
        sw_json_set_path(bc, "status.lastVersion", json_integer(*number));
        json_decref(*saved);
        *saved = NULL;
        error = o->update_status(o, &sw_kind_buildconfig, bc, saved);
        if (error != SW_ECONFLICT)
            break;
    }
    json_decref(bc);
    return error;
}

/* The highest n of the Builds named <bc>-<n> in ns: builds a deleted BuildConfig of the same
 * name left behind (nothing collects them) hold names a new one would generate again. */
static int64_t highest_build(sw_objects *o, const char *ns, const char *bc_name)
{
    json_t *items = NULL, *b;
    size_t i, len = strlen(bc_name);
    int64_t high = 0;
    if (o->list(o, &sw_kind_build, ns, &items) < 0)
        return 0;
    json_array_foreach(items, i, b)
    {
        const char *name = sw_json_str_at(b, "metadata.name");
        uint64_t n = 0;
        const char *p = name ? name + len + 1 : NULL;
        if (p && !strncmp(name, bc_name, len) && name[len] == '-' && *p &&
            sw_parse_u64(&p, INT64_MAX, &n) == 0 && !*p && (int64_t)n > high)
            high = (int64_t)n;
    }
    json_decref(items);
    return high;
}

/* Bumps bc's lastVersion and creates the Build from spec (stolen; NULL: the BuildConfig's).
 * When the generated name is taken (by a build of an earlier BuildConfig of the same name), the
 * version moves past the highest such build and the create is tried once more. */
static int generate(sw_objects *o, const char *ns, const char *bc_name, const json_t *req,
                    json_t *spec, json_t **out)
{
    int error = 0;
    json_t *saved = NULL;
    int64_t want = -1, number = 0, floor = 0;
    sw_json_int_at(req, "lastVersion", &want);
    for (int round = 0; round < 2; round++) {
        if ((error = bump(o, ns, bc_name, want, floor, &saved, &number)) < 0)
            break;
        json_t *use = spec ? json_deep_copy(spec) : json_deep_copy(sw_json_at(saved, "spec"));
        apply_request(use, req);
        json_t *build = new_build(saved, use, number);
        json_t *ann = sw_json_at(req, "metadata.annotations");
        if (json_is_object(ann)) /* the request's annotations, never over the Build's own */
            json_object_update_missing(sw_json_at(build, "metadata.annotations"), ann);
        error = o->create(o, &sw_kind_build, build, out);
        json_decref(build);
        if (error != SW_EEXISTS || o->dry_run)
            break;
        floor = highest_build(o, ns, bc_name);
        want = -1; /* the request's version held for the first bump */
    }
    json_decref(spec);
    json_decref(saved);
    return error;
}

int sw_build_instantiate(sw_objects *o, const char *ns, const char *bc, const json_t *req,
                         json_t **out)
{
    return generate(o, ns, bc, req, NULL, out);
}

int sw_build_bc_instantiate(const sw_kind_ctx *ctx, sw_objects *o, const sw_subreq *r,
                            sw_subresp *out)
{
    json_t *req = NULL;
    int error = strcmp(r->method, "POST")
                    ? sw_error_set(SW_EMETHOD, "instantiate takes a POSTed BuildRequest")
                    : parse_request(r, &req);
    if (error == 0)
        error = sw_build_instantiate(o, r->ns, r->name, req, &out->obj);
    out->status = 201;
    json_decref(req);
    return error;
}

int sw_build_build_clone(const sw_kind_ctx *ctx, sw_objects *o, const sw_subreq *r, sw_subresp *out)
{
    json_t *req = NULL, *build = NULL;
    int error = strcmp(r->method, "POST")
                    ? sw_error_set(SW_EMETHOD, "clone takes a POSTed BuildRequest")
                    : parse_request(r, &req);
    if (error == 0)
        error = o->get(o, &sw_kind_build, r->ns, r->name, &build);
    const char *bc = build ? sw_json_str_at(build, "status.config.name") : NULL;
    if (error == 0 && !bc)
        error = sw_error_set(SW_EBADREQUEST, "build %s/%s has no BuildConfig to clone from", r->ns,
                             r->name);
    if (error == 0) {
        json_t *spec = json_deep_copy(json_object_get(build, "spec"));
        json_object_del(spec, "triggeredBy");
        if (!json_array_size(json_object_get(req, "triggeredBy")))
            json_object_set_new(req, "triggeredBy",
                                json_pack("[{s:s}]", "message", "Manually triggered"));
        error = generate(o, r->ns, bc, req, spec, &out->obj);
    }
    out->status = 201;
    json_decref(req);
    json_decref(build);
    return error;
}

/* builds/<n>/details: what a builder may report — reason, message, stages, the output digest,
 * the pushed reference, a log snippet, the backend that built (slipway's status.backend), and
 * the phase moving forward. */
int sw_build_build_details(const sw_kind_ctx *ctx, sw_objects *o, const sw_subreq *r,
                           sw_subresp *out)
{
    static const char *const fields[] = {
        "phase",      "reason",         "message",
        "stages",     "output",         "outputDockerImageReference",
        "logSnippet", "startTimestamp", "completionTimestamp",
        "duration",   "backend"};
    json_t *body = NULL, *build = NULL;
    int error = strcmp(r->method, "PUT") && strcmp(r->method, "POST")
                    ? sw_error_set(SW_EMETHOD, "details takes a PUT of the Build")
                    : parse_request(r, &body);
    for (int attempt = 0; error == 0 && attempt < 10; attempt++) {
        json_decref(build);
        build = NULL;
        if ((error = o->get(o, &sw_kind_build, r->ns, r->name, &build)) < 0)
            break;
        if (sw_build_phase_terminal(sw_json_str_at(build, "status.phase"))) {
            error = sw_error_set(SW_ECONFLICT, "build %s/%s already finished as %s", r->ns, r->name,
                                 sw_json_str_at(build, "status.phase"));
            break;
        }
        json_t *st = sw_json_obj_path(build, "status");
        for (size_t i = 0; i < sizeof(fields) / sizeof(fields[0]); i++) {
            json_t *v = sw_json_at(body, "status")
                            ? json_object_get(json_object_get(body, "status"), fields[i])
                            : NULL;
            if (v)
                json_object_set(st, fields[i], v);
        }
        error = o->update_status(o, &sw_kind_build, build, &out->obj);
        if (error != SW_ECONFLICT)
            break;
    }
    json_decref(body);
    json_decref(build);
    return error;
}

/* The secret a webhook trigger of type hook ("generic", "github"...) expects. */
static bool secret_matches(sw_objects *o, const char *ns, const json_t *trigger, const char *hook,
                           const char *given)
{
    char path[64];
    const char *secret;
    json_t *s = NULL;
    bool ok = false;
    snprintf(path, sizeof(path), "%s.secret", hook);
    secret = sw_json_str_at(trigger, path);
    if (secret && *secret)
        return strlen(secret) == strlen(given) && !CRYPTO_memcmp(secret, given, strlen(given));
    snprintf(path, sizeof(path), "%s.secretReference.name", hook);
    const char *ref = sw_json_str_at(trigger, path);
    if (ref && o->get(o, &sw_kind_secret, ns, ref, &s) == 0) {
        const char *b64 = sw_json_str_at(s, "data.WebHookSecretKey");
        unsigned char *raw = NULL;
        size_t n = 0;
        if (b64 && sw_base64_decode(b64, strlen(b64), &raw, &n) == 0)
            ok = n == strlen(given) && !CRYPTO_memcmp(raw, given, n);
        sw_free(raw);
    }
    json_decref(s);
    return ok;
}

static const json_t *find_trigger(sw_objects *o, const char *ns, const json_t *bc, const char *hook,
                                  const char *secret)
{
    size_t i;
    json_t *t;
    json_array_foreach(sw_json_at(bc, "spec.triggers"), i, t)
    {
        const char *type = sw_json_str_at(t, "type");
        if (type && !strcasecmp(type, hook) && secret_matches(o, ns, t, hook, secret))
            return t;
    }
    return NULL;
}

bool sw_build_webhook_allowed(sw_objects *o, const char *ns, const char *name, const char *secret,
                              const char *hook)
{
    json_t *bc = NULL;
    bool ok = o->get(o, &sw_kind_buildconfig, ns, name, &bc) == 0 &&
              find_trigger(o, ns, bc, hook, secret) != NULL;
    json_decref(bc);
    return ok;
}

/* buildconfigs/<n>/webhooks/<secret>/<generic|github|gitlab|bitbucket> */
int sw_build_bc_webhook(const sw_kind_ctx *ctx, sw_objects *o, const sw_subreq *r, sw_subresp *out)
{
    char secret[256], hook[32];
    const char *slash = strchr(r->rest, '/');
    json_t *bc = NULL, *body = NULL, *req = NULL;
    if (strcmp(r->method, "POST"))
        return sw_error_set(SW_EMETHOD, "webhooks take a POST");
    if (!slash || (size_t)(slash - r->rest) >= sizeof(secret) ||
        strlen(slash + 1) >= sizeof(hook) || strchr(slash + 1, '/'))
        return sw_error_set(SW_ENOTFOUND, "the webhook path must be webhooks/<secret>/<type>");
    memcpy(secret, r->rest, (size_t)(slash - r->rest));
    secret[slash - r->rest] = '\0';
    sw_strlcpy(hook, slash + 1, sizeof(hook));
    int error = o->get(o, &sw_kind_buildconfig, r->ns, r->name, &bc);
    const json_t *trigger = error == 0 ? find_trigger(o, r->ns, bc, hook, secret) : NULL;
    /* a missing BuildConfig answers as a wrong secret does: no oracle of which ones exist */
    if (!trigger)
        error = sw_error_set(SW_EUNAUTHORIZED, "Unauthorized");
    bool github = !strcasecmp(hook, "github");
    const char *event = r->header ? r->header(r->conn, "X-GitHub-Event") : NULL;
    if (error == 0 && github && sw_str_eq(event, "ping"))
        goto done; /* GitHub's hook test: nothing to build */
    if (error == 0 && github && !sw_str_eq(event, "push"))
        error = sw_error_set(SW_EBADREQUEST,
                             "the GitHub webhook builds on push events only (X-GitHub-Event: "
                             "%.40s)",
                             event ? event : "none");
    /* GitHub sends JSON: a payload that does not parse must not skip the branch check below.
     * The generic hook builds on any payload, as OpenShift's does. */
    if (error == 0 && r->body_len && parse_request(r, &body) < 0)
        body = NULL;
    if (error == 0 && github && !json_is_object(body))
        error = sw_error_set(SW_EBADREQUEST, "the GitHub webhook needs the push event's JSON "
                                             "object as its payload");
    if (error == 0 && github) {
        const char *ref = sw_json_str_at(body, "ref");
        const char *want = sw_json_str_at(bc, "spec.source.git.ref");
        char full[300];
        snprintf(full, sizeof(full), "refs/heads/%s", want ? want : "");
        if (ref && want && *want && strcmp(ref, full) && strcmp(ref, want))
            goto done; /* a push to another branch */
    }
    if (error == 0) {
        char msg[64];
        snprintf(msg, sizeof(msg), "%s WebHook", github ? "GitHub" : "Generic");
        req = json_pack("{s:[{s:s}]}", "triggeredBy", "message", msg);
        char path[64];
        snprintf(path, sizeof(path), "%s.allowEnv", hook);
        if (sw_json_bool_at(trigger, path) && json_is_array(json_object_get(body, "env")))
            json_object_set(req, "env", json_object_get(body, "env"));
        error = sw_build_instantiate(o, r->ns, r->name, req, &out->obj);
    }
done:
    json_decref(bc);
    json_decref(body);
    json_decref(req);
    return error;
}
