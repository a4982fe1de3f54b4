/* compress: the three codecs behind one small vtable. gzip ("pgz") cuts the input into fixed
 * chunks; each is compressed on its own with libdeflate into whole gzip members (runs of
 * incompressible-looking segments as stored members, the rest at the configured level), so the
 * concatenation is one multi-member gzip stream (RFC 1952 section 2.2, as eStargz layers are); a
 * ring of 2 x threads job slots bounds memory, workers take jobs in sequence, and the caller's
 * thread emits finished jobs in order. With one thread the same chunk function runs inline, so
 * the bytes are the same. Design note: docs/internals/image.md. */
#include "image/compress.h"

#include "util/alloc.h"
#include "util/error.h"

#include <libdeflate.h>
#include <pthread.h>
#include <stdbool.h>
#include <string.h>
#include <unistd.h>
#include <zstd.h>

#define SEG (16 * 1024) /* bytes judged compressible or not as a unit */
#define SEG_MIN 4096    /* shorter tails are always compressed */
#define STORE_COLLISION_PCT                                                                        \
    107 /* a segment is stored when its byte collisions <= 107% of uniform */
#define CHUNK_MIN (64 * 1024)
#define CHUNK_MAX (64 * 1024 * 1024)
#define ZSTD_JOB_SIZE (4 * 1024 * 1024) /* fixed so the frame layout never follows defaults */

enum { JOB_FREE, JOB_QUEUED, JOB_DONE };

typedef struct gz_job {
    unsigned char *in; /* chunk_size bytes */
    size_t in_len;
    unsigned char *out; /* gzip members */
    size_t out_len, out_cap;
    int state; /* JOB_*, guarded by the compressor's mutex when threads run */
    int error;
} gz_job;

/* A thread's pair of libdeflate compressors (they are not shareable between threads). */
typedef struct gz_codecs {
    struct libdeflate_compressor *level;  /* the configured level */
    struct libdeflate_compressor *stored; /* level 0: stored blocks */
} gz_codecs;

typedef struct gz_state {
    gz_job *jobs;
    size_t njobs;
    uint64_t fill;           /* sequence number of the job being filled */
    uint64_t emit;           /* oldest job not yet handed to the sink */
    uint64_t run;            /* next job a worker takes */
    uint64_t queued;         /* jobs below this number are queued */
    gz_codecs inline_codecs; /* threads == 1 */
    pthread_t *threads;
    int nthreads; /* started worker threads (0 when inline) */
    pthread_mutex_t mu;
    pthread_cond_t work, done;
    bool stop;
} gz_state;

typedef struct zs_state {
    ZSTD_CCtx *cctx;
    unsigned char *out;
    size_t out_cap;
} zs_state;

typedef struct codec {
    int (*start)(sw_compress *c);
    int (*write)(sw_compress *c, const unsigned char *p, size_t n);
    int (*finish)(sw_compress *c);
    void (*stop)(sw_compress *c);
} codec;

struct sw_compress {
    const codec *codec;
    sw_compress_kind kind;
    int level;
    int threads;
    size_t chunk;
    sw_compress_sink_fn sink;
    void *payload;
    int error; /* sticky */
    bool finished;
    gz_state gz;
    zs_state zs;
};

int sw_compress_default_threads(void)
{
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    if (n < 1)
        return 1;
    return n > SW_COMPRESS_MAX_THREADS ? SW_COMPRESS_MAX_THREADS : (int)n;
}

static int emit(sw_compress *c, const void *p, size_t n)
{
    if (n == 0)
        return 0;
    return c->sink(c->payload, p, n);
}

/* ---- none ---- */

static int none_start(sw_compress *c)
{
    return 0;
}

static int none_write(sw_compress *c, const unsigned char *p, size_t n)
{
    return emit(c, p, n);
}

static int none_finish(sw_compress *c)
{
    return 0;
}

static void none_stop(sw_compress *c) {}

static const codec none_codec = {none_start, none_write, none_finish, none_stop};

/* ---- gzip: one chunk ---- */

