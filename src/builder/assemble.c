/* assemble: Dockerfile instructions -> image config changes and one layer per COPY/ADD.
 * A layer is first a list of entries (path, type, mode, owner, contents); later entries of one
 * instruction replace earlier ones of the same path, as a copy would on disk; the list is then
 * sorted, checked (no file where the layer also puts a directory's children) and handed to an
 * sw_tar. Which directories exist is tracked across layers: with FROM scratch everything is
 * known, so parents are recorded; on a base image they are left to the unpacker, so that an
 * existing /tmp keeps its mode. Design: docs/builds.md ("The builder"). */
#include "builder/assemble.h"

#include "image/tarread.h"
#include "util/alloc.h"
#include "util/buf.h"
#include "util/error.h"
#include "util/path.h"
#include "util/json.h"
#include "util/str.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define PATH_BUF (SW_TAR_MAX_PATH + 2)
#define MSG_MAX 1024

typedef struct lentry {
    char *path; /* cleaned layer path */
    sw_tar_type type;
    uint32_t mode, uid, gid;
    char *src;  /* SW_TAR_REG: file to read at write time */
    bool range; /* src holds the contents at off (size bytes), among others */
    uint64_t off, size;
    char *link; /* symlink target or hard link's layer path */
    size_t seq; /* insertion order: the later of two equal paths wins */
} lentry;

typedef struct layer {
    lentry *v;
    size_t n, cap, seq;
} layer;

struct sw_assembly {
    sw_assemble_step *steps;
    size_t n, cap, layers;
};

/* How one COPY/ADD writes its entries. */
typedef struct copy_spec {
    bool add;
    bool chown, chmod;
    uint32_t uid, gid, mode;
} copy_spec;

typedef struct asm_ctx {
    const sw_source *ctx;
    const sw_assemble_opts *o;
    sw_oci_image *img;
    sw_assembly *a;
    json_t *known;          /* directories that exist in the image so far (a set) */
    char workdir[PATH_BUF]; /* absolute, cleaned: "/" or "/app" */
    layer pending;          /* directories WORKDIR created, for the next COPY/ADD layer */
    size_t last_copy;       /* index of the last COPY/ADD instruction (0: none) */
    bool cmd_set;           /* CMD given in this Dockerfile (ENTRYPOINT keeps it) */
    size_t spool_seq;
    /* what ADD may still unpack, for all archives together (sw_assemble_opts) */
    size_t unpack_entries;
    uint64_t unpack_bytes, unpack_path_bytes;
} asm_ctx;

/* Where a regular entry's contents are. */
typedef struct lsrc {
    const char *file;
    bool range;
    uint64_t off, size;
} lsrc;

/* ---- entries ---- */

static void layer_add(layer *l, const char *path, sw_tar_type type, uint32_t mode, uint32_t uid,
                      uint32_t gid, const lsrc *src, const char *link)
{
    if (l->n == l->cap) {
        l->cap = l->cap ? l->cap * 2 : 16;
        l->v = sw_realloc(l->v, l->cap * sizeof(*l->v));
    }
    lentry *e = &l->v[l->n++];
    *e = (lentry){.path = sw_strdup(path),
                  .type = type,
                  .mode = mode & 07777,
                  .uid = uid,
                  .gid = gid,
                  .link = link ? sw_strdup(link) : NULL,
                  .seq = l->seq++};
    if (src) {
        e->src = sw_strdup(src->file);
        e->range = src->range;
        e->off = src->off;
        e->size = src->size;
    }
}

static lsrc node_src(const sw_src_node *n)
{
    lsrc s = {.file = sw_src_node_file(n)};
    s.range = sw_src_node_range(n, &s.off, &s.size);
    return s;
}

static void layer_dispose(layer *l)
{
    for (size_t i = 0; i < l->n; i++) {
        sw_free(l->v[i].path);
        sw_free(l->v[i].src);
        sw_free(l->v[i].link);
    }
    sw_free(l->v);
    memset(l, 0, sizeof(*l));
}

/* Moves every entry of from to the end of to (keeping their order). */
static void layer_take(layer *to, layer *from)
{
    for (size_t i = 0; i < from->n; i++) {
        if (to->n == to->cap) {
            to->cap = to->cap ? to->cap * 2 : 16;
            to->v = sw_realloc(to->v, to->cap * sizeof(*to->v));
        }
        to->v[to->n] = from->v[i];
        to->v[to->n++].seq = to->seq++;
    }
    sw_free(from->v);
    memset(from, 0, sizeof(*from));
}

