/* compress: streaming layer compression whose output bytes do not depend on the number of
 * threads. gzip is compressed in fixed-size input chunks, each turned into whole gzip members by
 * libdeflate on worker threads and joined in order (a multi-member gzip stream); zstd uses
 * libzstd's multithreaded streaming mode, whose frames are the same for any worker count >= 1.
 * Output reaches the sink in order, from the caller's thread, while later chunks are still
 * compressing. Design: docs/internals/image.md. */
#ifndef SW_IMAGE_COMPRESS_H
#define SW_IMAGE_COMPRESS_H

#include <stddef.h>
#include <stdint.h>

typedef enum sw_compress_kind {
    SW_COMPRESS_NONE = 0, /* plain tar: bytes pass through */
    SW_COMPRESS_GZIP = 1,
    SW_COMPRESS_ZSTD = 2,
} sw_compress_kind;

#define SW_COMPRESS_GZIP_LEVEL 6
#define SW_COMPRESS_ZSTD_LEVEL 3
#define SW_COMPRESS_CHUNK (1024 * 1024) /* gzip chunk: part of the output format, fixed */
#define SW_COMPRESS_MAX_THREADS 64

typedef struct sw_compress_opts {
    unsigned int version; /* SW_COMPRESS_OPTS_VERSION */
    sw_compress_kind kind;
    int level;         /* 0: the kind's default (gzip 6, zstd 3); gzip 1-9, zstd 1-19 */
    int threads;       /* worker threads; 0: online CPUs. Never changes the bytes */
    size_t chunk_size; /* gzip input bytes per chunk; 0: SW_COMPRESS_CHUNK (changes bytes) */
} sw_compress_opts;

#define SW_COMPRESS_OPTS_VERSION 1
#define SW_COMPRESS_OPTS_INIT                                                                      \
    {                                                                                              \
        .version = SW_COMPRESS_OPTS_VERSION, .kind = SW_COMPRESS_GZIP                              \
    }

/* Receives compressed bytes in order, always on the thread that called sw_compress_write or
 * sw_compress_finish, never after those return. A negative return (an SW_E* code) makes the
 * compressor fail: that call and every later one return the code. */
typedef int (*sw_compress_sink_fn)(void *payload, const void *data, size_t len);

typedef struct sw_compress sw_compress;

/* Starts a compressor (and its worker threads). SW_EINVALID for an unknown kind, a level or
 * chunk size out of range; SW_ERROR if a thread or codec context cannot be created. */
int sw_compress_new(sw_compress **out, const sw_compress_opts *opts, sw_compress_sink_fn sink,
                    void *payload);
/* Feeds len uncompressed bytes. The sink may be called zero or more times meanwhile. */
int sw_compress_write(sw_compress *c, const void *data, size_t len);
/* Ends the stream: compresses what is buffered, waits for every worker and hands the rest
 * (the last gzip members or the zstd epilogue) to the sink. Call once; then only _free. */
int sw_compress_finish(sw_compress *c);
/* Stops the workers (abandoning unfinished work) and frees. NULL is ignored. */
void sw_compress_free(sw_compress *c);

/* "gzip", "zstd", "none" (also "" for gzip, the default). */
int sw_compress_kind_parse(const char *s, sw_compress_kind *out);
const char *sw_compress_kind_name(sw_compress_kind k);
/* Online CPUs, at least 1 and at most SW_COMPRESS_MAX_THREADS. */
int sw_compress_default_threads(void);

#endif
