/* set_triggers: `slipway set triggers KIND/NAME`, as `oc set triggers` for the Kubernetes
 * workload kinds: with no action it lists the object's image triggers; --from-image adds (or
 * updates) a trigger per container, --manual / --auto pause or resume them, --remove takes
 * away the ones --from-image names, --remove-all every one. It edits the
 * image.openshift.io/triggers annotation the image trigger controller reads, in one update
 * (retried on a conflict). See docs/cli.md. */
#include "cmd/cli.h"
#include "cmd/cmd.h"

#include "controllers/trigger.h"
#include "kinds/imagestream.h"
#include "kinds/podspec.h"
#include "util/alloc.h"
#include "util/buf.h"
#include "util/error.h"
#include "util/json.h"
#include "util/str.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct target {
    const sw_resource *res;
    const char *kind;
    const char *printed; /* "deployment.apps" */
} target;

static const struct {
    const char *names[4];
    target t;
} targets[] = {
    {{"deployment", "deployments", "deploy", "deployment.apps"},
     {&sw_res_deployments, "Deployment", "deployment.apps"}},
    {{"statefulset", "statefulsets", "sts", "statefulset.apps"},
     {&sw_res_statefulsets, "StatefulSet", "statefulset.apps"}},
    {{"daemonset", "daemonsets", "ds", "daemonset.apps"},
     {&sw_res_daemonsets, "DaemonSet", "daemonset.apps"}},
    {{"cronjob", "cronjobs", "cj", "cronjob.batch"},
     {&sw_res_cronjobs, "CronJob", "cronjob.batch"}},
    {{"pod", "pods", "po", NULL}, {&sw_res_pods, "Pod", "pod"}},
    {{"dc", "deploymentconfig", "deploymentconfigs", "deploymentconfig.apps.openshift.io"},
     {&sw_res_deploymentconfigs, "DeploymentConfig", "deploymentconfig.apps.openshift.io"}},
};

typedef struct opts {
    const char *from;       /* --from-image STREAM:TAG */
    const char *containers; /* -c a,b */
    bool manual, autom, remove, remove_all, config;
} opts;

static int find_target(const char *arg, const target **t, const char **name)
{
    const char *slash = strchr(arg, '/');
    if (!slash || !slash[1] || strchr(slash + 1, '/'))
        return sw_error_set(SW_EINVALID, "expected KIND/NAME (deployment/web), not \"%s\"", arg);
    size_t len = (size_t)(slash - arg);
    for (size_t i = 0; i < sizeof(targets) / sizeof(targets[0]); i++)
        for (size_t j = 0; j < 4 && targets[i].names[j]; j++)
            if (strlen(targets[i].names[j]) == len && !strncmp(arg, targets[i].names[j], len)) {
                *t = &targets[i].t;
                *name = slash + 1;
                return 0;
            }
    return sw_error_set(SW_EINVALID,
                        "image triggers are set on deployments, statefulsets, daemonsets, "
                        "cronjobs, pods and deploymentconfigs, not \"%.*s\"",
                        (int)len, arg);
}

/* The names of the pod spec's containers; -c narrows them (each must exist). */
static int containers_of(const json_t *obj, const char *kind, const char *only, json_t **out)
{
    char path[96];
    snprintf(path, sizeof(path), "%s.containers", sw_podspec_path(kind));
    json_t *names = json_array();
    size_t i;
    json_t *c;
    json_array_foreach(sw_json_at(obj, path), i, c)
        json_array_append_new(names, json_string(sw_json_str_at(c, "name") ?: ""));
    if (!only) {
        if (json_array_size(names) != 1) {
            json_decref(names);
            return sw_error_set(SW_EINVALID,
                                "the object has %zu containers: name the ones the "
                                "trigger updates with -c/--containers",
                                json_array_size(sw_json_at(obj, path)));
        }
        *out = names;
        return 0;
    }
    json_t *picked = json_array();
    for (const char *p = only; *p;) {
        size_t len = strcspn(p, ",");
        bool found = false;
        json_array_foreach(names, i, c)
        {
            if (strlen(json_string_value(c)) == len && !strncmp(json_string_value(c), p, len))
                found = true;
        }
        if (!found) {
            json_decref(names);
            json_decref(picked);
            return sw_error_set(SW_EINVALID, "no container named \"%.*s\"", (int)len, p);
        }
        json_array_append_new(picked, json_stringn(p, len));
        p += len;
        if (*p == ',')
            p++;
    }
    json_decref(names);
    *out = picked;
    return 0;
}

