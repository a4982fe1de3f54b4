/* builder: one build from start to end. Stages follow OpenShift's: FetchInputs (the Build, its
 * source, the Dockerfile), PullImages (the base image's manifest and config only), Build (plan
 * the layers, then compress each one straight into its registry upload, or reuse it from the
 * previous image when its diff_id is unchanged), PushImage (base layers present / mounted /
 * copied, then config and manifest). Every failure is reported with an OpenShift reason before
 * returning. A binary build records an input digest (the upload's, the Dockerfile, base, args,
 * env, labels, epoch, compression, builder version) in the manifest's annotations; when the image
 * at the output already carries the same one, the build reuses it without fetching the source.
 * Design: docs/builds.md ("The builder"). */
#include "builder/builder.h"

#include "builder/assemble.h"
#include "builder/backend.h"
#include "builder/buildah.h"
#include "builder/dockerfile.h"
#include "builder/report.h"
#include "builder/source.h"
#include "client/kubeconfig.h"
#include "client/rest.h"
#include "image/layer.h"
#include "image/oci.h"
#include "registry/client.h"
#include "registry/dockercfg.h"
#include "registry/manifest.h"
#include "registry/push.h"
#include "registry/ref.h"
#include "util/path.h"
#include "util/alloc.h"
#include "util/buf.h"
#include "util/error.h"
#include "util/json.h"
#include "util/sha256.h"
#include "util/str.h"
#include "util/time.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define UPLOAD_ATTEMPTS 3
#define AUTH_FILE_MAX (1u << 20)
#define MSG_MAX 2048
#define SOURCE_DIGEST_KEY "build.slipway.dev/source-digest" /* on the Build (the server's) */
#define INPUT_DIGEST_KEY "build.slipway.dev/input-digest"   /* on the manifest */
#define BASE_IMAGE_KEY "build.slipway.dev/base-image"       /* on the manifest: FROM as written */
#define COMPRESSION_KEY "build.slipway.dev/compression"     /* on the manifest: "gzip/6" */
#ifndef SW_VERSION
#define SW_VERSION "0"
#endif

static volatile sig_atomic_t g_stop;

void sw_builder_request_stop(void)
{
    g_stop = 1;
}

bool sw_builder_stop_requested(void)
{
    return g_stop != 0;
}

typedef struct bld {
    const sw_builder_opts *o;
    int64_t t0; /* monotonic ms at the start, for the log */
    FILE *log;
    sw_client *api;
    json_t *build;
    sw_report *rep;
    char dir[PATH_MAX];       /* scratch directory ("" until made) */
    char spool[PATH_MAX + 8]; /* dir/spool */
    sw_source *src;
    char *dockerfile;
    size_t dockerfile_len;
    sw_dockerfile *df;
    char **build_args, **env, **labels; /* NULL-terminated "K=V" lists */
    int64_t epoch;
    sw_compress_kind compression;
    int level; /* SLIPWAY_COMPRESSION_LEVEL; 0: the compression's default */
    bool no_cache, force_pull, host_network;
    const char *target; /* annotation build.slipway.dev/target, or NULL */
    const sw_backend *backend;
    const char *source_digest;               /* binary builds: the upload's sha256, or NULL */
    char input_digest[SW_SHA256_DIGEST_BUF]; /* "" unless source_digest */
    /* base image */
    bool scratch;
    char base_name[600];  /* as the Dockerfile or dockerStrategy.from names it */
    char base_digest[80]; /* its (platform) manifest's digest */
    sw_ref base;
    char *base_config;
    size_t base_config_len;
    sw_oci_desc *base_layers;
    size_t nbase;
    sw_image_config *base_cfg;
    /* output */
    bool push;
    sw_ref out;
    char out_name[600];
    sw_registry *reg;
    sw_creds *push_creds, *pull_creds;
    sw_oci_image *img;
    sw_assembly *plan;
    json_t *cache;      /* diff_id -> {digest, size, mediaType} of the previous image's layers */
    const char *reason; /* for the failure in progress */
} bld;

/* ---- small helpers ---- */