static int entry_cmp(const void *a, const void *b)
{
    const lentry *x = a, *y = b;
    int c = strcmp(x->path, y->path);
    return c ? c : (x->seq < y->seq ? -1 : x->seq > y->seq);
}

/* a/b + c -> a/b/c ("" is the root). */
static int join(const char *dir, const char *name, char *out, size_t n)
{
    int k = snprintf(out, n, "%s%s%s", dir, *dir ? "/" : "", name);
    if (k < 0 || (size_t)k >= n)
        return sw_error_set(SW_ELIMIT, "path \"%.200s/%.200s\" is too long", dir, name);
    return 0;
}

/* ---- known directories ---- */

static bool known(const asm_ctx *c, const char *path)
{
    return !*path || json_object_get(c->known, path) != NULL;
}

static void mark_known(asm_ctx *c, const char *path)
{
    if (*path)
        json_object_set_new_nocheck(c->known, path, json_true());
}

/* Marks path's ancestors (and path itself when dir) as existing. */
static void mark_with_parents(asm_ctx *c, const char *path, bool dir)
{
    char buf[PATH_BUF];
    sw_strlcpy(buf, path, sizeof(buf));
    if (dir)
        mark_known(c, buf);
    for (char *slash; (slash = strrchr(buf, '/')) != NULL;) {
        *slash = '\0';
        mark_known(c, buf);
    }
}

/* FROM scratch: every ancestor of the layer's entries that neither exists nor is in the layer
 * becomes a 0755 root directory entry. */
static void add_parents(asm_ctx *c, layer *l)
{
    json_t *in_layer = json_object();
    size_t n = l->n;
    for (size_t i = 0; i < n; i++)
        json_object_set_new_nocheck(in_layer, l->v[i].path, json_true());
    for (size_t i = 0; i < n; i++) {
        char buf[PATH_BUF];
        sw_strlcpy(buf, l->v[i].path, sizeof(buf));
        for (char *slash; (slash = strrchr(buf, '/')) != NULL;) {
            *slash = '\0';
            if (known(c, buf) || json_object_get(in_layer, buf))
                continue;
            json_object_set_new_nocheck(in_layer, buf, json_true());
            layer_add(l, buf, SW_TAR_DIR, 0755, 0, 0, NULL, NULL);
        }
    }
    json_decref(in_layer);
}

/* Sorts, keeps the last entry of each path, and refuses a non-directory with entries below. */
static int layer_settle(layer *l)
{
    if (l->n > 1)
        qsort(l->v, l->n, sizeof(*l->v), entry_cmp);
    size_t w = 0;
    for (size_t i = 0; i < l->n; i++) {
        if (i + 1 < l->n && !strcmp(l->v[i].path, l->v[i + 1].path)) {
            sw_free(l->v[i].path);
            sw_free(l->v[i].src);
            sw_free(l->v[i].link);
            continue;
        }
        l->v[w++] = l->v[i];
    }
    l->n = w;
    for (size_t i = 0; i < l->n; i++) {
        if (l->v[i].type == SW_TAR_DIR)
            continue;
        size_t len = strlen(l->v[i].path);
        /* entries below path sort after "path/" ('/' is above '-' and '.'): binary search */
        size_t lo = i + 1, hi = l->n;
        while (lo < hi) {
            size_t mid = lo + (hi - lo) / 2;
            int cmp = strncmp(l->v[mid].path, l->v[i].path, len);
            if (cmp < 0 || (cmp == 0 && (unsigned char)l->v[mid].path[len] < '/'))
                lo = mid + 1;
            else
                hi = mid;
        }
        if (lo < l->n && !strncmp(l->v[lo].path, l->v[i].path, len) && l->v[lo].path[len] == '/')
            return sw_error_set(SW_EINVALID,
                                "\"/%.200s\" would be a file and also hold \"/%.200s\"",
                                l->v[i].path, l->v[lo].path);
    }
    return 0;
}

/* ---- steps ---- */

static sw_assemble_step *step_new(sw_assembly *a, int line, sw_buf *created_by)
{
    if (a->n == a->cap) {
        a->cap = a->cap ? a->cap * 2 : 16;
        a->steps = sw_realloc(a->steps, a->cap * sizeof(*a->steps));
    }
    sw_assemble_step *s = &a->steps[a->n++];
    memset(s, 0, sizeof(*s));
    s->line = line;
    s->created_by = sw_buf_detach(created_by, NULL);
    return s;
}

