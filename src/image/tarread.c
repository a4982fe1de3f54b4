/* tarread: libarchive reads the archive one header at a time; each entry is checked and
 * translated into an sw_tar_entry (paths cleaned and put under the prefix, hard link targets
 * too, symlink targets kept verbatim since they are never followed here), and regular
 * contents are streamed into a numbered spool file or an in-memory copy, within the caps.
 * Only the tar formats and the gzip, bzip2, xz and zstd filters are enabled. Design note:
 * docs/internals/image.md. */
#include "image/tarread.h"

#include "util/alloc.h"
#include "util/buf.h"
#include "util/error.h"

#include <archive.h>
#include <archive_entry.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define READ_CHUNK (64 * 1024)
#define PLACE_CHECK 4096 /* leading bytes of an entry compared with the archive file */

typedef struct reader {
    sw_tar *t;
    const sw_tarread_opts *o;
    sw_tarread_stats st;
    char prefix[SW_TAR_MAX_PATH + 1]; /* cleaned, "" for the root */
    uint64_t max_bytes;
    size_t max_entries;
    size_t spool_seq;
    int spool_fd;       /* opts.spool_file, appended to; -1 when not used */
    uint64_t spool_off; /* its size so far */
    int archive_fd;     /* opts.in_place: the archive file, for checking ranges; else -1 */
    const char *archive_path;
    uint64_t archive_size;
    unsigned char *buf;
    unsigned char *check; /* PLACE_CHECK bytes read back from the archive file */
} reader;

/* True for "/", ".", "./", ".//." ...: the archive's own root, which is skipped. */
static bool is_root(const char *p)
{
    for (;;) {
        while (*p == '/')
            p++;
        if (!*p)
            return true;
        if (p[0] != '.' || (p[1] != '/' && p[1] != '\0'))
            return false;
        p++;
    }
}

/* prefix + "/" + the cleaned archive path, into out. */
static int layer_path(const reader *r, const char *p, char *out, size_t n)
{
    char clean[SW_TAR_MAX_PATH + 1];
    int error = sw_tar_clean_path(p, clean, sizeof(clean));
    if (error < 0)
        return sw_error_set(SW_EINVALID,
                            "archive entry \"%.200s\" has an unsafe or invalid "
                            "path",
                            p);
    int k = snprintf(out, n, "%s%s%s", r->prefix, *r->prefix ? "/" : "", clean);
    if (k < 0 || (size_t)k >= n)
        return sw_error_set(SW_EINVALID, "archive entry \"%.200s\": path too long", p);
    return 0;
}

static int arch_error(struct archive *a, int code, const char *what)
{
    const char *msg = archive_error_string(a);
    return sw_error_set(code, "archive: %s: %s", what, msg ? msg : "unknown error");
}

static int take_bytes(reader *r, size_t n)
{
    if (r->st.bytes + n > r->max_bytes)
        return sw_error_set(SW_ELIMIT, "archive contents exceed %llu bytes",
                            (unsigned long long)r->max_bytes);
    r->st.bytes += n;
    return 0;
}

/* Writes n bytes of p to fd (path names it in messages). */
static int write_all(int fd, const void *p, size_t n, const char *path)
{
    for (size_t off = 0; off < n;) {
        ssize_t w = write(fd, (const char *)p + off, n - off);
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0)
            return sw_error_set(SW_ERROR, "archive: writing %s: %s", path, sw_strerror(errno));
        off += (size_t)w;
    }
    return 0;
}

/* Streams the current entry's contents to fd (path names it in messages); *written counts. */
static int spool_to(reader *r, struct archive *a, int fd, const char *path, uint64_t *written)
{
    int error = 0;
    *written = 0;
    for (;;) {
        la_ssize_t got = archive_read_data(a, r->buf, READ_CHUNK);
        if (got < 0) {
            error = arch_error(a, SW_EINVALID, "reading contents");
            break;
        }
        if (got == 0)
            break;
        error = take_bytes(r, (size_t)got);
        if (error == 0)
            error = write_all(fd, r->buf, (size_t)got, path);
        if (error < 0)
            break;
        *written += (uint64_t)got;
    }
    return error;
}

