/* tar: deterministic POSIX tar (ustar blocks, PAX 'x' records for long paths, long link
 * targets, sizes of 8 GiB and more, and ids above 07777777). Entries are kept as copies
 * until sw_tar_write sorts them and streams the archive through a write-combining buffer
 * straight into the caller's callback; file contents are read into that buffer in place.
 * Design note: docs/internals/image.md. */
#include "image/tar.h"

#include "util/alloc.h"
#include "util/buf.h"
#include "util/error.h"
#include "util/str.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define BLOCK 512
#define OUT_BUF (256 * 1024) /* write-combining buffer handed to the callback */
#define USTAR_NAME 100
#define USTAR_MAX_SIZE 077777777777ULL
#define USTAR_MAX_ID 07777777U
#define PAX_MAX 65536
#define PAX_DIR "PaxHeaders.0/"

typedef struct tar_ent {
    char *path; /* cleaned layer path, no trailing slash */
    sw_tar_type type;
    uint32_t mode, uid, gid;
    char *src;  /* regular entries read from disk, else NULL */
    bool range; /* src: only size bytes at off */
    uint64_t off, size;
    unsigned char *data; /* regular entries from memory (may be NULL when data_len is 0) */
    size_t data_len;
    char *link; /* symlink target verbatim, or hard link target (cleaned) */
} tar_ent;

struct sw_tar {
    tar_ent *v;
    size_t n, cap;
};

/* The output side of one sw_tar_write call. */
typedef struct tar_out {
    sw_tar_write_fn fn;
    void *payload;
    unsigned char *buf;
    size_t len;
    int64_t mtime;
} tar_out;

int sw_tar_new(sw_tar **out)
{
    *out = sw_calloc(1, sizeof(sw_tar));
    return 0;
}

static void ent_dispose(tar_ent *e)
{
    sw_free(e->path);
    sw_free(e->src);
    sw_free(e->data);
    sw_free(e->link);
}

void sw_tar_free(sw_tar *t)
{
    if (!t)
        return;
    for (size_t i = 0; i < t->n; i++)
        ent_dispose(&t->v[i]);
    sw_free(t->v);
    sw_free(t);
}

size_t sw_tar_count(const sw_tar *t)
{
    return t->n;
}

/* ---- paths ---- */

static bool bad_component(const char *c, size_t n)
{
    return n == 0 || (n == 1 && c[0] == '.') || (n == 2 && c[0] == '.' && c[1] == '.');
}

int sw_tar_clean_path(const char *p, char *out, size_t n)
{
    if (!p)
        return sw_error_set(SW_EINVALID, "tar: missing path");
    const char *orig = p;
    for (;;) {
        if (*p == '/')
            p++;
        else if (p[0] == '.' && p[1] == '/')
            p += 2;
        else
            break;
    }
    size_t len = strlen(p);
    while (len && p[len - 1] == '/')
        len--;
    if (len == 0)
        return sw_error_set(SW_EINVALID, "tar: path \"%.200s\" names the root", orig);
    if (len >= n || len > SW_TAR_MAX_PATH)
        return sw_error_set(SW_EINVALID, "tar: path \"%.200s...\" is too long", orig);
    for (size_t i = 0; i < len;) {
        size_t j = i;
        while (j < len && p[j] != '/')
            j++;
        if (bad_component(p + i, j - i))
            return sw_error_set(
                SW_EINVALID, "tar: path \"%.200s\" has an empty, \".\" or \"..\" component", orig);
        i = j + 1;
    }
    memcpy(out, p, len);
    out[len] = '\0';
    return 0;
}

/* ---- adding entries ---- */

