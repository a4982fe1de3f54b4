/* start_build: `slipway start-build <bc>`, as `oc start-build`: instantiates a BuildConfig with a
 * BuildRequest (--env, --build-arg, --no-cache, --commit), clones a build (--from-build), or
 * uploads a binary source through instantiatebinary: --from-dir as a deterministic tar
 * (src/image/tar.h: sorted, mtime 0, uid/gid 0; symlinks out of the directory refused) written
 * to an unlinked temporary file and streamed from it, --from-file with ?asFile=, --from-archive
 * as it is. Then --follow streams the log and --wait waits for the build to finish.
 * See docs/cli.md. */
#include "cmd/cli.h"
#include "cmd/cmd.h"

#include "client/watch.h"

#include "image/tar.h"
#include "kinds/build.h"
#include "util/alloc.h"
#include "util/buf.h"
#include "util/error.h"
#include "util/json.h"
#include "util/str.h"
#include "util/time.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define WAIT_RETRIES 10 /* dropped watch connections before --wait gives up */
#define WAIT_RETRY_MS 500
#define PROGRESS_MS 100

typedef struct start_opts {
    const char *from_dir, *from_file, *from_archive, *from_build, *commit;
    sw_cli_strings env, build_args;
    bool follow, wait, no_cache;
    const char *bc; /* the BuildConfig's name (borrowed from argv), NULL with --from-build */
} start_opts;

/* ---- arguments ---- */

/* NAME=VALUE pairs of flag into a new [{name, value}] list (*out), or SW_EINVALID. */
static int parse_pairs(const char *flag, const sw_cli_strings *in, json_t **out)
{
    *out = json_array();
    for (size_t i = 0; i < in->n; i++) {
        const char *kv = in->items[i], *eq = strchr(kv, '=');
        if (!eq || !sw_build_env_name_ok(kv, (size_t)(eq - kv))) {
            json_decref(*out);
            *out = NULL;
            return sw_error_set(
                SW_EINVALID, "--%s: \"%s\" is not NAME=VALUE with a valid variable name", flag, kv);
        }
        json_array_append_new(
            *out, json_pack("{s:s%, s:s}", "name", kv, (size_t)(eq - kv), "value", eq + 1));
    }
    return 0;
}

/* BC, bc/BC, buildconfig/BC or buildconfig.build.openshift.io/BC. */
static int parse_bc(const char *arg, const char **name)
{
    static const char *const kinds[] = {"bc", "buildconfig", "buildconfigs",
                                        "buildconfig.build.openshift.io", NULL};
    const char *slash = strchr(arg, '/');
    *name = slash ? slash + 1 : arg;
    if (**name && !strchr(*name, '/')) {
        if (!slash)
            return 0;
        for (size_t i = 0; kinds[i]; i++)
            if (strlen(kinds[i]) == (size_t)(slash - arg) && !strncmp(arg, kinds[i], slash - arg))
                return 0;
    }
    return sw_error_set(SW_EINVALID,
                        "expected the name of a BuildConfig (NAME or bc/NAME), not "
                        "\"%s\"",
                        arg);
}

static const char *binary_flag(const start_opts *o)
{
    return o->from_dir       ? "--from-dir"
           : o->from_file    ? "--from-file"
           : o->from_archive ? "--from-archive"
                             : NULL;
}

