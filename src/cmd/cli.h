/* cli: what slipway's `oc`-style verbs (import-image, tag, describe) share: a small flag parser
 * (--flag value, --flag=value, -x value, booleans, "--"), the common --kubeconfig, -n/--namespace
 * and -h/--help flags with a generated help text, the API client set up from the kubeconfig,
 * `error: <message>` reporting (exit 1; usage errors exit 2), the image.openshift.io resources,
 * and the tag helpers the verbs agree on. See docs/cli.md. */
#ifndef SW_CMD_CLI_H
#define SW_CMD_CLI_H

#include "client/rest.h"

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

typedef enum sw_cli_kind {
    SW_CLI_BOOL,    /* value is a bool *; --flag, --flag=true|false */
    SW_CLI_STRING,  /* value is a const char **; --flag VALUE, --flag=VALUE */
    SW_CLI_STRINGS, /* value is a sw_cli_strings *; every occurrence appends (--env A --env B) */
} sw_cli_kind;

/* The values of a repeatable flag, in command-line order (borrowed from argv); the array is
 * freed by sw_cli_dispose. */
typedef struct sw_cli_strings {
    const char **items;
    size_t n;
} sw_cli_strings;

typedef struct sw_cli_flag {
    const char *name; /* long name without dashes ("from") */
    char short_name;  /* 'd' for -d, or 0 */
    sw_cli_kind kind;
    void *value;      /* where the parsed value goes */
    const char *arg;  /* the value's placeholder in the help ("REF"); NULL for booleans */
    const char *help; /* one sentence */
    bool *seen;       /* set to true when the flag is given, or NULL */
} sw_cli_flag;

typedef struct sw_cli_command {
    const char *name;     /* "tag" */
    const char *usage;    /* "SOURCE DEST [DEST...]": what follows `slipway tag [flags]` */
    const char *summary;  /* the help's first paragraph */
    const char *examples; /* preformatted lines, or NULL */
    const sw_cli_flag *flags;
    size_t nflags;
} sw_cli_command;

/* One run of a verb: caller-owned, sw_cli_dispose frees what parse and connect allocated. */
typedef struct sw_cli {
    const sw_cli_command *cmd;
    const char *kubeconfig; /* --kubeconfig, or NULL: $KUBECONFIG, then ~/.kube/config */
    const char *namespace;  /* -n/--namespace, or NULL */
    bool help;              /* -h/--help was given */
    char **args;            /* positional arguments (borrowed from argv) */
    size_t nargs;
    int timeout_ms;    /* per request, set before connect; 0: the client's default */
    sw_client *client; /* after sw_cli_connect */
    const char *ns;    /* the namespace to use: --namespace or the kubeconfig's */
} sw_cli;

#define SW_CLI_EXIT_USAGE 2

/* Parses argv[1..argc-1] against cmd's flags and the common ones. Returns 0, or SW_EINVALID with
 * the message set (unknown flag, missing or bad value). cli needs sw_cli_dispose either way. */
int sw_cli_parse(sw_cli *cli, const sw_cli_command *cmd, int argc, char **argv);
/* sw_cli_parse, then: --help prints the help (*exit_code 0), a bad flag prints a usage error
 * (*exit_code 2); both dispose cli and return true. False: go on with the command. */
bool sw_cli_start(sw_cli *cli, const sw_cli_command *cmd, int argc, char **argv, int *exit_code);
/* The command's help (usage, summary, examples, every flag) on f. */
void sw_cli_help(FILE *f, const sw_cli_command *cmd);
/* Prints `error: <the current error message>` and a pointer to --help, disposes cli; returns 2. */
int sw_cli_usage_error(sw_cli *cli);
/* Loads the kubeconfig and creates the client; sets cli->ns. Returns 0 or an SW_E* code. */
int sw_cli_connect(sw_cli *cli);
/* Prints `error: <message>` when error < 0; frees the client and argument list. Returns the
 * exit code: 0, or 1 on error. */
int sw_cli_finish(sw_cli *cli, int error);
void sw_cli_dispose(sw_cli *cli);

/* image.openshift.io/v1 resources the verbs use besides sw_res_imagestreams. */
/* build.openshift.io/v1 resources of the build verbs. */

/* FollowTagReference: walks same-stream ImageStreamTag spec tags from tag to the tag that is not
 * a reference. *final is that tag (borrowed from stream or tag), *ref its spec tag (NULL unless
 * SW_CLI_FOLLOW_OK), *multiple whether at least one reference was followed. */
enum sw_cli_follow {
    SW_CLI_FOLLOW_OK,
    SW_CLI_FOLLOW_NOT_FOUND, /* no spec tag at the end of the chain */
    SW_CLI_FOLLOW_CROSS,     /* a reference into another stream or namespace */
    SW_CLI_FOLLOW_CIRCULAR,
    SW_CLI_FOLLOW_INVALID, /* a reference name that is not <stream>:<tag> */
};
int sw_cli_follow_tag(const json_t *stream, const char *tag, const char **final, const json_t **ref,
                      bool *multiple);

/* The newest status event of tag, or NULL. */
const json_t *sw_cli_latest_event(const json_t *stream, const char *tag);

#endif
