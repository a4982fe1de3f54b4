/* builder: `slipway builder`, the process the build controller starts for one Build (see
 * docs/internals/builds.md for the protocol and docs/builds.md, "The builder", for what it
 * does). Parses the flags, turns SIGTERM/SIGINT into a clean stop (then dies of the same
 * signal, so its parent sees a kill, not a failure) and runs src/builder/builder.c. */
#include "cmd/cmd.h"

#include "builder/backend.h"
#include "builder/builder.h"
#include "util/alloc.h"
#include "util/error.h"
#include "util/str.h"

#include <signal.h>
#include <stdio.h>
#include <string.h>

#define MAX_INSECURE 64

static const char usage_text[] =
    "Usage: slipway builder --server URL --token-file FILE --namespace NS --build NAME [flags]\n"
    "\n"
    "Runs one Build: fetches its source, builds the image from the Dockerfile with a backend\n"
    "(native: daemonless, COPY-only, reproducible; buildah: the whole grammar, RUN included,\n"
    "through buildah as root), pushes it, and reports stages and the digest through the\n"
    "Build's details. The build controller starts it; its output is the build log.\n"
    "\n"
    "Flags:\n"
    "  --server URL                 the API server\n"
    "  --ca FILE                    CA bundle (PEM) for the API server's certificate\n"
    "  --token-file FILE            the build token (POST builds/<name>/token)\n"
    "  --namespace NS               the Build's namespace\n"
    "  --build NAME                 the Build\n"
    "  --insecure-registry HOST:PORT  a registry spoken to over plain HTTP or unverified TLS\n"
    "                               (repeatable; without :PORT it covers every port)\n"
    "  --push-auth FILE             docker config.json with push credentials\n"
    "  --pull-auth FILE             docker config.json with pull credentials\n"
    "  --workdir DIR                where the scratch directory goes (removed at the end)\n"
    "  --threads N                  compression threads (default: online CPUs)\n"
    "  --backends LIST              the backends this build may use (default native,buildah);\n"
    "                               the annotation build.slipway.dev/backend forces one\n"
    "  -h, --help                   this help\n"
    "\n"
    "Environment: SOURCE_DATE_EPOCH (layer and config times, default 0), SLIPWAY_COMPRESSION\n"
    "(gzip, zstd or none; default gzip), SLIPWAY_COMPRESSION_LEVEL (gzip 1-9, default 6;\n"
    "zstd 1-19, default 3); the Build's dockerStrategy.env may set all three.\n"
    "SLIPWAY_BUILDAH (the buildah binary), SLIPWAY_BUILDAH_STORAGE_DRIVER (vfs or overlay;\n"
    "default vfs).\n"
    "Exit status: 0 built and pushed, 1 the build failed (reason reported), 2 usage,\n"
    "killed by SIGTERM/SIGINT after a clean stop (a shell reports 143/130).\n";

typedef struct flags {
    sw_builder_opts o;
    const char *insecure[MAX_INSECURE + 1];
    size_t ninsecure;
    bool help;
} flags;

static volatile sig_atomic_t g_signal; /* the stop signal received, 0 for none */

static void on_signal(int sig)
{
    g_signal = sig;
    sw_builder_request_stop();
}

/* The value of flag argv[*i] ("--f v" or "--f=v"), advancing *i; NULL when missing. */
static const char *value(int argc, char **argv, int *i, const char *name)
{
    const char *a = argv[*i];
    size_t n = strlen(name);
    if (a[n] == '=')
        return a + n + 1;
    if (*i + 1 >= argc)
        return NULL;
    return argv[++*i];
}

static bool is_flag(const char *arg, const char *name)
{
    size_t n = strlen(name);
    return !strncmp(arg, name, n) && (arg[n] == '\0' || arg[n] == '=');
}

static int parse_flag(flags *f, int argc, char **argv, int *i)
{
    static const char *const names[] = {
        "--server",    "--ca",        "--token-file", "--namespace", "--build",
        "--push-auth", "--pull-auth", "--workdir",    "--backends",  "--insecure-registry",
        "--threads"};
    const char *a = argv[*i];
    if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
        f->help = true;
        return 0;
    }
    for (size_t k = 0; k < sizeof(names) / sizeof(names[0]); k++) {
        if (!is_flag(a, names[k]))
            continue;
        const char *v = value(argc, argv, i, names[k]);
        if (!v || !*v)
            return sw_error_set(SW_EINVALID, "flag %s needs a value", names[k]);
        const char **slots[] = {&f->o.server,    &f->o.ca_file, &f->o.token_file,
                                &f->o.ns,        &f->o.build,   &f->o.push_auth,
                                &f->o.pull_auth, &f->o.workdir, &f->o.backends};
        if (k < sizeof(slots) / sizeof(slots[0])) {
            *slots[k] = v;
        } else if (!strcmp(names[k], "--insecure-registry")) {
            if (f->ninsecure == MAX_INSECURE)
                return sw_error_set(SW_EINVALID, "at most %d --insecure-registry flags",
                                    MAX_INSECURE);
            f->insecure[f->ninsecure++] = v;
        } else {
            int64_t t = 0;
            if (sw_str_to_i64(v, &t) < 0 || t < 0 || t > 64)
                return sw_error_set(SW_EINVALID, "--threads wants a number from 0 to 64");
            f->o.threads = (int)t;
        }
        return 0;
    }
    return sw_error_set(SW_EINVALID, "unknown flag %s", a);
}

static int parse(flags *f, int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        int error = parse_flag(f, argc, argv, &i);
        if (error < 0)
            return error;
    }
    if (f->help)
        return 0;
    const char *missing = !f->o.server       ? "--server"
                          : !f->o.token_file ? "--token-file"
                          : !f->o.ns         ? "--namespace"
                          : !f->o.build      ? "--build"
                                             : NULL;
    if (missing)
        return sw_error_set(SW_EINVALID, "%s is required", missing);
    if (f->o.backends && sw_backend_list_check(f->o.backends) < 0)
        return SW_EINVALID;
    f->o.insecure_registries = f->ninsecure ? f->insecure : NULL;
    return 0;
}

int sw_cmd_builder(int argc, char **argv)
{
    flags f = {.o = SW_BUILDER_OPTS_INIT};
    if (parse(&f, argc, argv) < 0) {
        fprintf(stderr, "error: %s\nSee 'slipway builder --help'.\n", sw_error_msg());
        return 2;
    }
    if (f.help) {
        fputs(usage_text, stdout);
        return 0;
    }
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    signal(SIGPIPE, SIG_IGN); /* libcurl runs with CURLOPT_NOSIGNAL */
    f.o.log = stdout;
    int error = sw_builder_run(&f.o); /* prints the outcome itself */
    if (sw_builder_stop_requested() && g_signal) {
        /* stopped cleanly; now end as the signal would have, so the build controller tells a
         * kill from outside (Error/BuilderKilled) from a failed build (Failed) */
        fflush(NULL);
        signal(g_signal, SIG_DFL);
        raise(g_signal);
    }
    return error < 0 ? 1 : 0;
}