/* Turns l into the tar of a new step (l is emptied). */
static int layer_step(asm_ctx *c, layer *l, int line, sw_buf *created_by)
{
    sw_tar *t = NULL;
    int error = 0;
    if (c->o->scratch)
        add_parents(c, l);
    if ((error = layer_settle(l)) < 0)
        goto done;
    sw_tar_new(&t);
    for (size_t i = 0; i < l->n && error == 0; i++) {
        const lentry *e = &l->v[i];
        sw_tar_entry te = {.path = e->path,
                           .type = e->type,
                           .mode = e->mode,
                           .uid = e->uid,
                           .gid = e->gid,
                           .src_path = e->src,
                           .link = e->link,
                           .src_range = e->range,
                           .src_offset = e->off,
                           .src_size = e->size};
        error = sw_tar_add(t, &te);
    }
    if (error < 0)
        goto done;
    for (size_t i = 0; i < l->n; i++)
        mark_with_parents(c, l->v[i].path, l->v[i].type == SW_TAR_DIR);
    sw_assemble_step *s = step_new(c->a, line, created_by);
    s->tar = t;
    s->entries = l->n;
    c->a->layers++;
    t = NULL;
done:
    sw_tar_free(t);
    layer_dispose(l);
    return error;
}

/* ---- history text ---- */

static void words(sw_buf *b, char *const *v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        sw_buf_printf(b, " %s", v[i]);
}

static void json_words(sw_buf *b, char *const *v, size_t n)
{
    json_t *arr = json_array();
    for (size_t i = 0; i < n; i++)
        json_array_append_new(arr, json_string(v[i]));
    sw_buf_putc(b, ' ');
    sw_json_dump_buf(arr, b);
    json_decref(arr);
}

static void pairs(sw_buf *b, const sw_df_instr *in)
{
    for (size_t i = 0; i < in->npairs; i++)
        sw_buf_printf(b, " %s=%s", in->keys[i], in->values[i] ? in->values[i] : "");
}

/* The history text of an instruction (ARG names only: build arg values stay out of images). */
static void created_by(sw_buf *b, const sw_df_instr *in)
{
    sw_buf_puts(b, sw_df_op_name(in->op));
    switch (in->op) {
    case SW_DF_COPY:
    case SW_DF_ADD:
        if (in->chown)
            sw_buf_printf(b, " --chown=%s", in->chown);
        if (in->chmod)
            sw_buf_printf(b, " --chmod=%s", in->chmod);
        words(b, in->args, in->nargs);
        break;
    case SW_DF_ENV:
    case SW_DF_LABEL:
        pairs(b, in);
        break;
    case SW_DF_ARG:
        for (size_t i = 0; i < in->npairs; i++)
            sw_buf_printf(b, " %s", in->keys[i]);
        break;
    case SW_DF_VOLUME:
    case SW_DF_ENTRYPOINT:
    case SW_DF_CMD:
        json_words(b, in->args, in->nargs);
        break;
    default:
        words(b, in->args, in->nargs);
        break;
    }
}

/* ---- COPY / ADD ---- */

int sw_assemble_parse_chown(const char *s, uint32_t *uid, uint32_t *gid)
{
    const char *colon = strchr(s, ':');
    char part[2][128];
    size_t ulen = colon ? (size_t)(colon - s) : strlen(s);
    if (ulen == 0 || ulen >= sizeof(part[0]) || (colon && (!colon[1] || strlen(colon + 1) >= 128)))
        return sw_error_set(SW_EINVALID, "--chown=%.100s: want UID[:GID]", s);
    memcpy(part[0], s, ulen);
    part[0][ulen] = '\0';
    sw_strlcpy(part[1], colon ? colon + 1 : part[0], sizeof(part[1]));
    uint32_t ids[2];
    for (int i = 0; i < 2; i++) {
        uint64_t v = 0;
        const char *p = part[i];
        if (!strcmp(p, "root")) {
            ids[i] = 0;
            continue;
        }
        if (sw_parse_u64(&p, 0xFFFFFFFEu, &v) < 0 || *p)
            return sw_error_set(SW_EINVALID,
                                "--chown=%.100s: \"%.100s\" is a name; names need the base image's "
                                "/etc/passwd and /etc/group, which slipway does not read: use "
                                "numeric ids (--chown=1000:1000)",
                                s, part[i]);
        ids[i] = (uint32_t)v;
    }
    *uid = ids[0];
    *gid = ids[1];
    return 0;
}

