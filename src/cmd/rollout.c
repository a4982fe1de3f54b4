/* rollout: `slipway rollout latest|history|undo|status|pause|resume dc/NAME`, as `oc rollout`
 * does it for DeploymentConfigs (etcd-triggers.md §7): latest instantiates the config (force,
 * resolving its image triggers unless --again), history lists its ReplicationControllers,
 * undo asks the rollback subresource for the config of an older version and saves it, status
 * waits for the latest version to complete, pause and resume set spec.paused. Deployments,
 * StatefulSets and DaemonSets are `kubectl rollout`'s, which works unchanged against slipway.
 * See docs/cli.md. */
#include "cmd/cli.h"
#include "cmd/cmd.h"

#include "kinds/deploymentconfig.h"
#include "util/buf.h"
#include "util/error.h"
#include "util/json.h"
#include "util/str.h"
#include "util/time.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define PRINTED "deploymentconfig.apps.openshift.io"

typedef struct opts {
    bool again;
    const char *revision; /* history --revision, undo --to-revision */
    bool watch;
    const char *timeout;
} opts;

static int find_dc(const char *arg, const char **name)
{
    static const char *const kinds[] = {"dc",
                                        "deploymentconfig",
                                        "deploymentconfigs",
                                        PRINTED,
                                        "deploymentconfigs.apps.openshift.io",
                                        NULL};
    const char *slash = strchr(arg, '/');
    if (!slash || !slash[1] || strchr(slash + 1, '/'))
        return sw_error_set(SW_EINVALID, "expected dc/NAME, not \"%s\"", arg);
    char kind[64];
    snprintf(kind, sizeof(kind), "%.*s", (int)(slash - arg), arg);
    if (!sw_str_one_of(kind, kinds))
        return sw_error_set(SW_EINVALID,
                            "slipway rollout acts on DeploymentConfigs (dc/NAME), not \"%s\": "
                            "for Deployments, StatefulSets and DaemonSets use `kubectl rollout`, "
                            "which works unchanged against slipway",
                            kind);
    *name = slash + 1;
    return 0;
}

/* The config's ReplicationControllers sorted by version (a new array). */
static int history_of(sw_cli *cli, const json_t *dc, json_t **out)
{
    char sel[400];
    snprintf(sel, sizeof(sel), "%s=%s", SW_DC_NAME_ANN, sw_json_str_at(dc, "metadata.name") ?: "");
    int error = sw_client_list_controlled(cli->client, &sw_res_replicationcontrollers, cli->ns, sel,
                                          sw_json_str_at(dc, "metadata.uid"), out);
    size_t n = json_array_size(*out);
    for (size_t a = 1; a < n; a++) /* insertion sort: histories are short */
        for (size_t b = a; b > 0; b--) {
            json_t *x = json_array_get(*out, b - 1), *y = json_array_get(*out, b);
            int64_t vx = 0, vy = 0;
            sw_str_to_i64(json_string_value(json_object_get(sw_json_at(x, "metadata.annotations"),
                                                            SW_DC_VERSION_ANN))
                              ?: "0",
                          &vx);
            sw_str_to_i64(json_string_value(json_object_get(sw_json_at(y, "metadata.annotations"),
                                                            SW_DC_VERSION_ANN))
                              ?: "0",
                          &vy);
            if (vx <= vy)
                break;
            json_incref(x);
            json_array_set(*out, b - 1, y);
            json_array_set_new(*out, b, x);
        }
    return error;
}

static const char *rc_ann(const json_t *rc, const char *key)
{
    return json_string_value(json_object_get(sw_json_at(rc, "metadata.annotations"), key));
}

/* The ReplicationController of the config's latest version (a new reference), or NULL. */
static json_t *latest_rc(sw_cli *cli, const json_t *dc)
{
    char name[256];
    json_t *rc = NULL;
    sw_dc_rc_name(sw_json_str_at(dc, "metadata.name"),
                  sw_json_int_or(dc, "status.latestVersion", 0), name, sizeof(name));
    if (sw_json_int_or(dc, "status.latestVersion", 0) > 0 &&
        sw_client_get(cli->client, &sw_res_replicationcontrollers, cli->ns, name, &rc) < 0)
        rc = NULL;
    return rc;
}

static int post_sub(sw_cli *cli, const char *name, const char *sub, json_t *body, json_t **out)
{
    sw_buf path = SW_BUF_INIT(2048);
    int error = sw_client_path(&path, &sw_res_deploymentconfigs, cli->ns, name, sub);
    if (error == 0)
        error = sw_client_request(cli->client, "POST", sw_buf_cstr(&path), body, NULL, NULL, out);
    sw_buf_dispose(&path);
    json_decref(body);
    return error;
}