/* Whether p[0..n) looks like random or already-compressed bytes: the chance that two of its
 * bytes are equal (sum of count^2 over n^2) is within 7% of the 1/256 of uniform bytes, i.e.
 * its collision (Renyi-2) entropy is above ~7.9 bits per byte. Text and code are far above
 * that chance. Integer arithmetic only, so every host makes the same choice and a layer's
 * bytes do not depend on the libm it was built with. */
static bool incompressible(const unsigned char *p, size_t n)
{
    uint32_t count[256] = {0};
    uint64_t sq = 0;
    if (n < SEG_MIN)
        return false;
    for (size_t i = 0; i < n; i++)
        count[p[i]]++;
    for (int i = 0; i < 256; i++)
        sq += (uint64_t)count[i] * count[i];
    return 100 * 256 * sq <= (uint64_t)STORE_COLLISION_PCT * n * n;
}

/* Appends one gzip member of p[0..n) made by comp to j->out. */
static int gz_member(struct libdeflate_compressor *comp, gz_job *j, const unsigned char *p,
                     size_t n)
{
    size_t bound = libdeflate_gzip_compress_bound(comp, n);
    if (j->out_cap - j->out_len < bound) {
        j->out_cap = j->out_len + bound;
        j->out = sw_realloc(j->out, j->out_cap);
    }
    size_t w = libdeflate_gzip_compress(comp, p, n, j->out + j->out_len, j->out_cap - j->out_len);
    if (w == 0)
        return SW_ERROR;
    j->out_len += w;
    return 0;
}

/* Compresses j->in into j->out as gzip members: the chunk is read in SEG-byte segments, runs of
 * segments that look incompressible (byte values as evenly spread as random or already
 * compressed data) become stored members, the other runs members at the configured level.
 * Runs on a worker or inline; touches nothing but the job and the compressors. */
static int deflate_job(gz_codecs *z, gz_job *j)
{
    j->out_len = 0;
    if (j->in_len == 0)
        return gz_member(z->level, j, j->in, 0);
    size_t off = 0;
    while (off < j->in_len) {
        size_t n = j->in_len - off < SEG ? j->in_len - off : SEG;
        bool store = incompressible(j->in + off, n);
        size_t run = n;
        while (off + run < j->in_len) {
            size_t m = j->in_len - off - run < SEG ? j->in_len - off - run : SEG;
            if (incompressible(j->in + off + run, m) != store)
                break;
            run += m;
        }
        int error = gz_member(store ? z->stored : z->level, j, j->in + off, run);
        if (error < 0)
            return error;
        off += run;
    }
    return 0;
}

static int codecs_init(gz_codecs *z, int level)
{
    z->level = libdeflate_alloc_compressor(level);
    z->stored = libdeflate_alloc_compressor(0);
    if (!z->level || !z->stored)
        return sw_error_set(SW_ERROR, "gzip: cannot allocate a libdeflate compressor");
    return 0;
}

static void codecs_free(gz_codecs *z)
{
    if (z->level)
        libdeflate_free_compressor(z->level);
    if (z->stored)
        libdeflate_free_compressor(z->stored);
    z->level = z->stored = NULL;
}

static void *gz_worker(void *arg)
{
    sw_compress *c = arg;
    gz_state *g = &c->gz;
    gz_codecs z = {0};
    bool ready = codecs_init(&z, c->level) == 0;
    pthread_mutex_lock(&g->mu);
    for (;;) {
        while (!g->stop && g->run == g->queued)
            pthread_cond_wait(&g->work, &g->mu);
        if (g->stop)
            break;
        gz_job *j = &g->jobs[g->run % g->njobs];
        g->run++;
        pthread_mutex_unlock(&g->mu);
        int error = ready ? deflate_job(&z, j) : SW_ERROR;
        pthread_mutex_lock(&g->mu);
        j->error = error;
        j->state = JOB_DONE;
        pthread_cond_broadcast(&g->done);
    }
    pthread_mutex_unlock(&g->mu);
    codecs_free(&z);
    return NULL;
}

/* ---- gzip: the ring ---- */

static gz_job *cur_job(gz_state *g)
{
    return &g->jobs[g->fill % g->njobs];
}

