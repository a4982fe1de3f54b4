/* buildsource: binary build sources. buildconfigs/<bc>/instantiatebinary takes a streamed upload
 * (kept by the HTTP layer in a file), starts a build as instantiate does, and keeps the upload as
 * <data dir>/sources/<ns>/<build>; builds/<n>/source serves it to the builder. The Build
 * carries the upload's sha256 as an annotation, so a builder can tell an unchanged input. */
#include "kinds/build.h"

#include "image/tarread.h"

#include "util/alloc.h"
#include "util/error.h"
#include "util/json.h"
#include "util/sha256.h"
#include "util/str.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static int source_path(const sw_kind_ctx *ctx, const char *ns, const char *name, char *out,
                       size_t n, bool create_dirs)
{
    if (!ctx->data_dir)
        return sw_error_set(SW_EUNAVAILABLE, "binary builds are not available on this server");
    snprintf(out, n, "%s/sources", ctx->data_dir);
    if (create_dirs && mkdir(out, 0700) < 0 && errno != EEXIST)
        return sw_error_set(SW_ERROR, "cannot create %s: %s", out, sw_strerror(errno));
    snprintf(out, n, "%s/sources/%s", ctx->data_dir, ns);
    if (create_dirs && mkdir(out, 0700) < 0 && errno != EEXIST)
        return sw_error_set(SW_ERROR, "cannot create %s: %s", out, sw_strerror(errno));
    snprintf(out, n, "%s/sources/%s/%s", ctx->data_dir, ns, name);
    return 0;
}

/* "sha256:<hex>" of the uploaded file, streamed. */
static int file_digest(const char *path, char out[SW_SHA256_DIGEST_BUF])
{
    char buf[65536];
    sw_sha256 h;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return sw_error_set(SW_ERROR, "cannot read the uploaded source: %s", sw_strerror(errno));
    sw_sha256_init(&h);
    for (;;) {
        ssize_t n = read(fd, buf, sizeof(buf));
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            int error =
                sw_error_set(SW_ERROR, "cannot read the uploaded source: %s", sw_strerror(errno));
            sw_sha256_dispose(&h);
            close(fd);
            return error;
        }
        if (n == 0)
            break;
        sw_sha256_update(&h, buf, (size_t)n);
    }
    close(fd);
    sw_sha256_final_digest(&h, out);
    return 0;
}

/* A tar upload's digest over what the build sees — each entry's path, type, mode, owner, link
 * and contents, in archive order — but not its timestamps, so re-uploading touched files (or
 * the same tree from another tar tool run) keeps the digest, as it keeps the image's. */
static int hash_entry(void *payload, const sw_tar_entry *e)
{
    sw_sha256 *h = payload;
    char head[600], content[SW_SHA256_DIGEST_BUF] = "";
    if (e->type == SW_TAR_REG && !e->src_path)
        sw_sha256_digest(e->data, e->data_len, content);
    int n = snprintf(head, sizeof(head), "%s%c%d%c%o%c%u:%u%c%s%c%zu%c%s%c", e->path, 0,
                     (int)e->type, 0, e->mode, 0, e->uid, e->gid, 0, e->link ? e->link : "", 0,
                     e->data_len, 0, content, 0);
    if (n > 0)
        sw_sha256_update(h, head, (size_t)n < sizeof(head) ? (size_t)n : sizeof(head) - 1);
    return 0;
}

static int source_digest(const char *path, bool as_file, char out[SW_SHA256_DIGEST_BUF])
{
    sw_sha256 h;
    sw_tarread_opts opts = SW_TARREAD_OPTS_INIT;
    opts.on_entry = hash_entry;
    opts.payload = &h;
    if (as_file)
        return file_digest(path, out);
    sw_sha256_init(&h);
    int error = sw_tarread_add_file(NULL, path, &opts, NULL);
    if (error < 0) {
        sw_sha256_dispose(&h);
        return file_digest(path, out); /* not a tar (or a broken one): the bytes themselves */
    }
    sw_sha256_final_digest(&h, out);
    return 0;
}

/* Moves the upload to the new build's source path. If it cannot, the Build it was made for is
 * deleted again: a Build waiting for a source that never comes must not be left behind. */
static int keep_source(const sw_kind_ctx *ctx, sw_objects *o, const sw_subreq *r, const char *build,
                       char *path, size_t n)
{
    int error = source_path(ctx, r->ns, build, path, n, false);
    if (error == 0 && rename(r->body_file, path) < 0)
        error = sw_error_set(SW_ERROR, "cannot keep the uploaded source: %s", sw_strerror(errno));
    if (error < 0) {
        char msg[512];
        sw_strlcpy(msg, sw_error_msg(), sizeof(msg));
        o->del(o, &sw_kind_build, r->ns, build);
        error = sw_error_set(error, "%s", msg);
    }
    return error;
}

