/* build_process: the process build strategy (see build_process.h). posix_spawn with the signal
 * mask cleared and the usual signals at their defaults (the server blocks or ignores them in
 * every thread); exits are detected with waitid(WNOWAIT) so the process group can be swept of
 * stragglers while its id is still reserved, then the child is reaped. */
#include "controllers/build_process.h"

#include "util/path.h"
#include "util/alloc.h"
#include "util/error.h"
#include "util/json.h"
#include "util/log.h"
#include "util/str.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

#define MAX_ARGS 96

typedef struct proc_strategy {
    sw_build_strategy base;
    char *bin;
    char *tmp_dir;
} proc_strategy;

typedef struct proc_run {
    pid_t pid;
    int fd;               /* read end of the output pipe, -1 once closed */
    bool exited;          /* reaped */
    sw_build_state state; /* once exited */
    int value;
    char dir[1024]; /* private temporary directory */
} proc_run;

/* Writes len bytes to dir/name with mode 0600; the path goes to out. */
static int write_private(const char *dir, const char *name, const char *data, size_t len, char *out,
                         size_t n)
{
    snprintf(out, n, "%s/%s", dir, name);
    int fd = open(out, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd < 0)
        return sw_error_set(SW_ERROR, "cannot create %s: %s", out, sw_strerror(errno));
    size_t off = 0;
    while (off < len) {
        ssize_t w = write(fd, data + off, len - off);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            int e = errno;
            close(fd);
            return sw_error_set(SW_ERROR, "cannot write %s: %s", out, sw_strerror(e));
        }
        off += (size_t)w;
    }
    if (close(fd) < 0)
        return sw_error_set(SW_ERROR, "cannot write %s: %s", out, sw_strerror(errno));
    return 0;
}

/* This process's pid namespace (the inode of /proc/self/ns/pid): a pid only names a process
 * within one namespace (servers in containers may share a /tmp). */
static uint64_t pid_ns(void)
{
    struct stat st;
    return stat("/proc/self/ns/pid", &st) == 0 ? (uint64_t)st.st_ino : 0;
}

/* The argument vector; strings point into files[] and the build, which outlive the spawn. */
typedef struct spawn_args {
    const char *path; /* what is executed; argv[0] is what `ps` shows */
    char *argv[MAX_ARGS + 1];
    int argc;
    char token[PATH_MAX], ca[PATH_MAX], push[PATH_MAX], pull[PATH_MAX], work[PATH_MAX];
} spawn_args;

static void arg(spawn_args *a, const char *s)
{
    if (a->argc < MAX_ARGS)
        a->argv[a->argc++] = (char *)s;
    a->argv[a->argc] = NULL;
}

/* Writes the private files and assembles the builder's command line. */
static int prepare(proc_strategy *ps, proc_run *r, const json_t *build, const char *token,
                   const sw_build_env *env, spawn_args *a)
{
    char owner[64], path[PATH_MAX];
    int n =
        snprintf(owner, sizeof(owner), "%ld %llu\n", (long)getpid(), (unsigned long long)pid_ns());
    int error = write_private(r->dir, "owner", owner, (size_t)n, path, sizeof(path));
    if (error == 0)
        error = write_private(r->dir, "token", token, strlen(token), a->token, sizeof(a->token));
    if (error == 0 && env->ca_pem && env->ca_len)
        error = write_private(r->dir, "ca.pem", env->ca_pem, env->ca_len, a->ca, sizeof(a->ca));
    if (error == 0 && env->push_auth)
        error = write_private(r->dir, "push-auth.json", env->push_auth, strlen(env->push_auth),
                              a->push, sizeof(a->push));
    if (error == 0 && env->pull_auth)
        error = write_private(r->dir, "pull-auth.json", env->pull_auth, strlen(env->pull_auth),
                              a->pull, sizeof(a->pull));
    snprintf(a->work, sizeof(a->work), "%s/work", r->dir);
    if (error == 0 && mkdir(a->work, 0700) < 0)
        error = sw_error_set(SW_ERROR, "cannot create %s: %s", a->work, sw_strerror(errno));
    if (error < 0)
        return error;
    /* /proc/self/exe keeps working even when the binary is rebuilt under a running server */
    a->path = ps->bin;
    arg(a, strcmp(ps->bin, "/proc/self/exe") ? ps->bin : "slipway");
    arg(a, "builder");
    arg(a, "--server");
    arg(a, env->server);
    if (a->ca[0]) {
        arg(a, "--ca");
        arg(a, a->ca);
    }
    arg(a, "--token-file");
    arg(a, a->token);
    arg(a, "--namespace");
    arg(a, sw_json_str_at(build, "metadata.namespace"));
    arg(a, "--build");
    arg(a, sw_json_str_at(build, "metadata.name"));
    for (size_t i = 0; env->insecure_registries && env->insecure_registries[i]; i++) {
        arg(a, "--insecure-registry");
        arg(a, env->insecure_registries[i]);
    }
    if (a->push[0]) {
        arg(a, "--push-auth");
        arg(a, a->push);
    }
    if (a->pull[0]) {
        arg(a, "--pull-auth");
        arg(a, a->pull);
    }
    arg(a, "--workdir");
    arg(a, a->work);
    if (env->backends) {
        arg(a, "--backends");
        arg(a, env->backends);
    }
    if (a->argc >= MAX_ARGS)
        return sw_error_set(SW_ELIMIT, "too many builder arguments");
    return 0;
}