static void say(bld *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void say(bld *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vfprintf(b->log, fmt, ap);
    va_end(ap);
    fputc('\n', b->log);
    fflush(b->log);
}

static void human(uint64_t n, char *out, size_t len)
{
    if (n >= 1000000)
        snprintf(out, len, "%.1f MB", (double)n / 1e6);
    else if (n >= 1000)
        snprintf(out, len, "%.1f kB", (double)n / 1e3);
    else
        snprintf(out, len, "%llu B", (unsigned long long)n);
}

static int64_t now_ms(void)
{
    return sw_time_now_micro() / 1000;
}

static double elapsed(const bld *b)
{
    return (double)(sw_time_mono_ms() - b->t0) / 1000.0;
}

static int stopped(void)
{
    return sw_error_set(SW_EUNAVAILABLE, "the build was stopped");
}

/* Records the reason for the failure in progress and returns error unchanged. */
static int because(bld *b, const char *reason, int error)
{
    if (error < 0 && !b->reason)
        b->reason = reason;
    return error;
}

/* Prefixes the current error message. */
static int wrapf(int error, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int wrapf(int error, const char *fmt, ...)
{
    char pre[512], msg[MSG_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(pre, sizeof(pre), fmt, ap);
    va_end(ap);
    sw_strlcpy(msg, sw_error_msg(), sizeof(msg));
    return sw_error_set(error, "%s: %s", pre, msg);
}

static void strv_free(char **v)
{
    for (size_t i = 0; v && v[i]; i++)
        sw_free(v[i]);
    sw_free(v);
}

static void strv_push(char ***v, size_t *n, char *s)
{
    *v = sw_realloc(*v, (*n + 2) * sizeof(**v));
    (*v)[(*n)++] = s;
    (*v)[*n] = NULL;
}

/* ---- the Build ---- */

static int setup(bld *b)
{
    sw_kubeconfig *kc = NULL;
    const char *parent = b->o->workdir ? b->o->workdir : getenv("TMPDIR");
    int k = snprintf(b->dir, sizeof(b->dir), "%s/slipway-build-XXXXXX",
                     parent && *parent ? parent : "/tmp");
    if (k < 0 || (size_t)k >= sizeof(b->dir) || !mkdtemp(b->dir)) {
        int error = sw_error_set(SW_ERROR, "cannot create a scratch directory under %s: %s",
                                 parent && *parent ? parent : "/tmp", sw_strerror(errno));
        b->dir[0] = '\0';
        return error;
    }
    snprintf(b->spool, sizeof(b->spool), "%s/spool", b->dir);
    if (mkdir(b->spool, 0700) < 0)
        return sw_error_set(SW_ERROR, "cannot create %s: %s", b->spool, sw_strerror(errno));
    int error =
        sw_kubeconfig_from_parts(&kc, b->o->server, b->o->ca_file, b->o->token_file, b->o->ns);
    if (error == 0)
        error = sw_client_new(&b->api, kc);
    sw_kubeconfig_free(kc);
    if (error == 0) {
        sw_registry_opts ro = {.insecure_hosts = b->o->insecure_registries,
                               .stop = sw_builder_stop_requested};
        error = sw_registry_new(&b->reg, &ro);
    }
    return error;
}

static int load_creds(const char *file, sw_creds **out)
{
    char *json = NULL;
    size_t len = 0;
    sw_creds_new(out);
    if (!file)
        return 0;
    int error = sw_kubeconfig_read_file(file, AUTH_FILE_MAX, &json, &len);
    if (error == 0 && sw_creds_add_secret(*out, SW_CREDS_TYPE_DOCKERCONFIGJSON, json, len) < 0 &&
        (error = sw_creds_add_secret(*out, SW_CREDS_TYPE_DOCKERCFG, json, len)) < 0)
        error = wrapf(error, "registry credentials %s", file);
    sw_free(json);
    return error;
}

static const char *spec_str(const bld *b, const char *path)
{
    return sw_json_str_at(json_object_get(b->build, "spec"), path);
}

static bool source_strategy(const bld *b)
{
    return sw_str_eq(spec_str(b, "strategy.type"), "Source");
}

/* An env-style list ([{name, value}]) as "K=V" strings; valueFrom entries are skipped with a
 * warning (the builder cannot read secrets or config maps). */
static void env_list(bld *b, const char *path, const char *what, char ***out, bool image_env)
{
    size_t i, n = 0;
    json_t *e;
    while (*out && (*out)[n])
        n++;
    json_array_foreach(sw_json_at(json_object_get(b->build, "spec"), path), i, e)
    {
        const char *name = sw_json_str_at(e, "name"), *value = sw_json_str_at(e, "value");
        if (!name || !*name)
            continue;
        if (!value && json_object_get(e, "valueFrom")) {
            say(b, "warning: %s %s uses valueFrom, which the builder cannot resolve: skipped", what,
                name);
            continue;
        }
        if (image_env && (!strcmp(name, "SOURCE_DATE_EPOCH") || sw_str_prefix(name, "SLIPWAY_")))
            continue; /* build options, not image settings */
        sw_buf kv = SW_BUF_INIT(SIZE_MAX);
        sw_buf_printf(&kv, "%s=%s", name, value ? value : "");
        strv_push(out, &n, sw_buf_detach(&kv, NULL));
    }
}

/* An annotation of the Build, or NULL. */
static const char *build_annotation(const bld *b, const char *key)
{
    return json_string_value(json_object_get(sw_json_at(b->build, "metadata.annotations"), key));
}

/* The value of dockerStrategy.env name, else the builder's environment variable. */
static const char *build_option(const bld *b, const char *name)
{
    size_t i;
    json_t *e;
    json_array_foreach(sw_json_at(json_object_get(b->build, "spec"), "strategy.dockerStrategy.env"),
                       i, e)
    {
        if (sw_str_eq(sw_json_str_at(e, "name"), name) && sw_json_str_at(e, "value"))
            return sw_json_str_at(e, "value");
    }
    return getenv(name);
}

static int options(bld *b)
{
    const char *sde = build_option(b, "SOURCE_DATE_EPOCH");
    const char *comp = build_option(b, "SLIPWAY_COMPRESSION");
    b->epoch = 0;
    if (sde && *sde &&
        (sw_str_to_i64(sde, &b->epoch) < 0 || b->epoch < 0 || b->epoch > SW_TAR_MAX_MTIME))
        return sw_error_set(SW_EINVALID,
                            "SOURCE_DATE_EPOCH=%.40s is not a number of seconds "
                            "between 0 and %lld",
                            sde, (long long)SW_TAR_MAX_MTIME);
    if (sw_compress_kind_parse(comp ? comp : "", &b->compression) < 0)
        return sw_error_set(SW_EINVALID, "SLIPWAY_COMPRESSION=%.40s: want gzip, zstd or none",
                            comp);
    const char *lvl = build_option(b, "SLIPWAY_COMPRESSION_LEVEL");
    int64_t level = 0;
    int top = b->compression == SW_COMPRESS_ZSTD ? 19 : 9;
    if (lvl && *lvl &&
        (sw_str_to_i64(lvl, &level) < 0 || level < 1 || level > top ||
         b->compression == SW_COMPRESS_NONE))
        return sw_error_set(SW_EINVALID, "SLIPWAY_COMPRESSION_LEVEL=%.40s: want 1-%d for %s", lvl,
                            top, sw_compress_kind_name(b->compression));
    b->level = (int)level;
    const char *strategy =
        source_strategy(b) ? "strategy.sourceStrategy" : "strategy.dockerStrategy";
    char path[64];
    snprintf(path, sizeof(path), "%s.noCache", strategy);
    b->no_cache = sw_json_bool_at(json_object_get(b->build, "spec"), path);
    snprintf(path, sizeof(path), "%s.forcePull", strategy);
    b->force_pull = sw_json_bool_at(json_object_get(b->build, "spec"), path);
    const char *net = build_annotation(b, SW_BACKEND_NETWORK_KEY);
    if (net && strcmp(net, "host") && strcmp(net, "none"))
        return sw_error_set(SW_EINVALID,
                            "annotation " SW_BACKEND_NETWORK_KEY "=%.40s: want host or none", net);
    b->host_network = sw_str_eq(net, "host");
    b->target = build_annotation(b, SW_BACKEND_TARGET_KEY);
    if (b->target && !*b->target)
        b->target = NULL;
    env_list(b, "strategy.dockerStrategy.buildArgs", "build arg", &b->build_args, false);
    snprintf(path, sizeof(path), "%s.env", strategy);
    env_list(b, path, "env", &b->env, true);
    return 0;
}

/* ---- FetchInputs ---- */

typedef struct download {
    int fd;
    uint64_t bytes;
} download;

static int download_chunk(const char *data, size_t len, void *payload)
{
    download *d = payload;
    if (g_stop)
        return stopped();
    for (size_t off = 0; data && off < len;) {
        ssize_t w = write(d->fd, data + off, len - off);
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0)
            return sw_error_set(SW_ERROR, "writing the source: %s", sw_strerror(errno));
        off += (size_t)w;
    }
    d->bytes += data ? len : 0;
    return 0;
}

static int fetch_binary(bld *b)
{
    char path[PATH_MAX + 16], human_size[32];
    sw_buf url = SW_BUF_INIT(4096);
    sw_stream_opts so = {.tick_ms = 500};
    download d = {.fd = -1};
    const char *as_file = spec_str(b, "source.binary.asFile");
    size_t entries = 0;
    snprintf(path, sizeof(path), "%s/upload", b->dir);
    int error = sw_client_path(&url, &sw_res_builds, b->o->ns, b->o->build, "source");
    if (error == 0 && (d.fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600)) < 0)
        error = sw_error_set(SW_ERROR, "cannot create %s: %s", path, sw_strerror(errno));
    if (error == 0)
        error = sw_client_stream(b->api, sw_buf_cstr(&url), &so, download_chunk, &d);
    if (error == 0 && g_stop)
        error = stopped();
    if (d.fd >= 0 && close(d.fd) < 0 && error == 0)
        error = sw_error_set(SW_ERROR, "closing %s: %s", path, sw_strerror(errno));
    sw_buf_dispose(&url);
    if (error < 0)
        return wrapf(error, "cannot download the uploaded source");
    human(d.bytes, human_size, sizeof(human_size));
    if (as_file && *as_file) {
        error = sw_source_add_file(b->src, as_file, path);
        if (error == 0)
            say(b, "Source: uploaded file %s (%s) at %.2f s", as_file, human_size, elapsed(b));
        return error;
    }
    error = sw_source_add_archive(b->src, path, &entries);
    if (error == SW_EUNSUPPORTED)
        return sw_error_set(SW_EINVALID,
                            "the uploaded source (%s) is not a tar archive: upload a "
                            "directory or archive, or a single file with asFile",
                            human_size);
    if (error < 0)
        return wrapf(error, "the uploaded source archive is not usable");
    say(b, "Source: uploaded archive (%s, %zu entries) at %.2f s", human_size, entries, elapsed(b));
    return 0;
}

static int fetch_git(bld *b)
{
    char clone[PATH_MAX + 8];
    sw_source_git_info info;
    const char *uri = spec_str(b, "source.git.uri");
    const char *commit = sw_json_str_at(json_object_get(b->build, "spec"), "revision.git.commit");
    const char *ref = commit && *commit ? commit : spec_str(b, "source.git.ref");
    snprintf(clone, sizeof(clone), "%s/git", b->dir);
    say(b, "Cloning \"%s\"%s%s ...", uri, ref && *ref ? " at " : "", ref && *ref ? ref : "");
    int error = sw_source_add_git(b->src, uri, ref, clone, sw_builder_stop_requested, &info);
    if (error < 0)
        return error;
    say(b, "\tCommit:\t%s (%s)", info.commit, info.subject);
    if (info.submodules)
        say(b, "warning: %zu submodule(s) skipped: slipway does not fetch submodules",
            info.submodules);
    size_t n = 0;
    while (b->labels && b->labels[n])
        n++;
    sw_buf kv = SW_BUF_INIT(4096);
    sw_buf_printf(&kv, "io.openshift.build.commit.id=%s", info.commit);
    strv_push(&b->labels, &n, sw_buf_detach(&kv, NULL));
    if (ref && *ref && !(commit && *commit)) {
        sw_buf_printf(&kv, "io.openshift.build.commit.ref=%s", ref);
        strv_push(&b->labels, &n, sw_buf_detach(&kv, NULL));
    }
    sw_buf_printf(&kv, "io.openshift.build.source-location=%s", uri);
    strv_push(&b->labels, &n, sw_buf_detach(&kv, NULL));
    return 0;
}

static int fetch_base(bld *b, const char *name);

/* The builder image's USER when it is a plain name or uid other than root ("app" of
 * "app:staff"), into out; "" otherwise (the source stays root's, readable by all). */
static void builder_user(const bld *b, char *out, size_t n)
{
    const char *u = b->base_cfg ? sw_image_config_str(b->base_cfg, "config.User") : NULL;
    size_t len = u ? strcspn(u, ":") : 0;
    bool ok = len > 0 && len < n && len <= 64;
    for (size_t i = 0; ok && i < len; i++)
        ok = (u[i] >= 'a' && u[i] <= 'z') || (u[i] >= 'A' && u[i] <= 'Z') ||
             (u[i] >= '0' && u[i] <= '9') || strchr("._-", u[i]);
    out[0] = '\0';
    if (ok && !(len == 4 && !strncmp(u, "root", 4)) && !(len == 1 && u[0] == '0'))
        snprintf(out, n, "%.*s", (int)len, u);
}

/* The Source strategy (s2i-style) as a Dockerfile: the source copied to /tmp/src, the builder
 * image's /usr/libexec/s2i/assemble run with sourceStrategy.env in its environment (as ARGs,
 * whose names the API validated; their values go in as build args), run as the CMD. */
static int source_dockerfile(bld *b)
{
    const char *from = spec_str(b, "strategy.sourceStrategy.from.name");
    char user[80];
    if (!sw_str_eq(spec_str(b, "strategy.sourceStrategy.from.kind"), "DockerImage") || !from ||
        !*from || strpbrk(from, " \t\r\n"))
        return sw_error_set(SW_EINVALID, "spec.strategy.sourceStrategy.from must be resolved to a "
                                         "DockerImage pull spec before the builder starts");
    int error = fetch_base(b, from); /* its config: the USER assemble runs as */
    if (error < 0)
        return error;
    builder_user(b, user, sizeof(user));
    sw_buf df = SW_BUF_INIT(SW_DOCKERFILE_MAX_BYTES);
    sw_buf_printf(&df, "FROM %s\n", from);
    for (size_t i = 0; b->env && b->env[i]; i++) {
        const char *eq = strchr(b->env[i], '=');
        sw_buf_printf(&df, "ARG %.*s\n", (int)(eq - b->env[i]), b->env[i]);
    }
    if (user[0]) /* as s2i does: the source belongs to the user assemble runs as */
        sw_buf_printf(&df, "COPY --chown=%s:0 . /tmp/src\n", user);
    else
        sw_buf_puts(&df, "COPY . /tmp/src\n");
    sw_buf_puts(&df, "RUN /usr/libexec/s2i/assemble\n"
                     "CMD [\"/usr/libexec/s2i/run\"]\n");
    if (sw_buf_error(&df)) {
        sw_buf_dispose(&df);
        return sw_error_set(SW_ELIMIT, "the source strategy's Dockerfile is too long");
    }
    b->dockerfile = sw_buf_detach(&df, &b->dockerfile_len);
    size_t n = 0;
    while (b->build_args && b->build_args[n])
        n++;
    for (size_t i = 0; b->env && b->env[i]; i++) /* visible to assemble */
        strv_push(&b->build_args, &n, sw_strdup(b->env[i]));
    return 0;
}

static int read_dockerfile(bld *b)
{
    const char *inline_df = spec_str(b, "source.dockerfile");
    if (source_strategy(b))
        return source_dockerfile(b);
    const char *path = spec_str(b, "strategy.dockerStrategy.dockerfilePath");
    const sw_src_node *n = NULL;
    if (inline_df) {
        b->dockerfile = sw_strdup(inline_df);
        b->dockerfile_len = strlen(inline_df);
        return 0;
    }
    if (!path || !*path)
        path = "Dockerfile";
    int error = sw_source_resolve(b->src, path, true, &n);
    if (error == 0 && sw_src_node_type(n) != SW_SRC_FILE)
        error = sw_error_set(SW_EINVALID, "\"%s\" is not a file", path);
    if (error == 0)
        error = sw_source_read(n, SW_DOCKERFILE_MAX_BYTES, &b->dockerfile, &b->dockerfile_len);
    return error < 0 ? wrapf(error, "cannot read the Dockerfile") : 0;
}

/* <context>/.dockerignore, when there is one, hides what it names from COPY and ADD. */
static int apply_dockerignore(bld *b)
{
    const sw_src_node *n = NULL;
    char *text = NULL;
    size_t len = 0, ignored = 0;
    if (sw_source_resolve(b->src, ".dockerignore", false, &n) < 0 ||
        sw_src_node_type(n) != SW_SRC_FILE)
        return 0;
    int error = sw_source_read(n, SW_DOCKERFILE_MAX_BYTES, &text, &len);
    if (error == 0)
        error = sw_source_ignore(b->src, text, len, &ignored);
    if (error == 0)
        say(b, ".dockerignore: %zu entr%s left out of the context", ignored,
            ignored == 1 ? "y" : "ies");
    sw_free(text);
    return error < 0 ? wrapf(error, ".dockerignore") : 0;
}

static bool binary_source(const bld *b)
{
    return sw_str_eq(spec_str(b, "source.type"), "Binary") ||
           sw_json_at(b->build, "spec.source.binary");
}

/* The upload's digest the server recorded on a binary Build, or NULL. */
static const char *binary_source_digest(const bld *b)
{
    const char *d = json_string_value(
        json_object_get(sw_json_at(b->build, "metadata.annotations"), SOURCE_DIGEST_KEY));
    return binary_source(b) && d && sw_sha256_digest_valid(d) ? d : NULL;
}

static int fetch_inputs(bld *b)
{
    const char *type = spec_str(b, "source.type");
    const char *ctx = spec_str(b, "source.contextDir");
    int64_t t0 = now_ms();
    int error = sw_source_new(&b->src, b->spool);
    if (error == 0 && binary_source(b)) {
        error = because(b, SW_REASON_FETCH_SOURCE, fetch_binary(b));
        sw_report_step(b->rep, SW_STEP_FETCH_BINARY, t0, now_ms());
    } else if (error == 0 && (sw_str_eq(type, "Git") || spec_str(b, "source.git.uri"))) {
        error = because(b, SW_REASON_FETCH_SOURCE, fetch_git(b));
        sw_report_step(b->rep, SW_STEP_FETCH_GIT, t0, now_ms());
    }
    if (error == 0 && ctx && *ctx)
        error = because(b, SW_REASON_CONTEXT_DIR, sw_source_chdir(b->src, ctx));
    if (error == 0)
        error = because(b, SW_REASON_DOCKERFILE, read_dockerfile(b));
    if (error == 0)
        error = because(b, SW_REASON_FETCH_SOURCE, apply_dockerignore(b));
    return error;
}

/* ---- PullImages ---- */

static int parse_dockerfile(bld *b)
{
    sw_dockerfile_opts po = SW_DOCKERFILE_OPTS_INIT;
    sw_strv env = b->base_cfg ? sw_image_config_env(b->base_cfg) : (sw_strv){NULL, 0};
    const char **base_env = sw_calloc(env.n + 1, sizeof(*base_env));
    for (size_t i = 0; i < env.n; i++)
        base_env[i] = env.v[i];
    po.build_args = (const char *const *)b->build_args;
    po.base_env = b->base_cfg ? base_env : NULL;
    po.base_workdir = b->base_cfg ? sw_image_config_str(b->base_cfg, "config.WorkingDir") : NULL;
    sw_dockerfile_free(b->df);
    b->df = NULL;
    int error = sw_dockerfile_parse_opts(b->dockerfile, b->dockerfile_len, &po, &b->df);
    sw_free(base_env);
    return error;
}

/* A manifest of the base image's platform: an index gives its linux/<host arch> entry. */
static int platform_manifest(bld *b, const sw_registry_call *call, const sw_ref *at,
                             sw_manifest **out, char digest[80])
{
    char *body = NULL, media[128];
    size_t len = 0;
    sw_ref ref = *at;
    int error = sw_registry_get_manifest(b->reg, call, &ref, &body, &len, media, digest);
    if (error == 0)
        error = sw_manifest_parse(media, body, len, out);
    sw_free(body);
    if (error < 0 || sw_manifest_get_kind(*out) == SW_MANIFEST_IMAGE)
        return error;
    const sw_descriptor *d = sw_manifest_find_platform(*out, "linux", sw_oci_host_arch(), "");
    if (!d) {
        sw_manifest_free(*out);
        *out = NULL;
        return sw_error_set(SW_ENOTFOUND, "the image index has no linux/%s image",
                            sw_oci_host_arch());
    }
    sw_strlcpy(ref.digest, d->digest, sizeof(ref.digest));
    ref.tag[0] = '\0';
    sw_manifest_free(*out);
    *out = NULL;
    error = sw_registry_get_manifest(b->reg, call, &ref, &body, &len, media, digest);
    if (error == 0)
        error = sw_manifest_parse(media, body, len, out);
    if (error == 0 && sw_manifest_get_kind(*out) != SW_MANIFEST_IMAGE)
        error = sw_error_set(SW_EINVALID, "the index entry for linux/%s is not an image",
                             sw_oci_host_arch());
    sw_free(body);
    return error;
}

static int fetch_base(bld *b, const char *name)
{
    sw_manifest *m = NULL;
    char digest[80] = "", size[32], ref[600];
    sw_registry_call call = {.creds = b->pull_creds};
    uint64_t total = 0;
    int error = sw_ref_parse(name, &b->base);
    if (error < 0)
        return because(b, SW_REASON_IMAGE, wrapf(error, "base image \"%.200s\"", name));
    sw_ref_format(&b->base, ref, sizeof(ref));
    error = platform_manifest(b, &call, &b->base, &m, digest);
    if (error == 0)
        error = sw_registry_get_blob(b->reg, &call, &b->base, sw_manifest_config(m)->digest,
                                     SW_OCI_CONFIG_MAX, &b->base_config, &b->base_config_len);
    if (error == 0)
        error = sw_image_config_parse(b->base_config, b->base_config_len, &b->base_cfg);
    if (error < 0) {
        sw_manifest_free(m);
        return because(b, SW_REASON_PULL, wrapf(error, "cannot fetch base image %s", ref));
    }
    b->nbase = sw_manifest_layer_count(m);
    b->base_layers = sw_calloc(b->nbase ? b->nbase : 1, sizeof(*b->base_layers));
    for (size_t i = 0; i < b->nbase; i++) {
        const sw_descriptor *d = sw_manifest_layer(m, i);
        sw_strlcpy(b->base_layers[i].media_type, d->media_type, sizeof(d->media_type));
        sw_strlcpy(b->base_layers[i].digest, d->digest, sizeof(b->base_layers[i].digest));
        b->base_layers[i].size = d->size;
        total += (uint64_t)d->size;
    }
    human(total, size, sizeof(size));
    sw_strlcpy(b->base_digest, digest, sizeof(b->base_digest));
    say(b, "Base image %s@%s: %zu layer(s), %s (config and manifest only)", ref, digest, b->nbase,
        size);
    sw_manifest_free(m);
    return 0;
}

static int pull_images(bld *b)
{
    int64_t t0 = now_ms();
    const json_t *from = sw_json_at(b->build, "spec.strategy.dockerStrategy.from");
    const char *name = sw_dockerfile_base(b->df);
    if (from) {
        const char *kind = sw_json_str_at(from, "kind");
        if (!sw_str_eq(kind, "DockerImage"))
            return because(b, SW_REASON_IMAGE,
                           sw_error_set(SW_EINVALID,
                                        "spec.strategy.dockerStrategy.from is a %s (%s): the "
                                        "build controller resolves it to a DockerImage before "
                                        "starting the builder",
                                        kind ? kind : "reference",
                                        sw_json_str_at(from, "name") ?: ""));
        name = sw_json_str_at(from, "name");
    }
    if (!name || !*name)
        return because(b, SW_REASON_IMAGE, sw_error_set(SW_EINVALID, "no base image"));
    say(b, "STEP 1: FROM %s", name);
    sw_strlcpy(b->base_name, name, sizeof(b->base_name));
    b->scratch = !strcmp(name, "scratch");
    if (b->scratch)
        return 0;
    int error = fetch_base(b, name);
    if (error == 0)
        error = because(b, SW_REASON_BUILD, parse_dockerfile(b)); /* with the base's Env */
    sw_report_step(b->rep, SW_STEP_PULL_BASE, t0, now_ms());
    return error;
}

/* ---- output and the previous image ---- */

static int resolve_output(bld *b)
{
    const char *ref = sw_json_str_at(b->build, "status.outputDockerImageReference");
    const char *kind = spec_str(b, "output.to.kind");
    if (!ref || !*ref) {
        if (sw_str_eq(kind, "DockerImage"))
            ref = spec_str(b, "output.to.name");
        else if (kind)
            return sw_error_set(SW_EINVALID,
                                "the output %s %s has no pull spec yet: the build "
                                "controller sets status.outputDockerImageReference",
                                kind, spec_str(b, "output.to.name") ?: "");
    }
    if (!ref || !*ref)
        return 0; /* no output: build only */
    int error = sw_ref_parse(ref, &b->out);
    if (error == 0 && b->out.digest[0])
        error = sw_error_set(SW_EINVALID, "the output \"%s\" names a digest; it needs a tag", ref);
    if (error < 0)
        return wrapf(error, "output image");
    sw_ref_format(&b->out, b->out_name, sizeof(b->out_name));
    b->push = true;
    return 0;
}

/* "gzip/6", "zstd/3" or "none": the compression and its level, the default resolved. */
static void compression_name(const bld *b, char *out, size_t n)
{
    int level = b->level                             ? b->level
                : b->compression == SW_COMPRESS_ZSTD ? SW_COMPRESS_ZSTD_LEVEL
                                                     : SW_COMPRESS_GZIP_LEVEL;
    if (b->compression == SW_COMPRESS_NONE)
        snprintf(out, n, "none");
    else
        snprintf(out, n, "%s/%d", sw_compress_kind_name(b->compression), level);
}

/* The layers of the image now at the output tag, by diff_id, for layers whose media type this
 * build would write. A missing tag or an unreadable image only means no reuse, and so does an
 * image slipway wrote with another compression level (its layers would not be this build's
 * bytes). */
static void load_cache(bld *b)
{
    sw_registry_call call = {.creds = b->push_creds};
    sw_manifest *m = NULL;
    sw_image_config *cfg = NULL;
    char *config = NULL, digest[80];
    size_t clen = 0;
    const char *want = sw_oci_layer_media_type(b->compression);
    b->cache = json_object();
    if (b->no_cache)
        return;
    char comp[32];
    compression_name(b, comp, sizeof(comp));
    int error = platform_manifest(b, &call, &b->out, &m, digest);
    const char *had = error == 0 ? sw_manifest_annotation(m, COMPRESSION_KEY) : NULL;
    if (had && strcmp(had, comp)) {
        say(b, "note: the image at %s was compressed as %.40s, this build as %s: no layer reuse",
            b->out_name, had, comp);
        sw_manifest_free(m);
        return;
    }
    if (error == 0)
        error = sw_registry_get_blob(b->reg, &call, &b->out, sw_manifest_config(m)->digest,
                                     SW_OCI_CONFIG_MAX, &config, &clen);
    if (error == 0)
        error = sw_image_config_parse(config, clen, &cfg);
    if (error < 0 && error != SW_ENOTFOUND)
        say(b, "note: the image at %s cannot be read (%s): no layer reuse", b->out_name,
            sw_error_msg());
    sw_strv ids = cfg ? sw_image_config_diff_ids(cfg) : (sw_strv){NULL, 0};
    for (size_t i = 0; error == 0 && ids.n == sw_manifest_layer_count(m) && i < ids.n; i++) {
        const sw_descriptor *d = sw_manifest_layer(m, i);
        bool gzip_alias = b->compression == SW_COMPRESS_GZIP &&
                          !strcmp(d->media_type, SW_DOCKER_MEDIA_LAYER_GZIP);
        if (strcmp(d->media_type, want) && !gzip_alias)
            continue;
        json_object_set_new(
            b->cache, ids.v[i],
            json_pack("{s:s, s:I}", "digest", d->digest, "size", (json_int_t)d->size));
    }
    sw_image_config_free(cfg);
    sw_manifest_free(m);
    sw_free(config);
}

/* ---- unchanged input ---- */

static json_t *strv_json(char **v)
{
    json_t *a = json_array();
    for (size_t i = 0; v && v[i]; i++)
        json_array_append_new(a, json_string(v[i]));
    return a;
}

/* "scratch" or name@digest (the base's manifest digest). */
static void base_key(const char *name, const char *digest, char *out, size_t n)
{
    if (!strcmp(name, "scratch"))
        sw_strlcpy(out, name, n);
    else
        snprintf(out, n, "%s@%s", name, digest);
}

/* The input digest of a binary build on base (base_key()): sha256 of a canonical JSON of what
 * determines the image. A Dockerfile in the upload is covered by the upload's digest. "" if the
 * JSON is too large. */
static void input_digest(const bld *b, const char *base, char out[SW_SHA256_DIGEST_BUF])
{
    const json_t *spec = json_object_get(b->build, "spec");
    char *text = NULL;
    size_t len = 0;
    json_t *j = json_pack(
        "{s:s, s:s, s:s?, s:s?, s:s?, s:s?, s:O?, s:s, s:o, s:o, s:O?, s:I, s:s, s:I, s:s?}",
        "builder", SW_VERSION, "source", b->source_digest, "dockerfile",
        spec_str(b, "source.dockerfile"), "dockerfilePath",
        spec_str(b, "strategy.dockerStrategy.dockerfilePath"), "contextDir",
        spec_str(b, "source.contextDir"), "asFile", spec_str(b, "source.binary.asFile"), "revision",
        sw_json_at(spec, "revision"), "base", base, "buildArgs", strv_json(b->build_args), "env",
        strv_json(b->env), "imageLabels", sw_json_at(spec, "output.imageLabels"), "epoch",
        (json_int_t)b->epoch, "compression", sw_compress_kind_name(b->compression), "level",
        (json_int_t)b->level, "backend", build_annotation(b, SW_BACKEND_KEY));
    out[0] = '\0';
    if (j && sw_oci_json_canonical(j, &text, &len) == 0)
        sw_sha256_digest(text, len, out);
    sw_free(text);
    json_decref(j);
}

/* The digest of base image name now (its platform manifest), into digest. */
static int base_now(bld *b, const char *name, char digest[80])
{
    sw_registry_call call = {.creds = b->pull_creds};
    sw_manifest *m = NULL;
    sw_ref ref;
    int error = sw_ref_parse(name, &ref);
    if (error == 0)
        error = platform_manifest(b, &call, &ref, &m, digest);
    sw_manifest_free(m);
    return error;
}

/* A manifest annotation of body (a JSON manifest), or NULL. */
static const char *annotation(const json_t *m, const char *key)
{
    return json_string_value(json_object_get(json_object_get(m, "annotations"), key));
}

/* Whether the image at the output was built from the same input, by its manifest's annotations
 * (the base's tag is resolved again). digest receives its manifest digest on a match. Anything
 * missing or unreadable only means a real build. */
static bool unchanged_input(bld *b, char digest[80])
{
    sw_registry_call call = {.creds = b->push_creds};
    char *body = NULL, media[128], base[700], bdigest[80] = "", want[SW_SHA256_DIGEST_BUF];
    size_t len = 0;
    json_t *m = NULL;
    bool hit = false;
    if (!b->source_digest || b->no_cache || !b->push || source_strategy(b))
        return false; /* only native (Docker) images carry an input digest */
    if (sw_registry_get_manifest(b->reg, &call, &b->out, &body, &len, media, digest) < 0 ||
        strcmp(media, SW_OCI_MEDIA_MANIFEST) || sw_json_parse(body, len, 16, 0, &m) < 0)
        goto done;
    const char *have = annotation(m, INPUT_DIGEST_KEY), *name = annotation(m, BASE_IMAGE_KEY);
    const char *from = sw_json_str_at(b->build, "spec.strategy.dockerStrategy.from.name");
    if (!have || !name || !*name || (from && strcmp(from, name)))
        goto done;
    if (strcmp(name, "scratch") && base_now(b, name, bdigest) < 0)
        goto done;
    base_key(name, bdigest, base, sizeof(base));
    input_digest(b, base, want);
    hit = want[0] && !strcmp(want, have);
done:
    if (!hit)
        digest[0] = '\0';
    sw_free(body);
    json_decref(m);
    return hit;
}

/* ---- Build: layers ---- */

static int hash_chunk(void *payload, const void *data, size_t len)
{
    if (g_stop)
        return stopped();
    sw_sha256_update(payload, data, len);
    return 0;
}

/* The previous image's descriptor of a layer whose tar is unchanged, if still in the registry. */
static bool reuse_layer(bld *b, sw_tar *tar, sw_oci_desc *desc, char *diff_id)
{
    sw_sha256 h;
    sw_registry_call call = {.creds = b->push_creds};
    bool exists = false;
    if (json_object_size(b->cache) == 0)
        return false;
    sw_sha256_init(&h);
    if (sw_tar_write(tar, b->epoch, hash_chunk, &h) < 0) {
        sw_sha256_dispose(&h);
        return false; /* the real pass reports the problem */
    }
    sw_sha256_final_digest(&h, diff_id);
    json_t *hit = json_object_get(b->cache, diff_id);
    const char *digest = sw_json_str_at(hit, "digest");
    int64_t size = 0, have = -1;
    if (!digest || !sw_json_int_at(hit, "size", &size) ||
        sw_registry_blob_exists(b->reg, &call, &b->out, digest, &exists, &have) < 0 || !exists ||
        have != size) /* another size: not the blob the cache describes */
        return false;
    sw_strlcpy(desc->media_type, sw_oci_layer_media_type(b->compression), sizeof(desc->media_type));
    sw_strlcpy(desc->digest, digest, sizeof(desc->digest));
    desc->size = size;
    return true;
}

static int upload_chunk(void *payload, const void *data, size_t len)
{
    if (g_stop)
        return stopped();
    return sw_registry_upload_write(payload, data, len);
}

static bool retryable(int error)
{
    return error == SW_EUNAVAILABLE || error == SW_ETIMEOUT;
}

/* Compresses tar straight into an upload session (restarted from byte 0 after a transport
 * failure: the bytes are deterministic). Without an output the blob only gets its digests. */
static int stream_layer(bld *b, sw_tar *tar, sw_layer_info *info)
{
    sw_registry_call call = {.creds = b->push_creds};
    sw_layer_opts lo = SW_LAYER_OPTS_INIT;
    lo.compression = b->compression;
    lo.level = b->level;
    lo.threads = b->o->threads;
    lo.epoch = b->epoch;
    if (!b->push)
        return sw_layer_build(tar, &lo, info);
    int error = 0;
    for (int attempt = 1; attempt <= UPLOAD_ATTEMPTS; attempt++) {
        sw_blob_upload *u = NULL;
        error = sw_registry_upload_start(b->reg, &call, &b->out, &u);
        if (error == 0 && (error = sw_registry_upload_set_streamed(u)) < 0)
            sw_registry_upload_abort(u); /* one PATCH for the whole layer, as docker push does */
        if (error == 0) {
            lo.sink = upload_chunk;
            lo.payload = u;
            error = sw_layer_build(tar, &lo, info);
            if (error < 0)
                sw_registry_upload_abort(u);
            else
                error = sw_registry_upload_commit(u, info->digest);
        }
        if (g_stop)
            return stopped();
        if (error == 0 || !retryable(error) || attempt == UPLOAD_ATTEMPTS)
            break;
        say(b, "  upload failed (%s); starting again", sw_error_msg());
    }
    return error;
}

static int build_layer(bld *b, const sw_assemble_step *st)
{
    sw_oci_desc desc = {0};
    sw_layer_info info;
    char diff_id[SW_SHA256_DIGEST_BUF] = "", size[32], tsize[32];
    int64_t t0 = sw_time_mono_ms();
    int error = 0;
    if (b->push && reuse_layer(b, st->tar, &desc, diff_id)) {
        human((uint64_t)desc.size, size, sizeof(size));
        say(b, "  layer %s: %s, %zu entries: unchanged, reused from the previous image",
            desc.digest, size, st->entries);
        return sw_oci_image_add_layer(b->img, &desc, diff_id, st->created_by);
    }
    if ((error = stream_layer(b, st->tar, &info)) < 0)
        return because(b, b->push && !g_stop ? SW_REASON_PUSH : SW_REASON_BUILD, error);
    sw_strlcpy(desc.media_type, info.media_type, sizeof(desc.media_type));
    sw_strlcpy(desc.digest, info.digest, sizeof(desc.digest));
    desc.size = (int64_t)info.size;
    human(info.size, size, sizeof(size));
    human(info.tar_size, tsize, sizeof(tsize));
    say(b, "  layer %s: %s (%s tar, %zu entries, %s) %s in %.2f s", info.digest, size, tsize,
        st->entries, sw_compress_kind_name(b->compression), b->push ? "uploaded" : "built",
        (double)(sw_time_mono_ms() - t0) / 1000.0);
    return sw_oci_image_add_layer(b->img, &desc, info.diff_id, st->created_by);
}

static int new_image(bld *b)
{
    int error = 0;
    if (b->scratch)
        sw_oci_image_new(&b->img, NULL, NULL, b->epoch);
    else
        error = sw_oci_image_new_from_base(&b->img, b->base_config, b->base_config_len,
                                           b->base_layers, b->nbase, b->epoch);
    if (error < 0)
        return wrapf(error, "base image config");
    if (b->input_digest[0])
        error = sw_oci_image_set_annotation(b->img, INPUT_DIGEST_KEY, b->input_digest);
    if (error == 0 && b->input_digest[0])
        error = sw_oci_image_set_annotation(b->img, BASE_IMAGE_KEY, b->base_name);
    char comp[32];
    compression_name(b, comp, sizeof(comp));
    if (error == 0)
        error = sw_oci_image_set_annotation(b->img, COMPRESSION_KEY, comp);
    if (error == 0)
        error = sw_oci_image_set_annotation(b->img, SW_BACKEND_KEY, "native");
    return error;
}

static int plan(bld *b)
{
    sw_assemble_opts ao = SW_ASSEMBLE_OPTS_INIT;
    ao.scratch = b->scratch;
    ao.base_workdir = b->base_cfg ? sw_image_config_str(b->base_cfg, "config.WorkingDir") : NULL;
    ao.spool_dir = b->spool;
    ao.env = (const char *const *)b->env;
    ao.labels = (const char *const *)b->labels;
    return sw_assemble(&b->plan, b->df, b->src, b->img, &ao);
}

static int build_stage(bld *b)
{
    int64_t t0 = now_ms();
    int error = because(b, SW_REASON_BUILD, new_image(b));
    if (error == 0)
        error = because(b, SW_REASON_BUILD, plan(b));
    if (error == 0 && b->push)
        load_cache(b);
    size_t n = error == 0 ? sw_assembly_count(b->plan) : 0;
    for (size_t i = 0; i < n && error == 0; i++) {
        const sw_assemble_step *st = sw_assembly_step(b->plan, i);
        if (g_stop)
            return stopped();
        say(b, "STEP %zu: %s", i + 2, st->created_by);
        error = st->tar
                    ? build_layer(b, st)
                    : because(b, SW_REASON_BUILD, sw_oci_image_add_history(b->img, st->created_by));
    }
    sw_report_step(b->rep, SW_STEP_DOCKER_BUILD, t0, now_ms());
    return error;
}

/* ---- PushImage ---- */

/* Makes a base layer available in the output repository. */
static int push_base_layer(bld *b, const sw_oci_desc *d)
{
    sw_registry_call pc = {.creds = b->push_creds}, gc = {.creds = b->pull_creds};
    char size[32];
    bool exists = false, mounted = false;
    int64_t have = -1;
    human((uint64_t)d->size, size, sizeof(size));
    int error = sw_registry_blob_exists(b->reg, &pc, &b->out, d->digest, &exists, &have);
    if (error == 0 && exists && have == d->size) { /* another size: not this layer, copy it */
        say(b, "  base layer %s: %s, skipped (already in %s)", d->digest, size, b->out.repository);
        return 0;
    }
    if (error == 0 && !strcmp(b->base.registry, b->out.registry)) {
        error = sw_registry_blob_mount(b->reg, &pc, &b->out, d->digest, d->size, b->base.repository,
                                       &mounted, NULL);
        if (error == 0 && mounted) {
            say(b, "  base layer %s: %s, mounted from %s", d->digest, size, b->base.repository);
            return 0;
        }
    }
    if (error == 0 && d->size < 0)
        error = sw_error_set(SW_EINVALID, "base layer %s has a negative size", d->digest);
    if (error == 0) /* streamed: the layer is never held whole */
        error = sw_registry_copy_blob(b->reg, &gc, &b->base, &pc, &b->out, d->digest,
                                      (uint64_t)d->size);
    if (error == 0)
        say(b, "  base layer %s: %s, copied from %s", d->digest, size, b->base.registry);
    return error < 0 ? wrapf(error, "base layer %s", d->digest) : 0;
}

static int push_image(bld *b, char *digest)
{
    sw_registry_call pc = {.creds = b->push_creds};
    char *config = NULL, *manifest = NULL;
    size_t clen = 0, mlen = 0;
    sw_oci_desc cdesc, mdesc;
    sw_blob_pushed how = 0;
    int64_t t0 = now_ms();
    int error = 0;
    for (size_t i = 0; i < b->nbase && error == 0 && b->push; i++)
        error = g_stop ? stopped() : push_base_layer(b, &b->base_layers[i]);
    if (error == 0)
        error = sw_oci_image_config(b->img, SW_OCI_FORMAT_OCI, &config, &clen, &cdesc);
    if (error == 0)
        error = sw_oci_image_manifest(b->img, SW_OCI_FORMAT_OCI, &manifest, &mlen, &mdesc);
    if (error == 0 && b->push)
        error = sw_registry_push_blob(b->reg, &pc, &b->out, cdesc.digest, config, clen, NULL, &how);
    if (error == 0 && b->push)
        say(b, "  config %s: %s", cdesc.digest, how == SW_BLOB_UPLOADED ? "uploaded" : "exists");
    if (error == 0 && b->push && g_stop)
        error = stopped();
    if (error == 0 && b->push)
        error = sw_registry_put_manifest(b->reg, &pc, &b->out, SW_OCI_MEDIA_MANIFEST, manifest,
                                         mlen, digest);
    if (error == 0 && !b->push)
        sw_strlcpy(digest, mdesc.digest, 80);
    sw_free(config);
    sw_free(manifest);
    if (!b->push)
        return because(b, SW_REASON_BUILD, error);
    sw_report_step(b->rep, SW_STEP_PUSH_IMAGE, t0, now_ms());
    return because(b, SW_REASON_PUSH, error < 0 ? wrapf(error, "pushing %s", b->out_name) : 0);
}

/* ---- the run ---- */

/* Sends the report so far (progress); a failure is only a warning until the final one. */
static void progress(bld *b)
{
    if (sw_report_send(b->rep, b->api, b->o->ns, b->o->build) < 0)
        say(b, "warning: cannot update builds/%s/details: %s", b->o->build, sw_error_msg());
}

static int native_available(void)
{
    return 0;
}

static int native_build(sw_backend_job *job, char digest[80]);

const sw_backend sw_backend_native = {
    .version = SW_BACKEND_VERSION,
    .name = "native",
    .available = native_available,
    .build = native_build,
};

static bool stop_requested(void)
{
    return g_stop != 0;
}

static void job_say(void *ctx, const char *line)
{
    say(ctx, "%s", line);
}

/* What a backend gets of the build. */
static void job_init(bld *b, sw_backend_job *j)
{
    j->dir = b->dir;
    j->src = b->src;
    j->dockerfile = b->dockerfile;
    j->dockerfile_len = b->dockerfile_len;
    j->build_args = (const char *const *)b->build_args;
    j->env = (const char *const *)b->env;
    env_list(b, "output.imageLabels", "image label", &b->labels, false);
    j->labels = (const char *const *)b->labels;
    const json_t *from = sw_json_at(b->build, "spec.strategy.dockerStrategy.from");
    j->from = sw_str_eq(sw_json_str_at(from, "kind"), "DockerImage") ? sw_json_str_at(from, "name")
                                                                     : NULL;
    j->target = b->target;
    j->epoch = b->epoch;
    j->no_cache = b->no_cache;
    j->force_pull = b->force_pull;
    j->host_network = b->host_network;
    j->compression = b->compression;
    j->reg = b->reg;
    j->push_creds = b->push_creds;
    j->pull_auth = b->o->pull_auth;
    j->push = b->push;
    j->out = &b->out;
    j->stop = stop_requested;
    j->say = job_say;
    j->ctx = b;
}

/* Parses the Dockerfile natively and picks the backend (annotation, server's list, what the
 * native parser says, whether buildah can run here). */
static int choose(bld *b)
{
    const char *forced = build_annotation(b, SW_BACKEND_KEY);
    if (source_strategy(b) && sw_str_eq(forced, "native"))
        return sw_error_set(SW_EINVALID, "the Source strategy runs assemble: it needs the buildah "
                                         "backend, not native (annotation " SW_BACKEND_KEY ")");
    if (source_strategy(b))
        forced = "buildah";
    char native_msg[MSG_MAX] = "", why[512] = "";
    int native = parse_dockerfile(b);
    if (native < 0)
        sw_strlcpy(native_msg, sw_error_msg(), sizeof(native_msg));
    if (sw_backend_buildah.available() < 0)
        sw_strlcpy(why, sw_error_msg(), sizeof(why));
    int error = sw_backend_choose(forced, b->o->backends, native, native_msg, why[0] ? why : NULL,
                                  &b->backend);
    if (error < 0)
        return error;
    say(b, "Backend: %s (%s)", b->backend->name,
        forced && *forced ? "annotation " SW_BACKEND_KEY
        : native < 0      ? "the native backend does not build this Dockerfile"
                          : "the Dockerfile needs nothing more");
    if (native < 0)
        say(b, "  %s", native_msg);
    sw_report_set_backend(b->rep, b->backend->name);
    return 0;
}

/* The stages; returns the first failure. digest receives the image's manifest digest. */
static int stages(bld *b, char *digest)
{
    sw_report_stage_begin(b->rep, SW_STAGE_FETCH_INPUTS, now_ms());
    int error = because(b, SW_REASON_GENERIC, options(b));
    if (error == 0)
        error = because(b, SW_REASON_OUTPUT, resolve_output(b));
    if (error == 0)
        error = because(b, SW_REASON_PUSH, load_creds(b->o->push_auth, &b->push_creds));
    if (error == 0)
        error = because(b, SW_REASON_PULL, load_creds(b->o->pull_auth, &b->pull_creds));
    if (error == 0 && unchanged_input(b, digest)) {
        say(b, "unchanged input: reusing %s@%s", b->out_name, digest);
        return 0;
    }
    if (error == 0)
        error = fetch_inputs(b);
    if (error == 0)
        error = because(b, SW_REASON_BUILD, choose(b));
    for (size_t i = 0; error == 0 && i < sw_dockerfile_warning_count(b->df); i++)
        say(b, "warning: %s", sw_dockerfile_warning(b->df, i));
    if (error < 0 || g_stop)
        return error < 0 ? error : stopped();
    sw_backend_job job = {.version = SW_BACKEND_VERSION};
    job_init(b, &job);
    if (b->backend == &sw_backend_native)
        return b->backend->build(&job, digest);
    sw_report_stage_begin(b->rep, SW_STAGE_BUILD, now_ms());
    progress(b);
    int64_t t0 = now_ms();
    error = b->backend->build(&job, digest);
    sw_report_step(b->rep, SW_STEP_DOCKER_BUILD, t0, now_ms());
    if (error < 0 || g_stop)
        return error < 0 ? because(b, job.reason ? job.reason : SW_REASON_BUILD, error) : stopped();
    sw_report_stage_end(b->rep, now_ms());
    return 0;
}

/* The native backend: PullImages (the base's manifest and config), Build, PushImage. */
static int native_build(sw_backend_job *job, char digest[80])
{
    bld *b = job->ctx;
    char base[700];
    sw_report_stage_begin(b->rep, SW_STAGE_PULL_IMAGES, now_ms());
    int error = pull_images(b);
    if (error < 0 || g_stop)
        return error < 0 ? error : stopped();
    if (b->source_digest) {
        base_key(b->base_name, b->base_digest, base, sizeof(base));
        input_digest(b, base, b->input_digest);
    }
    sw_report_stage_begin(b->rep, SW_STAGE_BUILD, now_ms());
    progress(b);
    error = build_stage(b);
    if (error < 0 || g_stop)
        return error < 0 ? error : stopped();
    if (b->push) {
        sw_report_stage_begin(b->rep, SW_STAGE_PUSH_IMAGE, now_ms());
        say(b, "Pushing image %s ...", b->out_name);
    }
    error = push_image(b, digest);
    sw_report_stage_end(b->rep, now_ms());
    return error;
}

static void dispose(bld *b)
{
    sw_assembly_free(b->plan);
    sw_oci_image_free(b->img);
    json_decref(b->cache);
    sw_creds_free(b->push_creds);
    sw_creds_free(b->pull_creds);
    sw_registry_free(b->reg);
    sw_image_config_free(b->base_cfg);
    sw_free(b->base_config);
    sw_free(b->base_layers);
    sw_dockerfile_free(b->df);
    sw_free(b->dockerfile);
    strv_free(b->build_args);
    strv_free(b->env);
    strv_free(b->labels);
    sw_source_free(b->src);
    sw_report_free(b->rep);
    json_decref(b->build);
    sw_client_free(b->api);
    sw_path_remove_tree(b->dir);
}

/* Ends the run: reports the outcome (unless stopped) and prints the result. */
static int finish(bld *b, int error, const char *digest)
{
    char msg[MSG_MAX] = "";
    sw_report_stage_end(b->rep, now_ms()); /* the stage that failed, if one did */
    if (g_stop) {
        say(b, "Build stopped.");
        return error < 0 ? error : stopped();
    }
    if (error < 0) {
        sw_strlcpy(msg, sw_error_msg(), sizeof(msg));
        sw_report_fail(b->rep, b->reason ? b->reason : SW_REASON_GENERIC, msg);
        say(b, "error: build failed (%s): %s", b->reason ? b->reason : SW_REASON_GENERIC, msg);
    } else {
        sw_report_set_output(b->rep, b->push ? b->out_name : NULL, digest);
        if (b->push) {
            sw_push_stats ps;
            char sent[32];
            sw_registry_push_stats(b->reg, &ps);
            human(ps.bytes, sent, sizeof(sent));
            say(b, "Blobs: %llu uploaded (%s), %llu mounted, %llu checked",
                (unsigned long long)ps.upload_sessions, sent, (unsigned long long)ps.mounts,
                (unsigned long long)ps.blob_heads);
            say(b, "Successfully pushed %s@%s in %.2f s", b->out_name, digest, elapsed(b));
        } else
            say(b, "Built image %s (the build has no output: not pushed)", digest);
    }
    if (!b->api)
        return error;
    int rerror = sw_report_send(b->rep, b->api, b->o->ns, b->o->build);
    if (rerror < 0) {
        char rmsg[MSG_MAX];
        sw_strlcpy(rmsg, sw_error_msg(), sizeof(rmsg));
        say(b, "error: cannot report to builds/%s/details: %s", b->o->build, rmsg);
        if (error == 0)
            return sw_error_set(rerror, "cannot report to builds/%s/details: %s", b->o->build,
                                rmsg);
    }
    if (error < 0)
        sw_error_set(error, "%s", msg); /* the build's own failure, not the report's */
    return error;
}

int sw_builder_run(const sw_builder_opts *o)
{
    bld b = {.o = o, .log = o->log ? o->log : stdout, .t0 = sw_time_mono_ms()};
    char digest[80] = "";
    if (o->version != SW_BUILDER_OPTS_VERSION) {
        fprintf(b.log, "error: builder: options version mismatch\n");
        return sw_error_set(SW_EINVALID, "builder: options version mismatch");
    }
    sw_report_new(&b.rep);
    int error = because(&b, SW_REASON_GENERIC, setup(&b));
    if (error == 0)
        error = because(&b, SW_REASON_GENERIC,
                        sw_client_get(b.api, &sw_res_builds, o->ns, o->build, &b.build));
    if (error == 0)
        say(&b, "Build %s/%s", o->ns, o->build);
    if (error == 0)
        b.source_digest = binary_source_digest(&b);
    if (error == 0)
        error = stages(&b, digest);
    error = finish(&b, error, digest);
    dispose(&b);
    return error;
}