static int latest(sw_cli *cli, const char *name, const opts *o)
{
    json_t *dc = NULL, *rc = NULL;
    int error = sw_client_get(cli->client, &sw_res_deploymentconfigs, cli->ns, name, &dc);
    if (error < 0)
        return error;
    const char *phase = NULL;
    if (sw_json_bool_at(dc, "spec.paused")) {
        error = sw_error_set(SW_EINVALID, "cannot deploy a paused deployment config");
    } else if ((rc = latest_rc(cli, dc)) && (phase = rc_ann(rc, SW_DC_PHASE_ANN)) &&
               (sw_str_eq(phase, "New") || sw_str_eq(phase, "Pending") ||
                sw_str_eq(phase, "Running"))) {
        error = sw_error_set(SW_EINVALID, "#%lld is already in progress (%s).",
                             (long long)sw_json_int_or(dc, "status.latestVersion", 0), phase);
    } else {
        json_t *req =
            json_pack("{s:s, s:s, s:s, s:b, s:b}", "kind", "DeploymentRequest", "apiVersion",
                      "apps.openshift.io/v1", "name", name, "latest", !o->again, "force", 1);
        error = post_sub(cli, name, "instantiate", req, NULL);
        if (error == 0)
            printf(PRINTED "/%s rolled out\n", name);
    }
    json_decref(rc);
    json_decref(dc);
    return error;
}

static void print_template(const json_t *rc)
{
    const json_t *t = sw_json_at(rc, "spec.template");
    printf("Pod Template:\n  Labels:\t");
    const char *k;
    json_t *v;
    size_t n = 0;
    json_object_foreach(sw_json_at(t, "metadata.labels"), k, v)
        printf("%s%s=%s", n++ ? "," : "", k, json_string_value(v) ?: "");
    printf("%s\n  Containers:\n", n ? "" : "<none>");
    size_t i;
    json_t *c;
    json_array_foreach(sw_json_at(t, "spec.containers"), i, c)
    {
        printf("   %s:\n    Image:\t%s\n", sw_json_str_at(c, "name") ?: "",
               sw_json_str_at(c, "image") ?: "");
        size_t j;
        json_t *e;
        json_array_foreach(json_object_get(c, "env"), j, e) printf(
            "    Env:\t%s=%s\n", sw_json_str_at(e, "name") ?: "", sw_json_str_at(e, "value") ?: "");
    }
}

static int history(sw_cli *cli, const char *name, const opts *o)
{
    json_t *dc = NULL, *rcs = NULL;
    int64_t want = 0;
    if (o->revision && (sw_str_to_i64(o->revision, &want) < 0 || want <= 0))
        return sw_error_set(SW_EINVALID, "--revision must be a positive number, not \"%s\"",
                            o->revision);
    int error = sw_client_get(cli->client, &sw_res_deploymentconfigs, cli->ns, name, &dc);
    if (error == 0)
        error = history_of(cli, dc, &rcs);
    if (error == 0 && !json_array_size(rcs)) {
        printf("No rollout history found.\n");
    } else if (error == 0 && want) {
        json_t *hit = NULL;
        size_t i;
        json_t *rc;
        char v[24];
        snprintf(v, sizeof(v), "%lld", (long long)want);
        json_array_foreach(rcs, i, rc)
        {
            if (sw_str_eq(rc_ann(rc, SW_DC_VERSION_ANN), v))
                hit = rc;
        }
        if (!hit) {
            error = sw_error_set(SW_ENOTFOUND, "unable to find the specified revision");
        } else {
            printf(PRINTED "/%s with revision #%lld\n", name, (long long)want);
            print_template(hit);
        }
    } else if (error == 0) {
        printf(PRINTED "/%s\nREVISION\tSTATUS\t\tCAUSE\n", name);
        size_t i;
        json_t *rc;
        json_array_foreach(rcs, i, rc)
        {
            const char *cause = rc_ann(rc, SW_DC_REASON_ANN);
            printf("%s\t\t%s\t%s\n", rc_ann(rc, SW_DC_VERSION_ANN) ?: "0",
                   rc_ann(rc, SW_DC_PHASE_ANN) ?: "", cause && *cause ? cause : "<unknown>");
        }
    }
    json_decref(rcs);
    json_decref(dc);
    return error;
}