/* The triggers now (a new array), or NULL with the error set when the annotation does not
 * parse: it is never overwritten unread. */
static json_t *current(const json_t *obj)
{
    const char *text = json_string_value(
        json_object_get(sw_json_at(obj, "metadata.annotations"), SW_TRIGGERS_ANNOTATION));
    json_t *list = NULL;
    if (!text)
        return json_array();
    if (sw_json_parse(text, strlen(text), 8, 0, &list) == 0 && json_is_array(list))
        return list;
    json_decref(list);
    sw_error_set(SW_EINVALID,
                 "the %s annotation is not a JSON array of triggers: fix or remove it by hand "
                 "(kubectl annotate ... %s-)",
                 SW_TRIGGERS_ANNOTATION, SW_TRIGGERS_ANNOTATION);
    return NULL;
}

static void print_triggers(const json_t *obj, const target *t, const char *name, json_t *list)
{
    printf("NAME\tTYPE\tVALUE\tAUTO\n");
    size_t i;
    json_t *e;
    json_array_foreach(list, i, e)
    {
        const char *fp = sw_json_str_at(e, "fieldPath") ?: "";
        const char *q = strstr(fp, "==\""), *end = q ? strstr(q + 3, "\"") : NULL;
        char cname[128] = "";
        if (q && end && (size_t)(end - q - 3) < sizeof(cname))
            snprintf(cname, sizeof(cname), "%.*s", (int)(end - q - 3), q + 3);
        printf("%s/%s\timage\t%s (%s)\t%s\n", t->printed, name,
               sw_json_str_at(e, "from.name") ?: "", cname[0] ? cname : fp,
               sw_json_bool_at(e, "paused") ? "false" : "true");
    }
    if (!json_array_size(list))
        printf("%s/%s\t<none>\t\t\n", t->printed, name);
    json_decref(list);
}

/* Whether trigger entry e (any selector form) updates the container called name. */
static bool same_container(const json_t *obj, const target *t, const json_t *e, const char *name)
{
    sw_trigger tr;
    char path[96];
    if (sw_trigger_parse_entry(e, 0, t->kind, NULL, &tr) != 1 || tr.init)
        return false;
    long at = sw_trigger_container(obj, &tr);
    snprintf(path, sizeof(path), "%s.containers", sw_podspec_path(t->kind));
    return at >= 0 &&
           sw_str_eq(sw_json_str_at(json_array_get(sw_json_at(obj, path), (size_t)at), "name"),
                     name);
}

