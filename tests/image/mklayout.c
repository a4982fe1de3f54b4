/* mklayout: a test and benchmark driver for src/image (not a unit test): walks a directory
 * into one deterministic layer, builds a FROM-scratch image config from flags and writes an
 * OCI layout, printing the digests and the seconds the layer took. Used by
 * tests/image/verify_umoci.sh and by the timings in docs/internals/image.md.
 *   mklayout --src DIR --layout OUT --tag TAG [--compression gzip|zstd|none] [--threads N]
 *            [--epoch N] [--prefix DIR] [--chown UID:GID] [--docker] [--env K=V]...
 *            [--label K=V]... [--entrypoint ARG]... [--cmd ARG]... [--workdir D]
 *            [--user U] [--port P]... [--volume V]... [--stop-signal S] */
#include "image/layout.h"
#include "util/alloc.h"
#include "util/error.h"
#include "util/str.h"
#include "util/time.h"

#include <dirent.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define MAX_ARGS 64

typedef struct hl_seen {
    dev_t dev;
    ino_t ino;
    char *path;
} hl_seen;

typedef struct walk {
    sw_tar *tar;
    char prefix[PATH_MAX]; /* layer path of the source root ("" for /) */
    uint32_t uid, gid;
    hl_seen *seen;
    size_t nseen, cap;
} walk;

typedef struct opts {
    const char *src, *layout, *tag, *workdir, *user, *stop_signal, *prefix, *chown;
    sw_layer_opts layer;
    sw_oci_format fmt;
    const char *env[MAX_ARGS], *label[MAX_ARGS], *ep[MAX_ARGS], *cmd[MAX_ARGS];
    const char *port[MAX_ARGS], *vol[MAX_ARGS];
    size_t nenv, nlabel, nep, ncmd, nport, nvol;
} opts;

static int fail(int rc, const char *what)
{
    fprintf(stderr, "mklayout: %s: %s\n", what, sw_error_msg());
    return rc;
}

static const char *hardlink_target(walk *w, const struct stat *st, const char *layer_path)
{
    for (size_t i = 0; i < w->nseen; i++)
        if (w->seen[i].dev == st->st_dev && w->seen[i].ino == st->st_ino)
            return w->seen[i].path;
    if (w->nseen == w->cap) {
        w->cap = w->cap ? w->cap * 2 : 16;
        w->seen = sw_realloc(w->seen, w->cap * sizeof(hl_seen));
    }
    w->seen[w->nseen++] = (hl_seen){st->st_dev, st->st_ino, sw_strdup(layer_path)};
    return NULL;
}

static int add_path(walk *w, const char *disk, const char *layer_path, const struct stat *st)
{
    char link[PATH_MAX];
    sw_tar_entry e = {
        .path = layer_path, .mode = st->st_mode & 07777, .uid = w->uid, .gid = w->gid};
    if (S_ISDIR(st->st_mode)) {
        e.type = SW_TAR_DIR;
    } else if (S_ISLNK(st->st_mode)) {
        ssize_t n = readlink(disk, link, sizeof(link) - 1);
        if (n < 0)
            return sw_error_set(SW_ERROR, "readlink %s failed", disk);
        link[n] = '\0';
        e.type = SW_TAR_SYMLINK;
        e.link = link;
    } else if (S_ISREG(st->st_mode)) {
        const char *target = st->st_nlink > 1 ? hardlink_target(w, st, layer_path) : NULL;
        e.type = target ? SW_TAR_HARDLINK : SW_TAR_REG;
        e.link = target;
        e.src_path = target ? NULL : disk;
    } else {
        return 0; /* devices, fifos, sockets: not in layers built here */
    }
    return sw_tar_add(w->tar, &e);
}

static int walk_dir(walk *w, const char *disk, const char *layer)
{
    DIR *d = opendir(disk);
    if (!d)
        return sw_error_set(SW_ERROR, "cannot open directory %s", disk);
    int error = 0;
    struct dirent *de;
    while (error == 0 && (de = readdir(d)) != NULL) {
        if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
            continue;
        char dp[PATH_MAX], lp[PATH_MAX];
        struct stat st;
        snprintf(dp, sizeof(dp), "%s/%s", disk, de->d_name);
        snprintf(lp, sizeof(lp), "%s%s%s", layer, *layer ? "/" : "", de->d_name);
        if (lstat(dp, &st) < 0) {
            error = sw_error_set(SW_ERROR, "lstat %s failed", dp);
            break;
        }
        error = add_path(w, dp, lp, &st);
        if (error == 0 && S_ISDIR(st.st_mode))
            error = walk_dir(w, dp, lp);
    }
    closedir(d);
    return error;
}