/* posix_spawn with stdout+stderr on wfd, stdin on /dev/null, its own process group. */
static int spawn(proc_run *r, spawn_args *a, int wfd)
{
    posix_spawn_file_actions_t fa;
    posix_spawnattr_t attr;
    sigset_t none, defaults;
    sigemptyset(&none);
    sigemptyset(&defaults);
    int sigs[] = {SIGPIPE, SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGCHLD, SIGUSR1, SIGUSR2};
    for (size_t i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++)
        sigaddset(&defaults, sigs[i]);
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_adddup2(&fa, wfd, 1);
    posix_spawn_file_actions_adddup2(&fa, wfd, 2);
    posix_spawn_file_actions_addclosefrom_np(&fa, 3);
    posix_spawnattr_init(&attr);
    posix_spawnattr_setsigmask(&attr, &none);
    posix_spawnattr_setsigdefault(&attr, &defaults);
    posix_spawnattr_setpgroup(&attr, 0);
    posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF |
                                        POSIX_SPAWN_SETPGROUP);
    int rc = posix_spawn(&r->pid, a->path, &fa, &attr, a->argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    posix_spawnattr_destroy(&attr);
    if (rc != 0)
        return sw_error_set(SW_ERROR, "cannot start the builder %s: %s", a->path, sw_strerror(rc));
    return 0;
}

static int proc_start(void *self, const json_t *build, const char *token, const sw_build_env *env,
                      void **out)
{
    proc_strategy *ps = self;
    proc_run *r = sw_calloc(1, sizeof(*r));
    spawn_args *a = sw_calloc(1, sizeof(*a));
    int p[2] = {-1, -1};
    int error = 0;
    r->fd = -1;
    snprintf(r->dir, sizeof(r->dir), "%s/slipway-build-XXXXXX", ps->tmp_dir);
    if (!mkdtemp(r->dir)) {
        error = sw_error_set(SW_ERROR, "cannot create a directory in %s: %s", ps->tmp_dir,
                             sw_strerror(errno));
        r->dir[0] = '\0';
        goto done;
    }
    if ((error = prepare(ps, r, build, token, env, a)) < 0)
        goto done;
    if (pipe2(p, O_CLOEXEC) < 0) {
        error = sw_error_set(SW_ERROR, "cannot create a pipe: %s", sw_strerror(errno));
        goto done;
    }
    if ((error = spawn(r, a, p[1])) < 0)
        goto done;
    char pid[32], path[PATH_MAX];
    int n = snprintf(pid, sizeof(pid), "%ld\n", (long)r->pid);
    write_private(r->dir, "builder", pid, (size_t)n, path, sizeof(path)); /* for sweep_orphans */
    r->fd = p[0];
    p[0] = -1;
    fcntl(r->fd, F_SETFL, fcntl(r->fd, F_GETFL) | O_NONBLOCK);
done:
    if (p[0] >= 0)
        close(p[0]);
    if (p[1] >= 0)
        close(p[1]);
    sw_free(a);
    if (error < 0) {
        sw_path_remove_tree(r->dir);
        sw_free(r);
        return error;
    }
    *out = r;
    return 0;
}

