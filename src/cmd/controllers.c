/* controllers: `slipway controllers` runs slipway's controllers alone, as API clients of the
 * server its kubeconfig names (a slipway server started with --no-controllers, or a real
 * cluster that serves the image API), until SIGINT/SIGTERM. */
#include "cmd/cli.h"
#include "cmd/cmd.h"

#include "builder/backend.h"
#include "controllers/controllers.h"
#include "util/error.h"
#include "util/log.h"
#include "util/str.h"

#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

int sw_cmd_controllers(int argc, char **argv)
{
    const char *interval = "900", *per_minute = "60", *verbosity = "0", *log_format = "text",
               *insecure = "", *max_builds = "0", *enabled = "*", *hook = NULL, *lease = "15s",
               *renew = "10s", *retry = "2s", *backends = SW_BACKENDS_DEFAULT;
    bool elect = true;
    const sw_cli_flag flags[] = {
        {"scheduled-import-interval", 0, SW_CLI_STRING, &interval, "SECONDS",
         "Minimum time between two scheduled imports of a tag (default 900).", NULL},
        {"max-scheduled-imports-per-minute", 0, SW_CLI_STRING, &per_minute, "N",
         "Global cap on scheduled imports (default 60).", NULL},
        {"insecure-registry", 0, SW_CLI_STRING, &insecure, "HOST:PORT[,HOST:PORT...]",
         "Registries builders reach over plain HTTP or without TLS verification.", NULL},
        {"max-running-builds", 0, SW_CLI_STRING, &max_builds, "N",
         "Builders running at once (default 2 per CPU, at least 4); further builds wait in New.",
         NULL},
        {"build-backends", 0, SW_CLI_STRING, &backends, "LIST",
         "The build backends builders may use: native, buildah or both (default "
         "native,buildah; see docs/builds.md).",
         NULL},
        {"controllers", 0, SW_CLI_STRING, &enabled, "LIST",
         "The controllers to run: a comma list of import, build, garbagecollector, namespace, "
         "managedimage, imagetrigger, deployment; * "
         "for the default set, *,-NAME for all but NAME. In the default set garbagecollector, "
         "namespace and deployment run only against a slipway server (a cluster's "
         "kube-controller-manager does their work): they start once the server first answers.",
         NULL},
        {"rollout-webhook-secret", 0, SW_CLI_STRING, &hook, "NAMESPACE/NAME",
         "POST a signed record of every image-triggered rollout to the url in that Secret "
         "(keys url and secret).",
         NULL},
        {"leader-elect", 0, SW_CLI_BOOL, &elect, NULL,
         "Run the controllers only while this process holds the Lease kube-system/"
         "slipway-controllers, so that of several copies (and servers started with "
         "--leader-elect) exactly one acts (default true; --leader-elect=false to run "
         "regardless).",
         NULL},
        {"leader-elect-lease-duration", 0, SW_CLI_STRING, &lease, "DURATION",
         "How long a candidate waits after the Lease last changed before taking it (15s).", NULL},
        {"leader-elect-renew-deadline", 0, SW_CLI_STRING, &renew, "DURATION",
         "How long the leader keeps acting without a successful renewal (10s).", NULL},
        {"leader-elect-retry-period", 0, SW_CLI_STRING, &retry, "DURATION",
         "How often candidates try and the leader renews (2s).", NULL},
        {"v", 0, SW_CLI_STRING, &verbosity, "N", "Log verbosity: 1 info, 2 requests, 4 debug.",
         NULL},
        {"log-format", 0, SW_CLI_STRING, &log_format, "text|json",
         "Log lines as text (the default) or one JSON object per line.", NULL},
    };
    const sw_cli_command cmd = {
        "controllers",
        "",
        "Runs slipway's controllers (image import, builds, and against a slipway server the "
        "garbage collector and the namespace controller) against the API server the kubeconfig "
        "names, until SIGINT or SIGTERM. `slipway server` embeds the same controllers unless "
        "started with --no-controllers.",
        "  slipway controllers --kubeconfig data/admin.kubeconfig\n",
        flags,
        sizeof(flags) / sizeof(flags[0])};
    sw_cli cli;
    int code = 0;
    int64_t iv, pm, v, mb;
    if (sw_cli_start(&cli, &cmd, argc, argv, &code))
        return code;
    if (sw_str_to_i64(interval, &iv) < 0 || iv < 1 || sw_str_to_i64(per_minute, &pm) < 0 ||
        pm < 1 || sw_str_to_i64(verbosity, &v) < 0 || sw_str_to_i64(max_builds, &mb) < 0 ||
        mb < 0 || mb > 10000) {
        sw_error_set(SW_EINVALID,
                     "--scheduled-import-interval, --max-scheduled-imports-per-minute, "
                     "--max-running-builds and --v take positive numbers");
        return sw_cli_usage_error(&cli);
    }
    if (sw_controllers_check(enabled) < 0 || sw_backend_list_check(backends) < 0)
        return sw_cli_usage_error(&cli);
    int lease_ms = 0, renew_ms = 0, retry_ms = 0;
    if (sw_controllers_parse_duration("--leader-elect-lease-duration", lease, &lease_ms) < 0 ||
        sw_controllers_parse_duration("--leader-elect-renew-deadline", renew, &renew_ms) < 0 ||
        sw_controllers_parse_duration("--leader-elect-retry-period", retry, &retry_ms) < 0)
        return sw_cli_usage_error(&cli);
    if (sw_log_parse_format(log_format) < 0)
        return sw_cli_usage_error(&cli);
    sw_log_set_verbosity((int)v);
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &set, NULL);
    signal(SIGPIPE, SIG_IGN);
    const char *kc = cli.kubeconfig ? cli.kubeconfig : getenv("KUBECONFIG");
    /* --insecure-registry a,b: split in place into a NULL-terminated list */
    char registries[2048];
    const char *list[33] = {NULL};
    size_t nlist = 0;
    sw_strlcpy(registries, insecure, sizeof(registries));
    for (char *p = registries; *p && nlist < 32;) {
        char *comma = strchr(p, ',');
        if (comma)
            *comma = '\0';
        if (*p)
            list[nlist++] = p;
        if (!comma)
            break;
        p = comma + 1;
    }
    sw_controllers *c = NULL;
    sw_controllers_opts o = {
        .kubeconfig = kc,
        .enabled = enabled,
        .import = {.scheduled_interval_s = (int)iv, .max_scheduled_per_minute = (int)pm},
        .build = {.insecure_registries = list, .max_running = (int)mb, .backends = backends},
        .mi = {.insecure_registries = list},
        .rollout_webhook_secret = hook,
        .leader_elect = elect,
        .lease_s = lease_ms / 1000,
        .renew_deadline_s = renew_ms / 1000,
        .retry_ms = retry_ms};
    int error = sw_controllers_start(&c, &o);
    if (error == 0) {
        int sig;
        sw_log(SW_LOG_WARN, "slipway controllers running");
        sigwait(&set, &sig);
        sw_log(SW_LOG_WARN, "received signal %d, shutting down", sig);
        sw_controllers_stop(c);
    }
    return sw_cli_finish(&cli, error);
}