static int check_entry(const sw_tar_entry *e)
{
    if (e->mode > 07777)
        return sw_error_set(SW_EINVALID, "tar: %s: mode %o has bits above 07777", e->path, e->mode);
    switch (e->type) {
    case SW_TAR_REG:
        if (!e->src_path && !e->data && e->data_len)
            return sw_error_set(SW_EINVALID, "tar: %s: data length without data", e->path);
        return 0;
    case SW_TAR_DIR:
        return 0;
    case SW_TAR_SYMLINK:
    case SW_TAR_HARDLINK:
        if (!e->link || !*e->link)
            return sw_error_set(SW_EINVALID, "tar: %s: link entry without a target", e->path);
        if (strlen(e->link) > SW_TAR_MAX_PATH)
            return sw_error_set(SW_EINVALID, "tar: %s: link target is too long", e->path);
        return 0;
    }
    return sw_error_set(SW_EINVALID, "tar: %s: unknown entry type %d", e->path, (int)e->type);
}

int sw_tar_add(sw_tar *t, const sw_tar_entry *e)
{
    char path[SW_TAR_MAX_PATH + 1], link[SW_TAR_MAX_PATH + 1];
    int error = sw_tar_clean_path(e->path, path, sizeof(path));
    if (error < 0)
        return error;
    error = check_entry(e);
    if (error < 0)
        return error;
    if (e->type == SW_TAR_HARDLINK) {
        error = sw_tar_clean_path(e->link, link, sizeof(link));
        if (error < 0)
            return error;
    }
    if (t->n >= SW_TAR_MAX_ENTRIES)
        return sw_error_set(SW_ELIMIT, "tar: more than %d entries", SW_TAR_MAX_ENTRIES);
    if (t->n == t->cap) {
        t->cap = t->cap ? t->cap * 2 : 64;
        size_t bytes;
        if (!sw_size_mul(&bytes, t->cap, sizeof(tar_ent)))
            return sw_error_set(SW_ELIMIT, "tar: entry table too large");
        t->v = sw_realloc(t->v, bytes);
    }
    tar_ent *x = &t->v[t->n++];
    memset(x, 0, sizeof(*x));
    x->path = sw_strdup(path);
    x->type = e->type;
    x->mode = e->mode;
    x->uid = e->uid;
    x->gid = e->gid;
    if (e->type == SW_TAR_REG && e->src_path) {
        x->src = sw_strdup(e->src_path);
        x->range = e->src_range;
        x->off = e->src_offset;
        x->size = e->src_size;
    } else if (e->type == SW_TAR_REG && e->data_len) {
        x->data = sw_malloc(e->data_len);
        memcpy(x->data, e->data, e->data_len);
        x->data_len = e->data_len;
    }
    if (e->type == SW_TAR_SYMLINK)
        x->link = sw_strdup(e->link);
    else if (e->type == SW_TAR_HARDLINK)
        x->link = sw_strdup(link);
    return 0;
}

/* ---- output buffer ---- */

static int out_flush(tar_out *o)
{
    if (o->len == 0)
        return 0;
    int error = o->fn(o->payload, o->buf, o->len);
    o->len = 0;
    return error;
}

static int out_put(tar_out *o, const void *data, size_t n)
{
    const unsigned char *p = data;
    while (n) {
        if (o->len == OUT_BUF) {
            int error = out_flush(o);
            if (error < 0)
                return error;
        }
        size_t k = OUT_BUF - o->len;
        if (k > n)
            k = n;
        memcpy(o->buf + o->len, p, k);
        o->len += k;
        p += k;
        n -= k;
    }
    return 0;
}

static int out_pad(tar_out *o, uint64_t size)
{
    static const unsigned char zero[BLOCK];
    size_t rem = (size_t)(size % BLOCK);
    return rem ? out_put(o, zero, BLOCK - rem) : 0;
}

/* ---- headers ---- */

/* Writes v as width-1 zero-padded octal digits and a NUL. The caller checked the range. */
static void put_octal(unsigned char *field, size_t width, uint64_t v)
{
    field[width - 1] = '\0';
    for (size_t i = width - 1; i > 0; i--) {
        field[i - 1] = (unsigned char)('0' + (v & 7));
        v >>= 3;
    }
}

static void put_field(unsigned char *field, size_t width, const char *s)
{
    size_t n = strlen(s);
    memcpy(field, s, n < width ? n : width);
}