/* The new trigger list: o applied to list (which it consumes). */
static json_t *edit(json_t *list, const json_t *obj, const target *t, const opts *o, int *error)
{
    json_t *names = NULL;
    *error = 0;
    if (o->remove_all) {
        json_decref(list);
        return json_array();
    }
    if (o->from && (*error = containers_of(obj, t->kind, o->containers, &names)) < 0) {
        json_decref(list);
        return NULL;
    }
    json_t *out = json_array();
    size_t i;
    json_t *e;
    /* every entry for the named containers is replaced (or removed); the others stay, with
     * --manual / --auto applied when no --from-image narrows them */
    json_array_foreach(list, i, e)
    {
        bool named = false;
        size_t j;
        json_t *n;
        json_array_foreach(names, j, n)
        {
            char fp[300];
            snprintf(fp, sizeof(fp), "%s.containers[?(@.name==\"%s\")].image",
                     sw_podspec_path(t->kind), json_string_value(n));
            if (sw_str_eq(sw_json_str_at(e, "fieldPath"), fp) ||
                same_container(obj, t, e, json_string_value(n)))
                named = true;
        }
        if (named)
            continue;
        json_t *copy = json_deep_copy(e);
        if (!o->from && (o->manual || o->autom))
            json_object_set_new(copy, "paused", json_boolean(o->manual));
        json_array_append_new(out, copy);
    }
    json_array_foreach(o->remove ? NULL : names, i, e)
    {
        char fp[300];
        snprintf(fp, sizeof(fp), "%s.containers[?(@.name==\"%s\")].image", sw_podspec_path(t->kind),
                 json_string_value(e));
        json_t *trig = json_pack("{s:{s:s, s:s}, s:s}", "from", "kind", "ImageStreamTag", "name",
                                 o->from, "fieldPath", fp);
        if (o->manual)
            json_object_set_new(trig, "paused", json_true());
        json_array_append_new(out, trig);
    }
    json_decref(names);
    json_decref(list);
    return out;
}

/* ---- DeploymentConfigs: spec.triggers ---- */

static void print_dc_triggers(const char *name, const json_t *dc)
{
    printf("NAME\tTYPE\tVALUE\tAUTO\n");
    size_t i, n = 0;
    json_t *t;
    json_array_foreach(sw_json_at(dc, "spec.triggers"), i, t)
    {
        n++;
        if (!sw_str_eq(sw_json_str_at(t, "type"), "ImageChange")) {
            printf("deploymentconfigs/%s\tconfig\t\ttrue\n", name);
            continue;
        }
        sw_buf names = SW_BUF_INIT(1024);
        size_t j;
        json_t *c;
        json_array_foreach(sw_json_at(t, "imageChangeParams.containerNames"), j, c)
            sw_buf_printf(&names, "%s%s", j ? "," : "", json_string_value(c) ?: "");
        printf("deploymentconfigs/%s\timage\t%s (%s)\t%s\n", name,
               sw_json_str_at(t, "imageChangeParams.from.name") ?: "", sw_buf_cstr(&names),
               sw_json_bool_at(t, "imageChangeParams.automatic") ? "true" : "false");
        sw_buf_dispose(&names);
    }
    if (!n)
        printf("deploymentconfigs/%s\t<none>\t\t\n", name);
}

/* Whether ImageChange trigger t names one of the containers in names. */
static bool names_any(const json_t *t, const json_t *names)
{
    size_t i, j;
    json_t *a, *b;
    json_array_foreach(sw_json_at(t, "imageChangeParams.containerNames"), i, a)
        json_array_foreach(names, j, b) if (json_equal(a, b)) return true;
    return false;
}

/* The new spec.triggers of dc: o applied. */
static int edit_dc(json_t *dc, const opts *o)
{
    json_t *names = NULL;
    int error = 0;
    if (o->from && (error = containers_of(dc, "DeploymentConfig", o->containers, &names)) < 0)
        return error;
    json_t *out = json_array();
    size_t i;
    json_t *t;
    bool has_config = false;
    json_array_foreach(o->remove_all ? NULL : sw_json_at(dc, "spec.triggers"), i, t)
    {
        bool image = sw_str_eq(sw_json_str_at(t, "type"), "ImageChange");
        if (!image) {
            has_config = true;
            if (o->config && o->remove)
                continue;
        } else if (o->from &&
                   (names_any(t, names) ||
                    sw_str_eq(sw_json_str_at(t, "imageChangeParams.from.name"), o->from))) {
            continue; /* replaced (or removed) below */
        }
        json_t *copy = json_deep_copy(t);
        if (image && !o->from && (o->manual || o->autom))
            json_object_set_new(sw_json_obj_path(copy, "imageChangeParams"), "automatic",
                                json_boolean(o->autom));
        json_array_append_new(out, copy);
    }
    if (o->config && !o->remove && !has_config)
        json_array_append_new(out, json_pack("{s:s}", "type", "ConfigChange"));
    if (o->from && !o->remove)
        json_array_append_new(out, json_pack("{s:s, s:{s:b, s:O, s:{s:s, s:s}}}", "type",
                                             "ImageChange", "imageChangeParams", "automatic",
                                             !o->manual, "containerNames", names, "from", "kind",
                                             "ImageStreamTag", "name", o->from));
    json_object_set_new(sw_json_obj_path(dc, "spec"), "triggers", out);
    json_decref(names);
    return 0;
}

