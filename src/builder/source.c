/* source: the build context tree. Nodes are indexed by their path from the tree's root in one
 * open-addressing table (FNV-1a), so archives of any shape load in linear time; children keep
 * insertion order (the layer writer sorts entries itself). Resolution walks the tree, never the
 * host file system. Design: docs/builds.md ("The builder"). */
#include "builder/source.h"

#include "image/tarread.h"
#include "util/alloc.h"
#include "util/buf.h"
#include "util/error.h"
#include "util/path.h"
#include "util/str.h"

#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <pthread.h>
#include <git2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define PATH_BUF (SW_TAR_MAX_PATH + 2)

struct sw_src_node {
    char *name; /* last component ("" for the tree's root) */
    char *path; /* from the tree's root, "" for the root itself */
    sw_src_type type;
    uint32_t mode;
    char *file; /* SW_SRC_FILE: the file holding the contents */
    bool range; /* the contents are size bytes at off of file (else all of it) */
    uint64_t off, size;
    char *link;   /* SW_SRC_SYMLINK: target */
    bool implied; /* a directory created for a child, not (yet) by its own entry */
    bool ignored; /* excluded by .dockerignore: invisible to resolution and copies */
    sw_src_node *parent;
    sw_src_node **kids;
    size_t nkids, cap;
};

struct sw_source {
    char *spool_dir;
    sw_src_node *tree;       /* the whole tree */
    const sw_src_node *root; /* the context: tree or a directory below (contextDir) */
    sw_src_node **slots;     /* index by path; NULL = empty slot */
    size_t nslots, count;
    size_t spool_seq;
    char *blobs;        /* spool_dir/blobs: contents given in memory or read from git, appended */
    size_t max_entries; /* nodes in the index, implied directories included */
    uint64_t max_bytes; /* contents of an archive or a git tree */
    uint64_t max_path_bytes, path_bytes; /* the nodes' paths (with their NULs): cap, in use */
    uint64_t max_ignore_work;            /* sw_source_ignore's pattern-segment tests */
};

/* ---- nodes and the index ---- */

static uint64_t hash_path(const char *p)
{
    return sw_fnv1a(SW_FNV1A_OFFSET, p, strlen(p));
}

static sw_src_node *index_get(const sw_source *s, const char *path)
{
    size_t mask = s->nslots - 1;
    for (size_t i = (size_t)hash_path(path) & mask;; i = (i + 1) & mask) {
        sw_src_node *n = s->slots[i];
        if (!n || !strcmp(n->path, path))
            return n;
    }
}

static void index_put_raw(sw_src_node **slots, size_t nslots, sw_src_node *n)
{
    size_t mask = nslots - 1;
    size_t i = (size_t)hash_path(n->path) & mask;
    while (slots[i])
        i = (i + 1) & mask;
    slots[i] = n;
}

static void index_put(sw_source *s, sw_src_node *n)
{
    if ((s->count + 1) * 2 > s->nslots) {
        size_t nn = s->nslots * 2;
        sw_src_node **ns = sw_calloc(nn, sizeof(*ns));
        for (size_t i = 0; i < s->nslots; i++)
            if (s->slots[i])
                index_put_raw(ns, nn, s->slots[i]);
        sw_free(s->slots);
        s->slots = ns;
        s->nslots = nn;
    }
    index_put_raw(s->slots, s->nslots, n);
    s->count++;
}

static void node_free(sw_src_node *n)
{
    if (!n)
        return;
    sw_free(n->name);
    sw_free(n->path);
    sw_free(n->file);
    sw_free(n->link);
    sw_free(n->kids);
    sw_free(n);
}

/* A new child of parent named name[0..len), not yet attached (see attach). */
static sw_src_node *node_new(sw_src_node *parent, const char *name, size_t len)
{
    sw_src_node *n = sw_calloc(1, sizeof(*n));
    n->name = sw_strndup(name, len);
    n->parent = parent;
    if (!parent) {
        n->path = sw_strdup("");
        return n;
    }
    sw_buf b = SW_BUF_INIT(SIZE_MAX);
    sw_buf_printf(&b, "%s%s%.*s", parent->path, *parent->path ? "/" : "", (int)len, name);
    n->path = sw_buf_detach(&b, NULL);
    return n;
}

/* Checks that one more node, with a path of plen bytes, stays within the source's limits. */
static int node_budget(const sw_source *s, size_t plen)
{
    if (s->count >= s->max_entries)
        return sw_error_set(SW_ELIMIT,
                            "the source has more than %zu entries (directories included)",
                            s->max_entries);
    if (s->path_bytes + plen + 1 > s->max_path_bytes)
        return sw_error_set(SW_ELIMIT,
                            "the paths of the source's entries take more than %llu bytes",
                            (unsigned long long)s->max_path_bytes);
    return 0;
}

/* Links n into its parent's children and the index. */
static void attach(sw_source *s, sw_src_node *n)
{
    s->path_bytes += strlen(n->path) + 1;
    sw_src_node *parent = n->parent;
    if (parent->nkids == parent->cap) {
        parent->cap = parent->cap ? parent->cap * 2 : 8;
        parent->kids = sw_realloc(parent->kids, parent->cap * sizeof(*parent->kids));
    }
    parent->kids[parent->nkids++] = n;
    index_put(s, n);
}

/* The child of dir named name[0..len), or NULL (also when ignored and !all). */
static sw_src_node *child_any(const sw_source *s, const sw_src_node *dir, const char *name,
                              size_t len, bool all)
{
    char key[PATH_BUF * 2];
    int k =
        snprintf(key, sizeof(key), "%s%s%.*s", dir->path, *dir->path ? "/" : "", (int)len, name);
    if (k < 0 || (size_t)k >= sizeof(key))
        return NULL;
    sw_src_node *n = index_get(s, key);
    return n && (all || !n->ignored) ? n : NULL;
}

static sw_src_node *child(const sw_source *s, const sw_src_node *dir, const char *name, size_t len)
{
    return child_any(s, dir, name, len, false);
}

int sw_source_new(sw_source **out, const char *spool_dir)
{
    sw_source *s = sw_calloc(1, sizeof(*s));
    s->spool_dir = sw_strdup(spool_dir ? spool_dir : ".");
    sw_buf b = SW_BUF_INIT(SIZE_MAX);
    sw_buf_printf(&b, "%s/blobs", s->spool_dir);
    s->blobs = sw_buf_detach(&b, NULL);
    s->tree = node_new(NULL, "", 0);
    s->tree->type = SW_SRC_DIR;
    s->tree->mode = 0755;
    s->root = s->tree;
    s->nslots = 64;
    s->slots = sw_calloc(s->nslots, sizeof(*s->slots));
    sw_source_set_limits(s, &(sw_source_limits){0});
    *out = s;
    return 0;
}