/* Adds the prefix directory (if any) and everything under src. */
static int build_tar(walk *w, const opts *o)
{
    struct stat st;
    if (stat(o->src, &st) < 0 || !S_ISDIR(st.st_mode))
        return sw_error_set(SW_EINVALID, "%s is not a directory", o->src);
    if (*w->prefix) {
        sw_tar_entry e = {
            .path = w->prefix, .type = SW_TAR_DIR, .mode = 0755, .uid = w->uid, .gid = w->gid};
        int error = sw_tar_add(w->tar, &e);
        if (error < 0)
            return error;
    }
    return walk_dir(w, o->src, w->prefix);
}

static int split_kv(const char *s, char *key, size_t n, const char **value)
{
    const char *eq = strchr(s, '=');
    if (!eq || (size_t)(eq - s) >= n)
        return sw_error_set(SW_EINVALID, "want KEY=VALUE, got %s", s);
    memcpy(key, s, (size_t)(eq - s));
    key[eq - s] = '\0';
    *value = eq + 1;
    return 0;
}

static int configure(sw_oci_image *img, const opts *o)
{
    char key[256];
    const char *v = NULL;
    int error = 0;
    for (size_t i = 0; error == 0 && i < o->nenv; i++) {
        error = split_kv(o->env[i], key, sizeof(key), &v);
        if (error == 0)
            error = sw_oci_image_set_env(img, key, v);
    }
    for (size_t i = 0; error == 0 && i < o->nlabel; i++) {
        error = split_kv(o->label[i], key, sizeof(key), &v);
        if (error == 0)
            error = sw_oci_image_set_label(img, key, v);
    }
    for (size_t i = 0; error == 0 && i < o->nport; i++)
        error = sw_oci_image_add_port(img, o->port[i]);
    for (size_t i = 0; error == 0 && i < o->nvol; i++)
        error = sw_oci_image_add_volume(img, o->vol[i]);
    if (error == 0 && o->nep)
        error = sw_oci_image_set_entrypoint(img, o->ep, o->nep);
    if (error == 0 && o->ncmd)
        error = sw_oci_image_set_cmd(img, o->cmd, o->ncmd);
    if (error == 0 && o->workdir)
        error = sw_oci_image_set_workdir(img, o->workdir);
    if (error == 0 && o->user)
        error = sw_oci_image_set_user(img, o->user);
    if (error == 0 && o->stop_signal)
        error = sw_oci_image_set_stop_signal(img, o->stop_signal);
    return error;
}

static int push_arg(const char **list, size_t *n, const char *v)
{
    if (*n >= MAX_ARGS)
        return sw_error_set(SW_ELIMIT, "too many repeated flags");
    list[(*n)++] = v;
    return 0;
}

static int parse_int(const char *s, int64_t *out)
{
    return sw_str_to_i64(s ? s : "", out);
}

static int parse_flag(opts *o, const char *f, const char *v)
{
    int64_t n = 0;
    if (!v)
        return sw_error_set(SW_EINVALID, "%s needs a value", f);
    if (!strcmp(f, "--src"))
        o->src = v;
    else if (!strcmp(f, "--layout"))
        o->layout = v;
    else if (!strcmp(f, "--tag"))
        o->tag = v;
    else if (!strcmp(f, "--workdir"))
        o->workdir = v;
    else if (!strcmp(f, "--user"))
        o->user = v;
    else if (!strcmp(f, "--stop-signal"))
        o->stop_signal = v;
    else if (!strcmp(f, "--prefix"))
        o->prefix = v;
    else if (!strcmp(f, "--chown"))
        o->chown = v;
    else if (!strcmp(f, "--compression"))
        return sw_compress_kind_parse(v, &o->layer.compression);
    else if (!strcmp(f, "--threads") && parse_int(v, &n) == 0)
        o->layer.threads = (int)n;
    else if (!strcmp(f, "--epoch") && parse_int(v, &n) == 0)
        o->layer.epoch = n;
    else if (!strcmp(f, "--env"))
        return push_arg(o->env, &o->nenv, v);
    else if (!strcmp(f, "--label"))
        return push_arg(o->label, &o->nlabel, v);
    else if (!strcmp(f, "--entrypoint"))
        return push_arg(o->ep, &o->nep, v);
    else if (!strcmp(f, "--cmd"))
        return push_arg(o->cmd, &o->ncmd, v);
    else if (!strcmp(f, "--port"))
        return push_arg(o->port, &o->nport, v);
    else if (!strcmp(f, "--volume"))
        return push_arg(o->vol, &o->nvol, v);
    else
        return sw_error_set(SW_EINVALID, "unknown flag or bad value: %s %s", f, v);
    return 0;
}