static void gz_stop(sw_compress *c)
{
    gz_state *g = &c->gz;
    if (g->nthreads) {
        pthread_mutex_lock(&g->mu);
        g->stop = true;
        pthread_cond_broadcast(&g->work);
        pthread_mutex_unlock(&g->mu);
        for (int i = 0; i < g->nthreads; i++)
            pthread_join(g->threads[i], NULL);
        g->nthreads = 0;
    }
    if (g->threads) {
        pthread_cond_destroy(&g->work);
        pthread_cond_destroy(&g->done);
        pthread_mutex_destroy(&g->mu);
    }
    codecs_free(&g->inline_codecs);
    for (size_t i = 0; g->jobs && i < g->njobs; i++) {
        sw_free(g->jobs[i].in);
        sw_free(g->jobs[i].out);
    }
    sw_free(g->jobs);
    sw_free(g->threads);
    memset(g, 0, sizeof(*g));
}

static int gz_start_threads(sw_compress *c)
{
    gz_state *g = &c->gz;
    g->threads = sw_calloc((size_t)c->threads, sizeof(pthread_t));
    pthread_mutex_init(&g->mu, NULL);
    pthread_cond_init(&g->work, NULL);
    pthread_cond_init(&g->done, NULL);
    for (int i = 0; i < c->threads; i++) {
        if (pthread_create(&g->threads[i], NULL, gz_worker, c) != 0)
            return sw_error_set(SW_ERROR, "gzip: cannot start compression thread %d", i + 1);
        g->nthreads++;
    }
    return 0;
}

static int gz_start(sw_compress *c)
{
    gz_state *g = &c->gz;
    g->njobs = c->threads > 1 ? 2 * (size_t)c->threads : 1;
    g->jobs = sw_calloc(g->njobs, sizeof(gz_job));
    for (size_t i = 0; i < g->njobs; i++) {
        g->jobs[i].in = sw_malloc(c->chunk);
        g->jobs[i].out_cap = c->chunk + c->chunk / 8 + 4096; /* grown by gz_member if needed */
        g->jobs[i].out = sw_malloc(g->jobs[i].out_cap);
    }
    if (c->threads == 1)
        return codecs_init(&g->inline_codecs, c->level);
    return gz_start_threads(c);
}

/* Hands one finished job to the sink and frees its slot (caller's thread, no lock held). */
static int gz_emit_job(sw_compress *c, gz_job *j)
{
    gz_state *g = &c->gz;
    int error = j->error;
    if (error < 0)
        return sw_error_set(error, "gzip: deflate failed on chunk %llu",
                            (unsigned long long)g->emit);
    error = emit(c, j->out, j->out_len);
    if (error < 0)
        return error;
    j->in_len = 0;
    j->state = JOB_FREE;
    g->emit++;
    return 0;
}

/* Emits finished jobs in order; with wait_until > emit, blocks until those are emitted. */
static int gz_drain(sw_compress *c, uint64_t wait_until)
{
    gz_state *g = &c->gz;
    while (g->emit < g->queued) {
        gz_job *j = &g->jobs[g->emit % g->njobs];
        if (g->nthreads) {
            pthread_mutex_lock(&g->mu);
            while (g->emit < wait_until && j->state != JOB_DONE)
                pthread_cond_wait(&g->done, &g->mu);
            int state = j->state;
            pthread_mutex_unlock(&g->mu);
            if (state != JOB_DONE)
                return 0;
        }
        int error = gz_emit_job(c, j);
        if (error < 0)
            return error;
    }
    return 0;
}

/* Queues the filled job (or runs it inline) and makes the next slot ready for filling. */
static int gz_dispatch(sw_compress *c)
{
    gz_state *g = &c->gz;
    gz_job *j = cur_job(g);
    if (g->nthreads) {
        pthread_mutex_lock(&g->mu);
        j->state = JOB_QUEUED;
        g->queued = ++g->fill;
        pthread_cond_signal(&g->work);
        pthread_mutex_unlock(&g->mu);
    } else {
        j->error = deflate_job(&g->inline_codecs, j);
        j->state = JOB_DONE;
        g->queued = ++g->fill;
    }
    /* The next slot must be free: wait for its previous occupant, emit what is done. */
    uint64_t need = g->fill >= g->njobs ? g->fill - g->njobs + 1 : 0;
    return gz_drain(c, need);
}