typedef struct hdr_info {
    const char *name; /* as stored: directories carry a trailing slash */
    const char *link; /* "" when none */
    char type;        /* '0' '1' '2' '5' 'x' */
    uint32_t mode, uid, gid;
    uint64_t size;
} hdr_info;

static int emit_header(tar_out *o, const hdr_info *h)
{
    unsigned char b[BLOCK];
    memset(b, 0, sizeof(b));
    put_field(b, USTAR_NAME, h->name);
    put_octal(b + 100, 8, h->mode);
    put_octal(b + 108, 8, h->uid > USTAR_MAX_ID ? 0 : h->uid);
    put_octal(b + 116, 8, h->gid > USTAR_MAX_ID ? 0 : h->gid);
    put_octal(b + 124, 12, h->size > USTAR_MAX_SIZE ? 0 : h->size);
    put_octal(b + 136, 12, (uint64_t)o->mtime);
    memset(b + 148, ' ', 8);
    b[156] = (unsigned char)h->type;
    put_field(b + 157, 100, h->link);
    memcpy(b + 257,
           "ustar\0"
           "00",
           8);
    put_octal(b + 329, 8, 0); /* devmajor */
    put_octal(b + 337, 8, 0); /* devminor */
    unsigned sum = 0;
    for (size_t i = 0; i < BLOCK; i++)
        sum += b[i];
    put_octal(b + 148, 7, sum); /* six digits and a NUL; the eighth byte stays a space */
    return out_put(o, b, sizeof(b));
}

static size_t ndigits(size_t v)
{
    size_t d = 1;
    while (v >= 10) {
        v /= 10;
        d++;
    }
    return d;
}

/* One "<len> key=value\n" record, len counting the whole record including its own digits. */
static void pax_record(sw_buf *b, const char *key, const char *value)
{
    size_t base = strlen(key) + strlen(value) + 3;
    size_t d = ndigits(base);
    if (ndigits(base + d) > d)
        d++;
    sw_buf_printf(b, "%zu %s=%s\n", base + d, key, value);
}

/* Builds the PAX records h needs, keys in byte order (gid, linkpath, path, size, uid). */
static void pax_records(sw_buf *b, const hdr_info *h)
{
    char num[32];
    if (h->gid > USTAR_MAX_ID) {
        snprintf(num, sizeof(num), "%u", h->gid);
        pax_record(b, "gid", num);
    }
    if (strlen(h->link) > 100)
        pax_record(b, "linkpath", h->link);
    if (strlen(h->name) > USTAR_NAME)
        pax_record(b, "path", h->name);
    if (h->size > USTAR_MAX_SIZE) {
        snprintf(num, sizeof(num), "%llu", (unsigned long long)h->size);
        pax_record(b, "size", num);
    }
    if (h->uid > USTAR_MAX_ID) {
        snprintf(num, sizeof(num), "%u", h->uid);
        pax_record(b, "uid", num);
    }
}

/* The name of the 'x' header itself: fixed, plus the last component cut to fit. */
static void pax_header_name(const char *name, char *out, size_t n)
{
    size_t len = strlen(name);
    while (len && name[len - 1] == '/')
        len--;
    size_t start = len;
    while (start && name[start - 1] != '/')
        start--;
    size_t base = len - start, room = USTAR_NAME - (sizeof(PAX_DIR) - 1);
    if (base > room)
        base = room;
    snprintf(out, n, "%s%.*s", PAX_DIR, (int)base, name + start);
}

/* Writes the header block(s) of one entry: a PAX 'x' header first when ustar cannot hold it. */
static int write_header(tar_out *o, const hdr_info *h)
{
    sw_buf rec = SW_BUF_INIT(PAX_MAX);
    int error = 0;
    pax_records(&rec, h);
    error = sw_buf_error(&rec);
    if (error < 0) {
        error = sw_error_set(error, "tar: %.200s: PAX records too large", h->name);
        goto done;
    }
    if (rec.len) {
        char xname[USTAR_NAME + 1];
        pax_header_name(h->name, xname, sizeof(xname));
        hdr_info x = {.name = xname, .link = "", .type = 'x', .mode = 0644, .size = rec.len};
        error = emit_header(o, &x);
        if (error < 0)
            goto done;
        error = out_put(o, rec.ptr, rec.len);
        if (error < 0)
            goto done;
        error = out_pad(o, rec.len);
        if (error < 0)
            goto done;
    }
    error = emit_header(o, h);
done:
    sw_buf_dispose(&rec);
    return error;
}