static int check_args(const sw_cli *cli, start_opts *o)
{
    int nfrom = !!o->from_dir + !!o->from_file + !!o->from_archive + !!o->from_build;
    const char *bin = binary_flag(o);
    if (nfrom > 1)
        return sw_error_set(SW_EINVALID, "only one of --from-dir, --from-file, --from-archive "
                                         "and --from-build may be given");
    if (o->from_build && cli->nargs)
        return sw_error_set(SW_EINVALID, "give either a BuildConfig name or --from-build, not "
                                         "both");
    if (!o->from_build && cli->nargs != 1)
        return sw_error_set(SW_EINVALID, "%s",
                            cli->nargs ? "start-build takes one BuildConfig name"
                                       : "you must give the name of a BuildConfig (or "
                                         "--from-build=BUILD)");
    if (bin && (o->env.n || o->build_args.n || o->no_cache))
        return sw_error_set(SW_EINVALID,
                            "%s cannot be used with %s: a binary build takes its "
                            "settings from the BuildConfig",
                            o->env.n          ? "--env"
                            : o->build_args.n ? "--build-arg"
                                              : "--no-cache",
                            bin);
    const char *paths[] = {o->from_dir, o->from_file, o->from_archive, o->from_build, o->commit};
    for (size_t i = 0; i < sizeof(paths) / sizeof(paths[0]); i++)
        if (paths[i] && !*paths[i])
            return sw_error_set(SW_EINVALID, "an empty value is not allowed for --from-* or "
                                             "--commit");
    return cli->nargs ? parse_bc(cli->args[0], &o->bc) : 0;
}

/* The BuildRequest for instantiate and clone (*out), or SW_EINVALID from --env/--build-arg. */
static int build_request(const start_opts *o, const char *name, json_t **out)
{
    json_t *env = NULL, *args = NULL;
    int error = parse_pairs("env", &o->env, &env);
    if (error == 0)
        error = parse_pairs("build-arg", &o->build_args, &args);
    if (error < 0) {
        json_decref(env);
        return error;
    }
    json_t *req = json_pack("{s:s, s:s, s:{s:s}, s:[{s:s}]}", "kind", "BuildRequest", "apiVersion",
                            "build.openshift.io/v1", "metadata", "name", name, "triggeredBy",
                            "message", "Manually triggered");
    if (json_array_size(env))
        json_object_set(req, "env", env);
    if (json_array_size(args))
        sw_json_set_path(req, "dockerStrategyOptions.buildArgs", json_incref(args));
    if (o->no_cache)
        sw_json_set_path(req, "dockerStrategyOptions.noCache", json_true());
    if (o->commit)
        json_object_set_new(req, "revision",
                            json_pack("{s:s, s:{s:s}}", "type", "Git", "git", "commit", o->commit));
    json_decref(env);
    json_decref(args);
    *out = req;
    return 0;
}

/* ---- the tar of --from-dir ---- */

typedef struct dirtar {
    sw_tar *tar;
    const char *root;          /* the directory as given */
    char real_root[PATH_MAX];  /* its realpath */
    char rel[SW_TAR_MAX_PATH]; /* the entry being added, relative to root ("" at the top) */
    size_t rel_len;
    char full[PATH_MAX + SW_TAR_MAX_PATH + 2]; /* root/rel */
} dirtar;

static const char *full_path(dirtar *d)
{
    snprintf(d->full, sizeof(d->full), "%s%s%s", d->root, d->rel_len ? "/" : "", d->rel);
    return d->full;
}

/* A symlink must stay inside the directory: not absolute, no ".." climbing above the top
 * (counted from the link's own directory), and, when it resolves, resolving inside. */
static int check_link(dirtar *d, const char *target)
{
    long depth = 0;
    for (size_t i = 0; i < d->rel_len; i++)
        depth += d->rel[i] == '/';
    for (const char *p = target; *p && target[0] != '/';) {
        const char *end = strchrnul(p, '/');
        size_t len = (size_t)(end - p);
        if (len == 2 && !strncmp(p, "..", 2))
            depth--;
        else if (len && !(len == 1 && *p == '.'))
            depth++;
        if (depth < 0)
            break;
        p = *end ? end + 1 : end;
    }
    char real[PATH_MAX];
    size_t rl = strlen(d->real_root);
    bool out = target[0] == '/' || depth < 0;
    if (!out && realpath(full_path(d), real))
        out = strncmp(real, d->real_root, rl) || (real[rl] != '/' && real[rl] != '\0');
    if (out)
        return sw_error_set(SW_EINVALID,
                            "%s: the symlink %s points outside the directory (to "
                            "%s)",
                            d->root, d->rel, target);
    return 0;
}

