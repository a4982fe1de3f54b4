/* server: `slipway server`: opens the store, starts the watch cache and the HTTP API, writes
 * DIR/admin.kubeconfig, and runs until SIGINT/SIGTERM. */
#include "cmd/cmd.h"

#include "apiserver/notify.h"
#include "builder/backend.h"
#include "apiserver/nscache.h"
#include "controllers/controllers.h"
#include "apiserver/server.h"
#include "apiserver/tls.h"
#include "apiserver/watchcache.h"
#include "registry/client.h"
#include "util/alloc.h"
#include "util/error.h"
#include "util/log.h"
#include "util/path.h"
#include "util/str.h"
#include "util/time.h"

#include <errno.h>
#include <jansson.h>
#include <malloc.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

typedef struct server_flags {
    const char *data_dir;
    char host[64];
    uint16_t port;
    bool anonymous;
    bool always_allow; /* --authorization-mode AlwaysAllow */
    bool plain_http;
    const char *image_registry;
    bool sync_full;
    int64_t compact_interval;
    int64_t compact_keep;
    int64_t verbosity;
    const char *insecure[33]; /* --insecure-registry, NULL-terminated */
    size_t ninsecure;
    const char *notify_token_file;
    const char *rollout_hook; /* --rollout-webhook-secret NS/NAME */
    bool no_controllers;
    const char *controllers; /* --controllers, NULL: "*" */
    int64_t registry_conns;
    int64_t scheduled_interval;
    int64_t scheduled_per_minute;
    int64_t max_running_builds; /* 0: the build controller's default */
    const char *build_backends; /* --build-backends, NULL: all */
    int64_t idle_timeout;
    int64_t max_connections, max_per_address, header_timeout; /* connlimit.h */
    int64_t body_memory_mib, watch_cache_mib;
    const char *cert_dir;       /* --cert-dir: the serving pair is <dir>/apiserver.{crt,key} */
    const char *client_ca_file; /* --client-ca-file */
    bool data_dir_set;
    char data_dir_buf[4096];
    const char *store;                          /* --store: NULL/"sqlite", or "etcd://..." */
    const char *etcd_ca, *etcd_cert, *etcd_key; /* --etcd-cafile/-certfile/-keyfile */
    const char *etcd_prefix;                    /* --etcd-prefix */
    int leader_elect;                           /* -1: the default (on etcd), 0, 1 */
    int lease_ms, renew_ms, retry_ms;           /* --leader-elect-* */
} server_flags;

/* kube-apiserver flags envtest passes (crd-gc.md §1.16) that slipway accepts and does not use:
 * it keeps its own embedded store, has no Services or admission plugins, and signs
 * ServiceAccount tokens with its own key. */
static const char *const ignored_flags[] = {"--etcd-servers",
                                            "--service-cluster-ip-range",
                                            "--service-account-issuer",
                                            "--service-account-key-file",
                                            "--service-account-signing-key-file",
                                            "--disable-admission-plugins",
                                            "--enable-admission-plugins",
                                            "--advertise-address",
                                            "--feature-gates",
                                            "--runtime-config",
                                            NULL};