void sw_source_set_limits(sw_source *s, const sw_source_limits *l)
{
    s->max_entries = l->max_entries ? l->max_entries : SW_TAR_MAX_ENTRIES;
    s->max_bytes = l->max_bytes ? l->max_bytes : SW_TARREAD_MAX_BYTES;
    s->max_path_bytes = l->max_path_bytes ? l->max_path_bytes : SW_SOURCE_MAX_PATH_BYTES;
    s->max_ignore_work = l->max_ignore_work ? l->max_ignore_work : SW_SOURCE_MAX_IGNORE_WORK;
}

void sw_source_free(sw_source *s)
{
    if (!s)
        return;
    for (size_t i = 0; i < s->nslots; i++)
        node_free(s->slots[i]);
    node_free(s->tree);
    sw_free(s->slots);
    sw_free(s->blobs);
    sw_free(s->spool_dir);
    sw_free(s);
}

/* ---- adding entries ---- */

/* The directory that holds path (its parents created as implied directories). */
static int parent_dir(sw_source *s, const char *path, sw_src_node **out)
{
    sw_src_node *cur = s->tree;
    const char *p = path;
    for (const char *slash; (slash = strchr(p, '/')) != NULL; p = slash + 1) {
        sw_src_node *n = child_any(s, cur, p, (size_t)(slash - p), true);
        if (n && n->type != SW_SRC_DIR)
            return sw_error_set(SW_EINVALID,
                                "source entry \"%.200s\" is under \"%.200s\", "
                                "which is not a directory",
                                path, n->path);
        if (!n) {
            size_t plen = strlen(cur->path) + (*cur->path != '\0') + (size_t)(slash - p);
            int error = node_budget(s, plen);
            if (error < 0)
                return error;
            n = node_new(cur, p, (size_t)(slash - p));
            n->type = SW_SRC_DIR;
            n->mode = 0755;
            n->implied = true;
            attach(s, n);
        }
        cur = n;
    }
    *out = cur;
    return 0;
}

/* Appends len bytes to the blobs file; n names their range there. One file for all contents:
 * creating a file per entry costs far more than the bytes on a busy file system. */
static int spool_bytes(sw_source *s, sw_src_node *n, const void *data, size_t len)
{
    struct stat st;
    int error = 0;
    int fd = open(s->blobs, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
    if (fd < 0 || fstat(fd, &st) < 0) {
        error = sw_error_set(SW_ERROR, "cannot open %s: %s", s->blobs, sw_strerror(errno));
        goto done;
    }
    for (size_t off = 0; off < len;) {
        ssize_t w = write(fd, (const char *)data + off, len - off);
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0) {
            error = sw_error_set(SW_ERROR, "writing %s: %s", s->blobs, sw_strerror(errno));
            goto done;
        }
        off += (size_t)w;
    }
    n->file = sw_strdup(s->blobs);
    n->range = true;
    n->off = (uint64_t)st.st_size;
    n->size = len;
done:
    if (fd >= 0 && close(fd) < 0 && error == 0)
        error = sw_error_set(SW_ERROR, "closing %s: %s", s->blobs, sw_strerror(errno));
    return error;
}

/* Fills a new node's type and contents from e. */
static int node_fill(sw_source *s, sw_src_node *n, const sw_tar_entry *e)
{
    char target[PATH_BUF];
    n->mode = e->mode & 07777;
    switch (e->type) {
    case SW_TAR_DIR:
        n->type = SW_SRC_DIR;
        return 0;
    case SW_TAR_SYMLINK:
        n->type = SW_SRC_SYMLINK;
        n->link = sw_strdup(e->link ? e->link : "");
        return 0;
    case SW_TAR_HARDLINK: {
        int error = sw_tar_clean_path(e->link, target, sizeof(target));
        const sw_src_node *t = error == 0 ? index_get(s, target) : NULL;
        if (!t || t->type != SW_SRC_FILE)
            return sw_error_set(SW_EINVALID,
                                "source entry \"%.200s\" is a hard link to \"%.200s\", which is "
                                "not a regular file before it",
                                n->path, e->link ? e->link : "");
        n->type = SW_SRC_FILE;
        n->mode = t->mode;
        n->file = sw_strdup(t->file);
        n->range = t->range;
        n->off = t->off;
        n->size = t->size;
        return 0;
    }
    case SW_TAR_REG:
        n->type = SW_SRC_FILE;
        if (e->src_path) {
            n->file = sw_strdup(e->src_path);
            n->range = e->src_range;
            n->off = e->src_offset;
            n->size = e->src_size;
            return 0;
        }
        return spool_bytes(s, n, e->data ? e->data : "", e->data_len);
    }
    return sw_error_set(SW_EINVALID, "source entry \"%.200s\" has an unknown type", n->path);
}

/* The number of '/'-separated segments of a cleaned path or pattern. */
static size_t path_segments(const char *path)
{
    size_t n = 1;
    for (const char *p = path; *p; p++)
        n += *p == '/';
    return n;
}

/* SW_EINVALID when the cleaned path has more than SW_SOURCE_MAX_DEPTH components. */
static int check_depth(const char *path)
{
    if (path_segments(path) > SW_SOURCE_MAX_DEPTH)
        return sw_error_set(SW_EINVALID,
                            "source entry \"%.200s...\" is nested more than %d directories deep",
                            path, SW_SOURCE_MAX_DEPTH);
    return 0;
}

/* A new node for e at the cleaned path in dir, filled and attached. */
static int node_add(sw_source *s, sw_src_node *dir, const char *path, const sw_tar_entry *e,
                    sw_src_node **out)
{
    int error = node_budget(s, strlen(path));
    if (error < 0)
        return error;
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    sw_src_node *n = node_new(dir, base, strlen(base));
    error = node_fill(s, n, e);
    if (error < 0) {
        node_free(n);
        return error;
    }
    attach(s, n);
    *out = n;
    return 0;
}

/* sw_source_add; *out (may be NULL) receives the entry's node. */
static int source_add(sw_source *s, const sw_tar_entry *e, sw_src_node **out)
{
    char path[PATH_BUF];
    sw_src_node *dir = NULL, *n = NULL;
    int error = sw_tar_clean_path(e->path, path, sizeof(path));
    if (error == 0)
        error = check_depth(path);
    if (error == 0)
        error = parent_dir(s, path, &dir);
    if (error < 0)
        return error;
    n = index_get(s, path);
    if (n && n->implied && e->type == SW_TAR_DIR) {
        n->mode = e->mode & 07777;
        n->implied = false;
    } else if (n) {
        return sw_error_set(SW_EINVALID, "the source holds \"%.200s\" twice", path);
    } else if ((error = node_add(s, dir, path, e, &n)) < 0) {
        return error;
    }
    if (out)
        *out = n;
    return 0;
}

int sw_source_add(sw_source *s, const sw_tar_entry *e)
{
    return source_add(s, e, NULL);
}

static int on_archive_entry(void *payload, const sw_tar_entry *e)
{
    return sw_source_add(payload, e);
}

