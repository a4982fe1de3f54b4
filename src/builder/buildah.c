/* buildah: the buildah build backend (see buildah.h). One job is: write the context and the
 * Dockerfile out, pull every base image, `buildah bud`, `buildah push oci:<layout>`, then push
 * the layout's blobs and manifest with slipway's registry client. A subprocess's output is read
 * line by line into the build log; the last line, or the last "Error:" line, makes the failure's
 * message. */
#include "builder/buildah.h"

#include "builder/report.h"
#include "image/layout.h"
#include "image/oci.h"
#include "registry/manifest.h"
#include "registry/push.h"
#include "util/alloc.h"
#include "util/buf.h"
#include "util/error.h"
#include "util/json.h"
#include "util/path.h"
#include "util/sha256.h"
#include "util/str.h"
#include "util/time.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

#define IMAGE "localhost/slipway-build:latest" /* the image's name in the build's own storage */
#define LAYOUT_TAG "latest"
#define LINE_CAP 4096      /* one log line (longer ones are split) */
#define KILL_GRACE_MS 1500 /* SIGTERM to buildah, then SIGKILL */
#define DRAIN_MS 1000      /* output read after buildah exited */
#define MAX_ARGS 100000    /* arguments of one command (build args, labels, env) */

typedef struct args {
    char **v;
    size_t n, cap;
} args;

typedef struct bk {
    sw_backend_job *j;
    char bin[PATH_MAX];
    char root[PATH_MAX], run[PATH_MAX], tmp[PATH_MAX], ctx[PATH_MAX], df[PATH_MAX];
    char layout[PATH_MAX];
    char tmpenv[PATH_MAX + 8]; /* "TMPDIR=<tmp>" for buildah's environment */
    char last[512];            /* the last line of output, for a failure's message */
    char err_line[512];        /* the last line starting "Error: " */
    sw_df_stage *stages;
    size_t nstages;
} bk;

/* ---- finding buildah ---- */

/* buildah's path ($SLIPWAY_BUILDAH, else the one on PATH) into bin, and whether it can run
 * here: SW_EUNAVAILABLE saying why not. */
static int locate(char bin[PATH_MAX])
{
    const char *env = getenv("SLIPWAY_BUILDAH");
    bool found = env && *env ? sw_strlcpy(bin, env, PATH_MAX) < PATH_MAX && access(bin, X_OK) == 0
                             : sw_path_find_exec("buildah", bin, PATH_MAX);
    if (!found)
        return sw_error_set(SW_EUNAVAILABLE, "buildah is not installed (scripts/install-deps "
                                             "installs Debian's buildah; SLIPWAY_BUILDAH names "
                                             "another)");
    if (geteuid() != 0)
        return sw_error_set(SW_EUNAVAILABLE,
                            "the buildah backend runs as root only (--isolation chroot); this "
                            "builder runs as uid %ld",
                            (long)geteuid());
    return 0;
}

static int buildah_available(void)
{
    char bin[PATH_MAX];
    return locate(bin);
}

/* ---- argument vectors ---- */

static void arg(args *a, const char *s)
{
    if (a->n + 2 > a->cap) {
        a->cap = a->cap ? a->cap * 2 : 64;
        a->v = sw_realloc(a->v, a->cap * sizeof(*a->v));
    }
    a->v[a->n++] = sw_strdup(s);
    a->v[a->n] = NULL;
}

