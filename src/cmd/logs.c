/* logs: `slipway logs build/<name>` and `slipway logs bc/<name>`, as `oc logs` for builds: the
 * build's log from builds/<n>/log, followed with -f until the build finishes; a BuildConfig
 * stands for its latest build (status.lastVersion, or --version). The server waits up to 30 s
 * for a build that has not started. Also the log streaming start-build --follow uses.
 * See docs/cli.md. */
#include "cmd/cli.h"
#include "cmd/cmd.h"

#include "util/buf.h"
#include "util/error.h"
#include "util/json.h"
#include "util/str.h"

#include <stdio.h>
#include <string.h>

typedef struct logs_opts {
    bool follow;
    const char *tail;    /* --tail, or NULL */
    const char *version; /* --version, or NULL */
    long long tail_lines;
    long long version_n;
    bool config;      /* the argument names a BuildConfig */
    const char *name; /* the build's or config's name (borrowed from argv) */
} logs_opts;

static int write_out(const char *data, size_t len, void *payload)
{
    (void)payload;
    if (!data || !len)
        return 0;
    if (fwrite(data, 1, len, stdout) != len)
        return sw_error_set(SW_ERROR, "cannot write the log to stdout");
    fflush(stdout);
    return 0;
}

int sw_cmd_build_log(struct sw_client *c, const char *ns, const char *build, bool follow,
                     long long tail_lines)
{
    sw_buf path = SW_BUF_INIT(8192);
    char n[32];
    sw_stream_opts opts = {0};
    int error = sw_client_path(&path, &sw_res_builds, ns, build, "log");
    if (error == 0 && follow)
        error = sw_client_query(&path, "follow", "true");
    if (error == 0 && tail_lines >= 0) {
        snprintf(n, sizeof(n), "%lld", tail_lines);
        error = sw_client_query(&path, "tailLines", n);
    }
    if (error == 0)
        error = sw_buf_error(&path);
    if (error == 0)
        error = sw_client_stream(c, sw_buf_cstr(&path), &opts, write_out, NULL);
    sw_buf_dispose(&path);
    return error;
}

/* TYPE/NAME or NAME: builds ("build", "builds", "build.build.openshift.io") or build configs
 * ("bc", "buildconfig", "buildconfigs", "buildconfig.build.openshift.io"). */
static int parse_target(logs_opts *o, const char *arg)
{
    static const char *const builds[] = {"build", "builds", "build.build.openshift.io",
                                         "builds.build.openshift.io", NULL};
    static const char *const configs[] = {"bc",
                                          "buildconfig",
                                          "buildconfigs",
                                          "buildconfig.build.openshift.io",
                                          "buildconfigs.build.openshift.io",
                                          NULL};
    const char *slash = strchr(arg, '/');
    o->name = slash ? slash + 1 : arg;
    if (!*o->name || strchr(o->name, '/'))
        return sw_error_set(SW_EINVALID, "expected build/NAME or bc/NAME, not \"%s\"", arg);
    if (!slash)
        return 0;
    size_t len = (size_t)(slash - arg);
    for (size_t i = 0; configs[i]; i++)
        if (strlen(configs[i]) == len && !strncmp(arg, configs[i], len))
            o->config = true;
    bool known = o->config;
    for (size_t i = 0; builds[i]; i++)
        if (strlen(builds[i]) == len && !strncmp(arg, builds[i], len))
            known = true;
    if (!known)
        return sw_error_set(SW_EINVALID,
                            "slipway logs shows the logs of builds: expected build/NAME or "
                            "bc/NAME, not \"%.*s/...\"",
                            (int)len, arg);
    return 0;
}

static int parse_number(const char *flag, const char *value, long long min, long long *out)
{
    int64_t v;
    if (sw_str_to_i64(value, &v) < 0 || v < min)
        return sw_error_set(SW_EINVALID,
                            "invalid argument \"%s\" for \"--%s\": expected an "
                            "integer of at least %lld",
                            value, flag, min);
    *out = (long long)v;
    return 0;
}

static int check_args(const sw_cli *cli, logs_opts *o)
{
    o->tail_lines = -1;
    if (cli->nargs != 1)
        return sw_error_set(SW_EINVALID, "%s",
                            cli->nargs ? "logs takes one build/NAME or bc/NAME"
                                       : "you must give a build/NAME or bc/NAME");
    int error = parse_target(o, cli->args[0]);
    if (error == 0 && o->tail)
        error = parse_number("tail", o->tail, -1, &o->tail_lines);
    if (error == 0 && o->version) {
        if (!o->config)
            return sw_error_set(SW_EINVALID, "--version is only valid with bc/NAME");
        error = parse_number("version", o->version, 1, &o->version_n);
    }
    return error;
}

/* The build a BuildConfig stands for: --version, else its status.lastVersion. */
static int latest_build(sw_cli *cli, const logs_opts *o, char *out, size_t n)
{
    json_t *bc = NULL;
    int64_t last = 0;
    int error = sw_client_get(cli->client, &sw_res_buildconfigs, cli->ns, o->name, &bc);
    if (error < 0)
        return error;
    sw_json_int_at(bc, "status.lastVersion", &last);
    json_decref(bc);
    if (o->version)
        last = o->version_n;
    if (last <= 0)
        return sw_error_set(SW_ENOTFOUND, "no builds found for \"%s\"", o->name);
    if ((size_t)snprintf(out, n, "%s-%lld", o->name, (long long)last) >= n)
        return sw_error_set(SW_EINVALID, "the build config name \"%.64s...\" is too long", o->name);
    return 0;
}

static int run(sw_cli *cli, const logs_opts *o)
{
    char build[512];
    int error = 0;
    if (o->config)
        error = latest_build(cli, o, build, sizeof(build));
    else
        sw_strlcpy(build, o->name, sizeof(build));
    if (error == 0)
        error = sw_cmd_build_log(cli->client, cli->ns, build, o->follow, o->tail_lines);
    return error;
}

int sw_cmd_logs(int argc, char **argv)
{
    logs_opts o = {0};
    sw_cli cli;
    int rc;
    const sw_cli_flag flags[] = {
        {.name = "follow",
         .short_name = 'f',
         .kind = SW_CLI_BOOL,
         .value = &o.follow,
         .help = "Stream the log until the build finishes."},
        {.name = "tail",
         .kind = SW_CLI_STRING,
         .value = &o.tail,
         .arg = "N",
         .help = "Only the last N lines (-1, the default: all of it)."},
        {.name = "version",
         .kind = SW_CLI_STRING,
         .value = &o.version,
         .arg = "N",
         .help = "With bc/NAME: the log of build number N instead of the latest."},
    };
    const sw_cli_command cmd = {
        .name = "logs",
        .usage = "build/NAME | bc/NAME",
        .summary =
            "Print the log of a build.\n"
            "\n"
            "bc/NAME prints the log of the configuration's latest build (status.lastVersion).\n"
            "A build that has not started yet is waited for, up to 30 seconds; with --follow\n"
            "the log is streamed until the build finishes.",
        .examples = "  slipway logs build/app-1\n"
                    "  slipway logs -f bc/app\n"
                    "  slipway logs --tail=20 build/app-3\n",
        .flags = flags,
        .nflags = sizeof(flags) / sizeof(flags[0]),
    };
    if (sw_cli_start(&cli, &cmd, argc, argv, &rc))
        return rc;
    if (check_args(&cli, &o) < 0)
        return sw_cli_usage_error(&cli);
    cli.timeout_ms = 0;
    int error = sw_cli_connect(&cli);
    if (error == 0)
        error = run(&cli, &o);
    return sw_cli_finish(&cli, error);
}
