/* controllers: the selection (--controllers), the shared API client and informer factory, and
 * the order things start and stop in (see controllers.h). */
#include "controllers/controllers.h"

#include "client/kubeconfig.h"
#include "client/leader.h"
#include "controllers/crdcleanup.h"
#include "controllers/rollouthook.h"
#include "util/alloc.h"
#include "util/error.h"
#include "util/json.h"
#include "util/log.h"
#include "util/str.h"
#include "util/time.h"

#include <pthread.h>
#include <string.h>

enum {
    C_IMPORT,
    C_BUILD,
    C_GC,
    C_NAMESPACE,
    C_MANAGEDIMAGE,
    C_TRIGGER,
    C_DEPLOYMENT,
    NCONTROLLERS
};

static const char *const names[NCONTROLLERS] = {"import",    "build",        "garbagecollector",
                                                "namespace", "managedimage", "imagetrigger",
                                                "deployment"};

/* The controllers themselves: started at once, or each time this process becomes the leader. */
typedef struct ctrl_set {
    sw_client *client;
    sw_informers *informers;
    sw_import_controller *import;
    sw_build_controller *build;
    sw_gc *gc;
    sw_namespace_controller *ns;
    sw_mi_controller *mi;
    sw_trigger_controller *trigger;
    sw_rollout_hook *hook;
    sw_deploy_controller *deploy;
    sw_crd_cleanup *crd; /* with the namespace controller */
    sw_gc_opts gc_opts;
    sw_namespace_controller_opts ns_opts;
    char *root_ca; /* ns_opts.root_ca: the kubeconfig's CA (the controller may start late) */
    int want[NCONTROLLERS];
    pthread_mutex_t mu; /* gc, ns, stopping: the probe may start them late */
    pthread_cond_t cond;
    bool stopping, probing;
    pthread_t probe;
} ctrl_set;

struct sw_controllers {
    sw_controllers_opts opts; /* the caller's other strings outlive the controllers */
    char *kubeconfig;         /* opts.kubeconfig's copy: the set may start much later */
    pthread_mutex_t mu;       /* set */
    ctrl_set *set;            /* NULL while another process leads */
    sw_client *lclient;       /* the elector's own client */
    sw_leader *leader;        /* NULL without --leader-elect */
};

/* One token's controller index, or -1. */
static int find(const char *tok, size_t len)
{
    for (int i = 0; i < NCONTROLLERS; i++)
        if (strlen(names[i]) == len && !strncmp(names[i], tok, len))
            return i;
    return -1;
}

/* want[i]: 0 off, 1 on by default, 2 named. */
static int parse(const char *enabled, int want[NCONTROLLERS])
{
    const char *p = enabled ? enabled : "*";
    memset(want, 0, NCONTROLLERS * sizeof(*want));
    while (*p) {
        size_t len = strcspn(p, ",");
        bool off = len && *p == '-';
        const char *tok = off ? p + 1 : p;
        size_t tlen = off ? len - 1 : len;
        if (tlen == 1 && *tok == '*' && !off) {
            for (int i = 0; i < NCONTROLLERS; i++)
                if (!want[i])
                    want[i] = 1;
        } else if (tlen) {
            int i = find(tok, tlen);
            if (i < 0)
                return sw_error_set(
                    SW_EINVALID,
                    "--controllers: unknown controller \"%.*s\" (known: import, "
                    "build, garbagecollector, namespace, managedimage, imagetrigger, "
                    "deployment, *)",
                    (int)(tlen > 64 ? 64 : tlen), tok);
            if (want[i] != 2 && want[i] != -1) /* the first explicit word wins, as in kube */
                want[i] = off ? -1 : 2;
        }
        p += len;
        if (*p == ',')
            p++;
    }
    bool any = false;
    for (int i = 0; i < NCONTROLLERS; i++) {
        if (want[i] < 0)
            want[i] = 0;
        any = any || want[i];
    }
    if (!any && *(enabled ? enabled : "*"))
        return sw_error_set(SW_EINVALID,
                            "--controllers %.64s runs no controller (to leave one out of the "
                            "default set, write *,-NAME; to run none, --no-controllers)",
                            enabled);
    return 0;
}