int sw_source_add_archive(sw_source *s, const char *path, size_t *entries)
{
    sw_tarread_stats st = {0};
    sw_buf spool = SW_BUF_INIT(SIZE_MAX);
    sw_buf_printf(&spool, "%s/archive-%zu", s->spool_dir, s->spool_seq++);
    sw_tarread_opts o = SW_TARREAD_OPTS_INIT;
    o.spool_file = sw_buf_cstr(&spool);
    o.in_place = true; /* the upload stays in the build directory until the end */
    o.on_entry = on_archive_entry;
    o.payload = s;
    o.max_entries = s->max_entries;
    o.max_bytes = s->max_bytes;
    int error = sw_tarread_add_file(NULL, path, &o, &st);
    if (entries)
        *entries = st.entries;
    sw_buf_dispose(&spool);
    return error;
}

int sw_source_add_file(sw_source *s, const char *name, const char *path)
{
    if (!name || !*name || strchr(name, '/') || !strcmp(name, ".") || !strcmp(name, ".."))
        return sw_error_set(SW_EINVALID, "\"%.200s\" is not a plain file name", name ? name : "");
    sw_tar_entry e = {.path = name, .type = SW_TAR_REG, .mode = 0644, .src_path = path};
    return sw_source_add(s, &e);
}

/* ---- git ---- */

/* Where a blob's contents were spooled (the blobs file), by object id. */
typedef struct git_spooled {
    git_oid id;
    uint64_t off, size;
    bool used;
} git_spooled;

typedef struct git_walk {
    sw_source *s;
    git_repository *repo;
    sw_source_git_info *info;
    uint64_t bytes;    /* contents of the entries added so far (shared blobs each time) */
    git_spooled *seen; /* open addressing by id; n_seen used of cap_seen (a power of two) */
    size_t n_seen, cap_seen;
    int error; /* the SW_E* code that stopped the walk */
} git_walk;

static int git_fail(int code, const char *what)
{
    const git_error *ge = git_error_last();
    return sw_error_set(code, "git: %s: %s", what, ge && ge->message ? ge->message : "failed");
}

/* The slot of blob id in w->seen: where it was spooled, or the free slot it would take.
 * NULL while the table is empty. */
static git_spooled *git_seen_slot(const git_walk *w, const git_oid *id)
{
    if (!w->cap_seen)
        return NULL;
    uint64_t h = 0;
    memcpy(&h, id->id, sizeof(h)); /* a SHA-1 prefix is already well mixed */
    size_t mask = w->cap_seen - 1;
    for (size_t i = (size_t)h & mask;; i = (i + 1) & mask)
        if (!w->seen[i].used || git_oid_equal(&w->seen[i].id, id))
            return &w->seen[i];
}

/* Records that blob id's contents are the range n names in the blobs file. */
static void git_seen_put(git_walk *w, const git_oid *id, const sw_src_node *n)
{
    if ((w->n_seen + 1) * 2 > w->cap_seen) {
        git_walk grown = {.cap_seen = w->cap_seen ? w->cap_seen * 2 : 64};
        grown.seen = sw_calloc(grown.cap_seen, sizeof(*grown.seen));
        for (size_t i = 0; i < w->cap_seen; i++)
            if (w->seen[i].used)
                *git_seen_slot(&grown, &w->seen[i].id) = w->seen[i];
        sw_free(w->seen);
        w->seen = grown.seen;
        w->cap_seen = grown.cap_seen;
    }
    *git_seen_slot(w, id) = (git_spooled){*id, n->off, n->size, true};
    w->n_seen++;
}

/* Counts len more bytes of contents against the source's cap. */
static int git_take_bytes(git_walk *w, uint64_t len)
{
    if (len > w->s->max_bytes - w->bytes)
        return sw_error_set(SW_ELIMIT, "the git source has more than %llu bytes",
                            (unsigned long long)w->s->max_bytes);
    w->bytes += len;
    return 0;
}

/* A blob is read whole into memory: its size comes from the object header first, so a large
 * one is refused before it is inflated (past the source's byte cap, or SW_SOURCE_MAX_GIT_BLOB). */
static int git_check_size(git_walk *w, const git_oid *id, const char *path)
{
    git_odb *odb = NULL;
    size_t len = 0;
    git_object_t type = GIT_OBJECT_INVALID;
    int rc = git_repository_odb(&odb, w->repo);
    if (rc == 0)
        rc = git_odb_read_header(&len, &type, odb, id);
    git_odb_free(odb);
    if (rc < 0 || type != GIT_OBJECT_BLOB)
        return git_fail(SW_EINVALID, path);
    if (len > SW_SOURCE_MAX_GIT_BLOB)
        return sw_error_set(SW_ELIMIT,
                            "git: %.200s is larger than %llu MiB, more than the git source reads "
                            "(upload it as a binary source instead)",
                            path, (unsigned long long)(SW_SOURCE_MAX_GIT_BLOB >> 20));
    if (len > w->s->max_bytes - w->bytes)
        return sw_error_set(SW_ELIMIT,
                            "the git source has more than %llu bytes (%.200s alone "
                            "has %zu)",
                            (unsigned long long)w->s->max_bytes, path, len);
    return 0;
}

/* Adds a regular file whose blob is already spooled (at sp), without reading it again. */
static int git_add_spooled(git_walk *w, const char *path, git_filemode_t fm, const git_spooled *sp)
{
    sw_tar_entry e = {.path = path,
                      .type = SW_TAR_REG,
                      .mode = fm == GIT_FILEMODE_BLOB_EXECUTABLE ? 0755 : 0644,
                      .src_path = w->s->blobs,
                      .src_range = true,
                      .src_offset = sp->off,
                      .src_size = sp->size};
    int error = git_take_bytes(w, sp->size);
    return error < 0 ? error : sw_source_add(w->s, &e);
}

/* Adds one blob entry (file or symlink) at path; a file's blob is spooled once per id. */
static int git_add_blob(git_walk *w, const char *path, const git_tree_entry *te)
{
    git_blob *blob = NULL;
    git_filemode_t fm = git_tree_entry_filemode(te);
    const git_oid *id = git_tree_entry_id(te);
    const git_spooled *sp = fm == GIT_FILEMODE_LINK ? NULL : git_seen_slot(w, id);
    if (sp && sp->used)
        return git_add_spooled(w, path, fm, sp);
    int error = git_check_size(w, id, path);
    if (error < 0)
        return error;
    if (git_blob_lookup(&blob, w->repo, id) < 0)
        return git_fail(SW_EINVALID, path);
    const void *data = git_blob_rawcontent(blob);
    size_t len = (size_t)git_blob_rawsize(blob);
    sw_src_node *n = NULL;
    sw_tar_entry e = {.path = path};
    error = git_take_bytes(w, len);
    if (error < 0) {
        /* over the cap: nothing added */
    } else if (fm == GIT_FILEMODE_LINK) {
        char *target = sw_strndup(data, len);
        e.type = SW_TAR_SYMLINK;
        e.mode = 0777;
        e.link = target;
        error = strlen(target) != len || !len
                    ? sw_error_set(SW_EINVALID, "git: symlink %.200s has a bad target", path)
                    : sw_source_add(w->s, &e);
        sw_free(target);
    } else {
        e.type = SW_TAR_REG;
        e.mode = fm == GIT_FILEMODE_BLOB_EXECUTABLE ? 0755 : 0644;
        e.data = data;
        e.data_len = len; /* appended to the blobs file */
        error = source_add(w->s, &e, &n);
        if (error == 0)
            git_seen_put(w, id, n);
    }
    git_blob_free(blob);
    return error;
}