static int add_symlink(dirtar *d, sw_tar_entry *e)
{
    char target[SW_TAR_MAX_PATH];
    ssize_t n = readlink(full_path(d), target, sizeof(target) - 1);
    if (n < 0)
        return sw_error_set(SW_ERROR, "cannot read the symlink %s: %s", d->full,
                            sw_strerror(errno));
    target[n] = '\0';
    int error = check_link(d, target);
    sw_tar_entry link = *e; /* sw_tar_add copies what it keeps */
    link.type = SW_TAR_SYMLINK;
    link.link = target;
    if (error == 0)
        error = sw_tar_add(d->tar, &link);
    return error;
}

static int walk(dirtar *d);

/* Adds d->rel (and, for a directory, everything under it). */
static int add_entry(dirtar *d)
{
    struct stat st;
    if (lstat(full_path(d), &st) < 0)
        return sw_error_set(SW_ERROR, "cannot read %s: %s", d->full, sw_strerror(errno));
    sw_tar_entry e = {.path = d->rel, .mode = st.st_mode & 07777};
    int error;
    if (S_ISLNK(st.st_mode))
        return add_symlink(d, &e);
    if (S_ISDIR(st.st_mode)) {
        e.type = SW_TAR_DIR;
        error = sw_tar_add(d->tar, &e);
        return error < 0 ? error : walk(d);
    }
    if (!S_ISREG(st.st_mode))
        return sw_error_set(SW_EINVALID,
                            "%s is not a regular file, directory or symlink; it "
                            "cannot be uploaded",
                            d->full);
    e.type = SW_TAR_REG;
    e.src_path = d->full;
    return sw_tar_add(d->tar, &e);
}

/* Appends "/name" (or "name" at the top) to d->rel. */
static int push_name(dirtar *d, const char *name)
{
    size_t n = strlen(name), sep = d->rel_len ? 1 : 0;
    if (d->rel_len + sep + n >= sizeof(d->rel))
        return sw_error_set(SW_ELIMIT, "%s/%s...: the path is longer than %d bytes", d->root,
                            d->rel, SW_TAR_MAX_PATH);
    if (sep)
        d->rel[d->rel_len++] = '/';
    memcpy(d->rel + d->rel_len, name, n + 1);
    d->rel_len += n;
    return 0;
}

/* Adds every entry of the directory d->rel. */
static int walk(dirtar *d)
{
    DIR *dir = opendir(full_path(d));
    if (!dir)
        return sw_error_set(SW_ERROR, "cannot read the directory %s: %s", d->full,
                            sw_strerror(errno));
    int error = 0;
    struct dirent *de;
    while (error == 0 && (de = readdir(dir))) {
        /* .git is left out at any depth, as oc's default --exclude does: it is not build
         * input, and its config may hold credentials (the server keeps the upload) */
        if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, "..") || !strcmp(de->d_name, ".git"))
            continue;
        size_t saved = d->rel_len;
        error = push_name(d, de->d_name);
        if (error == 0)
            error = add_entry(d);
        d->rel_len = saved;
        d->rel[saved] = '\0';
    }
    closedir(dir);
    return error;
}

static int write_fd(void *payload, const void *data, size_t len)
{
    int fd = *(int *)payload;
    const char *p = data;
    while (len) {
        ssize_t w = write(fd, p, len);
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0)
            return sw_error_set(SW_ERROR, "cannot write the upload's temporary file: %s",
                                sw_strerror(errno));
        p += w;
        len -= (size_t)w;
    }
    return 0;
}

/* An unlinked temporary file in $TMPDIR (or /tmp): gone when closed, whatever happens. */
static int temp_file(int *fd)
{
    const char *dir = getenv("TMPDIR");
    char path[PATH_MAX];
    snprintf(path, sizeof(path), "%s/slipway-upload-XXXXXX", dir && *dir ? dir : "/tmp");
    *fd = mkostemp(path, O_CLOEXEC);
    if (*fd < 0)
        return sw_error_set(SW_ERROR, "cannot create a temporary file in %s: %s",
                            dir && *dir ? dir : "/tmp", sw_strerror(errno));
    unlink(path);
    return 0;
}