int sw_controllers_parse_duration(const char *flag, const char *v, int *ms_out)
{
    const char *p = v;
    uint64_t n = 0, unit = 1000;
    if (sw_parse_u64(&p, 3600000, &n) == 0) {
        if (!strcmp(p, "ms"))
            unit = 1;
        else if (!strcmp(p, "m"))
            unit = 60000;
        else if (*p && strcmp(p, "s"))
            n = 0;
    }
    if (n == 0 || n * unit > 3600000)
        return sw_error_set(SW_EINVALID, "%s: expected a duration such as 15s, got %.32s", flag, v);
    *ms_out = (int)(n * unit);
    return 0;
}

int sw_controllers_check(const char *enabled)
{
    int want[NCONTROLLERS];
    return parse(enabled, want);
}

/* Under mu: creates and starts the garbage collector, the namespace controller and/or the
 * standalone deployment rollout. Their informers (lean ones, namespaces) are theirs alone, so
 * they can start after the others. */
static int start_cluster_controllers(ctrl_set *c, bool gc, bool ns, bool deploy)
{
    int error = 0;
    if (deploy && !c->deploy)
        error = sw_deploy_controller_new(&c->deploy, c->client, c->informers);
    if (error == 0 && gc && !c->gc &&
        (error = sw_gc_new(&c->gc, c->client, c->informers, &c->gc_opts)) == 0)
        error = sw_gc_start(c->gc);
    if (error == 0 && ns && !c->ns &&
        (error = sw_namespace_controller_new(&c->ns, c->client, c->informers, &c->ns_opts)) == 0)
        error = sw_informers_start(c->informers);
    if (error == 0 && ns && c->ns)
        error = sw_namespace_controller_start(c->ns);
    if (error == 0 && ns && !c->crd)
        error = sw_crd_cleanup_new(&c->crd, c->client);
    if (error < 0)
        sw_log(SW_LOG_ERROR,
               "cannot start the garbage collector, namespace or deployment controller: %s",
               sw_error_msg());
    return error;
}

/* The garbage collector and the namespace controller of the default set wait until the
 * server first answers /version: only an answer without "-slipway-" (a real cluster, whose
 * kube-controller-manager does their work) leaves them out. Errors are retried until stop. */
static void *probe_main(void *arg)
{
    ctrl_set *c = arg;
    pthread_mutex_lock(&c->mu);
    while (!c->stopping) {
        pthread_mutex_unlock(&c->mu);
        json_t *v = NULL;
        int error = sw_client_request(c->client, "GET", "/version", NULL, NULL, NULL, &v);
        bool slipway = error == 0 && strstr(sw_json_str_at(v, "gitVersion") ?: "", "-slipway-");
        json_decref(v);
        pthread_mutex_lock(&c->mu);
        if (c->stopping)
            break;
        if (error == 0) {
            if (slipway)
                start_cluster_controllers(c, c->want[C_GC] != 0, c->want[C_NAMESPACE] != 0,
                                          c->want[C_DEPLOYMENT] != 0);
            else
                sw_log(SW_LOG_INFO, "not a slipway server: garbagecollector, namespace and "
                                    "deployment are left to its kube-controller-manager (name "
                                    "them in --controllers to run them anyway)");
            break;
        }
        struct timespec ts = sw_time_mono_deadline(1000);
        pthread_cond_timedwait(&c->cond, &c->mu, &ts);
    }
    pthread_mutex_unlock(&c->mu);
    return NULL;
}

static void set_stop(ctrl_set *c);