static int gz_write(sw_compress *c, const unsigned char *p, size_t n)
{
    while (n) {
        gz_job *j = cur_job(&c->gz);
        size_t k = c->chunk - j->in_len;
        if (k > n)
            k = n;
        memcpy(j->in + j->in_len, p, k);
        j->in_len += k;
        p += k;
        n -= k;
        if (j->in_len == c->chunk) {
            int error = gz_dispatch(c);
            if (error < 0)
                return error;
        }
    }
    return 0;
}

/* The remainder becomes the last chunk; an empty stream still gets one (empty) member. */
static int gz_finish(sw_compress *c)
{
    gz_state *g = &c->gz;
    int error = 0;
    if (cur_job(g)->in_len || g->fill == 0)
        error = gz_dispatch(c);
    return error < 0 ? error : gz_drain(c, g->queued);
}

static const codec gzip_codec = {gz_start, gz_write, gz_finish, gz_stop};

/* ---- zstd ---- */

static int zs_set(ZSTD_CCtx *cctx, ZSTD_cParameter p, int v, const char *name)
{
    size_t r = ZSTD_CCtx_setParameter(cctx, p, v);
    if (ZSTD_isError(r))
        return sw_error_set(SW_ERROR, "zstd: setting %s to %d: %s", name, v, ZSTD_getErrorName(r));
    return 0;
}

static int zs_start(sw_compress *c)
{
    zs_state *z = &c->zs;
    z->cctx = ZSTD_createCCtx();
    if (!z->cctx)
        return sw_error_set(SW_ERROR, "zstd: cannot create a compression context");
    z->out_cap = ZSTD_CStreamOutSize();
    z->out = sw_malloc(z->out_cap);
    int error = zs_set(z->cctx, ZSTD_c_compressionLevel, c->level, "level");
    if (error == 0)
        error = zs_set(z->cctx, ZSTD_c_checksumFlag, 1, "checksum");
    if (error < 0)
        return error;
    /* Always at least one worker: multithreaded frames are the same for any worker count
     * but differ from single-threaded ones. A libzstd built without threads refuses this;
     * then the single-threaded frame is used for every thread count. */
    if (ZSTD_isError(ZSTD_CCtx_setParameter(z->cctx, ZSTD_c_nbWorkers, c->threads)))
        return 0;
    return zs_set(z->cctx, ZSTD_c_jobSize, ZSTD_JOB_SIZE, "jobSize");
}

/* One compressStream2 step; emits whatever output it produced. Returns the hint or < 0. */
static int zs_step(sw_compress *c, ZSTD_inBuffer *in, ZSTD_EndDirective mode, size_t *left)
{
    zs_state *z = &c->zs;
    ZSTD_outBuffer out = {z->out, z->out_cap, 0};
    size_t r = ZSTD_compressStream2(z->cctx, &out, in, mode);
    if (ZSTD_isError(r))
        return sw_error_set(SW_ERROR, "zstd: %s", ZSTD_getErrorName(r));
    *left = r;
    return emit(c, z->out, out.pos);
}

static int zs_write(sw_compress *c, const unsigned char *p, size_t n)
{
    ZSTD_inBuffer in = {p, n, 0};
    size_t left;
    while (in.pos < in.size) {
        int error = zs_step(c, &in, ZSTD_e_continue, &left);
        if (error < 0)
            return error;
    }
    return 0;
}

static int zs_finish(sw_compress *c)
{
    ZSTD_inBuffer in = {NULL, 0, 0};
    size_t left = 1;
    while (left) {
        int error = zs_step(c, &in, ZSTD_e_end, &left);
        if (error < 0)
            return error;
    }
    return 0;
}

static void zs_stop(sw_compress *c)
{
    ZSTD_freeCCtx(c->zs.cctx);
    sw_free(c->zs.out);
    memset(&c->zs, 0, sizeof(c->zs));
}

static const codec zstd_codec = {zs_start, zs_write, zs_finish, zs_stop};

/* ---- public ---- */

