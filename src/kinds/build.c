/* build: build.openshift.io/v1 BuildConfig and Build (openshift-api.md §4.3, §5): descriptors,
 * defaults (runPolicy Serial, history limits 5, a new Build is phase New), validation of the
 * subset slipway builds (the Docker strategy; Git, Dockerfile, Binary and None sources; output
 * to an ImageStreamTag or a DockerImage) and the phase rules (a finished build stays finished). */
#include "kinds/docs.h"
#include "kinds/build.h"

#include "util/error.h"
#include "util/json.h"
#include "util/str.h"
#include "util/time.h"

#include <stdio.h>
#include <string.h>

bool sw_build_file_name_ok(const char *name)
{
    size_t len = strlen(name);
    if (len == 0 || len > 255 || !strcmp(name, ".") || !strcmp(name, ".."))
        return false;
    for (const unsigned char *p = (const unsigned char *)name; *p; p++)
        if (*p == '/' || *p == '\\' || *p < 0x20 || *p == 0x7f)
            return false;
    return true;
}

/* env and buildArgs entries need a name a shell variable could have (Kubernetes' rule for
 * env names: [-._a-zA-Z][-._a-zA-Z0-9]*): "A=B" as a name would make an ambiguous ENV entry. */
bool sw_build_env_name_ok(const char *name, size_t len)
{
    if (!name || len == 0 || (name[0] >= '0' && name[0] <= '9'))
        return false;
    for (size_t i = 0; i < len; i++) {
        char c = name[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '-' || c == '.' || c == '_'))
            return false;
    }
    return true;
}

static int check_env_names(const json_t *spec, const char *path)
{
    size_t i;
    json_t *e;
    json_array_foreach(sw_json_at(spec, path), i, e)
    {
        const char *name = sw_json_str_at(e, "name");
        if (!sw_build_env_name_ok(name, name ? strlen(name) : 0))
            return sw_error_set(SW_EINVALID,
                                "spec.%s[%zu].name: Invalid value: \"%.64s\": a valid environment "
                                "variable name must consist of alphabetic characters, digits, '_', "
                                "'-', or '.', and must not start with a digit",
                                path, i, name ? name : "");
    }
    return 0;
}

const char *sw_build_strategy_path(const json_t *obj)
{
    return sw_str_eq(sw_json_str_at(obj, "spec.strategy.type"), "Source")
               ? "spec.strategy.sourceStrategy"
               : "spec.strategy.dockerStrategy";
}

const json_t *sw_build_strategy_from(const json_t *obj)
{
    return json_object_get(sw_json_at(obj, sw_build_strategy_path(obj)), "from");
}