/* Removes what a deleted Build leaves on disk: its uploaded source (its log goes with it too,
 * see sw_build_log_remove). */
void sw_build_source_remove(const sw_kind_ctx *ctx, const char *ns, const char *name)
{
    char path[4096];
    if (source_path(ctx, ns, name, path, sizeof(path), false) == 0)
        unlink(path);
}

int sw_build_bc_instantiatebinary(const sw_kind_ctx *ctx, sw_objects *o, const sw_subreq *r,
                                  sw_subresp *out)
{
    json_t *bc = NULL, *req = NULL;
    char path[4096], digest[SW_SHA256_DIGEST_BUF];
    if (strcmp(r->method, "POST"))
        return sw_error_set(SW_EMETHOD, "instantiatebinary takes a POSTed body");
    if (!r->body_file)
        return sw_error_set(SW_EBADREQUEST, "instantiatebinary needs the binary as the body");
    int error = o->get(o, &sw_kind_buildconfig, r->ns, r->name, &bc);
    if (error == 0 && !sw_str_eq(sw_json_str_at(bc, "spec.source.type"), "Binary"))
        error = sw_error_set(SW_EBADREQUEST,
                             "BuildConfig %s/%s has no Binary source: set spec.source.type to "
                             "Binary to start builds from uploaded files",
                             r->ns, r->name);
    const char *as_file_q = r->query(r->conn, "asFile");
    if (error == 0)
        error = source_digest(r->body_file, as_file_q && *as_file_q, digest);
    if (error == 0) {
        const char *as_file = as_file_q;
        const char *commit = r->query(r->conn, "revision.commit");
        req = json_pack("{s:[{s:s}], s:{s:{s:s}}}", "triggeredBy", "message", "Manually triggered",
                        "metadata", "annotations", SW_BUILD_SOURCE_DIGEST_ANNOTATION, digest);
        if (as_file && *as_file) {
            if (!sw_build_file_name_ok(as_file))
                error = sw_error_set(SW_EBADREQUEST,
                                     "asFile must be a file name (no '/' or '\\', not \".\" or "
                                     "\"..\", no control characters, at most 255 bytes): "
                                     "%.200s",
                                     as_file);
            else
                json_object_set_new(req, "binary", json_pack("{s:s}", "asFile", as_file));
        }
        if (commit && *commit)
            json_object_set_new(
                req, "revision",
                json_pack("{s:s, s:{s:s}}", "type", "Git", "git", "commit", commit));
    }
    /* the sources directory first: a Build is only created when its source can be kept */
    if (error == 0 && !o->dry_run)
        error = source_path(ctx, r->ns, "", path, sizeof(path), true);
    if (error == 0)
        error = sw_build_instantiate(o, r->ns, r->name, req, &out->obj);
    if (error == 0) {
        const char *as_file = sw_json_str_at(req, "binary.asFile");
        const char *build = sw_json_str_at(out->obj, "metadata.name") ?: "";
        if (as_file)
            sw_json_set_path(json_object_get(out->obj, "spec"), "source.binary.asFile",
                             json_string(as_file));
        if (!o->dry_run)
            error = keep_source(ctx, o, r, build, path, sizeof(path));
    }
    out->status = 201;
    json_decref(bc);
    json_decref(req);
    return error;
}

typedef struct reader {
    int fd;
} reader;

static long reader_next(void *state, char *buf, size_t max)
{
    reader *rd = state;
    ssize_t n = read(rd->fd, buf, max);
    return n > 0 ? (long)n : -1;
}

static void reader_free(void *state)
{
    reader *rd = state;
    close(rd->fd);
    sw_free(rd);
}

int sw_build_build_source(const sw_kind_ctx *ctx, sw_objects *o, const sw_subreq *r,
                          sw_subresp *out)
{
    char path[4096];
    json_t *b = NULL;
    if (strcmp(r->method, "GET"))
        return sw_error_set(SW_EMETHOD, "builds/source takes a GET");
    int error = o->get(o, &sw_kind_build, r->ns, r->name, &b);
    json_decref(b);
    if (error == 0)
        error = source_path(ctx, r->ns, r->name, path, sizeof(path), false);
    if (error < 0)
        return error;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return sw_error_set(SW_ENOTFOUND, "build %s/%s has no uploaded source", r->ns, r->name);
    reader *rd = sw_malloc(sizeof(*rd));
    rd->fd = fd;
    out->content_type = "application/octet-stream";
    out->next = reader_next;
    out->free = reader_free;
    out->state = rd;
    return 0;
}