static void usage(FILE *f)
{
    fprintf(
        f,
        "Usage: slipway server [flags]\n\n"
        "Runs the Kubernetes-compatible API server on an embedded SQLite store, or on etcd.\n\n"
        "Flags:\n"
        "  --data-dir DIR              where the store and admin.kubeconfig live (default "
        "./slipway-data)\n"
        "  --listen HOST:PORT          address to serve on (default 127.0.0.1:6443)\n"
        "  --insecure-anonymous        accept requests without a token (loopback addresses only)\n"
        "  --authorization-mode MODE   RBAC (default: Roles and bindings decide; the admin\n"
        "                              kubeconfig is system:masters) or AlwaysAllow (every\n"
        "                              authenticated request is allowed)\n"
        "  --plain-http                serve HTTP instead of HTTPS (loopback addresses only; "
        "kubectl\n"
        "                              will not send its token over it, so pair it with\n"
        "                              --insecure-anonymous or use curl/python clients)\n"
        "  --image-registry HOST:PORT  the registry ImageStreams push to; sets\n"
        "                              status.dockerImageRepository (OpenShift's "
        "internalRegistryHostname)\n"
        "  --insecure-registry HOST:PORT  a registry reached over plain HTTP or without TLS\n"
        "                              verification, for every import and build (repeatable)\n"
        "  --registry-notifications-token-file FILE  accept the distribution registry's\n"
        "                              notifications at POST /notifications/registry with\n"
        "                              Authorization: Bearer <the token in FILE>\n"
        "  --registry-connections N    concurrent requests to one registry (default 16)\n"
        "  --rollout-webhook-secret NS/NAME  POST a signed record of every image-triggered\n"
        "                              rollout to the url in that Secret (keys url, secret)\n"
        "  --scheduled-import-interval SECONDS  minimum time between two scheduled imports of a\n"
        "                              tag (default 900, OpenShift's default)\n"
        "  --max-scheduled-imports-per-minute N  global cap on scheduled imports (default 60)\n"
        "  --max-running-builds N      builders running at once (default 2 per CPU, at least 4);\n"
        "                              further builds wait in New\n"
        "  --build-backends LIST       the build backends builders may use: native, buildah or\n"
        "                              both (default native,buildah); see docs/builds.md\n"
        "  --controllers LIST          the embedded controllers to run: a comma list of import,\n"
        "                              build, garbagecollector, namespace, managedimage,\n"
        "                              imagetrigger, deployment; * for all (the default);\n"
        "                              *,-NAME for all but NAME\n"
        "  --no-controllers            serve the API only (run `slipway controllers` elsewhere);\n"
        "                              objects then keep their deletion finalizers and a deleted\n"
        "                              namespace stays Terminating until controllers run\n"
        "  --store sqlite|etcd://HOST:PORT[,HOST:PORT...]  where objects live: the embedded\n"
        "                              SQLite store in --data-dir (the default), or an etcd v3\n"
        "                              cluster (3.4+, through its JSON gateway; endpoints are\n"
        "                              tried in turn). Several servers may share one etcd\n"
        "                              (docs/scale-out.md)\n"
        "  --etcd-cafile FILE, --etcd-certfile FILE, --etcd-keyfile FILE  TLS to etcd: the CA\n"
        "                              that signed its certificate, and a client certificate\n"
        "  --etcd-prefix PREFIX        every key under PREFIX (default /registry)\n"
        "  --leader-elect[=BOOL]       run the embedded controllers only while this server holds\n"
        "                              the Lease kube-system/slipway-controllers (default: true\n"
        "                              on etcd, false on SQLite)\n"
        "  --leader-elect-lease-duration D, --leader-elect-renew-deadline D,\n"
        "  --leader-elect-retry-period D  client-go's timings (15s, 10s, 2s)\n"
        "  --store-sync full|normal    full: fsync every commit (default); normal: WAL without "
        "fsync\n"
        "                              per commit (survives a process crash, not a power loss)\n"
        "  --compact-interval SECONDS  how often old revisions are compacted (default 60; 0: "
        "never)\n"
        "  --compact-keep N            newest revisions kept by compaction (default 10000)\n"
        "  --idle-timeout SECONDS      close a connection that sends nothing for this long while\n"
        "                              none of its requests is being served (default 90, like\n"
        "                              kube-apiserver; 0: never)\n"
        "  --request-header-timeout SECONDS  a connection that has not authenticated must send a\n"
        "                              whole request header this soon after it opened or was\n"
        "                              last answered, or it is closed (default 10; 0: never)\n"
        "  --max-connections N         open connections in all (default 2000); when all are\n"
        "                              taken, the oldest idle unauthenticated one makes room\n"
        "  --max-connections-per-address N  unauthenticated connections one client address may\n"
        "                              hold (default 512)\n"
        "  --max-body-memory MIB       what all request bodies being received may hold in memory\n"
        "                              together; past it a request gets 429 (default 256)\n"
        "  --watch-cache-memory MIB    what the watch cache's recent events may hold (default\n"
        "                              256; older events are re-read from the store)\n"
        "  --log-format text|json      log lines as text (the default) or one JSON object per\n"
        "                              line (time, level, msg; requests add verb, path, code,\n"
        "                              latency_ms, user)\n"
        "  --v N                       log verbosity: 1 info, 2 requests, 4 debug (default 0)\n"
        "  -h, --help                  show this help\n"
        "\n"
        "kube-apiserver flags, so that envtest can start slipway as its kube-apiserver\n"
        "(docs/envtest.md):\n"
        "  --secure-port PORT          the port to serve HTTPS on (with --bind-address)\n"
        "  --bind-address ADDR         the IPv4 address to serve on\n"
        "  --cert-dir DIR              the serving certificate is DIR/apiserver.crt and .key\n"
        "                              (generated there when absent); without --data-dir the\n"
        "                              store lives in DIR/slipway-data\n"
        "  --client-ca-file FILE       accept client certificates FILE signed (CN is the user,\n"
        "                              O the groups); RBAC decides what they may do\n"
        "  --etcd-servers, --service-cluster-ip-range,\n"
        "  --service-account-issuer, --service-account-key-file,\n"
        "  --service-account-signing-key-file, --disable-admission-plugins,\n"
        "  --enable-admission-plugins, --advertise-address, --feature-gates, --runtime-config\n"
        "  VALUE, --allow-privileged[=BOOL]  accepted and not used: slipway keeps its own\n"
        "                              embedded store, has no Services or admission plugins, and\n"
        "                              signs service account tokens with its own key\n");
}