static int parse_spec(const sw_df_instr *in, copy_spec *cs)
{
    memset(cs, 0, sizeof(*cs));
    cs->add = in->op == SW_DF_ADD;
    if (in->chown) {
        int error = sw_assemble_parse_chown(in->chown, &cs->uid, &cs->gid);
        if (error < 0)
            return error;
        cs->chown = true;
    }
    if (in->chmod) {
        uint32_t m = 0;
        for (const char *p = in->chmod; *p; p++) {
            if (*p < '0' || *p > '7' || m > 0777)
                return sw_error_set(SW_EINVALID, "--chmod=%.32s: want octal digits up to 7777",
                                    in->chmod);
            m = m * 8 + (uint32_t)(*p - '0');
        }
        cs->chmod = true;
        cs->mode = m;
    }
    return 0;
}

/* The destination as a cleaned layer path ("" is the root), resolved against the WORKDIR;
 * *dir_syntax when it is written as a directory (trailing '/', ".", ".."). */
static int dest_path(const asm_ctx *c, const char *dest, char *out, size_t n, bool *dir_syntax)
{
    char abs[PATH_BUF * 2];
    size_t dl = strlen(dest);
    if (dl == 0)
        return sw_error_set(SW_EINVALID, "empty destination");
    *dir_syntax = dest[dl - 1] == '/' || !strcmp(dest, ".") || !strcmp(dest, "..") ||
                  sw_str_suffix(dest, "/.") || sw_str_suffix(dest, "/..");
    int k = snprintf(abs, sizeof(abs), "%s/%s", dest[0] == '/' ? "" : c->workdir, dest);
    if (k < 0 || (size_t)k >= sizeof(abs))
        return sw_error_set(SW_ELIMIT, "destination \"%.200s\" is too long", dest);
    if (sw_path_clean(abs, true, out, n) < 0)
        return sw_error_set(SW_ELIMIT, "destination \"%.200s\" is too long", dest);
    return 0;
}

static uint32_t mode_of(const copy_spec *cs, const sw_src_node *n)
{
    return cs->chmod ? cs->mode : sw_src_node_mode(n);
}

/* Appends name to the layer path path[0..len) (a PATH_BUF buffer), as join does; *out
 * receives the new length. */
static int append_name(char *path, size_t len, const char *name, size_t *out)
{
    size_t nl = strlen(name), sep = len ? 1 : 0;
    path[len] = '\0';
    if (len + sep + nl >= PATH_BUF)
        return sw_error_set(SW_ELIMIT, "path \"%.200s/%.200s\" is too long", path, name);
    if (sep)
        path[len] = '/';
    memcpy(path + len + sep, name, nl + 1);
    *out = len + sep + nl;
    return 0;
}

/* The contents of directory dir under path[0..len). One PATH_BUF buffer serves the whole walk
 * (each level appends a name to it), so a deep tree costs no path buffer per level of stack. */
static int add_tree_at(layer *l, const sw_src_node *dir, char *path, size_t len,
                       const copy_spec *cs)
{
    for (size_t i = 0; i < sw_src_node_count(dir); i++) {
        const sw_src_node *k = sw_src_node_child(dir, i);
        size_t klen = 0;
        if (sw_src_node_ignored(k))
            continue;
        int error = append_name(path, len, sw_src_node_name(k), &klen);
        if (error < 0)
            return error;
        switch (sw_src_node_type(k)) {
        case SW_SRC_DIR:
            layer_add(l, path, SW_TAR_DIR, mode_of(cs, k), cs->uid, cs->gid, NULL, NULL);
            error = add_tree_at(l, k, path, klen, cs);
            break;
        case SW_SRC_FILE: {
            lsrc src = node_src(k);
            layer_add(l, path, SW_TAR_REG, mode_of(cs, k), cs->uid, cs->gid, &src, NULL);
            break;
        }
        case SW_SRC_SYMLINK: /* copied as a link, never followed */
            layer_add(l, path, SW_TAR_SYMLINK, 0777, cs->uid, cs->gid, NULL, sw_src_node_link(k));
            break;
        }
        if (error < 0)
            return error;
    }
    return 0;
}