int sw_build_validate_common(const json_t *spec)
{
    static const char *const sources[] = {"Git", "Dockerfile", "Binary", "None", NULL};
    static const char *const strategies[] = {"Docker", "Source", NULL};
    static const char *const outputs[] = {"ImageStreamTag", "DockerImage", NULL};
    static const char *const froms[] = {"DockerImage", "ImageStreamTag", "ImageStreamImage", NULL};
    int error = sw_kind_check_enum(spec, NULL, "source.type", sources, false);
    if (error == 0)
        error = sw_kind_check_enum(spec, NULL, "strategy.type", strategies, true);
    if (error == 0 && sw_json_at(spec, "strategy.dockerStrategy.from"))
        error = sw_kind_check_enum(spec, NULL, "strategy.dockerStrategy.from.kind", froms, true);
    bool source = sw_str_eq(sw_json_str_at(spec, "strategy.type"), "Source");
    if (error == 0 && source && !sw_json_str_at(spec, "strategy.sourceStrategy.from.name"))
        error = sw_error_set(SW_EINVALID, "spec.strategy.sourceStrategy.from.name: Required value: "
                                          "the builder image");
    if (error == 0 && source)
        error = sw_kind_check_enum(spec, NULL, "strategy.sourceStrategy.from.kind", froms, true);
    if (error == 0 && source)
        error = check_env_names(spec, "strategy.sourceStrategy.env");
    if (error == 0 && sw_json_at(spec, "output.to"))
        error = sw_kind_check_enum(spec, NULL, "output.to.kind", outputs, true);
    if (error == 0 && sw_str_eq(sw_json_str_at(spec, "source.type"), "Git") &&
        !sw_json_str_at(spec, "source.git.uri"))
        error = sw_error_set(SW_EINVALID, "spec.source.git.uri: Required value");
    if (error == 0 && sw_str_eq(sw_json_str_at(spec, "source.type"), "Dockerfile") &&
        !sw_json_str_at(spec, "source.dockerfile"))
        error = sw_error_set(SW_EINVALID, "spec.source.dockerfile: Required value");
    const char *ctx = sw_json_str_at(spec, "source.contextDir");
    if (error == 0 && ctx && (ctx[0] == '/' || strstr(ctx, "..")))
        error = sw_error_set(SW_EINVALID,
                             "spec.source.contextDir: Invalid value: \"%.200s\": must be a "
                             "relative path inside the source, without '..'",
                             ctx);
    if (error == 0)
        error = check_env_names(spec, "strategy.dockerStrategy.env");
    if (error == 0)
        error = check_env_names(spec, "strategy.dockerStrategy.buildArgs");
    const char *as_file = sw_json_str_at(spec, "source.binary.asFile");
    if (error == 0 && as_file && !sw_build_file_name_ok(as_file))
        error = sw_error_set(SW_EINVALID,
                             "spec.source.binary.asFile: Invalid value: \"%.200s\": must be a "
                             "file name (no '/' or '\\', not \".\" or \"..\", no control "
                             "characters, at most 255 bytes)",
                             as_file);
    int64_t deadline;
    if (error == 0 && sw_json_int_at(spec, "completionDeadlineSeconds", &deadline) && deadline <= 0)
        error = sw_error_set(SW_EINVALID,
                             "spec.completionDeadlineSeconds: Invalid value: must be positive");
    if (error == SW_EINVALID && strncmp(sw_error_msg(), "spec.", 5)) {
        char msg[600];
        sw_strlcpy(msg, sw_error_msg(), sizeof(msg));
        sw_error_set(SW_EINVALID, "spec.%s", msg);
    }
    return error;
}

/* ---- BuildConfig ---- */

static void default_strategy_type(json_t *spec)
{
    if (!sw_json_str_at(spec, "strategy.type") && sw_json_at(spec, "strategy.dockerStrategy"))
        sw_json_set_path(spec, "strategy.type", json_string("Docker"));
    else if (!sw_json_str_at(spec, "strategy.type") && sw_json_at(spec, "strategy.sourceStrategy"))
        sw_json_set_path(spec, "strategy.type", json_string("Source"));
}

static int bc_prepare_create(const sw_kind_ctx *ctx, json_t *obj)
{
    json_t *spec = sw_json_obj_path(obj, "spec");
    if (!sw_json_str_at(spec, "runPolicy"))
        json_object_set_new(spec, "runPolicy", json_string("Serial"));
    if (!json_object_get(spec, "successfulBuildsHistoryLimit"))
        json_object_set_new(spec, "successfulBuildsHistoryLimit", json_integer(5));
    if (!json_object_get(spec, "failedBuildsHistoryLimit"))
        json_object_set_new(spec, "failedBuildsHistoryLimit", json_integer(5));
    default_strategy_type(spec);
    sw_json_set_path(obj, "status.lastVersion", json_integer(0));
    return 0;
}

static int bc_prepare_update(const sw_kind_ctx *ctx, json_t *obj, const json_t *old)
{
    default_strategy_type(sw_json_obj_path(obj, "spec"));
    return 0;
}