static int parse_listen(const char *s, server_flags *f)
{
    const char *colon = strrchr(s, ':');
    int64_t port;
    if (!colon || (size_t)(colon - s) >= sizeof(f->host) || sw_str_to_i64(colon + 1, &port) < 0 ||
        port < 1 || port > 65535)
        return sw_error_set(SW_EINVALID, "--listen: expected HOST:PORT, got %s", s);
    memcpy(f->host, s, (size_t)(colon - s));
    f->host[colon - s] = '\0';
    f->port = (uint16_t)port;
    return 0;
}

/* Accepts "--flag value" and "--flag=value". */
static const char *flag_value(int argc, char **argv, int *i, const char *name)
{
    size_t n = strlen(name);
    if (strncmp(argv[*i], name, n))
        return NULL;
    if (argv[*i][n] == '=')
        return argv[*i] + n + 1;
    if (argv[*i][n] == '\0' && *i + 1 < argc)
        return argv[++*i];
    return NULL;
}

/* One of ignored_flags (with its value); *i moves past it. */
static bool ignored(int argc, char **argv, int *i)
{
    for (size_t k = 0; ignored_flags[k]; k++)
        if (flag_value(argc, argv, i, ignored_flags[k]))
            return true;
    return false;
}

/* --NAME V: an integer from min to max (unit names it in the message). 0 or SW_EINVALID. */
static int range_flag(const char *name, const char *v, int64_t min, int64_t max, const char *unit,
                      int64_t *out)
{
    if (sw_str_to_i64(v, out) < 0 || *out < min || *out > max)
        return sw_error_set(SW_EINVALID, "%s: expected %lld to %lld%s", name, (long long)min,
                            (long long)max, unit);
    return 0;
}

