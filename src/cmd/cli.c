/* cli: shared plumbing of the `oc`-style verbs (see cli.h). */
#include "cmd/cli.h"

#include "client/kubeconfig.h"
#include "kinds/imagestream.h"
#include "util/alloc.h"
#include "util/error.h"
#include "util/json.h"
#include "util/str.h"

#include <signal.h>
#include <string.h>

/* ---- flags ---- */

#define NCOMMON 3

/* The flags every verb has; values go into cli (NULL: for the help text only). */
static void common_flags(sw_cli *cli, sw_cli_flag out[NCOMMON])
{
    out[0] = (sw_cli_flag){.name = "kubeconfig",
                           .kind = SW_CLI_STRING,
                           .value = cli ? &cli->kubeconfig : NULL,
                           .arg = "FILE",
                           .help = "Path to the kubeconfig file (default: $KUBECONFIG, then "
                                   "~/.kube/config)."};
    out[1] = (sw_cli_flag){.name = "namespace",
                           .short_name = 'n',
                           .kind = SW_CLI_STRING,
                           .value = cli ? &cli->namespace : NULL,
                           .arg = "NS",
                           .help = "The namespace to work in (default: the kubeconfig "
                                   "context's)."};
    out[2] = (sw_cli_flag){.name = "help",
                           .short_name = 'h',
                           .kind = SW_CLI_BOOL,
                           .value = cli ? &cli->help : NULL,
                           .help = "Show this help."};
}

/* A command's flags followed by the common ones. */
typedef struct flagset {
    const sw_cli_command *cmd;
    sw_cli_flag common[NCOMMON];
} flagset;

static const sw_cli_flag *flag_at(const flagset *fs, size_t i)
{
    return i < fs->cmd->nflags ? &fs->cmd->flags[i] : &fs->common[i - fs->cmd->nflags];
}

static const sw_cli_flag *find_long(const flagset *fs, const char *name, size_t len)
{
    for (size_t i = 0; i < fs->cmd->nflags + NCOMMON; i++) {
        const sw_cli_flag *f = flag_at(fs, i);
        if (strlen(f->name) == len && !strncmp(f->name, name, len))
            return f;
    }
    return NULL;
}

static const sw_cli_flag *find_short(const flagset *fs, char c)
{
    for (size_t i = 0; i < fs->cmd->nflags + NCOMMON; i++) {
        const sw_cli_flag *f = flag_at(fs, i);
        if (f->short_name && f->short_name == c)
            return f;
    }
    return NULL;
}

/* Stores one flag's value; inline is the text after '=' (or after -x), or NULL. */
static int set_flag(const sw_cli_flag *f, const char *shown, const char *inline_value, int argc,
                    char **argv, int *i)
{
    if (f->seen)
        *f->seen = true;
    if (f->kind == SW_CLI_BOOL) {
        bool v = true;
        if (inline_value && sw_str_to_bool(inline_value, &v) < 0)
            return sw_error_set(SW_EINVALID,
                                "invalid argument \"%s\" for \"%s\": expected true or "
                                "false",
                                inline_value, shown);
        *(bool *)f->value = v;
        return 0;
    }
    if (!inline_value) {
        if (*i + 1 >= argc)
            return sw_error_set(SW_EINVALID, "flag needs an argument: %s", shown);
        inline_value = argv[++*i];
    }
    if (f->kind == SW_CLI_STRINGS) {
        sw_cli_strings *list = f->value;
        list->items = sw_realloc(list->items, (list->n + 1) * sizeof(*list->items));
        list->items[list->n++] = inline_value;
        return 0;
    }
    *(const char **)f->value = inline_value;
    return 0;
}

static int parse_long(const flagset *fs, int argc, char **argv, int *i)
{
    const char *name = argv[*i] + 2;
    const char *eq = strchr(name, '=');
    size_t len = eq ? (size_t)(eq - name) : strlen(name);
    const sw_cli_flag *f = find_long(fs, name, len);
    if (!f)
        return sw_error_set(SW_EINVALID, "unknown flag: --%.*s", (int)len, name);
    char shown[80];
    snprintf(shown, sizeof(shown), "--%s", f->name);
    return set_flag(f, shown, eq ? eq + 1 : NULL, argc, argv, i);
}