static int proc_poll(void *self, void *run, sw_build_state *state, int *value)
{
    proc_run *r = run;
    if (!r->exited) {
        siginfo_t si;
        memset(&si, 0, sizeof(si));
        /* WNOWAIT keeps the zombie, so its process group id cannot be reused while the group
         * is swept of whatever the builder left behind. */
        int rc = waitid(P_PID, (id_t)r->pid, &si, WEXITED | WNOHANG | WNOWAIT);
        if (rc < 0 && errno != EINTR)
            return sw_error_set(SW_ERROR, "cannot wait for the builder: %s", sw_strerror(errno));
        if (rc == 0 && si.si_pid == r->pid) {
            kill(-r->pid, SIGKILL);
            int status = 0;
            while (waitpid(r->pid, &status, 0) < 0 && errno == EINTR)
                ;
            r->exited = true;
            if (WIFSIGNALED(status)) {
                r->state = SW_BUILD_SIGNALLED;
                r->value = WTERMSIG(status);
            } else {
                r->state = SW_BUILD_EXITED;
                r->value = WEXITSTATUS(status);
            }
        }
    }
    *state = r->exited ? r->state : SW_BUILD_RUNNING;
    *value = r->exited ? r->value : 0;
    return 0;
}

static int proc_read(void *self, void *run, char *buf, size_t cap, int timeout_ms, size_t *got,
                     bool *eof)
{
    proc_run *r = run;
    *got = 0;
    *eof = r->fd < 0;
    if (r->fd < 0) {
        if (timeout_ms > 0)
            usleep((useconds_t)timeout_ms * 1000);
        return 0;
    }
    struct pollfd pfd = {.fd = r->fd, .events = POLLIN};
    int rc = poll(&pfd, 1, timeout_ms);
    if (rc <= 0)
        return 0; /* timeout or EINTR: nothing yet */
    ssize_t n = read(r->fd, buf, cap);
    if (n > 0) {
        *got = (size_t)n;
    } else if (n == 0 || (errno != EAGAIN && errno != EINTR)) {
        close(r->fd);
        r->fd = -1;
        *eof = true;
    }
    return 0;
}

static int proc_cancel(void *self, void *run, bool force)
{
    proc_run *r = run;
    if (r->exited)
        return 0;
    int sig = force ? SIGKILL : SIGTERM;
    if (kill(-r->pid, sig) < 0 && kill(r->pid, sig) < 0 && errno != ESRCH)
        return sw_error_set(SW_ERROR, "cannot signal the builder: %s", sw_strerror(errno));
    return 0;
}

static void proc_forget(void *self, void *run)
{
    proc_run *r = run;
    if (!r)
        return;
    if (!r->exited) {
        kill(-r->pid, SIGKILL);
        kill(r->pid, SIGKILL);
        while (waitpid(r->pid, NULL, 0) < 0 && errno == EINTR)
            ;
    }
    if (r->fd >= 0)
        close(r->fd);
    sw_path_remove_tree(r->dir);
    sw_free(r);
}

static void proc_free(void *self)
{
    proc_strategy *ps = self;
    if (!ps)
        return;
    sw_free(ps->bin);
    sw_free(ps->tmp_dir);
    sw_free(ps);
}

/* The pid in dir/name, or 0. */
/* The pid at the start of dir/name, or 0; *ns (if not NULL) gets the number after it (the
 * pid namespace the owner wrote, see pid_ns), 0 when absent. */
static long read_pid(const char *dir, const char *name, uint64_t *ns)
{
    char path[PATH_MAX], *text = NULL;
    uint64_t v = 0, inode = 0;
    snprintf(path, sizeof(path), "%s/%s", dir, name);
    if (sw_path_read(path, 64, true, &text, NULL) < 0)
        return 0;
    const char *p = text;
    bool ok = sw_parse_u64(&p, INT32_MAX, &v) == 0 && v >= 2;
    if (ok && *p == ' ') {
        p++;
        if (sw_parse_u64(&p, UINT64_MAX, &inode) < 0)
            inode = 0;
    }
    sw_free(text);
    if (ns)
        *ns = inode;
    return ok ? (long)v : 0;
}

/* Whether process pid is the builder of dir: its arguments hold "--token-file" followed by
 * exactly <dir>/token (the pid of a builder long gone may have been reused by anything else). */