static int parse_flags(int argc, char **argv, server_flags *f)
{
    const char *v;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--insecure-anonymous")) {
            f->anonymous = true;
        } else if ((v = flag_value(argc, argv, &i, "--authorization-mode"))) {
            if (strcmp(v, "RBAC") && strcmp(v, "AlwaysAllow"))
                return sw_error_set(SW_EINVALID,
                                    "--authorization-mode: expected RBAC or "
                                    "AlwaysAllow, not \"%.64s\"",
                                    v);
            f->always_allow = !strcmp(v, "AlwaysAllow");
        } else if (!strcmp(argv[i], "--no-controllers")) {
            f->no_controllers = true;
        } else if ((v = flag_value(argc, argv, &i, "--controllers"))) {
            if (sw_controllers_check(v) < 0)
                return SW_EINVALID;
            f->controllers = v;
        } else if ((v = flag_value(argc, argv, &i, "--registry-connections"))) {
            if (sw_str_to_i64(v, &f->registry_conns) < 0 || f->registry_conns < 1 ||
                f->registry_conns > 256)
                return sw_error_set(SW_EINVALID, "--registry-connections: expected 1 to 256");
        } else if ((v = flag_value(argc, argv, &i, "--scheduled-import-interval"))) {
            if (sw_str_to_i64(v, &f->scheduled_interval) < 0 || f->scheduled_interval < 1)
                return sw_error_set(SW_EINVALID, "--scheduled-import-interval: expected seconds");
        } else if ((v = flag_value(argc, argv, &i, "--max-scheduled-imports-per-minute"))) {
            if (sw_str_to_i64(v, &f->scheduled_per_minute) < 0 || f->scheduled_per_minute < 1)
                return sw_error_set(SW_EINVALID,
                                    "--max-scheduled-imports-per-minute: expected a count");
        } else if ((v = flag_value(argc, argv, &i, "--max-running-builds"))) {
            if (sw_str_to_i64(v, &f->max_running_builds) < 0 || f->max_running_builds < 0 ||
                f->max_running_builds > 10000)
                return sw_error_set(SW_EINVALID,
                                    "--max-running-builds: expected 1 to 10000 (0: the default)");
        } else if ((v = flag_value(argc, argv, &i, "--build-backends"))) {
            if (sw_backend_list_check(v) < 0)
                return SW_EINVALID;
            f->build_backends = v;
        } else if (!strcmp(argv[i], "--plain-http")) {
            f->plain_http = true;
        } else if ((v = flag_value(argc, argv, &i, "--data-dir"))) {
            f->data_dir = v;
            f->data_dir_set = true;
        } else if ((v = flag_value(argc, argv, &i, "--secure-port"))) {
            int64_t port;
            if (sw_str_to_i64(v, &port) < 0 || port < 1 || port > 65535)
                return sw_error_set(SW_EINVALID, "--secure-port: expected a port, got %s", v);
            f->port = (uint16_t)port;
        } else if ((v = flag_value(argc, argv, &i, "--bind-address"))) {
            if (strlen(v) >= sizeof(f->host))
                return sw_error_set(SW_EINVALID, "--bind-address: too long");
            sw_strlcpy(f->host, v, sizeof(f->host));
        } else if ((v = flag_value(argc, argv, &i, "--cert-dir"))) {
            f->cert_dir = v;
        } else if ((v = flag_value(argc, argv, &i, "--client-ca-file"))) {
            f->client_ca_file = v;
        } else if (!strcmp(argv[i], "--allow-privileged") ||
                   sw_str_prefix(argv[i], "--allow-privileged=")) {
            /* accepted, not used */
        } else if (ignored(argc, argv, &i)) {
            /* accepted, not used */
        } else if ((v = flag_value(argc, argv, &i, "--listen"))) {
            if (parse_listen(v, f) < 0)
                return SW_EINVALID;
        } else if ((v = flag_value(argc, argv, &i, "--image-registry"))) {
            f->image_registry = v;
        } else if ((v = flag_value(argc, argv, &i, "--insecure-registry"))) {
            if (f->ninsecure == 32)
                return sw_error_set(SW_EINVALID, "--insecure-registry: at most 32");
            f->insecure[f->ninsecure++] = v;
        } else if ((v = flag_value(argc, argv, &i, "--registry-notifications-token-file"))) {
            f->notify_token_file = v;
        } else if ((v = flag_value(argc, argv, &i, "--rollout-webhook-secret"))) {
            f->rollout_hook = v;
        } else if ((v = flag_value(argc, argv, &i, "--store"))) {
            if (strcmp(v, "sqlite") && !sw_str_prefix(v, "etcd://"))
                return sw_error_set(SW_EINVALID,
                                    "--store: expected sqlite or etcd://HOST:PORT[,HOST:PORT]");
            f->store = v;
        } else if ((v = flag_value(argc, argv, &i, "--etcd-cafile"))) {
            f->etcd_ca = v;
        } else if ((v = flag_value(argc, argv, &i, "--etcd-certfile"))) {
            f->etcd_cert = v;
        } else if ((v = flag_value(argc, argv, &i, "--etcd-keyfile"))) {
            f->etcd_key = v;
        } else if ((v = flag_value(argc, argv, &i, "--etcd-prefix"))) {
            if (v[0] != '/' || strlen(v) > 200)
                return sw_error_set(SW_EINVALID, "--etcd-prefix: expected /PATH");
            f->etcd_prefix = v;
        } else if (!strcmp(argv[i], "--leader-elect")) {
            f->leader_elect = 1;
        } else if ((v = flag_value(argc, argv, &i, "--leader-elect"))) {
            bool b;
            if (sw_str_to_bool(v, &b) < 0)
                return sw_error_set(SW_EINVALID, "--leader-elect: expected true or false");
            f->leader_elect = b;
        } else if ((v = flag_value(argc, argv, &i, "--leader-elect-lease-duration"))) {
            if (sw_controllers_parse_duration("--leader-elect-lease-duration", v, &f->lease_ms) < 0)
                return SW_EINVALID;
        } else if ((v = flag_value(argc, argv, &i, "--leader-elect-renew-deadline"))) {
            if (sw_controllers_parse_duration("--leader-elect-renew-deadline", v, &f->renew_ms) < 0)
                return SW_EINVALID;
        } else if ((v = flag_value(argc, argv, &i, "--leader-elect-retry-period"))) {
            if (sw_controllers_parse_duration("--leader-elect-retry-period", v, &f->retry_ms) < 0)
                return SW_EINVALID;
        } else if ((v = flag_value(argc, argv, &i, "--store-sync"))) {
            if (strcmp(v, "full") && strcmp(v, "normal"))
                return sw_error_set(SW_EINVALID, "--store-sync: expected full or normal");
            f->sync_full = !strcmp(v, "full");
        } else if ((v = flag_value(argc, argv, &i, "--compact-interval"))) {
            if (range_flag("--compact-interval", v, 0, 31536000, " seconds", &f->compact_interval) <
                0)
                return SW_EINVALID;
        } else if ((v = flag_value(argc, argv, &i, "--idle-timeout"))) {
            if (range_flag("--idle-timeout", v, 0, 86400, " seconds", &f->idle_timeout) < 0)
                return SW_EINVALID;
        } else if ((v = flag_value(argc, argv, &i, "--request-header-timeout"))) {
            if (range_flag("--request-header-timeout", v, 0, 3600, " seconds", &f->header_timeout) <
                0)
                return SW_EINVALID;
        } else if ((v = flag_value(argc, argv, &i, "--max-connections"))) {
            if (range_flag("--max-connections", v, 1, 20000, "", &f->max_connections) < 0)
                return SW_EINVALID;
        } else if ((v = flag_value(argc, argv, &i, "--max-connections-per-address"))) {
            if (range_flag("--max-connections-per-address", v, 1, 20000, "", &f->max_per_address) <
                0)
                return SW_EINVALID;
        } else if ((v = flag_value(argc, argv, &i, "--max-body-memory"))) {
            if (range_flag("--max-body-memory", v, 4, 1048576, " MiB", &f->body_memory_mib) < 0)
                return SW_EINVALID;
        } else if ((v = flag_value(argc, argv, &i, "--watch-cache-memory"))) {
            if (range_flag("--watch-cache-memory", v, 1, 1048576, " MiB", &f->watch_cache_mib) < 0)
                return SW_EINVALID;
        } else if ((v = flag_value(argc, argv, &i, "--compact-keep"))) {
            if (sw_str_to_i64(v, &f->compact_keep) < 0 || f->compact_keep < 1)
                return sw_error_set(SW_EINVALID, "--compact-keep: expected a positive count");
        } else if ((v = flag_value(argc, argv, &i, "--log-format"))) {
            if (sw_log_parse_format(v) < 0)
                return SW_EINVALID;
        } else if ((v = flag_value(argc, argv, &i, "--v"))) {
            if (sw_str_to_i64(v, &f->verbosity) < 0)
                return sw_error_set(SW_EINVALID, "--v: expected a number");
        } else {
            return sw_error_set(SW_EINVALID, "unknown flag %s", argv[i]);
        }
    }
    return 0;
}