static int set_start(ctrl_set **out, const sw_controllers_opts *opts)
{
    sw_kubeconfig *kc = NULL;
    ctrl_set *c = sw_calloc(1, sizeof(*c));
    pthread_mutex_init(&c->mu, NULL);
    sw_time_cond_init(&c->cond);
    c->gc_opts = opts->gc;
    c->ns_opts = opts->ns;
    int error = parse(opts->enabled, c->want);
    if (error == 0)
        error = sw_kubeconfig_load(&kc, opts->kubeconfig, NULL);
    if (error == 0)
        error = sw_client_new(&c->client, kc);
    size_t ca_len = 0;
    const char *ca = error == 0 ? sw_kubeconfig_ca(kc, &ca_len) : NULL;
    if (ca && ca_len) { /* the namespace controller's kube-root-ca.crt */
        c->root_ca = sw_malloc(ca_len + 1);
        memcpy(c->root_ca, ca, ca_len);
        c->root_ca[ca_len] = '\0';
        c->ns_opts.root_ca = c->root_ca;
        c->ns_opts.root_ca_len = ca_len;
    }
    if (error == 0)
        error = sw_informers_new(&c->informers, c->client);
    /* every controller adds its handlers before the shared informers start */
    if (error == 0 && c->want[C_IMPORT])
        error = sw_import_controller_new(&c->import, c->client, c->informers, &opts->import);
    if (error == 0 && c->want[C_BUILD])
        error = sw_build_controller_new(&c->build, c->client, kc, c->informers, &opts->build);
    if (error == 0 && c->want[C_MANAGEDIMAGE])
        error = sw_mi_controller_new(&c->mi, c->client, c->informers, &opts->mi);
    if (error == 0 && c->want[C_TRIGGER] && opts->rollout_webhook_secret)
        error = sw_rollout_hook_new(&c->hook, c->client, opts->rollout_webhook_secret);
    sw_trigger_controller_opts to = {.hook = c->hook};
    if (error == 0 && c->want[C_TRIGGER])
        error = sw_trigger_controller_new(&c->trigger, c->client, c->informers, &to);
    if (error == 0)
        error = sw_informers_start(c->informers);
    if (error == 0 && c->trigger)
        error = sw_trigger_controller_start(c->trigger);
    if (error == 0 && c->mi)
        error = sw_mi_controller_start(c->mi);
    if (error == 0 && c->import)
        error = sw_import_controller_start(c->import);
    if (error == 0 && c->build)
        error = sw_build_controller_start(c->build);
    /* named ones (or any, against slipway's own server) start now; the default set asks */
    bool now_gc = c->want[C_GC] == 2 || (c->want[C_GC] && opts->slipway_server);
    bool now_ns = c->want[C_NAMESPACE] == 2 || (c->want[C_NAMESPACE] && opts->slipway_server);
    bool now_dep = c->want[C_DEPLOYMENT] == 2 || (c->want[C_DEPLOYMENT] && opts->slipway_server);
    if (error == 0 && (now_gc || now_ns || now_dep)) {
        pthread_mutex_lock(&c->mu);
        error = start_cluster_controllers(c, now_gc, now_ns, now_dep);
        pthread_mutex_unlock(&c->mu);
    }
    if (error == 0 && ((c->want[C_GC] && !now_gc) || (c->want[C_NAMESPACE] && !now_ns) ||
                       (c->want[C_DEPLOYMENT] && !now_dep))) {
        c->want[C_GC] = c->want[C_GC] && !now_gc;
        c->want[C_NAMESPACE] = c->want[C_NAMESPACE] && !now_ns;
        c->want[C_DEPLOYMENT] = c->want[C_DEPLOYMENT] && !now_dep;
        if (pthread_create(&c->probe, NULL, probe_main, c) != 0)
            error = sw_error_set(SW_ERROR, "cannot start the server probe");
        c->probing = error == 0;
    }
    sw_kubeconfig_free(kc);
    if (error < 0) {
        set_stop(c);
        return error;
    }
    *out = c;
    return 0;
}