static void argf(args *a, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void argf(args *a, const char *fmt, ...)
{
    sw_buf b = SW_BUF_INIT(SIZE_MAX);
    va_list ap;
    va_start(ap, fmt);
    sw_buf_vprintf(&b, fmt, ap);
    va_end(ap);
    arg(a, sw_buf_cstr(&b));
    sw_buf_dispose(&b);
}

static void args_free(args *a)
{
    for (size_t i = 0; i < a->n; i++)
        sw_free(a->v[i]);
    sw_free(a->v);
    a->v = NULL;
    a->n = a->cap = 0;
}

/* buildah's global options: the build's own storage. */
static void global_args(bk *k, args *a)
{
    const char *driver = getenv("SLIPWAY_BUILDAH_STORAGE_DRIVER");
    arg(a, k->bin);
    arg(a, "--root");
    arg(a, k->root);
    arg(a, "--runroot");
    arg(a, k->run);
    arg(a, "--storage-driver");
    arg(a, driver && *driver ? driver : "vfs");
}

/* ---- running buildah ---- */

static void say(bk *k, const char *line)
{
    k->j->say(k->j->ctx, line);
}

static void keep_line(bk *k, const char *line)
{
    sw_strlcpy(k->last, line, sizeof(k->last));
    if (sw_str_prefix(line, "Error: "))
        sw_strlcpy(k->err_line, line + 7, sizeof(k->err_line));
    say(k, line);
}

/* Splits what came from the pipe into lines (a line over LINE_CAP is cut). */
static void take_output(bk *k, sw_buf *line, const char *data, size_t n, bool eof)
{
    for (size_t i = 0; i < n; i++) {
        if (data[i] == '\n' || line->len >= LINE_CAP) {
            keep_line(k, sw_buf_cstr(line));
            sw_buf_clear(line);
            if (data[i] == '\n')
                continue;
        }
        if (data[i] != '\r')
            sw_buf_put(line, &data[i], 1);
    }
    if (eof && line->len) {
        keep_line(k, sw_buf_cstr(line));
        sw_buf_clear(line);
    }
}

/* The environment of a buildah process: ours with TMPDIR in the build's directory. */
static char **child_env(bk *k)
{
    size_t n = 0, m = 0;
    while (environ[n])
        n++;
    char **env = sw_calloc(n + 2, sizeof(*env));
    for (size_t i = 0; i < n; i++)
        if (!sw_str_prefix(environ[i], "TMPDIR="))
            env[m++] = environ[i];
    snprintf(k->tmpenv, sizeof(k->tmpenv), "TMPDIR=%s", k->tmp);
    env[m] = k->tmpenv;
    return env;
}

/* In the child between fork and exec: async-signal-safe calls only. */
static void child(const char *bin, char *const argv[], char *const envp[], int wfd, bool netns)
{
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    signal(SIGPIPE, SIG_DFL);
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    int null = open("/dev/null", O_RDONLY);
    if (null > 0) {
        dup2(null, 0);
        close(null);
    }
    dup2(wfd, 1);
    dup2(wfd, 2);
    if (netns && unshare(CLONE_NEWNET) < 0) {
        static const char msg[] = "Error: cannot create a network namespace for the build\n";
        ssize_t w = write(2, msg, sizeof(msg) - 1);
        (void)w;
        _exit(126);
    }
    execve(bin, argv, envp);
    static const char msg[] = "Error: cannot run buildah\n";
    ssize_t w = write(2, msg, sizeof(msg) - 1);
    (void)w;
    _exit(127);
}

/* A stop sends buildah SIGTERM, then SIGKILL after KILL_GRACE_MS. */
static void check_stop(bk *k, pid_t pid, bool *stopped, int64_t *kill_at)
{
    if (!*stopped && k->j->stop && k->j->stop()) {
        *stopped = true;
        kill(pid, SIGTERM);
        *kill_at = sw_time_mono_ms() + KILL_GRACE_MS;
    }
    if (*stopped && *kill_at && sw_time_mono_ms() >= *kill_at) {
        kill(pid, SIGKILL);
        *kill_at = 0;
    }
}

/* Whether pid has ended (reaped into *status); *werr gets a waitpid failure. */
static bool reap(pid_t pid, int *status, int *werr)
{
    pid_t w = waitpid(pid, status, WNOHANG);
    if (w < 0 && errno != EINTR) {
        *werr = errno;
        return true;
    }
    return w == pid;
}

/* Runs a->v, its output into the log, until it exits; *status gets its wait status. Output is
 * read until the pipe closes, or for DRAIN_MS after buildah exited (a process it left behind
 * may hold the pipe). A stop signals it (check_stop) and returns the stop's error. */
static int run(bk *k, args *a, bool netns, int *status)
{
    int p[2];
    if (pipe2(p, O_CLOEXEC) < 0)
        return sw_error_set(SW_ERROR, "cannot create a pipe: %s", sw_strerror(errno));
    char **envp = child_env(k);
    pid_t pid = fork();
    if (pid == 0)
        child(k->bin, a->v, envp, p[1], netns);
    int saved = errno;
    close(p[1]);
    sw_free(envp); /* the strings are environ's and k's */
    if (pid < 0) {
        close(p[0]);
        return sw_error_set(SW_ERROR, "cannot start buildah: %s", sw_strerror(saved));
    }
    sw_buf line = SW_BUF_INIT(LINE_CAP + 16);
    char buf[8192];
    int64_t kill_at = 0, drain_until = 0;
    int werr = 0;
    bool eof = false, stopped = false, reaped = false;
    while (!eof) {
        struct pollfd pf = {.fd = p[0], .events = POLLIN};
        if (poll(&pf, 1, 100) > 0) {
            ssize_t got = read(p[0], buf, sizeof(buf));
            if (got < 0 && errno != EINTR && errno != EAGAIN)
                got = 0;
            eof = got == 0;
            take_output(k, &line, buf, got > 0 ? (size_t)got : 0, eof);
        }
        if (!reaped && (reaped = reap(pid, status, &werr)))
            drain_until = sw_time_mono_ms() + DRAIN_MS;
        if (reaped && !eof && sw_time_mono_ms() >= drain_until) {
            take_output(k, &line, NULL, 0, true);
            say(k, "  (a process buildah left behind still holds its output: not read further)");
            break;
        }
        if (!reaped)
            check_stop(k, pid, &stopped, &kill_at);
    }
    close(p[0]);
    sw_buf_dispose(&line);
    while (!reaped) { /* the pipe closed first */
        reaped = reap(pid, status, &werr);
        if (!reaped) {
            check_stop(k, pid, &stopped, &kill_at);
            poll(NULL, 0, 20);
        }
    }
    if (werr)
        return sw_error_set(SW_ERROR, "cannot wait for buildah: %s", sw_strerror(werr));
    if (stopped)
        return sw_error_set(SW_EUNAVAILABLE, "the build was stopped");
    return 0;
}

/* Runs a and turns a failure into an error: "<what>: <buildah's Error: line>". */
static int run_step(bk *k, args *a, bool netns, const char *what, const char *reason)
{
    int status = 0;
    k->err_line[0] = '\0';
    int64_t t0 = sw_time_mono_ms();
    int error = run(k, a, netns, &status);
    char took[700];
    snprintf(took, sizeof(took), "  %s: %.2f s", what, (double)(sw_time_mono_ms() - t0) / 1000.0);
    say(k, took);
    if (error == 0 && !(WIFEXITED(status) && WEXITSTATUS(status) == 0)) {
        char code[64];
        if (WIFSIGNALED(status))
            snprintf(code, sizeof(code), "killed by signal %d", WTERMSIG(status));
        else
            snprintf(code, sizeof(code), "exit status %d", WEXITSTATUS(status));
        error = sw_error_set(SW_EINVALID, "%s failed (%s): %s", what, code,
                             k->err_line[0] ? k->err_line : k->last);
    }
    if (error < 0 && !k->j->reason)
        k->j->reason = reason;
    return error;
}

/* ---- the Dockerfile ---- */

int sw_buildah_rewrite_froms(const char *text, size_t len, const sw_df_stage *stages, size_t n,
                             char **out, size_t *out_len)
{
    sw_buf b = SW_BUF_INIT(SW_DOCKERFILE_MAX_BYTES + 64 * 1024);
    size_t at = 0;
    for (size_t i = 0; i < n; i++) {
        const sw_df_stage *st = &stages[i];
        if (st->off < at || st->off + st->len > len) {
            sw_buf_dispose(&b);
            return sw_error_set(SW_EINVALID, "Dockerfile: the stages do not match the text");
        }
        sw_buf_put(&b, text + at, st->off - at);
        sw_buf_printf(&b, "FROM %s%s%s%s%s", st->flags ? st->flags : "", st->flags ? " " : "",
                      st->image, st->name ? " AS " : "", st->name ? st->name : "");
        for (size_t k = st->off; k < st->off + st->len; k++)
            if (text[k] == '\n')
                sw_buf_put(&b, "\n", 1);
        at = st->off + st->len;
    }
    sw_buf_put(&b, text + at, len - at);
    if (sw_buf_error(&b)) {
        sw_buf_dispose(&b);
        return sw_error_set(SW_ELIMIT, "Dockerfile: too long once its FROMs are written out");
    }
    *out = sw_buf_detach(&b, out_len);
    return 0;
}

static bool is_scratch(const char *image)
{
    return !strcmp(image, "scratch");
}

/* Whether image's registry is one the builder's registry client treats as insecure. */
static bool insecure(const bk *k, const char *image)
{
    sw_ref ref;
    return sw_ref_parse(image, &ref) == 0 && sw_registry_insecure_ref(k->j->reg, &ref);
}

/* Every registry image a FROM names, normalised as the native backend does (short names are
 * docker.io's): buildah here has no short-name search list. */
static int normalise_froms(bk *k)
{
    for (size_t i = 0; i < k->nstages; i++) {
        sw_df_stage *st = &k->stages[i];
        sw_ref ref;
        char name[600];
        if (st->from_stage || is_scratch(st->image))
            continue;
        if (sw_ref_parse(st->image, &ref) < 0) {
            k->j->reason = SW_REASON_IMAGE;
            return sw_error_set(SW_EINVALID, "Dockerfile:%d: FROM %.200s: %s", st->line, st->image,
                                sw_error_msg());
        }
        sw_ref_format(&ref, name, sizeof(name));
        sw_free(st->image);
        st->image = sw_strdup(name);
    }
    return 0;
}

static int write_dockerfile(bk *k)
{
    sw_backend_job *j = k->j;
    int error = sw_dockerfile_stages(j->dockerfile, j->dockerfile_len, j->build_args, &k->stages,
                                     &k->nstages);
    char *text = NULL;
    size_t len = 0;
    if (error == 0 && j->from && *j->from) { /* dockerStrategy.from: the last FROM's image */
        sw_free(k->stages[k->nstages - 1].image);
        k->stages[k->nstages - 1].image = sw_strdup(j->from);
        k->stages[k->nstages - 1].from_stage = false;
    }
    if (error == 0)
        error = normalise_froms(k);
    if (error == 0)
        error = sw_buildah_rewrite_froms(j->dockerfile, j->dockerfile_len, k->stages, k->nstages,
                                         &text, &len);
    if (error == 0)
        error = sw_path_write(k->df, text, len, 0600);
    sw_free(text);
    if (error < 0 && !j->reason)
        j->reason = SW_REASON_DOCKERFILE;
    return error;
}

/* The stage the image is built from: --target's, else the last; its base as named. */
static const sw_df_stage *final_stage(const bk *k)
{
    const sw_df_stage *st = &k->stages[k->nstages - 1];
    for (size_t i = 0; k->j->target && i < k->nstages; i++)
        if (k->stages[i].name && !strcasecmp(k->stages[i].name, k->j->target))
            st = &k->stages[i];
    return st;
}

/* ---- the steps ---- */

static int pull(bk *k)
{
    sw_backend_job *j = k->j;
    int error = 0;
    for (size_t i = 0; i < k->nstages && error == 0; i++) {
        const char *image = k->stages[i].image;
        bool seen = k->stages[i].from_stage || is_scratch(image);
        for (size_t m = 0; m < i && !seen; m++)
            seen = !strcmp(k->stages[m].image, image);
        if (seen)
            continue;
        char msg[700];
        snprintf(msg, sizeof(msg), "Pulling %s ...", image);
        say(k, msg);
        args a = {0};
        global_args(k, &a);
        arg(&a, "pull");
        arg(&a, "--quiet");
        argf(&a, "--policy=%s", j->force_pull ? "always" : "missing");
        if (insecure(k, image))
            arg(&a, "--tls-verify=false");
        if (j->pull_auth) {
            arg(&a, "--authfile");
            arg(&a, j->pull_auth);
        }
        arg(&a, "--");
        arg(&a, image);
        snprintf(msg, sizeof(msg), "pulling %.600s", image);
        error = run_step(k, &a, false, msg, SW_REASON_PULL);
        args_free(&a);
    }
    return error;
}

static int bud(bk *k)
{
    sw_backend_job *j = k->j;
    args a = {0};
    global_args(k, &a);
    arg(&a, "bud");
    arg(&a, "--isolation");
    arg(&a, "chroot");
    arg(&a, "--pull=never");
    arg(&a, "--format");
    arg(&a, "oci");
    argf(&a, "--timestamp=%lld", (long long)j->epoch);
    arg(&a, "--identity-label=false");
    if (j->no_cache)
        arg(&a, "--no-cache");
    if (j->target && *j->target) { /* stage names are case-insensitive, and lower case here */
        char target[256];
        snprintf(target, sizeof(target), "%s", j->target);
        for (char *c = target; *c; c++)
            *c = (char)(*c >= 'A' && *c <= 'Z' ? *c - 'A' + 'a' : *c);
        arg(&a, "--target");
        arg(&a, target);
    }
    for (size_t i = 0; j->build_args && j->build_args[i]; i++) {
        arg(&a, "--build-arg");
        arg(&a, j->build_args[i]);
    }
    for (size_t i = 0; j->env && j->env[i]; i++) {
        arg(&a, "--env");
        arg(&a, j->env[i]);
    }
    for (size_t i = 0; j->labels && j->labels[i]; i++) {
        arg(&a, "--label");
        arg(&a, j->labels[i]);
    }
    arg(&a, "-f");
    arg(&a, k->df);
    arg(&a, "-t");
    arg(&a, IMAGE);
    arg(&a, k->ctx);
    int error = a.n > MAX_ARGS ? sw_error_set(SW_ELIMIT, "too many build arguments") : 0;
    if (error == 0) {
        say(k, j->host_network ? "buildah bud (isolation chroot, host network)"
                               : "buildah bud (isolation chroot, no network)");
        error = run_step(k, &a, !j->host_network, "buildah bud", SW_REASON_BUILD);
    }
    args_free(&a);
    return error;
}

static int export_layout(bk *k)
{
    args a = {0};
    global_args(k, &a);
    arg(&a, "push");
    arg(&a, "--quiet");
    if (k->j->compression == SW_COMPRESS_ZSTD) {
        arg(&a, "--compression-format");
        arg(&a, "zstd");
    } else if (k->j->compression == SW_COMPRESS_NONE) {
        arg(&a, "--disable-compression");
    }
    arg(&a, IMAGE);
    argf(&a, "oci:%s:%s", k->layout, LAYOUT_TAG);
    int error = run_step(k, &a, false, "exporting the image", SW_REASON_BUILD);
    args_free(&a);
    return error;
}

/* The manifest with the backend's annotation added, as canonical JSON: new text in *out. */
static int annotate(const char *body, size_t len, char **out, size_t *out_len)
{
    json_t *m = NULL;
    int error = sw_json_parse(body, len, 16, 0, &m);
    if (error < 0)
        return sw_error_set(SW_EINVALID, "buildah's manifest is not JSON");
    json_t *ann = json_object_get(m, "annotations");
    if (!json_is_object(ann)) {
        ann = json_object();
        json_object_set_new(m, "annotations", ann);
    }
    json_object_set_new(ann, SW_BACKEND_KEY, json_string("buildah"));
    error = sw_oci_json_canonical(m, out, out_len);
    json_decref(m);
    return error;
}

/* One blob of the layout into the output: HEAD, a mount from the base's repository (same
 * registry), else a streamed upload from the file. */
static int push_blob(bk *k, const sw_descriptor *d, const char *from_repo)
{
    sw_backend_job *j = k->j;
    sw_registry_call call = {.creds = j->push_creds};
    char path[PATH_MAX], msg[300];
    sw_blob_pushed how = 0;
    int error = sw_oci_layout_blob_path(k->layout, d->digest, path);
    int fd = error == 0 ? open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW) : -1;
    struct stat st;
    if (error == 0 && (fd < 0 || fstat(fd, &st) < 0 || st.st_size != d->size))
        error = sw_error_set(SW_EINVALID,
                             "the exported image lacks blob %s (or its size "
                             "differs)",
                             d->digest);
    if (error == 0)
        error = sw_registry_push_blob_fd(j->reg, &call, j->out, d->digest, fd, (uint64_t)d->size,
                                         from_repo, &how);
    if (fd >= 0)
        close(fd);
    if (error == 0) {
        snprintf(msg, sizeof(msg), "  blob %s: %lld bytes, %s", d->digest, (long long)d->size,
                 how == SW_BLOB_EXISTED   ? "skipped (already there)"
                 : how == SW_BLOB_MOUNTED ? "mounted"
                                          : "uploaded");
        say(k, msg);
    }
    return error;
}