/* "-x", "-x=v", "-xv" (x takes a value) and, as pflag does, bundled booleans: "-Fw" is -F -w,
 * and the last of a bundle may take a value ("-wn ns"). */
static int parse_short(const flagset *fs, int argc, char **argv, int *i)
{
    const char *a = argv[*i];
    for (size_t k = 1;; k++) {
        const sw_cli_flag *f = find_short(fs, a[k]);
        if (!f)
            return sw_error_set(SW_EINVALID, "unknown shorthand flag: '%c' in %s", a[k], a);
        char shown[8];
        snprintf(shown, sizeof(shown), "-%c", a[k]);
        const char *rest = a[k + 1] == '=' ? a + k + 2 : a[k + 1] ? a + k + 1 : NULL;
        if (!rest || f->kind != SW_CLI_BOOL || a[k + 1] == '=')
            return set_flag(f, shown, rest, argc, argv, i);
        int error = set_flag(f, shown, NULL, argc, argv, i); /* a boolean, more follow */
        if (error < 0)
            return error;
    }
}

int sw_cli_parse(sw_cli *cli, const sw_cli_command *cmd, int argc, char **argv)
{
    bool flags_done = false;
    flagset fs = {.cmd = cmd};
    memset(cli, 0, sizeof(*cli));
    cli->cmd = cmd;
    cli->args = sw_calloc((size_t)(argc > 0 ? argc : 1), sizeof(char *));
    common_flags(cli, fs.common);
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        int error = 0;
        if (flags_done || a[0] != '-' || !a[1])
            cli->args[cli->nargs++] = argv[i];
        else if (!strcmp(a, "--"))
            flags_done = true;
        else if (a[1] == '-')
            error = parse_long(&fs, argc, argv, &i);
        else
            error = parse_short(&fs, argc, argv, &i);
        if (error < 0)
            return error;
    }
    if (cli->namespace && !*cli->namespace)
        return sw_error_set(SW_EINVALID, "--namespace: an empty namespace is not allowed");
    return 0;
}

static void help_flag(FILE *f, const sw_cli_flag *fl)
{
    char left[64];
    if (fl->short_name)
        snprintf(left, sizeof(left), "-%c, --%s%s%s", fl->short_name, fl->name, fl->arg ? " " : "",
                 fl->arg ? fl->arg : "");
    else
        snprintf(left, sizeof(left), "    --%s%s%s", fl->name, fl->arg ? " " : "",
                 fl->arg ? fl->arg : "");
    fprintf(f, "  %-30s %s\n", left, fl->help);
}

void sw_cli_help(FILE *f, const sw_cli_command *cmd)
{
    sw_cli_flag common[NCOMMON];
    common_flags(NULL, common);
    fprintf(f, "%s\n\nUsage:\n  slipway %s [flags] %s\n", cmd->summary, cmd->name, cmd->usage);
    if (cmd->examples)
        fprintf(f, "\nExamples:\n%s", cmd->examples);
    fprintf(f, "\nFlags:\n");
    for (size_t i = 0; i < cmd->nflags; i++)
        help_flag(f, &cmd->flags[i]);
    for (size_t i = 0; i < NCOMMON; i++)
        help_flag(f, &common[i]);
}

int sw_cli_usage_error(sw_cli *cli)
{
    fprintf(stderr, "error: %s\nSee 'slipway %s --help' for usage.\n", sw_error_msg(),
            cli->cmd ? cli->cmd->name : "");
    sw_cli_dispose(cli);
    return SW_CLI_EXIT_USAGE;
}

bool sw_cli_start(sw_cli *cli, const sw_cli_command *cmd, int argc, char **argv, int *exit_code)
{
    if (sw_cli_parse(cli, cmd, argc, argv) < 0) {
        *exit_code = sw_cli_usage_error(cli);
        return true;
    }
    if (cli->help) {
        sw_cli_help(stdout, cmd);
        sw_cli_dispose(cli);
        *exit_code = 0;
        return true;
    }
    return false;
}