/* ---- contents ---- */

static int open_source(const char *src, int *fd_out, uint64_t *size_out)
{
    /* O_NONBLOCK: a FIFO swapped in since the walk must not hang the open (fstat refuses it) */
    int fd = open(src, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) {
        int code = (errno == ENOENT) ? SW_ENOTFOUND : (errno == ELOOP ? SW_EINVALID : SW_ERROR);
        return sw_error_set(code, "tar: cannot open %s: %s", src, sw_strerror(errno));
    }
    struct stat st;
    if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
        close(fd);
        return sw_error_set(SW_EINVALID, "tar: %s is not a regular file", src);
    }
    *fd_out = fd;
    *size_out = (uint64_t)st.st_size;
    return 0;
}

/* Narrows an opened source to from's range: the file must hold it; fd is positioned at it. */
static int open_range(const tar_ent *from, int fd, uint64_t *size)
{
    if (*size < from->off || *size - from->off < from->size)
        return sw_error_set(SW_ECONFLICT, "tar: %s ends before the range of %s", from->src,
                            from->path);
    if (lseek(fd, (off_t)from->off, SEEK_SET) < 0)
        return sw_error_set(SW_ERROR, "tar: seeking in %s: %s", from->src, sw_strerror(errno));
    *size = from->size;
    return 0;
}

/* Streams size bytes of fd into the output buffer, reading in place. A whole file (ranged:
 * false) must not change size meanwhile. */
static int copy_file(tar_out *o, int fd, const char *src, uint64_t size, bool ranged)
{
    uint64_t left = size;
    while (left) {
        if (o->len == OUT_BUF) {
            int error = out_flush(o);
            if (error < 0)
                return error;
        }
        size_t want = OUT_BUF - o->len;
        if (want > left)
            want = (size_t)left;
        ssize_t got = read(fd, o->buf + o->len, want);
        if (got < 0 && errno == EINTR)
            continue;
        if (got < 0)
            return sw_error_set(SW_ERROR, "tar: reading %s: %s", src, sw_strerror(errno));
        if (got == 0)
            return sw_error_set(SW_ECONFLICT, "tar: %s shrank while it was read", src);
        o->len += (size_t)got;
        left -= (uint64_t)got;
    }
    struct stat st;
    if (!ranged && fstat(fd, &st) == 0 && (uint64_t)st.st_size != size)
        return sw_error_set(SW_ECONFLICT, "tar: %s changed size while it was read", src);
    return 0;
}

/* ---- writing ---- */

static int cmp_ent(const void *a, const void *b)
{
    return strcmp(((const tar_ent *)a)->path, ((const tar_ent *)b)->path);
}

static tar_ent *find_ent(sw_tar *t, const char *path)
{
    tar_ent key = {.path = (char *)path};
    return bsearch(&key, t->v, t->n, sizeof(tar_ent), cmp_ent);
}

/* Sorts, rejects duplicates and fills leader[]: for each regular entry that hard links
 * point at, the index of the first member of its link group in path order. */
static int prepare(sw_tar *t, size_t *leader)
{
    if (t->n == 0)
        return 0;
    qsort(t->v, t->n, sizeof(tar_ent), cmp_ent);
    for (size_t i = 0; i < t->n; i++) {
        leader[i] = i;
        if (i && strcmp(t->v[i - 1].path, t->v[i].path) == 0)
            return sw_error_set(SW_EINVALID, "tar: duplicate path %.200s", t->v[i].path);
    }
    for (size_t i = 0; i < t->n; i++) {
        if (t->v[i].type != SW_TAR_HARDLINK)
            continue;
        tar_ent *target = find_ent(t, t->v[i].link);
        if (!target || target->type != SW_TAR_REG)
            return sw_error_set(SW_EINVALID,
                                "tar: hard link %.200s: target %.200s is not a regular entry",
                                t->v[i].path, t->v[i].link);
        size_t ti = (size_t)(target - t->v);
        if (i < leader[ti])
            leader[ti] = i;
    }
    return 0;
}