/* Streams the current entry's contents into a new spool file; its name goes to path. */
static int spool(reader *r, struct archive *a, char *path, size_t n)
{
    uint64_t written = 0;
    int k = snprintf(path, n, "%s/spool-%zu", r->o->spool_dir, r->spool_seq++);
    if (k < 0 || (size_t)k >= n)
        return sw_error_set(SW_EINVALID, "archive: spool directory name too long");
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd < 0)
        return sw_error_set(SW_ERROR, "archive: cannot create %s: %s", path, sw_strerror(errno));
    int error = spool_to(r, a, fd, path, &written);
    if (close(fd) < 0 && error == 0)
        error = sw_error_set(SW_ERROR, "archive: closing %s: %s", path, sw_strerror(errno));
    return error;
}

/* Appends the current entry's contents to the spool file, after head[0..head_len) (bytes of it
 * already read and counted); e names its range there. */
static int spool_append(reader *r, struct archive *a, sw_tar_entry *e, const void *head,
                        size_t head_len)
{
    uint64_t written = 0;
    int error = write_all(r->spool_fd, head, head_len, r->o->spool_file);
    if (error == 0)
        error = spool_to(r, a, r->spool_fd, r->o->spool_file, &written);
    e->src_path = r->o->spool_file;
    e->src_range = true;
    e->src_offset = r->spool_off;
    e->src_size = head_len + written;
    r->spool_off += head_len + written;
    return error;
}

/* Whether the current entry's contents lie as they are in the archive file at pos: an
 * uncompressed archive, a contiguous (not sparse) entry that fits, and its first bytes (read
 * through libarchive into r->buf, *head_len of them) equal to the file's at pos. */
static bool in_file(reader *r, struct archive *a, struct archive_entry *ae, la_int64_t *pos,
                    size_t *head_len, int *error)
{
    la_int64_t size = archive_entry_size(ae);
    *pos = archive_filter_bytes(a, 0);
    *head_len = 0;
    if (archive_filter_count(a) != 1 || archive_filter_code(a, 0) != ARCHIVE_FILTER_NONE ||
        archive_entry_sparse_count(ae) > 0 || size < 0 || *pos < 0 ||
        (uint64_t)*pos + (uint64_t)size > r->archive_size)
        return false;
    size_t want = size < PLACE_CHECK ? (size_t)size : PLACE_CHECK;
    while (*head_len < want) {
        la_ssize_t got = archive_read_data(a, r->buf + *head_len, want - *head_len);
        if (got <= 0) {
            if (got < 0)
                *error = arch_error(a, SW_EINVALID, "reading contents");
            return false;
        }
        *head_len += (size_t)got;
    }
    ssize_t back = pread(r->archive_fd, r->check, want, (off_t)*pos);
    return back == (ssize_t)want && memcmp(r->buf, r->check, want) == 0;
}

/* opts.in_place: names the entry's bytes where they are in the archive file instead of
 * copying them; falls back to the spool file when in_file says no. */
static int place(reader *r, struct archive *a, struct archive_entry *ae, sw_tar_entry *e)
{
    la_int64_t pos = 0;
    size_t head_len = 0;
    int error = 0;
    bool ok = in_file(r, a, ae, &pos, &head_len, &error);
    if (error == 0)
        error = take_bytes(r, head_len);
    if (error < 0)
        return error;
    if (!ok)
        return spool_append(r, a, e, r->buf, head_len);
    uint64_t size = (uint64_t)archive_entry_size(ae);
    error = take_bytes(r, size - head_len);
    if (error == 0 && archive_read_data_skip(a) != ARCHIVE_OK)
        error = arch_error(a, SW_EINVALID, "skipping contents");
    e->src_path = r->archive_path;
    e->src_range = true;
    e->src_offset = (uint64_t)pos;
    e->src_size = size;
    return error;
}

/* Reads the current entry's contents into memory. */
static int slurp(reader *r, struct archive *a, sw_buf *b)
{
    for (;;) {
        la_ssize_t got = archive_read_data(a, r->buf, READ_CHUNK);
        if (got < 0)
            return arch_error(a, SW_EINVALID, "reading contents");
        if (got == 0)
            return 0;
        int error = take_bytes(r, (size_t)got);
        if (error < 0)
            return error;
        sw_buf_put(b, r->buf, (size_t)got);
    }
}