static bool loopback(const char *host)
{
    return sw_str_prefix(host, "127.");
}

/* A random secret kept in DIR/<file> (hex), so tokens survive restarts: the admin token
 * (DIR/token) and the key build tokens are signed with (DIR/build-token.key). */
/* Every file slipway writes there is 0600, but a directory others may enter still shows them
 * its names, and an older run's files may be wider: say so once at start. */
static void warn_open_dir(const char *dir)
{
    struct stat st;
    if (stat(dir, &st) == 0 && (st.st_mode & 077))
        sw_log(SW_LOG_WARN,
               "data directory %s is open to other users (mode %04o): it holds the store with "
               "every Secret; chmod 700 it",
               dir, (unsigned)(st.st_mode & 07777));
}

static int load_secret(const char *dir, const char *file, char *tok, size_t n)
{
    char path[4096], *text = NULL;
    size_t r = 0;
    snprintf(path, sizeof(path), "%s/%s", dir, file);
    int error = sw_path_read(path, n - 1, false, &text, &r);
    if (error == 0) {
        while (r && (text[r - 1] == '\n' || text[r - 1] == '\r'))
            text[--r] = '\0';
        bool printable = true; /* no NUL, space or control byte cutting the secret short */
        for (size_t i = 0; i < r && printable; i++)
            printable = text[i] > ' ' && text[i] <= '~';
        sw_strlcpy(tok, text, n);
        sw_free(text);
        if (r >= 32 && printable)
            return 0;
    }
    /* Only a missing file is replaced: one that is unreadable, too long or too short may be
     * somebody's, and a new secret would lock every client out. */
    if (error != SW_ENOTFOUND) {
        char why[300] = "";
        if (error < 0)
            snprintf(why, sizeof(why), ": %s", sw_error_msg());
        return sw_error_set(SW_EINVALID,
                            "%s: not a usable secret (32 to %zu printable ASCII characters "
                            "expected%s); remove it to have a new one generated",
                            path, n - 1, why);
    }
    unsigned char raw[32];
    sw_random_bytes(raw, sizeof(raw));
    sw_hex(raw, sizeof(raw), tok);
    return sw_path_write(path, tok, strlen(tok), 0600);
}