static int push(bk *k, char digest[80])
{
    sw_backend_job *j = k->j;
    char *body = NULL, *annotated = NULL, media[128], had[80];
    size_t len = 0, alen = 0;
    sw_manifest *m = NULL;
    int error = sw_oci_layout_read_manifest(k->layout, LAYOUT_TAG, SW_MANIFEST_MAX_BYTES, &body,
                                            &len, media, had);
    if (error == 0)
        error = sw_manifest_parse(media, body, len, &m);
    if (error == 0 && sw_manifest_get_kind(m) != SW_MANIFEST_IMAGE)
        error = sw_error_set(SW_EINVALID, "buildah exported an index, not an image");
    if (error == 0)
        error = annotate(body, len, &annotated, &alen);
    if (error < 0 || !j->push) {
        if (error == 0)
            sw_sha256_digest(annotated, alen, digest);
        goto done;
    }
    /* the final stage's base, when it is in the output's registry, lends its layers */
    sw_ref base;
    const char *from_repo = NULL;
    const sw_df_stage *st = final_stage(k);
    if (!st->from_stage && !is_scratch(st->image) && sw_ref_parse(st->image, &base) == 0 &&
        !strcmp(base.registry, j->out->registry))
        from_repo = base.repository;
    for (size_t i = 0; error == 0 && i < sw_manifest_layer_count(m); i++)
        error = j->stop && j->stop() ? sw_error_set(SW_EUNAVAILABLE, "the build was stopped")
                                     : push_blob(k, sw_manifest_layer(m, i), from_repo);
    if (error == 0)
        error = push_blob(k, sw_manifest_config(m), NULL);
    sw_registry_call call = {.creds = j->push_creds};
    if (error == 0)
        error = sw_registry_put_manifest(j->reg, &call, j->out, SW_OCI_MEDIA_MANIFEST, annotated,
                                         alen, digest);
    if (error < 0 && !j->reason)
        j->reason = SW_REASON_PUSH;
done:
    if (error < 0 && !j->reason)
        j->reason = SW_REASON_BUILD;
    sw_manifest_free(m);
    sw_free(body);
    sw_free(annotated);
    return error;
}