static int entry_ids(const reader *r, struct archive_entry *ae, sw_tar_entry *e)
{
    if (r->o->chown) {
        e->uid = r->o->uid;
        e->gid = r->o->gid;
        return 0;
    }
    la_int64_t uid = archive_entry_uid(ae), gid = archive_entry_gid(ae);
    if (uid < 0 || gid < 0 || uid > UINT32_MAX || gid > UINT32_MAX)
        return sw_error_set(SW_EINVALID, "archive entry \"%.200s\": uid/gid out of range", e->path);
    e->uid = (uint32_t)uid;
    e->gid = (uint32_t)gid;
    return 0;
}

/* Fills e's type and link from the header; *skip for types layers do not carry here. */
static int entry_kind(const reader *r, struct archive_entry *ae, sw_tar_entry *e, char *link,
                      bool *skip)
{
    const char *hl = archive_entry_hardlink(ae);
    *skip = false;
    if (hl) {
        e->type = SW_TAR_HARDLINK;
        e->link = link;
        return layer_path(r, hl, link, SW_TAR_MAX_PATH + 1);
    }
    switch (archive_entry_filetype(ae)) {
    case AE_IFREG:
        e->type = SW_TAR_REG;
        return 0;
    case AE_IFDIR:
        e->type = SW_TAR_DIR;
        return 0;
    case AE_IFLNK: {
        const char *target = archive_entry_symlink(ae);
        if (!target || !*target || strlen(target) > SW_TAR_MAX_PATH)
            return sw_error_set(SW_EINVALID, "archive entry \"%.200s\": bad symlink target",
                                e->path);
        e->type = SW_TAR_SYMLINK;
        e->link = target;
        return 0;
    }
    default:
        *skip = true;
        return 0;
    }
}

static int add_entry(reader *r, struct archive *a, struct archive_entry *ae, const char *name)
{
    char path[SW_TAR_MAX_PATH + 1], link[SW_TAR_MAX_PATH + 1], spath[PATH_MAX];
    sw_buf data = SW_BUF_INIT(SIZE_MAX);
    bool skip = false;
    sw_tar_entry e = {.path = path, .mode = (uint32_t)(archive_entry_perm(ae) & 07777)};
    int error = layer_path(r, name, path, sizeof(path));
    if (error == 0)
        error = entry_kind(r, ae, &e, link, &skip);
    if (error == 0)
        error = entry_ids(r, ae, &e);
    if (error < 0 || skip) {
        r->st.skipped += skip;
        goto done;
    }
    if (e.type == SW_TAR_REG && r->archive_fd >= 0) {
        error = place(r, a, ae, &e);
    } else if (e.type == SW_TAR_REG && r->spool_fd >= 0) {
        error = spool_append(r, a, &e, NULL, 0);
    } else if (e.type == SW_TAR_REG && r->o->spool_dir) {
        error = spool(r, a, spath, sizeof(spath));
        e.src_path = spath;
    } else if (e.type == SW_TAR_REG) {
        error = slurp(r, a, &data);
        e.data = data.ptr;
        e.data_len = data.len;
    }
    if (error == 0)
        error = r->o->on_entry ? r->o->on_entry(r->o->payload, &e) : sw_tar_add(r->t, &e);
    if (error == 0)
        r->st.entries++;
done:
    sw_buf_dispose(&data);
    return error;
}

static const char *entry_name(struct archive_entry *ae)
{
    const char *p = archive_entry_pathname(ae);
    return p ? p : archive_entry_pathname_utf8(ae);
}

static int read_all(reader *r, struct archive *a)
{
    struct archive_entry *ae;
    for (bool first = true;; first = false) {
        int rc = archive_read_next_header(a, &ae);
        if (rc == ARCHIVE_EOF)
            return 0;
        if (rc < ARCHIVE_WARN)
            return arch_error(a, first ? SW_EUNSUPPORTED : SW_EINVALID,
                              first ? "not a tar archive" : "malformed archive");
        /* every header counts, the skipped ones too: a stream of FIFO headers is no cheaper */
        if (r->st.headers >= r->max_entries)
            return sw_error_set(SW_ELIMIT, "archive has more than %zu entries", r->max_entries);
        r->st.headers++;
        const char *name = entry_name(ae);
        if (!name)
            return sw_error_set(SW_EINVALID, "archive: an entry has no usable name");
        if (is_root(name))
            continue;
        int error = add_entry(r, a, ae, name);
        if (error < 0)
            return error;
    }
}