static int check_triggers(const json_t *spec)
{
    static const char *const types[] = {"ConfigChange", "ImageChange", "Generic", "GitHub",
                                        "GitLab",       "Bitbucket",   NULL};
    size_t i, empty_from = 0;
    json_t *t;
    json_array_foreach(json_object_get(spec, "triggers"), i, t)
    {
        const char *type = sw_json_str_at(t, "type");
        if (!sw_str_one_of(type, types))
            return sw_error_set(SW_EINVALID,
                                "spec.triggers[%zu].type: Unsupported value: \"%.64s\"", i,
                                type ? type : "");
        const char *hook = !strcmp(type, "Generic")     ? "generic"
                           : !strcmp(type, "GitHub")    ? "github"
                           : !strcmp(type, "GitLab")    ? "gitlab"
                           : !strcmp(type, "Bitbucket") ? "bitbucket"
                                                        : NULL;
        char path[64];
        if (hook) {
            snprintf(path, sizeof(path), "%s.secret", hook);
            const char *secret = sw_json_str_at(t, path);
            snprintf(path, sizeof(path), "%s.secretReference.name", hook);
            if ((!secret || !*secret) && !sw_json_str_at(t, path))
                return sw_error_set(SW_EINVALID,
                                    "spec.triggers[%zu].%s.secret: Required value: a webhook "
                                    "trigger needs a secret or a secretReference",
                                    i, hook);
        }
        if (!strcmp(type, "ImageChange") && !sw_json_at(t, "imageChange.from") && ++empty_from > 1)
            return sw_error_set(SW_EINVALID,
                                "spec.triggers[%zu].imageChange.from: Invalid value: only one "
                                "ImageChange trigger may omit from (it follows the strategy's)",
                                i);
    }
    return 0;
}

/* The name goes into each build's openshift.io/build-config.name label (63 characters at most)
 * and into its name <bc>-<n>: a longer one could be created but never built. OpenShift
 * truncates the label; slipway refuses the name instead. */
static int bc_name_ok(const json_t *obj)
{
    const char *name = sw_json_str_at(obj, "metadata.name");
    if (name && strlen(name) > 63)
        return sw_error_set(SW_EINVALID,
                            "metadata.name: Invalid value: \"%.80s...\": must be no more than 63 "
                            "characters (it labels the BuildConfig's builds)",
                            name);
    return 0;
}

static int bc_validate(const sw_kind_ctx *ctx, const json_t *obj, const json_t *old)
{
    static const char *const policies[] = {"Serial", "Parallel", "SerialLatestOnly", NULL};
    const json_t *spec = json_object_get(obj, "spec");
    int error = bc_name_ok(obj);
    if (error < 0)
        return error;
    error = sw_kind_check_enum(spec, NULL, "runPolicy", policies, true);
    if (error == SW_EINVALID) {
        char msg[600];
        sw_strlcpy(msg, sw_error_msg(), sizeof(msg));
        sw_error_set(SW_EINVALID, "spec.%s", msg);
    }
    if (error == 0)
        error = sw_build_validate_common(spec);
    if (error == 0)
        error = check_triggers(spec);
    int64_t lim;
    if (error == 0 && ((sw_json_int_at(spec, "successfulBuildsHistoryLimit", &lim) && lim < 0) ||
                       (sw_json_int_at(spec, "failedBuildsHistoryLimit", &lim) && lim < 0)))
        error = sw_error_set(SW_EINVALID, "spec: history limits must not be negative");
    return error;
}

static void strategy_cell(const json_t *obj, sw_buf *out)
{
    sw_column_str(obj, "spec.strategy.type", out);
}

static void from_cell(const json_t *obj, sw_buf *out)
{
    const char *type = sw_json_str_at(obj, "spec.source.type");
    const char *uri = sw_json_str_at(obj, "spec.source.git.uri");
    sw_buf_printf(out, "%s%s%s", type ? type : "None", uri ? "@" : "", uri ? uri : "");
}

static void latest_cell(const json_t *obj, sw_buf *out)
{
    int64_t v = 0;
    sw_json_int_at(obj, "status.lastVersion", &v);
    sw_buf_printf(out, "%lld", (long long)v);
}