static int git_walk_cb(const char *root, const git_tree_entry *te, void *payload)
{
    git_walk *w = payload;
    char path[PATH_BUF];
    int k = snprintf(path, sizeof(path), "%s%s", root, git_tree_entry_name(te));
    if (k < 0 || (size_t)k >= sizeof(path)) {
        w->error = sw_error_set(SW_ELIMIT, "git: path %.200s... is too long", root);
        return -1;
    }
    if (git_tree_entry_type(te) != GIT_OBJECT_TREE && git_tree_entry_type(te) != GIT_OBJECT_BLOB) {
        w->info->submodules++; /* a gitlink: submodules are not fetched */
        return 1;              /* skip */
    }
    int error = 0;
    if (w->info->entries >= w->s->max_entries) {
        error =
            sw_error_set(SW_ELIMIT, "the git source has more than %zu entries", w->s->max_entries);
    } else if (git_tree_entry_type(te) == GIT_OBJECT_TREE) {
        sw_tar_entry e = {.path = path, .type = SW_TAR_DIR, .mode = 0755};
        error = sw_source_add(w->s, &e);
    } else {
        error = git_add_blob(w, path, te);
    }
    if (error < 0) {
        w->error = error;
        return -1;
    }
    w->info->entries++;
    return 0;
}

/* The object ref names: a remote branch, a tag or a local branch (by reference lookup), else a
 * full or abbreviated commit id. git_revparse_single is not used for guesses: libgit2 1.5 leaks
 * its describe-pattern match data on every name that does not resolve. */
static int git_lookup(git_repository *repo, const char *ref, git_object **out)
{
    static const char *const forms[] = {"refs/remotes/origin/%s", "refs/tags/%s", "refs/heads/%s",
                                        "%s"};
    char name[600];
    for (size_t i = 0; i < sizeof(forms) / sizeof(forms[0]); i++) {
        git_reference *r = NULL;
        snprintf(name, sizeof(name), forms[i], ref);
        if (git_reference_lookup(&r, repo, name) < 0)
            continue;
        int rc = git_reference_peel(out, r, GIT_OBJECT_ANY);
        git_reference_free(r);
        if (rc == 0)
            return 0;
    }
    size_t len = strlen(ref);
    git_oid oid;
    if (len < 4 || len > GIT_OID_HEXSZ || strspn(ref, "0123456789abcdefABCDEF") != len ||
        git_oid_fromstrn(&oid, ref, len) < 0)
        return -1;
    return git_object_lookup_prefix(out, repo, &oid, len, GIT_OBJECT_ANY);
}

/* The commit that ref names in a fresh clone (the remote's HEAD when ref is empty). */
static int git_find_commit(git_repository *repo, const char *ref, git_commit **out)
{
    git_object *obj = NULL, *peeled = NULL;
    int rc = git_lookup(repo, ref && *ref ? ref : "HEAD", &obj);
    if (rc < 0)
        return sw_error_set(SW_ENOTFOUND,
                            "git: no branch, tag or commit \"%.200s\" in the "
                            "repository",
                            ref && *ref ? ref : "HEAD");
    rc = git_object_peel(&peeled, obj, GIT_OBJECT_COMMIT);
    git_object_free(obj);
    if (rc < 0)
        return git_fail(SW_EINVALID, "the ref does not name a commit");
    *out = (git_commit *)peeled;
    return 0;
}

/* A bare repository in dir with every branch (as refs/remotes/origin/...), tag and the remote's
 * HEAD (refs/remotes/origin/HEAD) of uri. An anonymous remote and explicit refspecs rather than
 * git_clone, whose remote setup leaks regex match data in libgit2 1.5. */
typedef struct git_fetch_state {
    bool (*stop)(void);
    uint64_t max_bytes; /* what the clone may download */
    bool over;
} git_fetch_state;

static int git_progress(const git_indexer_progress *stats, void *payload)
{
    git_fetch_state *f = payload;
    if (stats->received_bytes > f->max_bytes) {
        f->over = true;
        return -1;
    }
    return f->stop && f->stop() ? -1 : 0;
}

static int git_fetch_all(const char *uri, const char *dir, bool (*stop)(void), uint64_t max_bytes,
                         git_repository **out)
{
    static char *specs[] = {"+HEAD:refs/remotes/origin/HEAD", "+refs/heads/*:refs/remotes/origin/*",
                            "+refs/tags/*:refs/tags/*"};
    const git_strarray refspecs = {specs, sizeof(specs) / sizeof(specs[0])};
    git_remote *remote = NULL;
    git_fetch_options fo;
    int error = 0;
    git_fetch_options_init(&fo, GIT_FETCH_OPTIONS_VERSION);
    fo.download_tags = GIT_REMOTE_DOWNLOAD_TAGS_NONE;
    git_fetch_state f = {stop, max_bytes, false};
    fo.callbacks.transfer_progress = git_progress;
    fo.callbacks.payload = &f;
    if (git_repository_init(out, dir, 1) < 0)
        return git_fail(SW_ERROR, "cannot create the clone");
    if (git_remote_create_anonymous(&remote, *out, uri) < 0 ||
        git_remote_fetch(remote, &refspecs, &fo, NULL) < 0)
        error = f.over ? sw_error_set(SW_ELIMIT, "git: the clone downloads more than %llu bytes",
                                      (unsigned long long)max_bytes)
                : stop && stop() ? sw_error_set(SW_EUNAVAILABLE, "git: the clone was stopped")
                                 : git_fail(SW_EUNAVAILABLE, "cannot clone the repository");
    git_remote_free(remote);
    return error;
}

/* Copies a commit's subject into out, cut at a UTF-8 character boundary. */
static void git_subject(const git_commit *c, char *out, size_t n)
{
    const char *summary = git_commit_summary((git_commit *)c);
    size_t len = summary ? strlen(summary) : 0;
    if (len >= n) {
        len = n - 1;
        while (len > 0 && ((unsigned char)summary[len] & 0xC0) == 0x80)
            len--;
    }
    memcpy(out, summary ? summary : "", len);
    out[len] = '\0';
}