static int write_kubeconfig(const char *dir, const server_flags *f, const char *token,
                            const char *cert)
{
    char path[4096];
    snprintf(path, sizeof(path), "%s/admin.kubeconfig", dir);
    sw_buf out = SW_BUF_INIT(256 * 1024);
    char *ca = cert ? sw_base64_encode(cert, strlen(cert)) : NULL;
    sw_buf_puts(&out, "apiVersion: v1\nkind: Config\nclusters:\n- name: slipway\n  cluster:\n");
    if (ca)
        sw_buf_printf(&out, "    certificate-authority-data: %s\n", ca);
    sw_buf_printf(&out,
                  "    server: %s://%s:%u\nusers:\n- name: admin\n  user:\n    token: %s\n"
                  "contexts:\n- name: slipway\n  context:\n    cluster: slipway\n    user: admin\n"
                  "    namespace: default\ncurrent-context: slipway\n",
                  cert ? "https" : "http", f->host, f->port, token);
    sw_free(ca);
    int error = sw_buf_error(&out) < 0 ? sw_error_set(SW_ERROR, "cannot write %s: too large", path)
                                       : sw_path_write(path, out.ptr, out.len, 0600);
    sw_buf_dispose(&out);
    return error;
}

static int run(server_flags *f)
{
    char dbpath[4096], token[80], build_key[80], sa_key[80], *cert = NULL, *key = NULL,
                                                             *client_ca = NULL;
    sw_store *store = NULL;
    sw_apiserver *srv = NULL;
    sw_controllers *ctrl = NULL;
    sw_api api = {0};
    int64_t t0 = sw_time_mono_ms();
    int error = 0;
    if (f->cert_dir && !f->data_dir_set) {
        snprintf(f->data_dir_buf, sizeof(f->data_dir_buf), "%s/slipway-data", f->cert_dir);
        f->data_dir = f->data_dir_buf;
    }
    if (f->cert_dir && mkdir(f->cert_dir, 0700) < 0 && errno != EEXIST)
        return sw_error_set(SW_ERROR, "cannot create %s: %s", f->cert_dir, sw_strerror(errno));
    if (mkdir(f->data_dir, 0700) < 0 && errno != EEXIST)
        return sw_error_set(SW_ERROR, "cannot create %s: %s", f->data_dir, sw_strerror(errno));
    warn_open_dir(f->data_dir);
    if ((error = load_secret(f->data_dir, "token", token, sizeof(token))) < 0 ||
        (error = load_secret(f->data_dir, "build-token.key", build_key, sizeof(build_key))) < 0 ||
        (error = load_secret(f->data_dir, "sa-token.key", sa_key, sizeof(sa_key))) < 0)
        return error;
    if (!f->plain_http &&
        (error = f->cert_dir
                     ? sw_tls_load_or_create_named(f->cert_dir, "apiserver", f->host, &cert, &key)
                     : sw_tls_load_or_create(f->data_dir, f->host, &cert, &key)) < 0)
        return error;
    if (f->client_ca_file && (error = sw_tls_read_ca(f->client_ca_file, &client_ca)) < 0) {
        sw_free(cert);
        sw_free(key);
        return error;
    }
    if (f->store && sw_str_prefix(f->store, "etcd://")) {
        sw_etcd_opts eo = {.endpoints = f->store + strlen("etcd://"),
                           .prefix = f->etcd_prefix,
                           .cafile = f->etcd_ca,
                           .certfile = f->etcd_cert,
                           .keyfile = f->etcd_key};
        error = sw_store_etcd_open(&store, &eo);
    } else {
        snprintf(dbpath, sizeof(dbpath), "%s/state.db", f->data_dir);
        sw_sqlite_opts so = {.sync_full = f->sync_full};
        error = sw_store_sqlite_open(&store, dbpath, &so);
    }
    if (error < 0) {
        sw_free(cert);
        sw_free(key);
        sw_free(client_ca);
        return error;
    }
    api.store = store;
    api.kctx.image_registry = f->image_registry ? f->image_registry : "";
    api.kctx.data_dir = f->data_dir;
    api.kctx.build_token_key = (const unsigned char *)build_key;
    api.kctx.build_token_key_len = strlen(build_key);
    api.kctx.sa_token_key = (const unsigned char *)sa_key;
    api.kctx.sa_token_key_len = strlen(sa_key);
    api.admin_token = token;
    sw_registry_opts ro = {.insecure_hosts = f->insecure, .max_per_host = (int)f->registry_conns};
    if ((error = sw_registry_new(&api.kctx.registry, &ro)) < 0)
        goto done;
    snprintf(api.listen_addr, sizeof(api.listen_addr), "%s:%u", f->host, f->port);
    if ((error = sw_api_bootstrap(&api)) < 0)
        goto done;
    int64_t ns_rev = 0;
    if ((error = sw_nscache_new(&api.nscache, store, &ns_rev)) < 0)
        goto done;
    if (!f->always_allow && !f->anonymous && (error = sw_authz_new(&api.authz, store, ns_rev)) < 0)
        goto done;
    if ((error = sw_watchcache_new(&api.cache, &api, 8192, (size_t)f->watch_cache_mib << 20,
                                   ns_rev)) < 0)
        goto done;
    if (f->notify_token_file &&
        (error = sw_notifier_new(&api.notifier, &api, f->notify_token_file)) < 0)
        goto done;
    sw_apiserver_opts o = {.host = f->host,
                           .port = f->port,
                           .token = token,
                           .anonymous = f->anonymous,
                           .compact_interval = (int)f->compact_interval,
                           .compact_keep = f->compact_keep,
                           .tls_cert = cert,
                           .tls_key = key,
                           .client_ca = client_ca,
                           .idle_timeout = (unsigned)f->idle_timeout,
                           .max_connections = (unsigned)f->max_connections,
                           .max_per_address = (unsigned)f->max_per_address,
                           .header_timeout_ms = (unsigned)f->header_timeout * 1000,
                           .body_budget = (uint64_t)f->body_memory_mib << 20};
    /* before listening: a client that sees /readyz answer finds the kubeconfig written */
    if ((error = write_kubeconfig(f->data_dir, f, token, cert)) < 0)
        goto done;
    if ((error = sw_apiserver_start(&srv, &api, &o)) < 0)
        goto done;
    if (!f->no_controllers && !(f->controllers && !*f->controllers)) {
        /* The embedded controllers are API clients of this server, like any other. */
        char kcpath[4200];
        snprintf(kcpath, sizeof(kcpath), "%s/admin.kubeconfig", f->data_dir);
        sw_controllers_opts co = {
            .kubeconfig = kcpath,
            .enabled = f->controllers,
            .slipway_server = true,
            .import = {.scheduled_interval_s = (int)f->scheduled_interval,
                       .max_scheduled_per_minute = (int)f->scheduled_per_minute},
            .build = {.insecure_registries = f->insecure,
                      .max_running = (int)f->max_running_builds,
                      .backends = f->build_backends},
            .mi = {.registry = api.kctx.registry},
            .rollout_webhook_secret = f->rollout_hook,
            .leader_elect = f->leader_elect < 0 ? f->store && sw_str_prefix(f->store, "etcd://")
                                                : f->leader_elect == 1,
            .lease_s = f->lease_ms / 1000,
            .renew_deadline_s = f->renew_ms / 1000,
            .retry_ms = f->retry_ms};
        if ((error = sw_controllers_start(&ctrl, &co)) < 0)
            goto done;
    }
    sw_log(SW_LOG_WARN,
           "slipway %s serving on %s://%s:%u (revision %lld, ready in %lldms); "
           "kubeconfig: %s/admin.kubeconfig",
           SW_VERSION, cert ? "https" : "http", f->host, f->port,
           (long long)sw_store_current_revision(store), (long long)(sw_time_mono_ms() - t0),
           f->data_dir);
    sigset_t set;
    int sig;
    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    sigwait(&set, &sig);
    sw_log(SW_LOG_WARN, "received signal %d, shutting down", sig);
done:
    /* Registry calls first: requests waiting on a slow registry answer at once, so the
     * controllers' requests and the server's connections can finish. */
    if (api.kctx.registry)
        sw_registry_shutdown(api.kctx.registry);
    sw_controllers_stop(ctrl);
    sw_apiserver_stop(srv);
    sw_notifier_free(api.notifier);
    sw_watchcache_free(api.cache);
    sw_nscache_free(api.nscache);
    sw_authz_free(api.authz);
    sw_registry_free(api.kctx.registry);
    sw_store_close(store);
    sw_free(cert);
    sw_free(key);
    sw_free(client_ca);
    return error;
}