static const sw_column bc_columns[] = {
    {"Type", "string", "The build strategy", 0, strategy_cell, NULL, NULL},
    {"From", "string", "Where the source comes from", 0, from_cell, NULL, NULL},
    {"Latest", "string", "The number of the newest build", 0, latest_cell, NULL, NULL},
};

static const char *const post_verbs[] = {"create", NULL};
static const char *const details_verbs[] = {"update", NULL};
static const char *const log_verbs[] = {"get", "create", NULL};
static const char *const get_verbs[] = {"get", NULL};

static const sw_subresource bc_subresources[] = {
    {"instantiate", "BuildRequest", post_verbs, false, sw_build_bc_instantiate},
    {"instantiatebinary", "BinaryBuildRequestOptions", post_verbs, false,
     sw_build_bc_instantiatebinary},
    {"webhooks", "Build", post_verbs, true, sw_build_bc_webhook},
};

const sw_kind sw_kind_buildconfig = {
    .group = "build.openshift.io",
    .version = "v1",
    .kind = "BuildConfig",
    .plural = "buildconfigs",
    .singular = "buildconfig",
    .short_names = {"bc"},
    .categories = {"all"},
    .namespaced = true,
    .has_status = true,
    .spec_generation = true,
    .name_rule = SW_NAME_SUBDOMAIN,
    .docs = sw_docs_buildconfig,
    .schema_text = "{\"spec\":{\"triggers\":[\"any\"],\"runPolicy\":\"string\","
                   "\"successfulBuildsHistoryLimit\":\"integer\","
                   "\"failedBuildsHistoryLimit\":\"integer\"," SW_BUILD_COMMON_SPEC "},"
                   "\"status\":{\"lastVersion\":\"integer\",\"imageChangeTriggers\":[\"any\"]}}",
    .columns = bc_columns,
    .ncolumns = 3,
    .prepare_create = bc_prepare_create,
    .prepare_update = bc_prepare_update,
    .validate = bc_validate,
    .subresources = bc_subresources,
    .nsubresources = sizeof(bc_subresources) / sizeof(bc_subresources[0]),
};

/* ---- Build ---- */

bool sw_build_phase_terminal(const char *phase)
{
    return sw_str_eq(phase, "Complete") || sw_str_eq(phase, "Failed") ||
           sw_str_eq(phase, "Error") || sw_str_eq(phase, "Cancelled");
}

/* OpenShift's build conditions: one per phase the build has been in, the current one True
 * (with status.reason and status.message), the earlier ones False; a condition keeps its
 * lastTransitionTime while its status stays. So `kubectl wait --for=condition=Complete`
 * works. */
static void phase_conditions(json_t *obj)
{
    static const char *const phases[] = {"New",    "Pending", "Running",   "Complete",
                                         "Failed", "Error",   "Cancelled", NULL};
    const char *phase = sw_json_str_at(obj, "status.phase");
    if (!sw_str_one_of(phase, phases))
        return;
    char now[32];
    sw_time_format(sw_time_now(), now, sizeof(now));
    json_t *st = sw_json_obj_path(obj, "status");
    json_t *old = json_object_get(st, "conditions"), *out = json_array();
    bool have = false;
    size_t i;
    json_t *c;
    json_array_foreach(json_is_array(old) ? old : NULL, i, c)
    {
        const char *type = sw_json_str_at(c, "type");
        if (!json_is_object(c) || !sw_str_one_of(type, phases)) {
            json_array_append(out, c); /* a condition of another type stays as it is */
            continue;
        }
        bool current = sw_str_eq(type, phase);
        const char *want = current ? "True" : "False";
        json_t *copy = json_deep_copy(c);
        if (!sw_str_eq(sw_json_str_at(c, "status"), want)) {
            json_object_set_new(copy, "status", json_string(want));
            json_object_set_new(copy, "lastTransitionTime", json_string(now));
            json_object_set_new(copy, "lastUpdateTime", json_string(now));
        }
        if (current) {
            have = true;
            const char *reason = sw_json_str_at(st, "reason"), *msg = sw_json_str_at(st, "message");
            if (!sw_str_eq(sw_json_str_at(copy, "reason"), reason ? reason : "") ||
                !sw_str_eq(sw_json_str_at(copy, "message"), msg ? msg : "")) {
                json_object_set_new(copy, "reason", json_string(reason ? reason : ""));
                json_object_set_new(copy, "message", json_string(msg ? msg : ""));
                json_object_set_new(copy, "lastUpdateTime", json_string(now));
            }
        }
        json_array_append_new(out, copy);
    }
    if (!have) {
        const char *reason = sw_json_str_at(st, "reason"), *msg = sw_json_str_at(st, "message");
        json_array_append_new(out,
                              json_pack("{s:s, s:s, s:s, s:s, s:s, s:s}", "type", phase, "status",
                                        "True", "lastUpdateTime", now, "lastTransitionTime", now,
                                        "reason", reason ? reason : "", "message", msg ? msg : ""));
    }
    json_object_set_new(st, "conditions", out);
}