static int set_dc_triggers(sw_cli *cli, const target *t, const char *name, const opts *o)
{
    int error = 0;
    for (int attempt = 0; attempt < 5; attempt++) {
        json_t *dc = NULL;
        if ((error = sw_client_get(cli->client, t->res, cli->ns, name, &dc)) < 0)
            break;
        if (!o->from && !o->manual && !o->autom && !o->remove && !o->remove_all && !o->config) {
            print_dc_triggers(name, dc);
            json_decref(dc);
            return 0;
        }
        if ((error = edit_dc(dc, o)) == 0)
            error = sw_client_update(cli->client, t->res, cli->ns, dc, NULL);
        json_decref(dc);
        if (error == 0)
            printf("%s/%s triggers updated\n", t->printed, name);
        if (error != SW_ECONFLICT)
            break;
    }
    return error;
}

static int set_triggers(sw_cli *cli, const opts *o)
{
    const target *t = NULL;
    const char *name = NULL;
    int error = find_target(cli->args[0], &t, &name);
    if (error == 0 && t->res == &sw_res_deploymentconfigs)
        return set_dc_triggers(cli, t, name, o);
    if (error == 0 && o->config)
        return sw_error_set(SW_EINVALID,
                            "--from-config is for deploymentconfigs (on %ss, "
                            "pause the rollout instead: kubectl rollout pause)",
                            t->kind);
    for (int attempt = 0; error == 0 && attempt < 5; attempt++) {
        json_t *obj = NULL;
        if ((error = sw_client_get(cli->client, t->res, cli->ns, name, &obj)) < 0)
            break;
        json_t *now = current(obj);
        if (!now) {
            json_decref(obj);
            error = SW_EINVALID;
            break;
        }
        if (!o->from && !o->manual && !o->autom && !o->remove && !o->remove_all) {
            print_triggers(obj, t, name, now);
            json_decref(obj);
            return 0;
        }
        json_t *list = edit(now, obj, t, o, &error);
        if (error < 0) {
            json_decref(obj);
            break;
        }
        json_t *ann = sw_json_obj_path(obj, "metadata.annotations");
        if (json_array_size(list)) {
            char *text = json_dumps(list, JSON_COMPACT);
            json_object_set_new(ann, SW_TRIGGERS_ANNOTATION, json_string(text));
            free(text);
        } else {
            json_object_del(ann, SW_TRIGGERS_ANNOTATION);
        }
        json_decref(list);
        error = sw_client_update(cli->client, t->res, cli->ns, obj, NULL);
        json_decref(obj);
        if (error == 0)
            printf("%s/%s triggers updated\n", t->printed, name);
        if (error != SW_ECONFLICT)
            break;
    }
    return error;
}