static int setup(reader *r, sw_tar *t, const sw_tarread_opts *o, struct archive **out)
{
    memset(r, 0, sizeof(*r));
    *out = NULL;
    if (o->version != SW_TARREAD_OPTS_VERSION)
        return sw_error_set(SW_EINVALID, "tarread: options version %u is not %d", o->version,
                            SW_TARREAD_OPTS_VERSION);
    r->t = t;
    r->o = o;
    r->spool_fd = -1;
    r->archive_fd = -1;
    r->max_bytes = o->max_bytes ? o->max_bytes : SW_TARREAD_MAX_BYTES;
    r->max_entries = o->max_entries ? o->max_entries : SW_TAR_MAX_ENTRIES;
    if (o->prefix && *o->prefix && !is_root(o->prefix)) {
        int error = sw_tar_clean_path(o->prefix, r->prefix, sizeof(r->prefix));
        if (error < 0)
            return error;
    }
    if (o->spool_file && !o->spool_dir) {
        struct stat st;
        r->spool_fd = open(o->spool_file, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
        if (r->spool_fd < 0 || fstat(r->spool_fd, &st) < 0) {
            int error = sw_error_set(SW_ERROR, "archive: cannot open %s: %s", o->spool_file,
                                     sw_strerror(errno));
            if (r->spool_fd >= 0)
                close(r->spool_fd);
            r->spool_fd = -1;
            return error;
        }
        r->spool_off = (uint64_t)st.st_size;
    }
    struct archive *a = archive_read_new();
    if (!a)
        return sw_error_set(SW_ERROR, "archive: cannot allocate a reader");
    archive_read_support_format_tar(a);
    archive_read_support_filter_gzip(a);
    archive_read_support_filter_bzip2(a);
    archive_read_support_filter_xz(a);
    archive_read_support_filter_zstd(a);
    r->buf = sw_malloc(READ_CHUNK);
    *out = a;
    return 0;
}

static int run(reader *r, struct archive *a, int open_rc, sw_tarread_stats *stats)
{
    int error =
        open_rc == ARCHIVE_OK ? read_all(r, a) : arch_error(a, SW_EUNSUPPORTED, "cannot open");
    if (stats)
        *stats = r->st;
    archive_read_free(a);
    sw_free(r->buf);
    sw_free(r->check);
    if (r->spool_fd >= 0 && close(r->spool_fd) < 0 && error == 0)
        error =
            sw_error_set(SW_ERROR, "archive: closing %s: %s", r->o->spool_file, sw_strerror(errno));
    return error;
}

int sw_tarread_add_file(sw_tar *t, const char *path, const sw_tarread_opts *opts,
                        sw_tarread_stats *stats)
{
    reader r;
    struct archive *a = NULL;
    int error = setup(&r, t, opts, &a);
    if (error < 0)
        return error;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        error = sw_error_set(errno == ENOENT ? SW_ENOTFOUND : SW_ERROR,
                             "archive: cannot open %s: %s", path, sw_strerror(errno));
        archive_read_free(a);
        sw_free(r.buf);
        if (r.spool_fd >= 0)
            close(r.spool_fd);
        return error;
    }
    struct stat st;
    if (opts->in_place && r.spool_fd >= 0 && fstat(fd, &st) == 0 && S_ISREG(st.st_mode)) {
        r.archive_fd = fd;
        r.archive_path = path;
        r.archive_size = (uint64_t)st.st_size;
        r.check = sw_malloc(PLACE_CHECK);
    }
    error = run(&r, a, archive_read_open_fd(a, fd, READ_CHUNK), stats);
    close(fd);
    return error;
}

int sw_tarread_add_mem(sw_tar *t, const void *data, size_t len, const sw_tarread_opts *opts,
                       sw_tarread_stats *stats)
{
    reader r;
    struct archive *a = NULL;
    int error = setup(&r, t, opts, &a);
    if (error < 0)
        return error;
    return run(&r, a, archive_read_open_memory(a, data, len), stats);
}