/* The contents of directory dir under prefix. */
static int add_tree(layer *l, const sw_src_node *dir, const char *prefix, const copy_spec *cs)
{
    char *path = sw_malloc(PATH_BUF);
    size_t len = sw_strlcpy(path, prefix, PATH_BUF);
    int error = len < PATH_BUF ? add_tree_at(l, dir, path, len, cs)
                               : sw_error_set(SW_ELIMIT, "path \"%.200s\" is too long", prefix);
    sw_free(path);
    return error;
}

typedef struct collect {
    layer *l;
    uint64_t *path_bytes; /* left for all archives */
} collect;

static int collect_entry(void *payload, const sw_tar_entry *e)
{
    collect *co = payload;
    size_t len = strlen(e->path) + 1;
    if (len > *co->path_bytes)
        return sw_error_set(SW_ELIMIT, "the archives ADD unpacks hold more path bytes than "
                                       "a build context may");
    *co->path_bytes -= len;
    lsrc src = {e->src_path, e->src_range, e->src_offset, e->src_size};
    layer_add(co->l, e->path, e->type, e->mode, e->uid, e->gid, e->src_path ? &src : NULL, e->link);
    return 0;
}

/* Copies a range of a spool file into a file of its own (libarchive reads whole files). */
static int extract_range(const lsrc *src, const char *to)
{
    char buf[65536];
    int in = open(src->file, O_RDONLY | O_CLOEXEC);
    int out = open(to, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    int error = 0;
    if (in < 0 || out < 0 || lseek(in, (off_t)src->off, SEEK_SET) < 0)
        error =
            sw_error_set(SW_ERROR, "cannot copy %s to %s: %s", src->file, to, sw_strerror(errno));
    for (uint64_t left = src->size; error == 0 && left > 0;) {
        ssize_t r = read(in, buf, left < sizeof(buf) ? (size_t)left : sizeof(buf));
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0 || write(out, buf, (size_t)r) != r)
            error = sw_error_set(SW_ERROR, "cannot copy %s to %s", src->file, to);
        else
            left -= (uint64_t)r;
    }
    if (in >= 0)
        close(in);
    if (out >= 0 && close(out) < 0 && error == 0)
        error = sw_error_set(SW_ERROR, "closing %s: %s", to, sw_strerror(errno));
    return error;
}

/* ADD of a local file: unpacks it under dest when it is a tar archive (*unpacked). The archive's
 * contents go to one spool file. */
static int try_unpack(asm_ctx *c, layer *l, const sw_src_node *n, const char *dest,
                      const copy_spec *cs, bool *unpacked)
{
    char spool[PATH_BUF], whole[PATH_BUF + 8];
    struct stat st;
    lsrc src = node_src(n);
    *unpacked = false;
    if (src.range ? src.size == 0 : (stat(src.file, &st) < 0 || st.st_size == 0))
        return 0; /* an empty file is not an archive: copied as it is */
    const char *dir = c->o->spool_dir ? c->o->spool_dir : ".";
    size_t seq = c->spool_seq++;
    int k = snprintf(spool, sizeof(spool), "%s/add-%zu", dir, seq);
    if (k < 0 || (size_t)k >= sizeof(spool))
        return sw_error_set(SW_ELIMIT, "spool directory name too long");
    snprintf(whole, sizeof(whole), "%s.src", spool);
    int error = src.range ? extract_range(&src, whole) : 0;
    if (error < 0)
        return error;
    if (!c->unpack_entries || !c->unpack_bytes)
        return sw_error_set(SW_ELIMIT, "the archives ADD unpacks hold more than a build "
                                       "context may");
    size_t before = l->n;
    collect co = {l, &c->unpack_path_bytes};
    sw_tarread_stats stats = {0};
    sw_tarread_opts o = SW_TARREAD_OPTS_INIT;
    o.prefix = dest;
    o.spool_file = spool;
    o.chown = cs->chown;
    o.uid = cs->uid;
    o.gid = cs->gid;
    o.on_entry = collect_entry;
    o.payload = &co;
    o.max_entries = c->unpack_entries;
    o.max_bytes = c->unpack_bytes;
    error = sw_tarread_add_file(NULL, src.range ? whole : src.file, &o, &stats);
    if (src.range)
        unlink(whole);
    /* not an archive, or a stream that ends before its first header (a file that starts with
     * a zero block): copied as it is, as Docker does */
    if (error == SW_EUNSUPPORTED || (error == 0 && stats.headers == 0)) {
        unlink(spool);
        return 0;
    }
    if (error == 0) {
        c->unpack_entries -= stats.headers;
        c->unpack_bytes -= stats.bytes;
    }
    if (error == SW_ELIMIT)
        error = sw_error_set(SW_ELIMIT,
                             "%s (all archives one build unpacks share the limits of a "
                             "build context)",
                             sw_error_msg());
    if (error < 0) {
        while (l->n > before) {
            l->n--;
            sw_free(l->v[l->n].path);
            sw_free(l->v[l->n].src);
            sw_free(l->v[l->n].link);
        }
        return error;
    }
    *unpacked = true;
    return 0;
}