int sw_source_add_git(sw_source *s, const char *uri, const char *ref, const char *clone_dir,
                      bool (*stop)(void), sw_source_git_info *info)
{
    git_repository *repo = NULL;
    git_commit *commit = NULL;
    git_tree *tree = NULL;
    sw_source_git_info local = {0};
    git_walk w = {.s = s, .info = info ? info : &local};
    int error = 0;
    memset(w.info, 0, sizeof(*w.info));
    git_libgit2_init();
    if ((error = git_fetch_all(uri, clone_dir, stop, s->max_bytes, &repo)) < 0)
        goto done;
    if ((error = git_find_commit(repo, ref, &commit)) < 0)
        goto done;
    git_oid_tostr(w.info->commit, sizeof(w.info->commit), git_commit_id(commit));
    git_subject(commit, w.info->subject, sizeof(w.info->subject));
    if (git_commit_tree(&tree, commit) < 0) {
        error = git_fail(SW_EINVALID, "cannot read the commit's tree");
        goto done;
    }
    w.repo = repo;
    if (git_tree_walk(tree, GIT_TREEWALK_PRE, git_walk_cb, &w) < 0)
        error = w.error < 0 ? w.error : git_fail(SW_EINVALID, "cannot read the tree");
done:
    sw_free(w.seen);
    git_tree_free(tree);
    git_commit_free(commit);
    git_repository_free(repo);
    git_libgit2_shutdown();
    return error;
}

/* ---- resolution ---- */

bool sw_source_has_wildcard(const char *s)
{
    return strpbrk(s, "*?[") != NULL;
}

/* The path of n relative to the context root ("." for the root itself). */
static const char *rel_path(const sw_source *s, const sw_src_node *n)
{
    size_t rl = strlen(s->root->path);
    if (n == s->root)
        return ".";
    return rl ? n->path + rl + 1 : n->path;
}

/* Lexically cleans path (relative to the root; leading '/' ignored) into out: no ".", "..",
 * empty components, leading or trailing '/'. SW_EINVALID when ".." climbs above the root. */
static int clean_rel(const char *path, char *out, size_t n)
{
    int error = sw_path_clean(path, false, out, n);
    if (error == SW_EINVALID)
        return sw_error_set(SW_EINVALID, "\"%.200s\" leaves the build context", path);
    if (error < 0)
        return sw_error_set(SW_EINVALID, "\"%.200s...\" is too long", path);
    return 0;
}

static int walk(const sw_source *s, const sw_src_node *start, const char *path, bool follow_last,
                int *links, const sw_src_node **out);

/* Follows symlink ln (in directory dir) inside the context. */
static int follow(const sw_source *s, const sw_src_node *dir, const sw_src_node *ln, int *links,
                  const sw_src_node **out)
{
    if (++*links > SW_SOURCE_MAX_LINKS)
        return sw_error_set(SW_EINVALID, "too many levels of symbolic links at \"%.200s\"",
                            rel_path(s, ln));
    if (ln->link[0] == '/')
        return sw_error_set(SW_EINVALID,
                            "symlink \"%.200s\" points outside the build context (to \"%.200s\")",
                            rel_path(s, ln), ln->link);
    int error = walk(s, dir, ln->link, true, links, out);
    if (error == SW_EINVALID && strstr(sw_error_msg(), "leaves the build context"))
        return sw_error_set(SW_EINVALID,
                            "symlink \"%.200s\" points outside the build context (to \"%.200s\")",
                            rel_path(s, ln), ln->link);
    return error;
}

/* Walks path (components separated by '/'; "." and "" skipped; ".." physical) from start. */
static int walk(const sw_source *s, const sw_src_node *start, const char *path, bool follow_last,
                int *links, const sw_src_node **out)
{
    const sw_src_node *cur = start;
    const char *p = path;
    while (*p) {
        const char *e = strchr(p, '/');
        size_t cl = e ? (size_t)(e - p) : strlen(p);
        const char *next = p + cl;
        while (*next == '/')
            next++;
        bool last = *next == '\0';
        if (cl == 0 || (cl == 1 && p[0] == '.')) {
            /* nothing */
        } else if (cl == 2 && p[0] == '.' && p[1] == '.') {
            if (cur == s->root)
                return sw_error_set(SW_EINVALID, "\"%.200s\" leaves the build context", path);
            cur = cur->parent;
        } else {
            if (cur->type != SW_SRC_DIR)
                return sw_error_set(SW_ENOTFOUND, "\"%.200s\" is not a directory",
                                    rel_path(s, cur));
            const sw_src_node *n = child(s, cur, p, cl);
            if (!n)
                return sw_error_set(SW_ENOTFOUND, "\"%.*s\" not found", (int)cl, p);
            if (n->type == SW_SRC_SYMLINK && (!last || follow_last)) {
                int error = follow(s, cur, n, links, &n);
                if (error < 0)
                    return error;
            }
            cur = n;
        }
        p = next;
    }
    *out = cur;
    return 0;
}

int sw_source_resolve(const sw_source *s, const char *path, bool follow_last,
                      const sw_src_node **out)
{
    char clean[PATH_BUF];
    int links = 0;
    int error = clean_rel(path, clean, sizeof(clean));
    if (error < 0)
        return error;
    error = walk(s, s->root, clean, follow_last, &links, out);
    if (error == SW_ENOTFOUND && !strstr(sw_error_msg(), "not a directory"))
        return sw_error_set(SW_ENOTFOUND, "\"%.200s\" not found in the build context", clean);
    return error;
}

int sw_source_chdir(sw_source *s, const char *dir)
{
    const sw_src_node *n = NULL;
    int error = sw_source_resolve(s, dir, true, &n);
    if (error < 0)
        return error;
    if (n->type != SW_SRC_DIR)
        return sw_error_set(SW_EINVALID, "\"%.200s\" is not a directory", dir);
    s->root = n;
    return 0;
}

typedef struct match {
    const sw_src_node *node;
    const char *name;
} match;

static int match_cmp(const void *a, const void *b)
{
    return strcmp(((const match *)a)->name, ((const match *)b)->name);
}

/* Fills the caller's arrays from ms[0..n). */
static void glob_out(match *ms, size_t n, const sw_src_node ***nodes, const char ***names)
{
    *nodes = sw_calloc(n ? n : 1, sizeof(**nodes));
    *names = sw_calloc(n ? n : 1, sizeof(**names));
    for (size_t i = 0; i < n; i++) {
        (*nodes)[i] = ms[i].node;
        (*names)[i] = ms[i].name;
    }
}

/* Every child of dir matching pattern, followed, into *ms. */
static int glob_dir(const sw_source *s, const sw_src_node *dir, const char *pattern, match **ms,
                    size_t *n)
{
    *ms = sw_calloc(dir->nkids ? dir->nkids : 1, sizeof(**ms));
    *n = 0;
    for (size_t i = 0; i < dir->nkids; i++) {
        const sw_src_node *k = dir->kids[i];
        if (k->ignored || fnmatch(pattern, k->name, 0) != 0)
            continue;
        const sw_src_node *t = k;
        int links = 0;
        if (k->type == SW_SRC_SYMLINK) {
            int error = follow(s, dir, k, &links, &t);
            if (error < 0)
                return error;
        }
        (*ms)[(*n)++] = (match){t, k->name};
    }
    qsort(*ms, *n, sizeof(**ms), match_cmp);
    return 0;
}