/* Writes one regular file's header and contents, taking the contents from `from`. */
static int write_regular(tar_out *o, const char *name, const tar_ent *from)
{
    hdr_info h = {.name = name,
                  .link = "",
                  .type = '0',
                  .mode = from->mode,
                  .uid = from->uid,
                  .gid = from->gid};
    int fd = -1, error = 0;
    if (from->src) {
        error = open_source(from->src, &fd, &h.size);
        if (error == 0 && from->range)
            error = open_range(from, fd, &h.size);
        if (error < 0)
            goto done;
    } else {
        h.size = from->data_len;
    }
    error = write_header(o, &h);
    if (error < 0)
        goto done;
    if (fd >= 0)
        error = copy_file(o, fd, from->src, h.size, from->range);
    else
        error = out_put(o, from->data, from->data_len);
    if (error < 0)
        goto done;
    error = out_pad(o, h.size);
done:
    if (fd >= 0)
        close(fd);
    return error;
}

static int write_entry(sw_tar *t, tar_out *o, size_t i, const size_t *leader)
{
    const tar_ent *e = &t->v[i];
    if (e->type == SW_TAR_DIR) {
        size_t n = strlen(e->path);
        char *name = sw_malloc(n + 2);
        memcpy(name, e->path, n);
        memcpy(name + n, "/", 2);
        hdr_info h = {
            .name = name, .link = "", .type = '5', .mode = e->mode, .uid = e->uid, .gid = e->gid};
        int error = write_header(o, &h);
        sw_free(name);
        return error;
    }
    if (e->type == SW_TAR_SYMLINK) {
        hdr_info h = {.name = e->path,
                      .link = e->link,
                      .type = '2',
                      .mode = e->mode,
                      .uid = e->uid,
                      .gid = e->gid};
        return write_header(o, &h);
    }
    /* Regular entries and hard links: the group's data lives in the regular entry `target`
     * and is written at the group's first member in path order. */
    size_t ti = (e->type == SW_TAR_REG) ? i : (size_t)(find_ent(t, e->link) - t->v);
    const tar_ent *target = &t->v[ti];
    if (leader[ti] == i)
        return write_regular(o, e->path, target);
    hdr_info h = {.name = e->path,
                  .link = t->v[leader[ti]].path,
                  .type = '1',
                  .mode = target->mode,
                  .uid = target->uid,
                  .gid = target->gid};
    return write_header(o, &h);
}

static const unsigned char end_blocks[2 * BLOCK]; /* the end-of-archive marker */

int sw_tar_write(sw_tar *t, int64_t mtime, sw_tar_write_fn write, void *payload)
{
    size_t *leader = NULL;
    tar_out o = {.fn = write, .payload = payload, .mtime = mtime};
    int error = 0;
    if (mtime < 0 || mtime > SW_TAR_MAX_MTIME)
        return sw_error_set(SW_EINVALID, "tar: mtime %lld is out of range", (long long)mtime);
    leader = sw_calloc(t->n ? t->n : 1, sizeof(size_t));
    o.buf = sw_malloc(OUT_BUF);
    error = prepare(t, leader);
    if (error < 0)
        goto done;
    for (size_t i = 0; i < t->n; i++) {
        error = write_entry(t, &o, i, leader);
        if (error < 0)
            goto done;
    }
    error = out_put(&o, end_blocks, sizeof(end_blocks));
    if (error < 0)
        goto done;
    error = out_flush(&o);
done:
    sw_free(o.buf);
    sw_free(leader);
    return error;
}