static int undo(sw_cli *cli, const char *name, const opts *o)
{
    json_t *dc = NULL, *back = NULL;
    int64_t rev = 0;
    if (o->revision && (sw_str_to_i64(o->revision, &rev) < 0 || rev < 0))
        return sw_error_set(SW_EINVALID, "--to-revision must be a number, not \"%s\"", o->revision);
    int error = sw_client_get(cli->client, &sw_res_deploymentconfigs, cli->ns, name, &dc);
    if (error == 0 && sw_json_bool_at(dc, "spec.paused"))
        error = sw_error_set(SW_EINVALID,
                             "cannot rollback a paused config; resume it first with 'rollout "
                             "resume dc/%s' and try again",
                             name);
    if (error == 0) {
        json_t *req = json_pack("{s:s, s:s, s:s, s:{s:I, s:b}}", "kind", "DeploymentConfigRollback",
                                "apiVersion", "apps.openshift.io/v1", "name", name, "spec",
                                "revision", (json_int_t)rev, "includeTemplate", 1);
        error = post_sub(cli, name, "rollback", req, &back);
    }
    if (error == 0)
        error = sw_client_update(cli->client, &sw_res_deploymentconfigs, cli->ns, back, NULL);
    if (error == 0) {
        printf(PRINTED "/%s rolled back\n", name);
        size_t i, n = 0;
        json_t *t;
        json_array_foreach(sw_json_at(back, "spec.triggers"), i, t)
        {
            if (sw_str_eq(sw_json_str_at(t, "type"), "ImageChange"))
                fprintf(stderr, "%s%s", n++ ? ", " : "Warning: the image triggers were disabled: ",
                        sw_json_str_at(t, "imageChangeParams.from.name") ?: "");
        }
        if (n)
            fprintf(stderr, "\n  You can re-enable them with: slipway set triggers dc/%s --auto\n",
                    name);
    }
    json_decref(back);
    json_decref(dc);
    return error;
}