static bool runs_in(long pid, const char *dir)
{
    char path[64], want[PATH_MAX + 8], *cmd = NULL;
    size_t n = 0;
    snprintf(path, sizeof(path), "/proc/%ld/cmdline", pid);
    snprintf(want, sizeof(want), "%s/token", dir);
    if (sw_path_read(path, 64 * 1024, false, &cmd, &n) < 0)
        return false;
    bool found = false, after_flag = false;
    for (size_t i = 0; i < n && !found; i += strlen(cmd + i) + 1) { /* NUL-separated */
        found = after_flag && !strcmp(cmd + i, want);
        after_flag = !strcmp(cmd + i, "--token-file");
    }
    sw_free(cmd);
    return found;
}

/* Whether name in tmp is a directory this server's mkdtemp could have made: the exact name
 * shape, a real directory (not a symlink), ours, mode 0700. Anyone may write to a shared /tmp:
 * a planted directory must not make us kill a process or remove a tree. */
static bool our_build_dir(const char *tmp, const char *name, char *dir, size_t n)
{
    static const char prefix[] = "slipway-build-";
    struct stat st;
    if (!sw_str_prefix(name, prefix) || strlen(name) != sizeof(prefix) - 1 + 6)
        return false;
    for (const char *p = name + sizeof(prefix) - 1; *p; p++)
        if (!isalnum((unsigned char)*p))
            return false;
    int k = snprintf(dir, n, "%s/%s", tmp, name);
    return k > 0 && (size_t)k < n && lstat(dir, &st) == 0 && S_ISDIR(st.st_mode) &&
           st.st_uid == geteuid() && (st.st_mode & 07777) == 0700;
}

/* A server that was killed (or crashed) leaves its builders running, re-parented to init, and
 * their directories with tokens and push credentials behind. At start, every
 * slipway-build-* directory in tmp whose owner process is gone is cleaned up: its builder
 * (checked by command line) is killed with its process group, and the directory removed.
 * Directories of a running server (another data dir on the same host) are left alone. */
static void sweep_orphans(const char *tmp)
{
    DIR *d = opendir(tmp);
    struct dirent *e;
    while (d && (e = readdir(d)) != NULL) {
        char dir[PATH_MAX];
        if (!our_build_dir(tmp, e->d_name, dir, sizeof(dir)))
            continue;
        uint64_t ns = 0;
        long owner = read_pid(dir, "owner", &ns), builder = read_pid(dir, "builder", NULL);
        if (!owner || ns != pid_ns() || owner == (long)getpid() || kill((pid_t)owner, 0) == 0 ||
            errno != ESRCH)
            continue; /* alive, or another namespace's pid: not ours to judge */
        if (builder && runs_in(builder, dir))
            kill(-(pid_t)builder, SIGKILL);
        sw_log(SW_LOG_INFO, "removed %s, left by a server (pid %ld) that is gone", dir, owner);
        sw_path_remove_tree(dir);
    }
    if (d)
        closedir(d);
}

int sw_build_process_strategy_new(sw_build_strategy **out, const sw_build_process_opts *opts)
{
    proc_strategy *ps = sw_calloc(1, sizeof(*ps));
    const char *bin =
        opts && opts->builder_bin && *opts->builder_bin ? opts->builder_bin : "/proc/self/exe";
    const char *tmp = opts && opts->tmp_dir ? opts->tmp_dir : getenv("TMPDIR");
    if (!tmp || !*tmp)
        tmp = "/tmp";
    if (access(bin, X_OK) < 0) {
        int e = errno;
        sw_free(ps);
        return sw_error_set(SW_EINVALID, "the builder %s cannot be run: %s", bin, sw_strerror(e));
    }
    ps->bin = sw_strdup(bin);
    ps->tmp_dir = sw_strdup(tmp);
    sweep_orphans(tmp);
    ps->base.version = SW_BUILD_STRATEGY_VERSION;
    ps->base.self = ps;
    ps->base.start = proc_start;
    ps->base.poll = proc_poll;
    ps->base.read_output = proc_read;
    ps->base.cancel = proc_cancel;
    ps->base.forget = proc_forget;
    ps->base.free = proc_free;
    *out = &ps->base;
    return 0;
}