/* ---- client ---- */

int sw_cli_connect(sw_cli *cli)
{
    sw_kubeconfig *kc = NULL;
    sw_client_opts opts = {.timeout_ms = cli->timeout_ms};
    signal(SIGPIPE, SIG_IGN); /* libcurl runs with CURLOPT_NOSIGNAL */
    int error = sw_kubeconfig_load(&kc, cli->kubeconfig, NULL);
    if (error == 0)
        error = sw_client_new_opts(&cli->client, kc, &opts);
    if (error == 0)
        cli->ns = cli->namespace ? cli->namespace : sw_client_namespace(cli->client);
    sw_kubeconfig_free(kc);
    return error;
}

void sw_cli_dispose(sw_cli *cli)
{
    for (size_t i = 0; cli->cmd && i < cli->cmd->nflags; i++) {
        if (cli->cmd->flags[i].kind == SW_CLI_STRINGS) {
            sw_cli_strings *list = cli->cmd->flags[i].value;
            sw_free(list->items);
            list->items = NULL;
            list->n = 0;
        }
    }
    sw_client_free(cli->client);
    sw_free(cli->args);
    cli->client = NULL;
    cli->args = NULL;
    cli->nargs = 0;
}

int sw_cli_finish(sw_cli *cli, int error)
{
    if (error < 0) {
        const char *msg = sw_error_msg();
        fprintf(stderr, "error: %s\n", msg && *msg ? msg : "the request failed");
    }
    sw_cli_dispose(cli);
    return error < 0 ? 1 : 0;
}

/* ---- tags ---- */

const json_t *sw_cli_latest_event(const json_t *stream, const char *tag)
{
    return json_array_get(json_object_get(sw_imagestream_status_tag(stream, tag), "items"), 0);
}

/* The tag a reference spec tag points at within stream, or an SW_CLI_FOLLOW_* problem. */
static int reference_target(const json_t *stream, const json_t *spec, const char **next)
{
    const char *fns = sw_json_str_at(spec, "from.namespace");
    const char *fname = sw_json_str_at(spec, "from.name");
    const char *sname = sw_json_str_at(stream, "metadata.name");
    if (fns && *fns && !sw_str_eq(fns, sw_json_str_at(stream, "metadata.namespace")))
        return SW_CLI_FOLLOW_CROSS;
    if (!fname || !*fname)
        return SW_CLI_FOLLOW_INVALID;
    const char *colon = strchr(fname, ':');
    if (!colon) {
        *next = fname;
        return SW_CLI_FOLLOW_OK;
    }
    if (colon == fname || !colon[1] || strchr(colon + 1, ':'))
        return SW_CLI_FOLLOW_INVALID;
    if (!sname || strlen(sname) != (size_t)(colon - fname) || strncmp(fname, sname, strlen(sname)))
        return SW_CLI_FOLLOW_CROSS;
    *next = colon + 1;
    return SW_CLI_FOLLOW_OK;
}

int sw_cli_follow_tag(const json_t *stream, const char *tag, const char **final, const json_t **ref,
                      bool *multiple)
{
    /* More steps than spec tags means some tag was visited twice: a cycle. */
    size_t steps = json_array_size(sw_json_at(stream, "spec.tags")) + 1;
    *multiple = false;
    *ref = NULL;
    for (size_t i = 0; i <= steps; i++) {
        *final = tag;
        const json_t *spec = sw_imagestream_spec_tag(stream, tag);
        if (!spec)
            return SW_CLI_FOLLOW_NOT_FOUND;
        if (!sw_str_eq(sw_json_str_at(spec, "from.kind"), "ImageStreamTag")) {
            *ref = spec;
            return SW_CLI_FOLLOW_OK;
        }
        int r = reference_target(stream, spec, &tag);
        if (r != SW_CLI_FOLLOW_OK)
            return r;
        *multiple = true;
    }
    return SW_CLI_FOLLOW_CIRCULAR;
}