int sw_source_glob(const sw_source *s, const char *path, const sw_src_node ***nodes,
                   const char ***names, size_t *n)
{
    char clean[PATH_BUF];
    const sw_src_node *dir = NULL;
    match *ms = NULL;
    size_t count = 0;
    int error = clean_rel(path, clean, sizeof(clean));
    if (error < 0)
        return error;
    char *slash = strrchr(clean, '/');
    const char *last = slash ? slash + 1 : clean;
    if (slash)
        *slash = '\0';
    const char *dirpart = slash ? clean : "";
    if (sw_source_has_wildcard(dirpart))
        return sw_error_set(SW_EINVALID,
                            "\"%.200s\": wildcards are supported in the last path "
                            "component only",
                            path);
    if (!sw_source_has_wildcard(last)) {
        const sw_src_node *named = NULL, *target = NULL;
        if (slash)
            *slash = '/';
        error = sw_source_resolve(s, clean, false, &named); /* the name as written */
        if (error == 0)
            error = sw_source_resolve(s, clean, true, &target);
        if (error == 0) {
            ms = sw_calloc(1, sizeof(*ms));
            ms[0] = (match){target, *clean ? named->name : "."};
            count = 1;
        }
    } else {
        error = sw_source_resolve(s, dirpart, true, &dir);
        if (error == 0 && dir->type != SW_SRC_DIR)
            error = sw_error_set(SW_ENOTFOUND, "\"%.200s\" is not a directory", dirpart);
        if (error == 0)
            error = glob_dir(s, dir, last, &ms, &count);
        if (error == 0 && count == 0)
            error = sw_error_set(SW_ENOTFOUND,
                                 "no source files were specified: \"%.200s\" "
                                 "matches nothing in the build context",
                                 path);
    }
    if (error == 0) {
        glob_out(ms, count, nodes, names);
        *n = count;
    }
    sw_free(ms);
    return error;
}

int sw_source_read(const sw_src_node *n, size_t max, char **out, size_t *len)
{
    if (n->type != SW_SRC_FILE)
        return sw_error_set(SW_EINVALID, "\"%.200s\" is not a regular file", n->path);
    int fd = open(n->file, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0)
        return sw_error_set(SW_ERROR, "cannot open %s: %s", n->file, sw_strerror(errno));
    char what[210];
    snprintf(what, sizeof(what), "\"%.200s\"", n->path);
    int error = 0;
    if (n->range && lseek(fd, (off_t)n->off, SEEK_SET) < 0)
        error = sw_error_set(SW_ERROR, "seeking in %s: %s", n->file, sw_strerror(errno));
    if (error == 0)
        error = sw_path_read_fd(fd, n->file, what, n->range ? n->size : UINT64_MAX, max, out, len);
    close(fd);
    return error;
}

/* ---- writing the context out ---- */

static int copy_contents(const sw_src_node *n, int out)
{
    int in = open(n->file, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (in < 0)
        return sw_error_set(SW_ERROR, "cannot open %s: %s", n->file, sw_strerror(errno));
    int error = 0;
    uint64_t left = n->range ? n->size : UINT64_MAX;
    if (n->range && lseek(in, (off_t)n->off, SEEK_SET) < 0)
        error = sw_error_set(SW_ERROR, "seeking in %s: %s", n->file, sw_strerror(errno));
    char buf[65536];
    while (error == 0 && left) {
        ssize_t r = read(in, buf, left < sizeof(buf) ? (size_t)left : sizeof(buf));
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0)
            error = sw_error_set(SW_ERROR, "reading %s: %s", n->file, sw_strerror(errno));
        if (r <= 0)
            break;
        error = sw_path_write_fd(out, n->path, buf, (size_t)r);
        left -= (uint64_t)r;
    }
    if (error == 0 && n->range && left)
        error = sw_error_set(SW_ERROR, "%s ends before \"%.200s\" does", n->file, n->path);
    close(in);
    return error;
}

/* A directory of the output still to fill: its descriptor (owned) and its node. */
typedef struct wq_item {
    int fd;
    const sw_src_node *n;
} wq_item;

/* The directories to fill, shared by the writing threads (creating a file costs the kernel far
 * more than its bytes on some filesystems, and independent directories scale across cores). */
typedef struct wq {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    wq_item *items;
    size_t n, cap;
    size_t busy; /* items being filled */
    int error;   /* the first failure, sticky */
    char msg[1024];
    struct timespec ts[2];
    bool (*stop)(void);
} wq;

#define WQ_MAX_QUEUED 64 /* directories queued (each an open descriptor) before filling inline */

static void wq_push(wq *q, int fd, const sw_src_node *n);

/* Queues fd/n for another thread and returns true, or returns false when the queue is full
 * (the caller fills the directory itself, so open descriptors stay bounded). */
static bool wq_offer(wq *q, int fd, const sw_src_node *n)
{
    pthread_mutex_lock(&q->mu);
    bool room = q->n < WQ_MAX_QUEUED;
    pthread_mutex_unlock(&q->mu);
    if (room)
        wq_push(q, fd, n);
    return room;
}

static void wq_push(wq *q, int fd, const sw_src_node *n)
{
    pthread_mutex_lock(&q->mu);
    if (q->n == q->cap) {
        q->cap = q->cap ? q->cap * 2 : 64;
        q->items = sw_realloc(q->items, q->cap * sizeof(*q->items));
    }
    q->items[q->n++] = (wq_item){fd, n};
    pthread_cond_signal(&q->cv);
    pthread_mutex_unlock(&q->mu);
}

/* The next directory to fill; false once every one is done (or a failure stopped the work). */
static bool wq_pop(wq *q, wq_item *out)
{
    pthread_mutex_lock(&q->mu);
    while (q->n == 0 && q->busy > 0 && !q->error)
        pthread_cond_wait(&q->cv, &q->mu);
    bool got = q->n > 0 && !q->error;
    if (got) {
        *out = q->items[--q->n];
        q->busy++;
    } else {
        pthread_cond_broadcast(&q->cv);
    }
    pthread_mutex_unlock(&q->mu);
    return got;
}

static void wq_done(wq *q, int error)
{
    pthread_mutex_lock(&q->mu);
    q->busy--;
    if (error < 0 && !q->error) {
        q->error = error;
        sw_strlcpy(q->msg, sw_error_msg(), sizeof(q->msg));
    }
    pthread_cond_broadcast(&q->cv);
    pthread_mutex_unlock(&q->mu);
}

/* Creates the entries of n (a directory) in dirfd: files and symlinks at once, directories
 * (0700 until the final pass) queued to be filled by whichever thread is free. */
