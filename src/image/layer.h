/* layer: one image layer in one pass: the deterministic tar is streamed through the
 * compressor, hashing the tar (diff_id) and the compressed blob (digest) and counting both
 * on the way, while the blob goes to a sink (a registry upload) and/or a file. Design note:
 * docs/internals/image.md. */
#ifndef SW_IMAGE_LAYER_H
#define SW_IMAGE_LAYER_H

#include "image/compress.h"
#include "image/tar.h"
#include "util/sha256.h"

#include <stdint.h>

/* Receives the compressed blob in order, on the calling thread; a negative SW_E* return
 * aborts the build with that code. */
typedef int (*sw_layer_sink_fn)(void *payload, const void *data, size_t len);

typedef struct sw_layer_opts {
    unsigned int version;         /* SW_LAYER_OPTS_VERSION */
    sw_compress_kind compression; /* SW_COMPRESS_GZIP by default */
    int level;                    /* 0: the compression's default */
    int threads;                  /* 0: online CPUs; never changes the bytes */
    int64_t epoch;                /* every entry's mtime (SOURCE_DATE_EPOCH, 0 when unset) */
    const char *out_path;         /* optional: the blob is written to this file (replaced) */
    sw_layer_sink_fn sink;        /* optional: the blob streamed as it is produced */
    void *payload;
} sw_layer_opts;

#define SW_LAYER_OPTS_VERSION 1
#define SW_LAYER_OPTS_INIT                                                                         \
    {                                                                                              \
        .version = SW_LAYER_OPTS_VERSION, .compression = SW_COMPRESS_GZIP                          \
    }

typedef struct sw_layer_info {
    char digest[SW_SHA256_DIGEST_BUF];  /* sha256 of the compressed blob */
    char diff_id[SW_SHA256_DIGEST_BUF]; /* sha256 of the uncompressed tar */
    uint64_t size;                      /* compressed bytes */
    uint64_t tar_size;                  /* uncompressed bytes */
    const char *media_type;             /* OCI layer media type (static string) */
} sw_layer_info;

/* Builds the layer of tar. On failure *out is zeroed, a partial out_path file is removed and
 * the code of the failing step (tar, compression, sink, file) is returned. */
int sw_layer_build(sw_tar *tar, const sw_layer_opts *opts, sw_layer_info *out);

/* SOURCE_DATE_EPOCH from the environment: 0 when unset or empty, SW_EINVALID when it is not
 * a decimal number of seconds in the tar's range. */
int sw_layer_epoch_from_env(int64_t *out);

#endif