static int check_opts(const sw_compress_opts *o, int *level, size_t *chunk)
{
    if (o->version != SW_COMPRESS_OPTS_VERSION)
        return sw_error_set(SW_EINVALID, "compress: options version %u is not %d", o->version,
                            SW_COMPRESS_OPTS_VERSION);
    *level = o->level;
    if (o->kind == SW_COMPRESS_GZIP && *level == 0)
        *level = SW_COMPRESS_GZIP_LEVEL;
    if (o->kind == SW_COMPRESS_ZSTD && *level == 0)
        *level = SW_COMPRESS_ZSTD_LEVEL;
    if (o->kind == SW_COMPRESS_GZIP && (*level < 1 || *level > 9))
        return sw_error_set(SW_EINVALID, "compress: gzip level %d is not in 1-9", *level);
    if (o->kind == SW_COMPRESS_ZSTD && (*level < 1 || *level > 19))
        return sw_error_set(SW_EINVALID, "compress: zstd level %d is not in 1-19", *level);
    *chunk = o->chunk_size ? o->chunk_size : SW_COMPRESS_CHUNK;
    if (*chunk < CHUNK_MIN || *chunk > CHUNK_MAX)
        return sw_error_set(SW_EINVALID, "compress: chunk size %zu is not in %d-%d", *chunk,
                            CHUNK_MIN, CHUNK_MAX);
    if (o->threads < 0 || o->threads > SW_COMPRESS_MAX_THREADS)
        return sw_error_set(SW_EINVALID, "compress: %d threads is not in 0-%d", o->threads,
                            SW_COMPRESS_MAX_THREADS);
    return 0;
}

int sw_compress_new(sw_compress **out, const sw_compress_opts *opts, sw_compress_sink_fn sink,
                    void *payload)
{
    sw_compress *c = NULL;
    int level = 0, error = 0;
    size_t chunk = 0;
    *out = NULL;
    error = check_opts(opts, &level, &chunk);
    if (error < 0)
        return error;
    c = sw_calloc(1, sizeof(*c));
    c->kind = opts->kind;
    c->level = level;
    c->chunk = chunk;
    c->threads = opts->threads ? opts->threads : sw_compress_default_threads();
    c->sink = sink;
    c->payload = payload;
    switch (opts->kind) {
    case SW_COMPRESS_NONE:
        c->codec = &none_codec;
        break;
    case SW_COMPRESS_GZIP:
        c->codec = &gzip_codec;
        break;
    case SW_COMPRESS_ZSTD:
        c->codec = &zstd_codec;
        break;
    default:
        error = sw_error_set(SW_EINVALID, "compress: unknown kind %d", (int)opts->kind);
        goto done;
    }
    error = c->codec->start(c);
done:
    if (error < 0) {
        sw_compress_free(c);
        return error;
    }
    *out = c;
    return 0;
}

int sw_compress_write(sw_compress *c, const void *data, size_t len)
{
    if (c->error < 0)
        return c->error;
    if (c->finished)
        return sw_error_set(SW_EINVALID, "compress: write after finish");
    int error = c->codec->write(c, data, len);
    if (error < 0)
        c->error = error;
    return error;
}

int sw_compress_finish(sw_compress *c)
{
    if (c->error < 0)
        return c->error;
    if (c->finished)
        return sw_error_set(SW_EINVALID, "compress: finished twice");
    c->finished = true;
    int error = c->codec->finish(c);
    if (error < 0)
        c->error = error;
    return error;
}

void sw_compress_free(sw_compress *c)
{
    if (!c)
        return;
    if (c->codec)
        c->codec->stop(c);
    sw_free(c);
}

int sw_compress_kind_parse(const char *s, sw_compress_kind *out)
{
    if (!s || !*s || strcmp(s, "gzip") == 0)
        *out = SW_COMPRESS_GZIP;
    else if (strcmp(s, "zstd") == 0)
        *out = SW_COMPRESS_ZSTD;
    else if (strcmp(s, "none") == 0)
        *out = SW_COMPRESS_NONE;
    else
        return sw_error_set(SW_EINVALID, "unknown compression \"%.40s\" (want gzip, zstd or none)",
                            s);
    return 0;
}

const char *sw_compress_kind_name(sw_compress_kind k)
{
    switch (k) {
    case SW_COMPRESS_GZIP:
        return "gzip";
    case SW_COMPRESS_ZSTD:
        return "zstd";
    case SW_COMPRESS_NONE:
        return "none";
    }
    return "unknown";
}