static void set_stop(ctrl_set *c)
{
    if (!c)
        return;
    pthread_mutex_lock(&c->mu);
    c->stopping = true;
    pthread_cond_broadcast(&c->cond);
    pthread_mutex_unlock(&c->mu);
    if (c->client)
        sw_client_shutdown(c->client); /* workers in a long request (an import) return now */
    if (c->probing)
        pthread_join(c->probe, NULL);
    sw_informers_stop(c->informers); /* no handler runs once the controllers are freed */
    sw_namespace_controller_free(c->ns);
    sw_crd_cleanup_free(c->crd);
    sw_deploy_controller_free(c->deploy);
    sw_gc_free(c->gc);
    sw_mi_controller_free(c->mi);
    sw_trigger_controller_free(c->trigger);
    sw_rollout_hook_free(c->hook);
    sw_build_controller_free(c->build);
    sw_import_controller_free(c->import);
    sw_informers_free(c->informers);
    sw_client_free(c->client);
    sw_free(c->root_ca);
    pthread_cond_destroy(&c->cond);
    pthread_mutex_destroy(&c->mu);
    sw_free(c);
}

/* ---- leader election ---- */

static void on_lead(void *arg)
{
    sw_controllers *c = arg;
    pthread_mutex_lock(&c->mu);
    if (!c->set && set_start(&c->set, &c->opts) < 0)
        sw_log(SW_LOG_ERROR, "leading, but the controllers do not start: %s", sw_error_msg());
    pthread_mutex_unlock(&c->mu);
}

static void on_unlead(void *arg)
{
    sw_controllers *c = arg;
    pthread_mutex_lock(&c->mu);
    set_stop(c->set);
    c->set = NULL;
    pthread_mutex_unlock(&c->mu);
}

int sw_controllers_start(sw_controllers **out, const sw_controllers_opts *opts)
{
    sw_controllers *c = sw_calloc(1, sizeof(*c));
    pthread_mutex_init(&c->mu, NULL);
    c->opts = *opts;
    c->kubeconfig = opts->kubeconfig ? sw_strdup(opts->kubeconfig) : NULL;
    c->opts.kubeconfig = c->kubeconfig;
    int error = parse(opts->enabled, (int[NCONTROLLERS]){0});
    if (error == 0 && !opts->leader_elect) {
        error = set_start(&c->set, opts);
    } else if (error == 0) {
        sw_kubeconfig *kc = NULL;
        /* renewals must answer within the renew deadline, whatever a request of the
         * controllers waits for */
        sw_client_opts co = {.timeout_ms = 3000};
        error = sw_kubeconfig_load(&kc, opts->kubeconfig, NULL);
        if (error == 0)
            error = sw_client_new_opts(&c->lclient, kc, &co);
        sw_kubeconfig_free(kc);
        sw_leader_opts lo = {.ns = opts->lease_namespace,
                             .name = opts->lease_name ? opts->lease_name : "slipway-controllers",
                             .identity = opts->identity,
                             .lease_s = opts->lease_s,
                             .renew_deadline_s = opts->renew_deadline_s,
                             .retry_ms = opts->retry_ms,
                             .on_start = on_lead,
                             .on_stop = on_unlead,
                             .arg = c};
        if (error == 0)
            error = sw_leader_start(&c->leader, c->lclient, &lo);
    }
    if (error < 0) {
        sw_controllers_stop(c);
        return error;
    }
    *out = c;
    return 0;
}

bool sw_controllers_leading(sw_controllers *c)
{
    if (!c)
        return false;
    pthread_mutex_lock(&c->mu);
    bool on = c->set != NULL;
    pthread_mutex_unlock(&c->mu);
    return on;
}

sw_gc *sw_controllers_gc(sw_controllers *c)
{
    if (!c)
        return NULL;
    pthread_mutex_lock(&c->mu);
    sw_gc *gc = NULL;
    if (c->set) {
        pthread_mutex_lock(&c->set->mu);
        gc = c->set->gc;
        pthread_mutex_unlock(&c->set->mu);
    }
    pthread_mutex_unlock(&c->mu);
    return gc;
}

void sw_controllers_stop(sw_controllers *c)
{
    if (!c)
        return;
    sw_leader_stop(c->leader); /* a leader stops its set (on_unlead), then releases */
    if (c->lclient)
        sw_client_free(c->lclient);
    set_stop(c->set);
    pthread_mutex_destroy(&c->mu);
    sw_free(c->kubeconfig);
    sw_free(c);
}