/* Every source of in, resolved (wildcards expanded) into parallel arrays. */
typedef struct sources {
    const sw_src_node **nodes;
    const char **names;
    size_t n;
} sources;

static int expand_sources(const asm_ctx *c, const sw_df_instr *in, sources *out)
{
    memset(out, 0, sizeof(*out));
    for (size_t i = 0; i + 1 < in->nargs; i++) {
        const sw_src_node **nodes = NULL;
        const char **names = NULL;
        size_t n = 0;
        int error = sw_source_glob(c->ctx, in->args[i], &nodes, &names, &n);
        if (error < 0)
            return error;
        out->nodes = sw_realloc(out->nodes, (out->n + n) * sizeof(*out->nodes));
        out->names = sw_realloc(out->names, (out->n + n) * sizeof(*out->names));
        memcpy(out->nodes + out->n, nodes, n * sizeof(*nodes));
        memcpy(out->names + out->n, names, n * sizeof(*names));
        out->n += n;
        sw_free(nodes);
        sw_free(names);
    }
    return 0;
}

/* Adds the destination directory itself when the build makes it: with --chown (so it gets that
 * owner, as BuildKit creates it), and when it is not known to exist: FROM scratch always, on a
 * base image only when nothing is copied into it (an empty directory, or everything in it
 * ignored), since otherwise the unpacker creates it and an existing one keeps its mode. */
static void add_dest_dir(const asm_ctx *c, layer *l, const char *dest, const copy_spec *cs,
                         bool nothing_below)
{
    if (!*dest || (!cs->chown && (known(c, dest) || (!c->o->scratch && !nothing_below))))
        return;
    layer_add(l, dest, SW_TAR_DIR, 0755, cs->uid, cs->gid, NULL, NULL);
}

static int copy_sources(asm_ctx *c, layer *l, const sources *src, const char *dest,
                        bool dest_is_dir, const copy_spec *cs)
{
    char path[PATH_BUF];
    bool made_dir = dest_is_dir;
    size_t before = l->n;
    int error = 0;
    for (size_t i = 0; i < src->n && error == 0; i++) {
        const sw_src_node *n = src->nodes[i];
        bool unpacked = false;
        if (sw_src_node_type(n) == SW_SRC_DIR) {
            made_dir = true;
            error = add_tree(l, n, dest, cs);
            continue;
        }
        if (cs->add && (error = try_unpack(c, l, n, dest, cs, &unpacked)) < 0)
            break;
        if (unpacked) {
            made_dir = true;
            continue;
        }
        if (dest_is_dir)
            error = join(dest, src->names[i], path, sizeof(path));
        else if (!*dest)
            error = sw_error_set(SW_EINVALID, "cannot copy a file over the root directory");
        else
            sw_strlcpy(path, dest, sizeof(path));
        lsrc from = node_src(n);
        if (error == 0)
            layer_add(l, path, SW_TAR_REG, mode_of(cs, n), cs->uid, cs->gid, &from, NULL);
    }
    if (error == 0 && made_dir)
        add_dest_dir(c, l, dest, cs, l->n == before);
    return error;
}

