/* path: lexical path cleaning, removing a directory tree, and reading and atomically replacing
 * small files (see path.h). */
#include "util/path.h"

#include "util/buf.h"
#include "util/error.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int sw_path_clean(const char *path, bool clamp, char *out, size_t n)
{
    size_t len = 0;
    const char *p = path;
    if (n == 0)
        return SW_ELIMIT;
    out[0] = '\0';
    while (*p) {
        const char *e = strchr(p, '/');
        size_t cl = e ? (size_t)(e - p) : strlen(p);
        if (cl == 2 && p[0] == '.' && p[1] == '.') {
            if (len == 0 && !clamp)
                return SW_EINVALID;
            while (len > 0 && out[len - 1] != '/')
                len--;
            len = len > 0 ? len - 1 : 0;
            out[len] = '\0';
        } else if (cl && !(cl == 1 && p[0] == '.')) {
            if (len + cl + 2 > n)
                return SW_ELIMIT;
            if (len)
                out[len++] = '/';
            memcpy(out + len, p, cl);
            len += cl;
            out[len] = '\0';
        }
        p += cl;
        while (*p == '/')
            p++;
    }
    return 0;
}

static _Thread_local bool remove_failed;

static int remove_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)flag;
    (void)ftw;
    if (remove(path) < 0 && errno != ENOENT)
        remove_failed = true;
    return 0; /* keep going: remove what can be */
}

int sw_path_remove_tree(const char *dir)
{
    if (!dir || !dir[0])
        return 0;
    remove_failed = false;
    if (nftw(dir, remove_one, 16, FTW_DEPTH | FTW_PHYS) < 0 && errno != ENOENT)
        return -1;
    return remove_failed ? -1 : 0;
}

int sw_path_read_fd(int fd, const char *file, const char *what, uint64_t count, size_t max,
                    char **out, size_t *len)
{
    sw_buf b = SW_BUF_INIT(max);
    char chunk[65536];
    int error = 0;
    while (error == 0 && count > 0) {
        ssize_t r = read(fd, chunk, count < sizeof(chunk) ? (size_t)count : sizeof(chunk));
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0)
            error = sw_error_set(SW_ERROR, "reading %s: %s", file, sw_strerror(errno));
        else if (r == 0)
            break;
        else if (sw_buf_put(&b, chunk, (size_t)r) < 0)
            error = sw_error_set(SW_ELIMIT, "%s is larger than %zu bytes", what, max);
        else if (count != UINT64_MAX)
            count -= (uint64_t)r;
    }
    if (error < 0) {
        sw_buf_dispose(&b);
        return error;
    }
    *out = sw_buf_detach(&b, len);
    return 0;
}

int sw_path_read(const char *path, size_t max, bool nofollow, char **out, size_t *len)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC | (nofollow ? O_NOFOLLOW : 0));
    if (fd < 0)
        return errno == ENOENT
                   ? SW_ENOTFOUND
                   : sw_error_set(SW_ERROR, "cannot open %s: %s", path, sw_strerror(errno));
    int error = sw_path_read_fd(fd, path, path, UINT64_MAX, max, out, len);
    close(fd);
    return error == SW_ELIMIT ? SW_EINVALID : error; /* the message stays */
}

/* fsyncs the directory holding path, so a rename into it is durable. */
static int sync_parent(const char *path)
{
    char dir[4096] = ".";
    const char *slash = strrchr(path, '/');
    if (slash == path) {
        dir[0] = '/'; /* a file in the root directory */
    } else if (slash) {
        size_t n = (size_t)(slash - path);
        if (n >= sizeof(dir))
            return -1;
        memcpy(dir, path, n);
        dir[n] = '\0';
    }
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    int rc = fsync(fd);
    close(fd);
    return rc;
}

int sw_path_write_fd(int fd, const char *what, const void *data, size_t len)
{
    const unsigned char *p = data;
    while (len) {
        ssize_t w = write(fd, p, len);
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0)
            return sw_error_set(SW_ERROR, "writing %s: %s", what, sw_strerror(errno));
        p += w;
        len -= (size_t)w;
    }
    return 0;
}

bool sw_path_find_exec(const char *name, char *out, size_t n)
{
    const char *path = getenv("PATH");
    if (!path || !*path)
        path = "/usr/local/bin:/usr/bin:/bin";
    while (*path) {
        size_t len = strcspn(path, ":");
        if (len && (size_t)snprintf(out, n, "%.*s/%s", (int)len, path, name) < n &&
            access(out, X_OK) == 0)
            return true;
        path += len + (path[len] == ':');
    }
    return false;
}

int sw_path_write(const char *path, const void *data, size_t len, mode_t mode)
{
    char tmp[4200];
    if ((size_t)snprintf(tmp, sizeof(tmp), "%s.tmp", path) >= sizeof(tmp))
        return sw_error_set(SW_ERROR, "cannot write %s: path too long", path);
    unlink(tmp); /* a leftover of a crash (a file, or a symlink planted there) goes first */
    int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, mode);
    if (fd < 0)
        return sw_error_set(SW_ERROR, "cannot write %s: %s", tmp, sw_strerror(errno));
    const char *p = data;
    size_t off = 0;
    int e = 0;
    while (off < len && e == 0) {
        ssize_t w = write(fd, p + off, len - off);
        if (w < 0 && errno != EINTR)
            e = errno;
        else if (w > 0)
            off += (size_t)w;
    }
    if (e == 0 && (fchmod(fd, mode) < 0 || fsync(fd) < 0))
        e = errno;
    if (close(fd) < 0 && e == 0)
        e = errno;
    if (e == 0 && rename(tmp, path) < 0)
        e = errno;
    if (e != 0) {
        unlink(tmp);
        return sw_error_set(SW_ERROR, "cannot write %s: %s", path, sw_strerror(e));
    }
    sync_parent(path);
    return 0;
}