static int paths(bk *k)
{
    const char *dir = k->j->dir;
    if (strchr(dir, ':'))
        return sw_error_set(SW_EINVALID,
                            "the build directory %.200s has a ':', which buildah's oci: "
                            "transport cannot name: give the builder another --workdir",
                            dir);
    struct {
        char *out;
        const char *name;
        bool make;
    } p[] = {{k->root, "buildah-root", true}, {k->run, "buildah-run", true},
             {k->tmp, "tmp", true},           {k->ctx, "context", false},
             {k->df, "Dockerfile", false},    {k->layout, "image", false}};
    for (size_t i = 0; i < sizeof(p) / sizeof(p[0]); i++) {
        int n = snprintf(p[i].out, PATH_MAX, "%s/%s", dir, p[i].name);
        if (n < 0 || n >= PATH_MAX)
            return sw_error_set(SW_EINVALID, "the build directory's path is too long");
        if (p[i].make && mkdir(p[i].out, 0700) < 0)
            return sw_error_set(SW_ERROR, "cannot create %s: %s", p[i].out, sw_strerror(errno));
    }
    return 0;
}

/* The context is written out on a thread of its own while the bases are pulled. */
typedef struct writer {
    bk *k;
    int error;
    char msg[1024];
    int64_t ms;
} writer;