static int do_copy(asm_ctx *c, const sw_df_instr *in, sw_buf *hist)
{
    char dest[PATH_BUF];
    copy_spec cs;
    sources src = {0};
    layer l = {0};
    bool dir_syntax = false;
    int error = parse_spec(in, &cs);
    if (error == 0)
        error = dest_path(c, in->args[in->nargs - 1], dest, sizeof(dest), &dir_syntax);
    if (error == 0)
        error = expand_sources(c, in, &src);
    if (error == 0 && src.n > 1 && !dir_syntax)
        error = sw_error_set(SW_EINVALID,
                             "when using %s with more than one source file, the "
                             "destination must be a directory and end with a /",
                             sw_df_op_name(in->op));
    if (error < 0)
        goto done;
    layer_take(&l, &c->pending);
    error = copy_sources(c, &l, &src, dest, dir_syntax || known(c, dest), &cs);
    if (error == 0)
        error = layer_step(c, &l, in->line, hist);
done:
    layer_dispose(&l);
    sw_free(src.nodes);
    sw_free(src.names);
    return error;
}

/* ---- configuration ---- */

static int do_workdir(asm_ctx *c, const sw_df_instr *in, size_t index, sw_buf *hist)
{
    char path[PATH_BUF];
    int error = sw_oci_image_set_workdir(c->img, in->args[0]);
    if (error < 0)
        return error;
    sw_strlcpy(c->workdir, in->args[0], sizeof(c->workdir));
    const char *p = in->args[0];
    while (*p == '/')
        p++;
    sw_strlcpy(path, p, sizeof(path));
    /* FROM scratch: the directory is made here. On a base image it may exist (an existing /tmp
     * must keep its 1777): nothing is recorded, and a missing one is made by the runtime when
     * the container starts (runc, crun, CRI-O and Docker create a missing working directory). */
    if (*path && !known(c, path)) {
        if (c->o->scratch)
            layer_add(&c->pending, path, SW_TAR_DIR, 0755, 0, 0, NULL, NULL);
        mark_known(c, path);
    }
    if (c->pending.n && index > c->last_copy) /* no COPY/ADD left to carry it */
        return layer_step(c, &c->pending, in->line, hist);
    step_new(c->a, in->line, hist);
    return 0;
}

static int set_pairs(asm_ctx *c, const sw_df_instr *in, bool env)
{
    int error = 0;
    for (size_t i = 0; i < in->npairs && error == 0; i++)
        error = env ? sw_oci_image_set_env(c->img, in->keys[i], in->values[i])
                    : sw_oci_image_set_label(c->img, in->keys[i], in->values[i]);
    return error;
}

static int configure(asm_ctx *c, const sw_df_instr *in)
{
    int error = 0;
    const char *const *argv = (const char *const *)in->args;
    switch (in->op) {
    case SW_DF_ENV:
        return set_pairs(c, in, true);
    case SW_DF_LABEL:
        return set_pairs(c, in, false);
    case SW_DF_USER:
        return sw_oci_image_set_user(c->img, in->args[0]);
    case SW_DF_STOPSIGNAL:
        return sw_oci_image_set_stop_signal(c->img, in->args[0]);
    case SW_DF_EXPOSE:
        for (size_t i = 0; i < in->nargs && error == 0; i++)
            error = sw_oci_image_add_port(c->img, in->args[i]);
        return error;
    case SW_DF_VOLUME:
        for (size_t i = 0; i < in->nargs && error == 0; i++)
            error = sw_oci_image_add_volume(c->img, in->args[i]);
        return error;
    case SW_DF_ENTRYPOINT:
        error = sw_oci_image_set_entrypoint(c->img, argv, in->nargs);
        if (error == 0 && !c->cmd_set) /* Docker: ENTRYPOINT drops an inherited CMD */
            error = sw_oci_image_set_cmd(c->img, NULL, 0);
        return error;
    case SW_DF_CMD:
        c->cmd_set = true;
        return sw_oci_image_set_cmd(c->img, argv, in->nargs);
    default: /* ARG, MAINTAINER: history only */
        return 0;
    }
}

/* The appended ENV (dockerStrategy.env) or LABEL (imageLabels) step. */
static int appended(asm_ctx *c, const char *const *kv, bool env)
{
    sw_buf hist = SW_BUF_INIT(SIZE_MAX);
    char key[1024];
    int error = 0;
    if (!kv || !kv[0])
        return 0;
    sw_buf_puts(&hist, env ? "ENV" : "LABEL");
    for (size_t i = 0; kv[i] && error == 0; i++) {
        const char *eq = strchr(kv[i], '=');
        size_t kl = eq ? (size_t)(eq - kv[i]) : strlen(kv[i]);
        if (kl == 0 || kl >= sizeof(key)) {
            error = sw_error_set(SW_EINVALID, "%s \"%.100s\": want NAME=VALUE",
                                 env ? "env" : "label", kv[i]);
            break;
        }
        memcpy(key, kv[i], kl);
        key[kl] = '\0';
        error = env ? sw_oci_image_set_env(c->img, key, eq ? eq + 1 : "")
                    : sw_oci_image_set_label(c->img, key, eq ? eq + 1 : "");
        sw_buf_printf(&hist, " %s", kv[i]);
    }
    if (error == 0)
        step_new(c->a, 0, &hist);
    sw_buf_dispose(&hist);
    return error;
}

