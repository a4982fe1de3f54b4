/* cancel_build: `slipway cancel-build <build>...` and `slipway cancel-build bc/<name>`, as
 * `oc cancel-build`: asks for cancellation by setting status.cancelled=true (a merge patch on
 * the status subresource); the build controller stops the builder and marks the build
 * Cancelled. bc/<name> stands for every build of the config that has not finished; --state
 * narrows to New, Pending or Running builds. See docs/cli.md. */
#include "cmd/cli.h"
#include "cmd/cmd.h"

#include "kinds/build.h"
#include "util/buf.h"
#include "util/error.h"
#include "util/json.h"
#include "util/str.h"

#include <stdio.h>
#include <string.h>

#define BC_LABEL "openshift.io/build-config.name"

typedef struct cancel_opts {
    const char *state; /* --state, or NULL */
    char phase[16];    /* the phase --state names ("Running"), or "" */
    bool failed;       /* some build could not be cancelled */
} cancel_opts;

/* The kind part of TYPE/NAME: 'b' build, 'c' build config, 0 unknown. */
static char arg_kind(const char *arg, const char **name)
{
    static const char *const builds[] = {"build", "builds", "build.build.openshift.io", NULL};
    static const char *const configs[] = {"bc", "buildconfig", "buildconfigs",
                                          "buildconfig.build.openshift.io", NULL};
    const char *slash = strchr(arg, '/');
    *name = slash ? slash + 1 : arg;
    if (!**name || strchr(*name, '/'))
        return 0;
    if (!slash)
        return 'b';
    size_t len = (size_t)(slash - arg);
    for (size_t i = 0; builds[i]; i++)
        if (strlen(builds[i]) == len && !strncmp(arg, builds[i], len))
            return 'b';
    for (size_t i = 0; configs[i]; i++)
        if (strlen(configs[i]) == len && !strncmp(arg, configs[i], len))
            return 'c';
    return 0;
}

static int check_args(const sw_cli *cli, cancel_opts *o)
{
    static const char *const states[] = {"new",     "New",     "pending", "Pending",
                                         "running", "Running", NULL};
    const char *name;
    if (cli->nargs == 0)
        return sw_error_set(SW_EINVALID, "you must give at least one build (NAME or "
                                         "build/NAME) or bc/NAME");
    for (size_t i = 0; i < cli->nargs; i++)
        if (!arg_kind(cli->args[i], &name))
            return sw_error_set(SW_EINVALID, "expected NAME, build/NAME or bc/NAME, not \"%s\"",
                                cli->args[i]);
    if (!o->state)
        return 0;
    for (size_t i = 0; states[i]; i += 2) {
        if (!strcmp(o->state, states[i]) || !strcmp(o->state, states[i + 1])) {
            sw_strlcpy(o->phase, states[i + 1], sizeof(o->phase));
            return 0;
        }
    }
    return sw_error_set(SW_EINVALID, "invalid --state \"%s\": must be new, pending or running",
                        o->state);
}

static int mark_cancelled(sw_cli *cli, const char *name)
{
    json_t *patch = json_pack("{s:{s:b}}", "status", "cancelled", 1);
    int error = sw_client_patch_sub(cli->client, &sw_res_builds, cli->ns, name, "status", "merge",
                                    patch, NULL);
    json_decref(patch);
    if (error == 0) {
        printf("build.build.openshift.io/%s marked for cancellation, waiting to be cancelled\n",
               name);
        fflush(stdout);
    }
    return error;
}

/* One build the user named: refused (and reported) when it already finished. */
static int cancel_named(sw_cli *cli, cancel_opts *o, const char *name)
{
    json_t *b = NULL;
    int error = sw_client_get(cli->client, &sw_res_builds, cli->ns, name, &b);
    if (error < 0)
        return error;
    const char *phase = sw_json_str_at(b, "status.phase");
    if (!phase)
        phase = "New";
    if (sw_build_phase_terminal(phase)) {
        fprintf(stderr, "error: build %s/%s is already %s\n", cli->ns, name, phase);
        o->failed = true;
    } else if (!o->phase[0] || !strcmp(o->phase, phase)) {
        error = mark_cancelled(cli, name);
    }
    json_decref(b);
    return error;
}

/* Every unfinished build of config bc (those in --state's phase when given). */
static int cancel_config(sw_cli *cli, cancel_opts *o, const char *bc)
{
    json_t *cfg = NULL, *list = NULL, *b;
    sw_buf sel = SW_BUF_INIT(1024);
    size_t i, n = 0;
    int error = sw_client_get(cli->client, &sw_res_buildconfigs, cli->ns, bc, &cfg);
    sw_buf_printf(&sel, BC_LABEL "=%s", bc);
    if (error == 0)
        error = sw_buf_error(&sel);
    if (error == 0)
        error = sw_client_list(cli->client, &sw_res_builds, cli->ns, sw_buf_cstr(&sel), &list);
    json_array_foreach(json_object_get(list, "items"), i, b)
    {
        const char *phase = sw_json_str_at(b, "status.phase");
        const char *name = sw_json_str_at(b, "metadata.name");
        if (error < 0)
            break;
        if (!phase)
            phase = "New";
        if (!name || sw_build_phase_terminal(phase) || (o->phase[0] && strcmp(o->phase, phase)))
            continue;
        error = mark_cancelled(cli, name);
        n++;
    }
    if (error == 0 && n == 0)
        fprintf(stderr, "info: buildconfig %s has no %s builds to cancel\n", bc,
                o->phase[0] ? o->phase : "unfinished");
    sw_buf_dispose(&sel);
    json_decref(cfg);
    json_decref(list);
    return error;
}

static int run(sw_cli *cli, cancel_opts *o)
{
    int error = 0;
    for (size_t i = 0; error == 0 && i < cli->nargs; i++) {
        const char *name;
        if (arg_kind(cli->args[i], &name) == 'c')
            error = cancel_config(cli, o, name);
        else
            error = cancel_named(cli, o, name);
    }
    return error;
}

int sw_cmd_cancel_build(int argc, char **argv)
{
    cancel_opts o = {0};
    sw_cli cli;
    int rc;
    const sw_cli_flag flags[] = {
        {.name = "state",
         .kind = SW_CLI_STRING,
         .value = &o.state,
         .arg = "STATE",
         .help = "Only cancel builds in this state: new, pending or running."},
    };
    const sw_cli_command cmd = {
        .name = "cancel-build",
        .usage = "BUILD... | bc/NAME",
        .summary =
            "Cancel running, pending or new builds.\n"
            "\n"
            "Sets status.cancelled on each build; the build controller then stops its builder\n"
            "and marks it Cancelled. bc/NAME cancels every build of the configuration that\n"
            "has not finished. A build that already finished is reported as an error.",
        .examples = "  slipway cancel-build app-3\n"
                    "  slipway cancel-build bc/app\n"
                    "  slipway cancel-build bc/app --state=new\n",
        .flags = flags,
        .nflags = sizeof(flags) / sizeof(flags[0]),
    };
    if (sw_cli_start(&cli, &cmd, argc, argv, &rc))
        return rc;
    if (check_args(&cli, &o) < 0)
        return sw_cli_usage_error(&cli);
    int error = sw_cli_connect(&cli);
    if (error == 0)
        error = run(&cli, &o);
    rc = sw_cli_finish(&cli, error);
    return rc ? rc : o.failed ? 1 : 0;
}