static void *write_context(void *arg)
{
    writer *w = arg;
    int64_t t0 = sw_time_mono_ms();
    w->error = sw_source_write_dir(w->k->j->src, w->k->ctx, w->k->j->epoch, w->k->j->stop);
    if (w->error < 0)
        sw_strlcpy(w->msg, sw_error_msg(), sizeof(w->msg));
    w->ms = sw_time_mono_ms() - t0;
    return NULL;
}

static int context_and_pull(bk *k)
{
    writer w = {.k = k};
    pthread_t t;
    bool threaded = pthread_create(&t, NULL, write_context, &w) == 0;
    if (!threaded)
        write_context(&w);
    int error = pull(k);
    if (threaded)
        pthread_join(t, NULL);
    char line[128];
    snprintf(line, sizeof(line), "  writing the context: %.2f s", (double)w.ms / 1000.0);
    say(k, line);
    if (error == 0 && w.error < 0)
        error = sw_error_set(w.error, "writing the context for buildah: %s", w.msg);
    return error;
}

static int buildah_build(sw_backend_job *j, char digest[80])
{
    bk k = {.j = j};
    int error = locate(k.bin);
    if (error == 0)
        error = paths(&k);
    if (error == 0)
        error = write_dockerfile(&k);
    if (error == 0)
        error = context_and_pull(&k);
    if (error == 0)
        error = bud(&k);
    if (error == 0)
        error = export_layout(&k);
    if (error == 0)
        error = push(&k, digest);
    if (error < 0 && !j->reason)
        j->reason = SW_REASON_BUILD;
    sw_df_stages_free(k.stages, k.nstages);
    return error;
}

const sw_backend sw_backend_buildah = {
    .version = SW_BACKEND_VERSION,
    .name = "buildah",
    .available = buildah_available,
    .build = buildah_build,
};