/* Prefixes the current error with the Dockerfile line and the instruction. */
static int wrap(int error, const sw_df_instr *in, const char *text)
{
    char msg[MSG_MAX];
    sw_strlcpy(msg, sw_error_msg(), sizeof(msg));
    return sw_error_set(error, "Dockerfile:%d: %.300s: %s", in->line, text, msg);
}

static int one(asm_ctx *c, const sw_df_instr *in, size_t index)
{
    sw_buf hist = SW_BUF_INIT(SIZE_MAX);
    char text[400];
    int error = 0;
    created_by(&hist, in);
    sw_strlcpy(text, sw_buf_cstr(&hist), sizeof(text));
    switch (in->op) {
    case SW_DF_COPY:
    case SW_DF_ADD:
        error = do_copy(c, in, &hist);
        break;
    case SW_DF_WORKDIR:
        error = do_workdir(c, in, index, &hist);
        break;
    default:
        error = configure(c, in);
        if (error == 0)
            step_new(c->a, in->line, &hist);
        break;
    }
    sw_buf_dispose(&hist);
    return error < 0 ? wrap(error, in, text) : 0;
}

int sw_assemble(sw_assembly **out, const sw_dockerfile *df, const sw_source *ctx, sw_oci_image *img,
                const sw_assemble_opts *opts)
{
    if (!opts || opts->version != SW_ASSEMBLE_OPTS_VERSION)
        return sw_error_set(SW_EINVALID, "assemble: options version mismatch");
    asm_ctx c = {.ctx = ctx, .o = opts, .img = img, .known = json_object()};
    c.unpack_entries = opts->max_unpack_entries ? opts->max_unpack_entries : SW_TAR_MAX_ENTRIES;
    c.unpack_bytes = opts->max_unpack_bytes ? opts->max_unpack_bytes : SW_TARREAD_MAX_BYTES;
    c.unpack_path_bytes =
        opts->max_unpack_path_bytes ? opts->max_unpack_path_bytes : SW_SOURCE_MAX_PATH_BYTES;
    c.a = sw_calloc(1, sizeof(*c.a));
    sw_strlcpy(c.workdir, opts->base_workdir && *opts->base_workdir ? opts->base_workdir : "/",
               sizeof(c.workdir));
    if (c.workdir[0] == '/' && c.workdir[1])
        mark_with_parents(&c, c.workdir + 1, true);
    size_t n = sw_dockerfile_count(df);
    for (size_t i = 1; i < n; i++) {
        sw_df_op op = sw_dockerfile_instr(df, i)->op;
        if (op == SW_DF_COPY || op == SW_DF_ADD)
            c.last_copy = i;
    }
    int error = 0;
    for (size_t i = 1; i < n && error == 0; i++)
        error = one(&c, sw_dockerfile_instr(df, i), i);
    if (error == 0)
        error = appended(&c, opts->env, true);
    if (error == 0)
        error = appended(&c, opts->labels, false);
    layer_dispose(&c.pending);
    json_decref(c.known);
    if (error < 0) {
        sw_assembly_free(c.a);
        return error;
    }
    *out = c.a;
    return 0;
}

size_t sw_assembly_count(const sw_assembly *a)
{
    return a->n;
}

const sw_assemble_step *sw_assembly_step(const sw_assembly *a, size_t i)
{
    return i < a->n ? &a->steps[i] : NULL;
}

size_t sw_assembly_layers(const sw_assembly *a)
{
    return a->layers;
}

void sw_assembly_free(sw_assembly *a)
{
    if (!a)
        return;
    for (size_t i = 0; i < a->n; i++) {
        sw_free(a->steps[i].created_by);
        sw_tar_free(a->steps[i].tar);
    }
    sw_free(a->steps);
    sw_free(a);
}