/* The deterministic tar of directory root in a temporary file (*fd, at offset 0). */
static int tar_directory(const char *root, int *fd)
{
    struct stat st;
    dirtar *d = sw_calloc(1, sizeof(*d));
    int error = 0;
    *fd = -1;
    if (stat(root, &st) < 0 || !S_ISDIR(st.st_mode))
        error = sw_error_set(SW_ENOTFOUND, "%s is not a directory", root);
    else if (!realpath(root, d->real_root))
        error = sw_error_set(SW_ERROR, "cannot resolve %s: %s", root, sw_strerror(errno));
    d->root = root;
    if (error == 0)
        error = sw_tar_new(&d->tar);
    if (error == 0)
        error = walk(d);
    if (error == 0)
        error = temp_file(fd);
    if (error == 0)
        error = sw_tar_write(d->tar, 0, write_fd, fd);
    if (error == 0 && lseek(*fd, 0, SEEK_SET) < 0)
        error = sw_error_set(SW_ERROR, "cannot rewind the upload: %s", sw_strerror(errno));
    if (error < 0 && *fd >= 0) {
        close(*fd);
        *fd = -1;
    }
    sw_tar_free(d->tar);
    sw_free(d);
    return error;
}

/* ---- the upload ---- */

typedef struct upload {
    int fd;
    int64_t total, sent;
    bool tty;         /* stderr is a terminal: a progress line */
    int64_t shown_ms; /* when the progress line was last drawn */
} upload;

static void human(int64_t n, char *out, size_t len)
{
    if (n >= 1 << 20)
        snprintf(out, len, "%.1f MiB", (double)n / (1 << 20));
    else if (n >= 1 << 10)
        snprintf(out, len, "%.1f KiB", (double)n / (1 << 10));
    else
        snprintf(out, len, "%lld B", (long long)n);
}

static void progress(upload *u, bool last)
{
    char sent[32], total[32];
    int64_t now = sw_time_mono_ms();
    if (!u->tty || (!last && now - u->shown_ms < PROGRESS_MS))
        return;
    u->shown_ms = now;
    human(u->sent, sent, sizeof(sent));
    human(u->total, total, sizeof(total));
    fprintf(stderr, "\r\033[KUploading: %s of %s sent (%d%%)%s", sent, total,
            u->total ? (int)(u->sent * 100 / u->total) : 100, last ? "\n" : "");
    fflush(stderr);
}

static long upload_read(char *buf, size_t max, void *payload)
{
    upload *u = payload;
    ssize_t n;
    do
        n = read(u->fd, buf, max);
    while (n < 0 && errno == EINTR);
    if (n < 0)
        return sw_error_set(SW_ERROR, "cannot read the upload: %s", sw_strerror(errno));
    u->sent += n;
    progress(u, false);
    return (long)n;
}