static int parse_args(opts *o, int argc, char **argv)
{
    o->layer = (sw_layer_opts)SW_LAYER_OPTS_INIT;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--docker")) {
            o->fmt = SW_OCI_FORMAT_DOCKER;
            continue;
        }
        int error = parse_flag(o, argv[i], i + 1 < argc ? argv[i + 1] : NULL);
        if (error < 0)
            return error;
        i++;
    }
    if (!o->src || !o->layout || !o->tag)
        return sw_error_set(SW_EINVALID, "--src, --layout and --tag are required");
    return 0;
}

static int setup_walk(walk *w, const opts *o)
{
    if (o->prefix) {
        int error = sw_tar_clean_path(o->prefix, w->prefix, sizeof(w->prefix));
        if (error < 0)
            return error;
    }
    if (o->chown) {
        const char *p = o->chown;
        uint64_t u = 0, g = 0;
        if (sw_parse_u64(&p, UINT32_MAX, &u) < 0 || *p++ != ':' ||
            sw_parse_u64(&p, UINT32_MAX, &g) < 0 || *p)
            return sw_error_set(SW_EINVALID, "--chown wants UID:GID");
        w->uid = (uint32_t)u;
        w->gid = (uint32_t)g;
    }
    return sw_tar_new(&w->tar);
}

int main(int argc, char **argv)
{
    opts o;
    walk w;
    memset(&o, 0, sizeof(o));
    memset(&w, 0, sizeof(w));
    sw_oci_layout *l = NULL;
    sw_oci_image *img = NULL;
    sw_layer_info info;
    sw_oci_desc layer, manifest;
    int rc = 1;
    if (parse_args(&o, argc, argv) < 0 || setup_walk(&w, &o) < 0) {
        rc = fail(2, "usage");
        goto done;
    }
    int64_t t0 = sw_time_now_micro();
    if (build_tar(&w, &o) < 0 || sw_oci_layout_open(&l, o.layout) < 0 ||
        sw_oci_layout_put_layer(l, w.tar, &o.layer, &info) < 0) {
        rc = fail(1, "layer");
        goto done;
    }
    double secs = (double)(sw_time_now_micro() - t0) / 1e6;
    memset(&layer, 0, sizeof(layer));
    sw_strlcpy(layer.media_type, info.media_type, sizeof(layer.media_type));
    memcpy(layer.digest, info.digest, sizeof(layer.digest));
    layer.size = (int64_t)info.size;
    sw_oci_image_new(&img, "linux", NULL, o.layer.epoch);
    if (configure(img, &o) < 0 ||
        sw_oci_image_add_layer(img, &layer, info.diff_id, "mklayout") < 0 ||
        sw_oci_layout_put_image(l, img, o.fmt, o.tag, &manifest) < 0) {
        rc = fail(1, "image");
        goto done;
    }
    printf("manifest %s\nlayer %s\ndiff_id %s\nlayer_size %llu\ntar_size %llu\nentries %zu\n"
           "layer_seconds %.3f\n",
           manifest.digest, info.digest, info.diff_id, (unsigned long long)info.size,
           (unsigned long long)info.tar_size, sw_tar_count(w.tar), secs);
    rc = 0;
done:
    for (size_t i = 0; i < w.nseen; i++)
        sw_free(w.seen[i].path);
    sw_free(w.seen);
    sw_tar_free(w.tar);
    sw_oci_image_free(img);
    sw_oci_layout_free(l);
    return rc;
}
