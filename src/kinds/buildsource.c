/* buildsource: binary build sources. buildconfigs/<bc>/instantiatebinary takes a streamed upload
 * (kept by the HTTP layer in a file), starts a build as instantiate does, and keeps the upload as
 * <data dir>/sources/<ns>/<build>; builds/<n>/source serves it to the builder. */
#include "kinds/build.h"

#include "util/alloc.h"
#include "util/error.h"
#include "util/json.h"
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
        return sw_error_set(SW_ERROR, "cannot create %s: %s", out, strerror(errno));
    snprintf(out, n, "%s/sources/%s", ctx->data_dir, ns);
    if (create_dirs && mkdir(out, 0700) < 0 && errno != EEXIST)
        return sw_error_set(SW_ERROR, "cannot create %s: %s", out, strerror(errno));
    snprintf(out, n, "%s/sources/%s/%s", ctx->data_dir, ns, name);
    return 0;
}

int sw_build_bc_instantiatebinary(const sw_kind_ctx *ctx, sw_objects *o, const sw_subreq *r,
                                  sw_subresp *out)
{
    json_t *bc = NULL, *req = NULL;
    char path[4096];
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
    if (error == 0) {
        const char *as_file = r->query(r->conn, "asFile");
        const char *commit = r->query(r->conn, "revision.commit");
        req = json_pack("{s:[{s:s}]}", "triggeredBy", "message", "Manually triggered");
        if (as_file && *as_file) {
            if (strchr(as_file, '/') || !strcmp(as_file, "..") || !strcmp(as_file, "."))
                error = sw_error_set(SW_EBADREQUEST, "asFile must be a file name: %.200s",
                                     as_file);
            else
                json_object_set_new(req, "binary", json_pack("{s:s}", "asFile", as_file));
        }
        if (commit && *commit)
            json_object_set_new(req, "revision",
                                json_pack("{s:s, s:{s:s}}", "type", "Git", "git", "commit",
                                          commit));
    }
    if (error == 0)
        error = sw_build_instantiate(o, r->ns, r->name, req, &out->obj);
    if (error == 0) {
        const char *as_file = sw_json_str_at(req, "binary.asFile");
        if (as_file)
            sw_json_set_path(json_object_get(out->obj, "spec"), "source.binary.asFile",
                             json_string(as_file));
        error = source_path(ctx, r->ns, sw_json_str_at(out->obj, "metadata.name") ?: "", path,
                            sizeof(path), true);
        if (error == 0 && rename(r->body_file, path) < 0)
            error = sw_error_set(SW_ERROR, "cannot keep the uploaded source: %s",
                                 strerror(errno));
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
