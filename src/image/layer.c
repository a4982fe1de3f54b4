/* layer: tar -> (sha256, count) -> compressor -> (sha256, count) -> sink and/or file. Every
 * step runs on the caller's thread except the compressor's workers, so the sink sees the
 * blob in order and can upload it while later chunks are still being compressed. Design
 * note: docs/internals/image.md. */
#include "image/layer.h"

#include "image/oci.h"
#include "util/error.h"
#include "util/path.h"
#include "util/str.h"

#include <errno.h>
#include <stdbool.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef struct pipe_state {
    const sw_layer_opts *opts;
    sw_compress *comp;
    sw_sha256 tar_hash, blob_hash;
    uint64_t tar_size, blob_size;
    int fd;      /* out_path, or -1 */
    bool opened; /* out_path was created (and is removed on failure) */
} pipe_state;

/* The compressor's sink: hash, count, then file and caller's sink. */
static int on_blob(void *payload, const void *data, size_t len)
{
    pipe_state *ps = payload;
    sw_sha256_update(&ps->blob_hash, data, len);
    ps->blob_size += len;
    if (ps->fd >= 0) {
        int error = sw_path_write_fd(ps->fd, ps->opts->out_path, data, len);
        if (error < 0)
            return error;
    }
    return ps->opts->sink ? ps->opts->sink(ps->opts->payload, data, len) : 0;
}

/* The tar writer's callback: hash and count the tar, then compress. */
static int on_tar(void *payload, const void *data, size_t len)
{
    pipe_state *ps = payload;
    sw_sha256_update(&ps->tar_hash, data, len);
    ps->tar_size += len;
    return sw_compress_write(ps->comp, data, len);
}

static int open_out(pipe_state *ps)
{
    const char *path = ps->opts->out_path;
    if (!path)
        return 0;
    ps->fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (ps->fd < 0)
        return sw_error_set(SW_ERROR, "layer: cannot create %s: %s", path, sw_strerror(errno));
    ps->opened = true;
    return 0;
}

static int close_out(pipe_state *ps)
{
    if (ps->fd < 0)
        return 0;
    int rc = close(ps->fd);
    ps->fd = -1;
    if (rc < 0)
        return sw_error_set(SW_ERROR, "layer: closing %s: %s", ps->opts->out_path,
                            sw_strerror(errno));
    return 0;
}

int sw_layer_build(sw_tar *tar, const sw_layer_opts *opts, sw_layer_info *out)
{
    pipe_state ps = {.opts = opts, .fd = -1};
    sw_compress_opts co = SW_COMPRESS_OPTS_INIT;
    int error = 0;
    memset(out, 0, sizeof(*out));
    if (opts->version != SW_LAYER_OPTS_VERSION)
        return sw_error_set(SW_EINVALID, "layer: options version %u is not %d", opts->version,
                            SW_LAYER_OPTS_VERSION);
    co.kind = opts->compression;
    co.level = opts->level;
    co.threads = opts->threads;
    sw_sha256_init(&ps.tar_hash);
    sw_sha256_init(&ps.blob_hash);
    error = sw_compress_new(&ps.comp, &co, on_blob, &ps);
    if (error < 0)
        goto done;
    error = open_out(&ps);
    if (error < 0)
        goto done;
    error = sw_tar_write(tar, opts->epoch, on_tar, &ps);
    if (error < 0)
        goto done;
    error = sw_compress_finish(ps.comp);
    if (error < 0)
        goto done;
    error = close_out(&ps);
    if (error < 0)
        goto done;
    sw_sha256_final_digest(&ps.tar_hash, out->diff_id);
    sw_sha256_final_digest(&ps.blob_hash, out->digest);
    out->tar_size = ps.tar_size;
    out->size = ps.blob_size;
    out->media_type = sw_oci_layer_media_type(opts->compression);
done:
    sw_compress_free(ps.comp);
    sw_sha256_dispose(&ps.tar_hash);
    sw_sha256_dispose(&ps.blob_hash);
    if (error < 0) {
        if (ps.fd >= 0)
            close(ps.fd);
        if (ps.opened)
            unlink(opts->out_path);
        memset(out, 0, sizeof(*out));
    }
    return error;
}

int sw_layer_epoch_from_env(int64_t *out)
{
    const char *s = getenv("SOURCE_DATE_EPOCH");
    int64_t v = 0;
    *out = 0;
    if (!s || !*s)
        return 0;
    if (sw_str_to_i64(s, &v) < 0 || v < 0 || v > SW_TAR_MAX_MTIME)
        return sw_error_set(SW_EINVALID,
                            "SOURCE_DATE_EPOCH \"%.40s\" is not a number of "
                            "seconds between 0 and %lld",
                            s, (long long)SW_TAR_MAX_MTIME);
    *out = v;
    return 0;
}