static int status(sw_cli *cli, const char *name, const opts *o)
{
    int64_t timeout_s = 600;
    if (o->timeout && (sw_str_to_i64(o->timeout, &timeout_s) < 0 || timeout_s <= 0))
        return sw_error_set(SW_EINVALID, "--timeout must be a number of seconds, not \"%s\"",
                            o->timeout);
    int64_t deadline = sw_time_mono_ms() + timeout_s * 1000;
    char said[600] = "";
    for (;;) {
        json_t *dc = NULL, *rc = NULL;
        int error = sw_client_get(cli->client, &sw_res_deploymentconfigs, cli->ns, name, &dc);
        if (error < 0)
            return error;
        char line[600];
        int done = 0;
        int64_t v = sw_json_int_or(dc, "status.latestVersion", 0);
        const char *phase = (rc = latest_rc(cli, dc)) ? rc_ann(rc, SW_DC_PHASE_ANN) : NULL;
        if (v == 0 || !rc) {
            snprintf(line, sizeof(line),
                     "Waiting for the first version of \"%s\" (its image "
                     "triggers resolve first)...",
                     name);
        } else if (sw_str_eq(phase, "Complete")) {
            snprintf(line, sizeof(line), "replication controller \"%s\" successfully rolled out",
                     sw_json_str_at(rc, "metadata.name") ?: "");
            done = 1;
        } else if (sw_str_eq(phase, "Failed")) {
            error = sw_error_set(SW_ERROR, "replication controller \"%s\" has failed progressing",
                                 sw_json_str_at(rc, "metadata.name") ?: "");
        } else {
            snprintf(line, sizeof(line), "Waiting for rollout of \"%s\" to finish (%s)...",
                     sw_json_str_at(rc, "metadata.name") ?: "", phase ? phase : "New");
        }
        json_decref(rc);
        json_decref(dc);
        if (error < 0)
            return error;
        if (strcmp(line, said)) {
            printf("%s\n", line);
            fflush(stdout);
            sw_strlcpy(said, line, sizeof(said));
        }
        if (done || !o->watch)
            return 0;
        if (sw_time_mono_ms() > deadline)
            return sw_error_set(SW_ETIMEOUT, "timed out waiting for the rollout of \"%s\"", name);
        struct timespec ts = {0, 200 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
}

static int set_paused(sw_cli *cli, const char *name, bool pause)
{
    json_t *dc = NULL;
    int error = sw_client_get(cli->client, &sw_res_deploymentconfigs, cli->ns, name, &dc);
    if (error == 0 && sw_json_bool_at(dc, "spec.paused") == pause) {
        error = sw_error_set(SW_EINVALID, PRINTED "/%s is %s", name,
                             pause ? "already paused" : "not paused");
    } else if (error == 0) {
        json_t *patch = json_pack("{s:{s:b}}", "spec", "paused", pause);
        error = sw_client_patch(cli->client, &sw_res_deploymentconfigs, cli->ns, name,
                                "application/merge-patch+json", patch, NULL);
        json_decref(patch);
        if (error == 0)
            printf(PRINTED "/%s %s\n", name, pause ? "paused" : "resumed");
    }
    json_decref(dc);
    return error;
}

static const char *const verbs[] = {"latest", "history", "undo", "status", "pause", "resume", NULL};

int sw_cmd_rollout(int argc, char **argv)
{
    sw_cli cli;
    opts o = {.watch = true};
    int rc;
    const char *verb = argc >= 2 ? argv[1] : NULL;
    if (!verb || !sw_str_one_of(verb, verbs)) {
        bool help = verb && (!strcmp(verb, "--help") || !strcmp(verb, "-h"));
        FILE *f = help ? stdout : stderr;
        if (verb && !help)
            fprintf(f, "error: unknown rollout verb \"%s\"\n", verb);
        fprintf(f, "Usage: slipway rollout VERB dc/NAME [flags]\n\n"
                   "  latest     start a new version of a DeploymentConfig\n"
                   "  history    list its versions\n"
                   "  undo       roll back to an older version\n"
                   "  status     wait until the latest version has rolled out\n"
                   "  pause      stop triggers and config changes from rolling it out\n"
                   "  resume     let them again\n\n"
                   "Run 'slipway rollout VERB --help' for its flags.\n");
        return help ? 0 : SW_CLI_EXIT_USAGE;
    }
    char cmdname[32];
    snprintf(cmdname, sizeof(cmdname), "rollout %s", verb);
    sw_cli_flag flags[2];
    size_t nflags = 0;
    if (!strcmp(verb, "latest"))
        flags[nflags++] = (sw_cli_flag){"again",
                                        0,
                                        SW_CLI_BOOL,
                                        &o.again,
                                        NULL,
                                        "Deploy the current template again, without resolving "
                                        "the image triggers first.",
                                        NULL};
    if (!strcmp(verb, "history"))
        flags[nflags++] = (sw_cli_flag){"revision",  0,   SW_CLI_STRING,
                                        &o.revision, "N", "Show the pod template of version N.",
                                        NULL};
    if (!strcmp(verb, "undo"))
        flags[nflags++] = (sw_cli_flag){"to-revision",
                                        0,
                                        SW_CLI_STRING,
                                        &o.revision,
                                        "N",
                                        "The version to go back to (default: the one before the "
                                        "latest).",
                                        NULL};
    if (!strcmp(verb, "status")) {
        flags[nflags++] = (sw_cli_flag){"watch",
                                        'w',
                                        SW_CLI_BOOL,
                                        &o.watch,
                                        NULL,
                                        "Wait until it has rolled out (default true; "
                                        "--watch=false prints the state once).",
                                        NULL};
        flags[nflags++] = (sw_cli_flag){"timeout",  0,         SW_CLI_STRING,
                                        &o.timeout, "SECONDS", "How long to wait (default 600).",
                                        NULL};
    }
    const sw_cli_command cmd = {
        .name = cmdname,
        .usage = "dc/NAME [flags]",
        .summary = "Manage the rollout of a DeploymentConfig, as `oc rollout` does.\n"
                   "\n"
                   "Nothing runs here: a version's ReplicationController is made and marked\n"
                   "Complete at once (docs/workloads.md). For Deployments, StatefulSets and\n"
                   "DaemonSets use `kubectl rollout`, which works unchanged against slipway.",
        .examples = "  slipway rollout latest dc/web\n"
                    "  slipway rollout history dc/web\n"
                    "  slipway rollout undo dc/web --to-revision=1\n"
                    "  slipway rollout status dc/web\n",
        .flags = flags,
        .nflags = nflags,
    };
    if (sw_cli_start(&cli, &cmd, argc - 1, argv + 1, &rc))
        return rc;
    const char *name = NULL;
    int error = cli.nargs != 1 ? sw_error_set(SW_EINVALID, "expected one dc/NAME")
                               : find_dc(cli.args[0], &name);
    if (error < 0)
        return sw_cli_usage_error(&cli);
    error = sw_cli_connect(&cli);
    if (error == 0) {
        if (!strcmp(verb, "latest"))
            error = latest(&cli, name, &o);
        else if (!strcmp(verb, "history"))
            error = history(&cli, name, &o);
        else if (!strcmp(verb, "undo"))
            error = undo(&cli, name, &o);
        else if (!strcmp(verb, "status"))
            error = status(&cli, name, &o);
        else
            error = set_paused(&cli, name, !strcmp(verb, "pause"));
    }
    return sw_cli_finish(&cli, error);
}