static int build_prepare_create(const sw_kind_ctx *ctx, json_t *obj)
{
    const char *bc = json_string_value(
        json_object_get(sw_json_at(obj, "metadata.labels"), "openshift.io/build-config.name"));
    sw_json_set_path(obj, "status.phase", json_string("New"));
    if (bc)
        sw_json_set_path(obj, "status.config",
                         json_pack("{s:s, s:s, s:s}", "kind", "BuildConfig", "namespace",
                                   sw_json_str_at(obj, "metadata.namespace") ?: "", "name", bc));
    default_strategy_type(sw_json_obj_path(obj, "spec"));
    json_object_del(sw_json_obj_path(obj, "status"), "conditions");
    phase_conditions(obj);
    return 0;
}

/* Log followers wait for a build's phase to change: wake them once it is stored. */
static void build_committed(const sw_kind_ctx *ctx, const json_t *obj)
{
    (void)ctx;
    sw_build_log_wake(sw_json_str_at(obj, "metadata.namespace"),
                      sw_json_str_at(obj, "metadata.name"));
}

/* Phases only move forward: New, Pending, Running, then one of the four final ones. */
static int phase_rank(const char *phase)
{
    if (!phase || sw_str_eq(phase, "New"))
        return 0;
    if (sw_str_eq(phase, "Pending"))
        return 1;
    if (sw_str_eq(phase, "Running"))
        return 2;
    return 3;
}

/* A deleted Build takes its uploaded source and its log with it (a BuildConfig recreated with
 * the same name must not inherit them), and its log readers end. */
static void build_removed(const sw_kind_ctx *ctx, const char *ns, const char *name)
{
    if (!ns || !name)
        return;
    sw_build_source_remove(ctx, ns, name);
    sw_build_log_remove(ctx, ns, name);
    sw_build_log_wake(ns, name);
}

/* A finished build's phase never changes; phases are OpenShift's seven. */
static int build_prepare_status_update(const sw_kind_ctx *ctx, json_t *obj, const json_t *old)
{
    static const char *const phases[] = {"New",    "Pending", "Running",   "Complete",
                                         "Failed", "Error",   "Cancelled", NULL};
    const char *was = sw_json_str_at(old, "status.phase");
    const char *now = sw_json_str_at(obj, "status.phase");
    if (!sw_str_one_of(now, phases))
        return sw_error_set(SW_EINVALID, "status.phase: Unsupported value: \"%.32s\"",
                            now ? now : "");
    if (sw_build_phase_terminal(was) && !sw_str_eq(was, now))
        return sw_error_set(SW_EINVALID,
                            "status.phase: Invalid value: \"%s\": the build already finished "
                            "as %s",
                            now, was);
    if (phase_rank(now) < phase_rank(was))
        return sw_error_set(SW_EINVALID,
                            "status.phase: Invalid value: \"%s\": a build cannot go back from %s",
                            now, was);
    /* a writer that sent no conditions keeps the stored ones (their times stay) */
    const json_t *kept = sw_json_at(old, "status.conditions");
    if (kept && !sw_json_at(obj, "status.conditions"))
        json_object_set_new(sw_json_obj_path(obj, "status"), "conditions", json_deep_copy(kept));
    phase_conditions(obj);
    return 0;
}