/* Opens what --from-file / --from-archive / --from-dir names as *fd; *what for the messages. */
static int open_source(const start_opts *o, int *fd, const char **what, const char **path)
{
    struct stat st;
    if (o->from_dir) {
        *what = "directory";
        *path = o->from_dir;
        return tar_directory(o->from_dir, fd);
    }
    *what = o->from_file ? "file" : "archive";
    *path = o->from_file ? o->from_file : o->from_archive;
    /* O_NONBLOCK: opening a FIFO must not wait for a writer (fstat then refuses it) */
    *fd = open(*path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (*fd < 0)
        return sw_error_set(SW_ENOTFOUND, "cannot open %s: %s", *path, sw_strerror(errno));
    if (fstat(*fd, &st) < 0 || !S_ISREG(st.st_mode)) {
        close(*fd);
        *fd = -1;
        return sw_error_set(SW_EINVALID, "%s is not a regular file", *path);
    }
    return 0;
}

/* instantiatebinary's path: ?asFile=<basename> for --from-file, ?revision.commit= for
 * --commit. */
static int binary_path(const sw_cli *cli, const start_opts *o, sw_buf *b)
{
    const char *base = NULL;
    if (o->from_file) {
        base = strrchr(o->from_file, '/');
        base = base ? base + 1 : o->from_file;
        if (!*base || !strcmp(base, ".") || !strcmp(base, ".."))
            return sw_error_set(SW_EINVALID, "--from-file must name a file, not %s", o->from_file);
    }
    int error = sw_client_path(b, &sw_res_buildconfigs, cli->ns, o->bc, "instantiatebinary");
    if (error == 0)
        error = sw_client_query(b, "asFile", base);
    if (error == 0)
        error = sw_client_query(b, "revision.commit", o->commit);
    return error == 0 ? sw_buf_error(b) : error;
}

/* A binary build takes a Binary source; checked before a large upload is sent for nothing. */
static int check_binary_bc(sw_cli *cli, const start_opts *o)
{
    json_t *bc = NULL;
    int error = sw_client_get(cli->client, &sw_res_buildconfigs, cli->ns, o->bc, &bc);
    if (error == 0 && !sw_str_eq(sw_json_str_at(bc, "spec.source.type"), "Binary"))
        error = sw_error_set(SW_EINVALID,
                             "BuildConfig %s/%s has no Binary source: set spec.source.type to "
                             "Binary to start builds from uploaded files",
                             cli->ns, o->bc);
    json_decref(bc);
    return error;
}

static int start_binary(sw_cli *cli, const start_opts *o, json_t **build)
{
    sw_buf path = SW_BUF_INIT(8192);
    upload u = {.fd = -1, .tty = isatty(STDERR_FILENO) == 1};
    const char *what = NULL, *src = NULL;
    struct stat st;
    int error = check_binary_bc(cli, o);
    if (error == 0)
        error = binary_path(cli, o, &path);
    if (error == 0)
        error = open_source(o, &u.fd, &what, &src);
    if (error == 0 && fstat(u.fd, &st) < 0)
        error = sw_error_set(SW_ERROR, "cannot read %s: %s", src, sw_strerror(errno));
    if (error == 0) {
        u.total = st.st_size;
        fprintf(stderr, "Uploading %s \"%s\" as binary input for the build ...\n", what, src);
        error = sw_client_request_upload(cli->client, "POST", sw_buf_cstr(&path), upload_read, &u,
                                         u.total, "application/octet-stream", NULL, build);
        progress(&u, true);
    }
    if (error == 0)
        fprintf(stderr, "Uploading finished: %lld bytes sent\n", (long long)u.sent);
    if (u.fd >= 0)
        close(u.fd);
    sw_buf_dispose(&path);
    return error;
}

/* ---- instantiate / clone ---- */

static int start_request(sw_cli *cli, const start_opts *o, json_t **build)
{
    sw_buf path = SW_BUF_INIT(8192);
    json_t *req = NULL;
    int error = build_request(o, o->from_build ? o->from_build : o->bc, &req);
    if (error == 0 && o->from_build)
        error = sw_client_path(&path, &sw_res_builds, cli->ns, o->from_build, "clone");
    else if (error == 0)
        error = sw_client_path(&path, &sw_res_buildconfigs, cli->ns, o->bc, "instantiate");
    if (error == 0)
        error = sw_buf_error(&path);
    if (error == 0)
        error = sw_client_request(cli->client, "POST", sw_buf_cstr(&path), req, NULL, NULL, build);
    json_decref(req);
    sw_buf_dispose(&path);
    return error;
}

/* ---- after the start ---- */

/* How a watched build ended: its final phase, reason and message. */
typedef struct waited {
    const char *ns, *name;
    bool deleted;
    char phase[32], reason[128], msg[512];
} waited;

static int on_build_event(sw_watch_type type, json_t *b, void *payload)
{
    waited *w = payload;
    if (type == SW_WATCH_BOOKMARK || !sw_str_eq(sw_json_str_at(b, "metadata.name"), w->name))
        return 0;
    if (type == SW_WATCH_DELETED) {
        w->deleted = true;
        return 1;
    }
    const char *phase = sw_json_str_at(b, "status.phase");
    if (!sw_build_phase_terminal(phase))
        return 0;
    sw_strlcpy(w->phase, phase, sizeof(w->phase));
    sw_strlcpy(w->reason, sw_json_str_at(b, "status.reason") ?: "", sizeof(w->reason));
    sw_strlcpy(w->msg, sw_json_str_at(b, "status.message") ?: "", sizeof(w->msg));
    return 1;
}

/* Reads the build once, as a list of one (what oc does): its state into w, and the list's
 * resourceVersion into rv, where a watch starts. The list's is the store's current revision;
 * the build's own would grow older than the compacted revision while the build sits unchanged,
 * and every watch from it would answer 410 at once. A build that is gone counts as deleted. */
static int wait_look(sw_cli *cli, waited *w, const char *selector, char *rv, size_t n)
{
    json_t *list = NULL;
    sw_list_opts lo = {.field_selector = selector, .limit = -1};
    int error = sw_client_list_opts(cli->client, &sw_res_builds, cli->ns, &lo, &list);
    if (error == 0) {
        json_t *b = json_array_get(json_object_get(list, "items"), 0);
        sw_strlcpy(rv, sw_json_str_at(list, "metadata.resourceVersion") ?: "", n);
        if (b)
            on_build_event(SW_WATCH_MODIFIED, b, w);
        else
            w->deleted = true;
    }
    json_decref(list);
    return error;
}

/* Waits (as `oc start-build --wait` does) until the build finishes: 0 when Complete, else an
 * error naming how it ended. Get, then watch from the resourceVersion the get returned; when
 * the server ends the watch (its timeout, or 410 Gone) or the connection drops, get again, so
 * nothing is missed and a build deleted meanwhile is noticed. */
static int wait_done(sw_cli *cli, const char *name)
{
    char selector[300], rv[32];
    waited w = {.ns = cli->ns, .name = name};
    snprintf(selector, sizeof(selector), "metadata.name=%s", name);
    sw_watch_opts wo = {.field_selector = selector, .resource_version = rv, .no_bookmarks = true};
    int error = 0, drops = 0, gone = 0;
    for (;;) {
        error = wait_look(cli, &w, selector, rv, sizeof(rv));
        if (error == 0)
            drops = 0; /* the server answers: only drops in a row count */
        if (error == 0 && !w.phase[0] && !w.deleted)
            error =
                sw_watch_run(NULL, cli->client, &sw_res_builds, cli->ns, &wo, on_build_event, &w);
        if (error == 0 && (w.phase[0] || w.deleted))
            break;
        if (error == SW_EUNAVAILABLE && ++drops < WAIT_RETRIES)
            usleep(WAIT_RETRY_MS * 1000);
        else if (error == SW_EGONE && ++gone > 1) /* compacted again at once: do not spin */
            usleep(WAIT_RETRY_MS * 1000);
        else if (error < 0 && error != SW_EGONE)
            return error;
        if (error != SW_EGONE)
            gone = 0;
    }
    if (w.deleted)
        return sw_error_set(SW_ERROR, "build %s/%s was deleted before it finished", cli->ns, name);
    if (!strcmp(w.phase, "Complete"))
        return 0;
    return sw_error_set(SW_ERROR, "build %s/%s ended as %s%s%s%s%s%s", cli->ns, name, w.phase,
                        w.reason[0] ? " (" : "", w.reason, w.reason[0] ? ")" : "",
                        w.msg[0] ? ": " : "", w.msg);
}

static int run(sw_cli *cli, const start_opts *o)
{
    json_t *build = NULL;
    int error = binary_flag(o) ? start_binary(cli, o, &build) : start_request(cli, o, &build);
    const char *name = sw_json_str_at(build, "metadata.name");
    if (error == 0 && !name)
        error = sw_error_set(SW_ERROR, "the server answered without the new build's name");
    if (error == 0) {
        printf("build.build.openshift.io/%s started\n", name);
        fflush(stdout);
    }
    if (error == 0 && o->follow)
        error = sw_cmd_build_log(cli->client, cli->ns, name, true, -1);
    if (error == 0 && o->wait)
        error = wait_done(cli, name);
    json_decref(build);
    return error;
}

int sw_cmd_start_build(int argc, char **argv)
{
    start_opts o = {0};
    sw_cli cli;
    int rc;
    const sw_cli_flag flags[] = {
        {.name = "from-dir",
         .kind = SW_CLI_STRING,
         .value = &o.from_dir,
         .arg = "DIR",
         .help = "Upload DIR (as a deterministic tar, .git left out) as the build's binary "
                 "source."},
        {.name = "from-file",
         .kind = SW_CLI_STRING,
         .value = &o.from_file,
         .arg = "FILE",
         .help = "Upload FILE as the only file of the build's binary source."},
        {.name = "from-archive",
         .kind = SW_CLI_STRING,
         .value = &o.from_archive,
         .arg = "TAR",
         .help = "Upload the tar archive TAR (optionally gzipped) as the binary source."},
        {.name = "from-build",
         .kind = SW_CLI_STRING,
         .value = &o.from_build,
         .arg = "BUILD",
         .help = "Re-run BUILD: a new build of its config with its spec."},
        {.name = "follow",
         .short_name = 'F',
         .kind = SW_CLI_BOOL,
         .value = &o.follow,
         .help = "Stream the build's log until it finishes."},
        {.name = "wait",
         .short_name = 'w',
         .kind = SW_CLI_BOOL,
         .value = &o.wait,
         .help = "Wait for the build to finish; exit 1 unless it is Complete."},
        {.name = "env",
         .short_name = 'e',
         .kind = SW_CLI_STRINGS,
         .value = &o.env,
         .arg = "NAME=VALUE",
         .help = "An environment variable for the build (repeatable)."},
        {.name = "build-arg",
         .kind = SW_CLI_STRINGS,
         .value = &o.build_args,
         .arg = "NAME=VALUE",
         .help = "A Dockerfile ARG value (repeatable)."},
        {.name = "commit",
         .kind = SW_CLI_STRING,
         .value = &o.commit,
         .arg = "REF",
         .help = "The source revision (git commit) to build."},
        {.name = "no-cache",
         .kind = SW_CLI_BOOL,
         .value = &o.no_cache,
         .help = "Build without reusing cached layers."},
    };
    const sw_cli_command cmd = {
        .name = "start-build",
        .usage = "BUILDCONFIG | --from-build=BUILD",
        .summary =
            "Start a new build of a build configuration.\n"
            "\n"
            "Without --from-*, the build uses the configuration's source, with --env,\n"
            "--build-arg, --no-cache and --commit applied. --from-dir, --from-file and\n"
            "--from-archive upload a binary source (the configuration's source type must be\n"
            "Binary); --from-build re-runs an earlier build. Prints the new build's name.",
        .examples = "  slipway start-build app\n"
                    "  slipway start-build app --from-dir=. --follow\n"
                    "  slipway start-build app --env=MODE=prod --build-arg=VERSION=1.2 --wait\n"
                    "  slipway start-build --from-build=app-3\n",
        .flags = flags,
        .nflags = sizeof(flags) / sizeof(flags[0]),
    };
    if (sw_cli_start(&cli, &cmd, argc, argv, &rc))
        return rc;
    json_t *probe = NULL;
    int error = check_args(&cli, &o);
    if (error == 0) /* --env/--build-arg syntax, before anything is sent */
        error = build_request(&o, "probe", &probe);
    json_decref(probe);
    if (error < 0)
        return sw_cli_usage_error(&cli);
    error = sw_cli_connect(&cli);
    if (error == 0)
        error = run(&cli, &o);
    return sw_cli_finish(&cli, error);
}