static int set_triggers_cmd(int argc, char **argv)
{
    sw_cli cli;
    opts o = {0};
    int rc;
    const sw_cli_flag flags[] = {
        {"from-image", 0, SW_CLI_STRING, &o.from, "STREAM:TAG",
         "The ImageStreamTag whose image the containers follow.", NULL},
        {"containers", 'c', SW_CLI_STRING, &o.containers, "NAME[,NAME...]",
         "The containers the trigger updates (default: the only one).", NULL},
        {"manual", 0, SW_CLI_BOOL, &o.manual, NULL,
         "The triggers are paused: the image is not changed automatically.", NULL},
        {"auto", 0, SW_CLI_BOOL, &o.autom, NULL, "The triggers update the containers (default).",
         NULL},
        {"remove", 0, SW_CLI_BOOL, &o.remove, NULL, "Remove the triggers --from-image names.",
         NULL},
        {"remove-all", 0, SW_CLI_BOOL, &o.remove_all, NULL, "Remove every image trigger.", NULL},
        {"from-config", 0, SW_CLI_BOOL, &o.config, NULL,
         "A DeploymentConfig's ConfigChange trigger (with --remove: take it away).", NULL},
    };
    const sw_cli_command cmd = {
        .name = "set triggers",
        .usage = "KIND/NAME [--from-image=STREAM:TAG [-c CONTAINER]] [--from-config] "
                 "[--manual|--auto] [--remove|--remove-all]",
        .summary = "List or change the image triggers of a workload, as `oc set triggers` does.\n"
                   "\n"
                   "KIND is deployment, statefulset, daemonset, cronjob, pod or dc. A trigger\n"
                   "sets a container's image to the tag's image (repo@sha256:...) whenever the\n"
                   "tag's digest changes, and never when only a tag name does\n"
                   "(docs/workloads.md). On a DeploymentConfig the triggers are its\n"
                   "spec.triggers, and --from-config adds its ConfigChange trigger. Without an\n"
                   "action the triggers are listed.",
        .examples = "  slipway set triggers deploy/web\n"
                    "  slipway set triggers deploy/web --from-image=web:latest -c app\n"
                    "  slipway set triggers deploy/web --manual\n"
                    "  slipway set triggers deploy/web --from-image=web:latest --remove\n"
                    "  slipway set triggers dc/web --from-image=web:latest -c app\n"
                    "  slipway set triggers dc/web --from-config --remove\n",
        .flags = flags,
        .nflags = sizeof(flags) / sizeof(flags[0]),
    };
    if (sw_cli_start(&cli, &cmd, argc, argv, &rc))
        return rc;
    char stream[256], tag[256];
    int error = 0;
    if (cli.nargs != 1)
        error = sw_error_set(SW_EINVALID, "expected one KIND/NAME");
    else if (o.manual && o.autom)
        error = sw_error_set(SW_EINVALID, "--manual and --auto cannot both be given");
    else if (o.remove && o.remove_all)
        error = sw_error_set(SW_EINVALID, "--remove and --remove-all cannot both be given");
    else if (o.remove && !o.from && !o.config)
        error = sw_error_set(SW_EINVALID,
                             "--remove needs --from-image or --from-config (or use --remove-all)");
    else if (o.config && o.from)
        error = sw_error_set(SW_EINVALID, "--from-config and --from-image cannot both be given");
    else if (o.containers && !o.from)
        error = sw_error_set(SW_EINVALID, "-c/--containers needs --from-image");
    else if (o.from &&
             sw_imagestream_split_tag_name(o.from, stream, sizeof(stream), tag, sizeof(tag)) < 0)
        error = sw_error_set(SW_EINVALID, "--from-image must be STREAM:TAG, not \"%s\"", o.from);
    if (error < 0)
        return sw_cli_usage_error(&cli);
    error = sw_cli_connect(&cli);
    if (error == 0)
        error = set_triggers(&cli, &o);
    return sw_cli_finish(&cli, error);
}

int sw_cmd_set(int argc, char **argv)
{
    if (argc >= 2 && !strcmp(argv[1], "triggers"))
        return set_triggers_cmd(argc - 1, argv + 1);
    FILE *f = argc >= 2 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) ? stdout : stderr;
    fprintf(f, "Usage: slipway set triggers KIND/NAME [flags]\n\n"
               "  triggers    list or change a workload's image triggers\n\n"
               "Run 'slipway set triggers --help' for its flags.\n");
    return f == stdout ? 0 : SW_CLI_EXIT_USAGE;
}