static int fill_dir(wq *q, int dirfd, const sw_src_node *n)
{
    for (size_t i = 0; i < n->nkids; i++) {
        const sw_src_node *k = n->kids[i];
        const char *name = k->name;
        if (k->ignored)
            continue;
        if (q->stop && q->stop())
            return sw_error_set(SW_EUNAVAILABLE, "stopped");
        if (!*name || strchr(name, '/') || !strcmp(name, ".") || !strcmp(name, ".."))
            return sw_error_set(SW_EINVALID, "bad entry name \"%.200s\"", k->path);
        if (k->type == SW_SRC_SYMLINK) {
            if (symlinkat(k->link, dirfd, name) < 0)
                return sw_error_set(SW_ERROR, "cannot create \"%.200s\": %s", k->path,
                                    sw_strerror(errno));
            utimensat(dirfd, name, q->ts, AT_SYMLINK_NOFOLLOW);
        } else if (k->type == SW_SRC_FILE) {
            int fd =
                openat(dirfd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
            if (fd < 0)
                return sw_error_set(SW_ERROR, "cannot create \"%.200s\": %s", k->path,
                                    sw_strerror(errno));
            int error = copy_contents(k, fd);
            if (error == 0 && (fchmod(fd, k->mode & 07777) < 0 || futimens(fd, q->ts) < 0))
                error = sw_error_set(SW_ERROR, "\"%.200s\": %s", k->path, sw_strerror(errno));
            close(fd);
            if (error < 0)
                return error;
        } else {
            if (mkdirat(dirfd, name, 0700) < 0)
                return sw_error_set(SW_ERROR, "cannot create \"%.200s\": %s", k->path,
                                    sw_strerror(errno));
            int fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
            if (fd < 0)
                return sw_error_set(SW_ERROR, "cannot open \"%.200s\": %s", k->path,
                                    sw_strerror(errno));
            if (!wq_offer(q, fd, k)) { /* depth-first here: at most one fd per level */
                int error = fill_dir(q, fd, k);
                close(fd);
                if (error < 0)
                    return error;
            }
        }
    }
    return 0;
}

static void *write_worker(void *arg)
{
    wq *q = arg;
    wq_item it;
    while (wq_pop(q, &it)) {
        int error = fill_dir(q, it.fd, it.n);
        close(it.fd);
        wq_done(q, error);
    }
    return NULL;
}

/* The final pass, once every entry exists: directory modes and times, deepest first. */
static int finish_dir(const sw_src_node *n, int fd, const struct timespec ts[2], uint32_t mode)
{
    int error = 0;
    for (size_t i = 0; error == 0 && i < n->nkids; i++) {
        const sw_src_node *k = n->kids[i];
        if (k->ignored || k->type != SW_SRC_DIR)
            continue;
        int sub = openat(fd, k->name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (sub < 0)
            return sw_error_set(SW_ERROR, "cannot open \"%.200s\": %s", k->path,
                                sw_strerror(errno));
        error = finish_dir(k, sub, ts, k->mode & 07777);
        close(sub);
    }
    if (error == 0 && (fchmod(fd, mode) < 0 || futimens(fd, ts) < 0))
        error = sw_error_set(SW_ERROR, "\"%.200s\": %s", n->path[0] ? n->path : ".",
                             sw_strerror(errno));
    return error;
}

#define WRITE_THREADS_MAX 4

int sw_source_write_dir(const sw_source *s, const char *dir, int64_t epoch, bool (*stop)(void))
{
    wq q = {.ts = {{.tv_sec = (time_t)epoch}, {.tv_sec = (time_t)epoch}}, .stop = stop};
    if (mkdir(dir, 0700) < 0)
        return sw_error_set(SW_ERROR, "cannot create %s: %s", dir, sw_strerror(errno));
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return sw_error_set(SW_ERROR, "cannot open %s: %s", dir, sw_strerror(errno));
    int top = dup(fd);
    if (top < 0) {
        close(fd);
        return sw_error_set(SW_ERROR, "cannot duplicate a descriptor: %s", sw_strerror(errno));
    }
    pthread_mutex_init(&q.mu, NULL);
    pthread_cond_init(&q.cv, NULL);
    wq_push(&q, top, s->root);
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    size_t want = cpus > WRITE_THREADS_MAX ? WRITE_THREADS_MAX : cpus > 1 ? (size_t)cpus : 1;
    pthread_t threads[WRITE_THREADS_MAX];
    size_t started = 0;
    while (started + 1 < want && pthread_create(&threads[started], NULL, write_worker, &q) == 0)
        started++;
    write_worker(&q);
    for (size_t i = 0; i < started; i++)
        pthread_join(threads[i], NULL);
    for (size_t i = 0; i < q.n; i++) /* left by a failure */
        close(q.items[i].fd);
    int error = q.error;
    if (error < 0)
        sw_error_set(error, "%s", q.msg);
    else
        error = finish_dir(s->root, fd, q.ts, 0755);
    close(fd);
    sw_free(q.items);
    pthread_mutex_destroy(&q.mu);
    pthread_cond_destroy(&q.cv);
    return error;
}

/* ---- .dockerignore ---- */

typedef struct ignore_rule {
    char *text;       /* the cleaned pattern (no leading '/'), each '/' replaced by a NUL */
    const char **seg; /* its segments in text, runs of "**" collapsed into one */
    size_t nseg;
    bool exception; /* "!pattern" */
} ignore_rule;

/* A context path split into segments, and the two rows the matcher works in. A cleaned path of
 * at most SW_TAR_MAX_PATH bytes has at most PATH_BUF / 2 segments. */
typedef struct ignore_path {
    char text[PATH_BUF];
    const char *seg[PATH_BUF / 2];
    size_t nseg;
    bool row[2][PATH_BUF / 2 + 1];
} ignore_path;

static bool is_globstar(const char *seg)
{
    return seg[0] == '*' && seg[1] == '*' && seg[2] == '\0';
}

/* Splits a cleaned context path into p's segments. */
static void ignore_split(ignore_path *p, const char *path)
{
    sw_strlcpy(p->text, path, sizeof(p->text));
    p->nseg = 0;
    for (char *c = p->text; c;) {
        char *slash = strchr(c, '/');
        if (slash)
            *slash = '\0';
        p->seg[p->nseg++] = c;
        c = slash ? slash + 1 : NULL;
    }
}

/* Docker's MatchesOrParentMatches: r matches the path or one of its parent directories, i.e.
 * the first k >= 1 segments of p. "**" spans zero or more whole segments, any other pattern
 * segment matches one path segment (fnmatch). A dynamic programme over the pattern's segments:
 * cur[j] is true when the segments so far match the first j path segments, so the work is
 * segments x path segments at most, never exponential. */
static bool rule_matches(const ignore_rule *r, ignore_path *p, uint64_t *work)
{
    bool *cur = p->row[0], *next = p->row[1];
    memset(cur, 0, (p->nseg + 1) * sizeof(*cur));
    cur[0] = true;
    for (size_t i = 0; i < r->nseg; i++) {
        bool any = false;
        *work += p->nseg + 1; /* one row of the programme */
        if (is_globstar(r->seg[i])) {
            for (size_t j = 0; j <= p->nseg; j++)
                any = next[j] = any || cur[j];
        } else {
            next[0] = false;
            for (size_t j = 0; j < p->nseg; j++) {
                next[j + 1] = cur[j] && fnmatch(r->seg[i], p->seg[j], 0) == 0;
                any = any || next[j + 1];
            }
        }
        if (!any)
            return false;
        bool *t = cur;
        cur = next;
        next = t;
    }
    for (size_t k = 1; k <= p->nseg; k++)
        if (cur[k])
            return true;
    return false;
}

/* A rule for the cleaned pattern clean (line lineno): split into segments, "**" runs collapsed.
 * SW_EINVALID past SW_SOURCE_MAX_PATTERN_SEGMENTS segments. */
static int ignore_rule_new(const char *clean, bool exception, size_t lineno, ignore_rule *r)
{
    size_t nseg = path_segments(clean);
    if (nseg > SW_SOURCE_MAX_PATTERN_SEGMENTS)
        return sw_error_set(SW_EINVALID,
                            "line %zu: the pattern \"%.200s...\" has more than %d path segments",
                            lineno, clean, SW_SOURCE_MAX_PATTERN_SEGMENTS);
    *r = (ignore_rule){.text = sw_strdup(clean), .exception = exception};
    r->seg = sw_calloc(nseg, sizeof(*r->seg));
    for (char *c = r->text; c;) {
        char *slash = strchr(c, '/');
        if (slash)
            *slash = '\0';
        if (!is_globstar(c) || !r->nseg || !is_globstar(r->seg[r->nseg - 1]))
            r->seg[r->nseg++] = c;
        c = slash ? slash + 1 : NULL;
    }
    return 0;
}

static void ignore_rules_free(ignore_rule *rules, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        sw_free(rules[i].text);
        sw_free(rules[i].seg);
    }
    sw_free(rules);
}

/* Parses .dockerignore text into *out[0..*n) (comments, blank lines and "." patterns skipped).
 * On failure *out holds the rules parsed so far. */
static int ignore_parse(const char *text, size_t len, ignore_rule **out, size_t *n)
{
    size_t cap = 0, lineno = 0;
    *out = NULL;
    *n = 0;
    for (const char *p = text, *end = text + len; p < end;) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        const char *le = nl ? nl : end;
        lineno++;
        while (p < le && (*p == ' ' || *p == '\t'))
            p++;
        const char *te = le;
        while (te > p && (te[-1] == ' ' || te[-1] == '\t' || te[-1] == '\r'))
            te--;
        bool exception = p < te && *p == '!';
        p += exception;
        char raw[PATH_BUF], clean[PATH_BUF];
        size_t rl = (size_t)(te - p);
        if (rl && rl < sizeof(raw) && *p != '#') {
            memcpy(raw, p, rl);
            raw[rl] = '\0';
            if (clean_rel(raw, clean, sizeof(clean)) == 0 && *clean) {
                if (*n == cap) {
                    cap = cap ? cap * 2 : 16;
                    *out = sw_realloc(*out, cap * sizeof(**out));
                }
                if (*n == SW_SOURCE_MAX_IGNORE_RULES)
                    return sw_error_set(SW_ELIMIT, "more than %d patterns",
                                        SW_SOURCE_MAX_IGNORE_RULES);
                int error = ignore_rule_new(clean, exception, lineno, &(*out)[*n]);
                if (error < 0)
                    return error;
                (*n)++;
            }
        }
        p = nl ? nl + 1 : end;
    }
    return 0;
}