int sw_cmd_server(int argc, char **argv)
{
    server_flags f = {.data_dir = "slipway-data",
                      .host = "127.0.0.1",
                      .port = 6443,
                      .sync_full = true,
                      .compact_interval = 60,
                      .compact_keep = 10000,
                      .idle_timeout = 90,
                      .max_connections = 2000,
                      .max_per_address = 512,
                      .header_timeout = 10,
                      .body_memory_mib = 256,
                      .watch_cache_mib = 256,
                      .scheduled_interval = 900,
                      .scheduled_per_minute = 60,
                      .leader_elect = -1};
    for (int i = 1; i < argc; i++)
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            usage(stdout);
            return 0;
        }
    if (parse_flags(argc, argv, &f) < 0) {
        fprintf(stderr, "slipway server: %s\n", sw_error_msg());
        usage(stderr);
        return 2;
    }
    if (f.plain_http && !loopback(f.host)) {
        fprintf(stderr, "slipway server: --plain-http is refused on the non-loopback address %s\n",
                f.host);
        return 2;
    }
    if (f.anonymous && !loopback(f.host)) {
        fprintf(stderr,
                "slipway server: --insecure-anonymous is refused on the non-loopback "
                "address %s\n",
                f.host);
        return 2;
    }
    sw_log_set_verbosity((int)f.verbosity);
    /* Signals are taken by sigwait in the main thread; every other thread blocks them. */
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &set, NULL);
    signal(SIGPIPE, SIG_IGN);
    json_set_alloc_funcs(sw_malloc, sw_free);
    /* One malloc arena per thread (glibc's default, 8 per core) fragments badly under a
     * thread-per-connection server; a few shared arenas keep RSS near the live data (8, not
     * fewer: 16 writers then rarely queue on an arena lock). A high trim threshold stops the
     * arenas' heaps from shrinking and regrowing (an mprotect pair) around every request. */
    mallopt(M_ARENA_MAX, 8);
    mallopt(M_TRIM_THRESHOLD, 64 << 20);
    if (run(&f) < 0) {
        fprintf(stderr, "slipway server: %s\n", sw_error_msg());
        return 1;
    }
    return 0;
}