static int build_validate(const sw_kind_ctx *ctx, const json_t *obj, const json_t *old)
{
    const json_t *spec = json_object_get(obj, "spec");
    return json_object_size(spec) ? sw_build_validate_common(spec) : 0;
}

static void build_status_cell(const json_t *obj, sw_buf *out)
{
    const char *phase = sw_json_str_at(obj, "status.phase");
    const char *reason = sw_json_str_at(obj, "status.reason");
    sw_buf_printf(out, "%s%s%s%s", phase ? phase : "New", reason && *reason ? " (" : "",
                  reason && *reason ? reason : "", reason && *reason ? ")" : "");
}

static void build_started_cell(const json_t *obj, sw_buf *out)
{
    const char *t = sw_json_str_at(obj, "status.startTimestamp");
    int64_t secs;
    char age[32];
    if (t && sw_time_parse(t, &secs) == 0) {
        sw_time_human(sw_time_now() - secs, age, sizeof(age));
        sw_buf_printf(out, "%s ago", age);
    }
}

static void build_duration_cell(const json_t *obj, sw_buf *out)
{
    int64_t ns;
    char d[32];
    if (sw_json_int_at(obj, "status.duration", &ns)) {
        sw_time_human(ns / 1000000000, d, sizeof(d));
        sw_buf_puts(out, d);
    }
}

static const sw_column build_columns[] = {
    {"Type", "string", "The build strategy", 0, strategy_cell, NULL, NULL},
    {"From", "string", "Where the source comes from", 0, from_cell, NULL, NULL},
    {"Status", "string", "The phase, and why", 0, build_status_cell, NULL, NULL},
    {"Started", "string", "When the build started", 0, build_started_cell, NULL, NULL},
    {"Duration", "string", "How long it ran", 0, build_duration_cell, NULL, NULL},
};

static const char *const build_fields[] = {"status.phase", NULL};

static const sw_subresource build_subresources[] = {
    {"clone", "BuildRequest", post_verbs, false, sw_build_build_clone},
    {"details", "Build", details_verbs, false, sw_build_build_details},
    {"log", "BuildLog", log_verbs, false, sw_build_build_log},
    {"source", "BinaryBuildSource", get_verbs, false, sw_build_build_source},
    {"token", "BuildToken", post_verbs, false, sw_build_build_token},
};

const sw_kind sw_kind_build = {
    .group = "build.openshift.io",
    .version = "v1",
    .kind = "Build",
    .plural = "builds",
    .singular = "build",
    .categories = {"all"},
    .namespaced = true,
    .has_status = true,
    .spec_generation = true,
    .name_rule = SW_NAME_SUBDOMAIN,
    .docs = sw_docs_build,
    .schema_text = "{\"spec\":{\"triggeredBy\":[\"any\"]," SW_BUILD_COMMON_SPEC "},"
                   "\"status\":{\"phase\":\"string\",\"cancelled\":\"boolean\","
                   "\"reason\":\"string\",\"message\":\"string\",\"startTimestamp\":\"string\","
                   "\"completionTimestamp\":\"string\",\"duration\":\"integer\","
                   "\"outputDockerImageReference\":\"string\",\"config\":" SW_BUILD_OBJREF ","
                   "\"output\":{\"to\":{\"imageDigest\":\"string\"}},\"stages\":[\"any\"],"
                   "\"logSnippet\":\"string\",\"backend\":\"string\","
                   "\"conditions\":[\"any\"]}}",
    .field_selectors = build_fields,
    .columns = build_columns,
    .ncolumns = 5,
    .prepare_create = build_prepare_create,
    .prepare_status_update = build_prepare_status_update,
    .validate = build_validate,
    .committed = build_committed,
    .removed = build_removed,
    .subresources = build_subresources,
    .nsubresources = sizeof(build_subresources) / sizeof(build_subresources[0]),
};