/* The path of n relative to the context root. */
static const char *ctx_path(const sw_source *s, const sw_src_node *n)
{
    size_t rl = strlen(s->root->path);
    return rl ? n->path + rl + 1 : n->path;
}

static bool under_root(const sw_source *s, const sw_src_node *n)
{
    for (const sw_src_node *p = n->parent; p; p = p->parent)
        if (p == s->root)
            return true;
    return false;
}

int sw_source_ignore(sw_source *s, const char *text, size_t len, size_t *ignored)
{
    ignore_rule *rules = NULL;
    size_t nrules = 0, count = 0;
    uint64_t work = 0;
    ignore_path *path = sw_calloc(1, sizeof(*path));
    int error = ignore_parse(text, len, &rules, &nrules);
    if (error < 0)
        goto done;
    for (size_t i = 0; i < s->nslots; i++) {
        sw_src_node *n = s->slots[i];
        if (!n || !under_root(s, n))
            continue;
        ignore_split(path, ctx_path(s, n));
        bool out = false;
        for (size_t r = nrules; r-- > 0;) /* the last matching rule decides */
            if (rule_matches(&rules[r], path, &work)) {
                out = !rules[r].exception;
                break;
            }
        n->ignored = out;
        /* each rule and path is bounded, their product over a context is not */
        if (work > s->max_ignore_work) {
            error = sw_error_set(SW_ELIMIT,
                                 "matching its %zu patterns against this context takes more than "
                                 "%llu pattern-segment tests: use fewer or simpler patterns",
                                 nrules, (unsigned long long)s->max_ignore_work);
            goto done;
        }
    }
    /* a directory stays when something below it is let back in ("!dir/keep") */
    for (size_t i = 0; i < s->nslots; i++) {
        sw_src_node *n = s->slots[i];
        if (n && under_root(s, n) && !n->ignored)
            for (sw_src_node *p = n->parent; p && p != s->root; p = p->parent)
                p->ignored = false;
    }
    for (size_t i = 0; i < s->nslots; i++)
        count += s->slots[i] && s->slots[i]->ignored;
    if (ignored)
        *ignored = count;
done:
    ignore_rules_free(rules, nrules);
    sw_free(path);
    return error;
}

/* ---- accessors ---- */

const sw_src_node *sw_source_root(const sw_source *s)
{
    return s->root;
}

size_t sw_source_count(const sw_source *s)
{
    return s->count;
}

const char *sw_src_node_name(const sw_src_node *n)
{
    return n->name;
}

sw_src_type sw_src_node_type(const sw_src_node *n)
{
    return n->type;
}

uint32_t sw_src_node_mode(const sw_src_node *n)
{
    return n->mode;
}

const char *sw_src_node_file(const sw_src_node *n)
{
    return n->file;
}

bool sw_src_node_range(const sw_src_node *n, uint64_t *off, uint64_t *size)
{
    *off = n->range ? n->off : 0;
    *size = n->range ? n->size : 0;
    return n->range;
}

const char *sw_src_node_link(const sw_src_node *n)
{
    return n->link;
}

size_t sw_src_node_count(const sw_src_node *n)
{
    return n->nkids;
}

const sw_src_node *sw_src_node_child(const sw_src_node *n, size_t i)
{
    return i < n->nkids ? n->kids[i] : NULL;
}

bool sw_src_node_ignored(const sw_src_node *n)
{
    return n->ignored;
}
