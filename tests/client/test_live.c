/* Live client tests against a real `slipway server` started here: CRUD with conflicts,
 * status, merge/JSON/strategic patches on ConfigMaps and ImageStreams, paged lists, generic
 * requests, watches (events, cancel, 410), and informers (sync, add/update/delete from another
 * client, resync, recovery across a server restart with re-list diffing).
 * The binary is $SLIPWAY, else "slipway" next to this test executable, else
 * <source dir>/build/slipway. The server runs on a free loopback port with a temp data dir and
 * dies with this process (PR_SET_PDEATHSIG); the dir is removed at the end. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "client/controller.h"
#include "client/discovery.h"
#include "client/informer.h"
#include "client/kubeconfig.h"
#include "client/rest.h"
#include "client/watch.h"
#include "util/path.h"
#include "util/alloc.h"
#include "util/error.h"
#include "util/json.h"
#include "util/log.h"
#include "util/str.h"
#include "util/time.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

/* ---- the server under test ---- */

typedef struct server {
    char bin[4096];
    char dir[64];
    char listen[32];
    bool no_controllers; /* the binary knows --no-controllers */
    pid_t pid;
} server;

static server g_srv;
static sw_client *g_client; /* the test's client */
static sw_kubeconfig *g_kc;
static bool g_live; /* false: no binary, live tests are skipped */

static bool is_exe(const char *p)
{
    return access(p, X_OK) == 0;
}

/* dir(path) + "/slipway" into out; false unless executable. */
static bool sibling(const char *path, char *out, size_t n)
{
    const char *slash = strrchr(path, '/');
    if (!slash)
        return false;
    if (snprintf(out, n, "%.*s/slipway", (int)(slash - path), path) >= (int)n)
        return false;
    return is_exe(out);
}

static bool find_binary(const char *argv0, char *out, size_t n)
{
    char self[4096];
    const char *env = getenv("SLIPWAY");
    if (env && *env) {
        sw_strlcpy(out, env, n);
        return is_exe(out);
    }
    ssize_t len = readlink("/proc/self/exe", self, sizeof(self) - 1);
    if (len > 0) {
        self[len] = '\0';
        if (sibling(self, out, n))
            return true;
    }
    if (argv0 && sibling(argv0, out, n))
        return true;
    /* __FILE__ is <src>/tests/client/test_live.c */
    snprintf(self, sizeof(self), "%s", __FILE__);
    for (int i = 0; i < 3; i++) {
        char *s = strrchr(self, '/');
        if (!s)
            return false;
        *s = '\0';
    }
    if (snprintf(out, n, "%s/build/slipway", self) >= (int)n)
        return false;
    return is_exe(out);
}

/* These tests are about the client: the server's embedded controllers (when it has them) are
 * turned off so they neither write the test's objects nor take the server down. */
static bool knows_no_controllers(const char *bin)
{
    char cmd[4200], line[512];
    bool found = false;
    if (snprintf(cmd, sizeof(cmd), "'%s' server --help 2>&1", bin) >= (int)sizeof(cmd))
        return false;
    FILE *p = popen(cmd, "r");
    while (p && fgets(line, sizeof(line), p))
        found = found || strstr(line, "--no-controllers") != NULL;
    if (p)
        pclose(p);
    return found;
}

/* A port nothing uses now, below the kernel's ephemeral range (32768-60999): no outgoing
 * connection of another test can take it before the server binds it. */
static int free_port(void)
{
    for (int attempt = 0; attempt < 1000; attempt++) {
        uint16_t r;
        sw_random_bytes(&r, sizeof(r));
        int port = 20000 + r % 12768;
        struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
        a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        int fd = socket(AF_INET, SOCK_STREAM, 0);
        bool ok = fd >= 0 && bind(fd, (struct sockaddr *)&a, sizeof(a)) == 0;
        if (fd >= 0)
            close(fd);
        if (ok)
            return port;
    }
    return -1;
}

static pid_t spawn(server *s)
{
    char log[128];
    snprintf(log, sizeof(log), "%s/server.log", s->dir);
    pid_t parent = getpid(), pid = fork();
    if (pid != 0)
        return pid;
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent)
        _exit(1);
    int fd = open(log, O_WRONLY | O_CREAT | O_APPEND, 0600);
    if (fd >= 0) {
        dup2(fd, 1);
        dup2(fd, 2);
        close(fd);
    }
    char *argv[] = {s->bin,
                    "server",
                    "--data-dir",
                    s->dir,
                    "--listen",
                    s->listen,
                    "--compact-interval",
                    "1",
                    "--compact-keep",
                    "20",
                    "--store-sync",
                    "normal",
                    s->no_controllers ? "--no-controllers" : NULL,
                    NULL};
    execv(s->bin, argv);
    _exit(127);
}

static void dump_log(const server *s)
{
    char path[128], line[512];
    snprintf(path, sizeof(path), "%s/server.log", s->dir);
    FILE *f = fopen(path, "r");
    while (f && fgets(line, sizeof(line), f))
        fprintf(stderr, "  server: %s", line);
    if (f)
        fclose(f);
}

/* GET /readyz through a client made from the (possibly just rewritten) kubeconfig. */
static bool ready(const server *s)
{
    char path[128];
    sw_kubeconfig *kc = NULL;
    sw_client *c = NULL;
    char *body = NULL;
    long status = 0;
    snprintf(path, sizeof(path), "%s/admin.kubeconfig", s->dir);
    if (sw_kubeconfig_load(&kc, path, NULL) == 0 && sw_client_new(&c, kc) == 0)
        sw_client_request_raw(c, "GET", "/readyz", NULL, 0, NULL, NULL, &status, &body, NULL);
    sw_free(body);
    sw_client_free(c);
    sw_kubeconfig_free(kc);
    return status == 200;
}

/* Starts the server (retrying while the port is still held) and waits until it is ready. */
static int server_start(server *s)
{
    for (int attempt = 0; attempt < 5; attempt++) {
        int status;
        s->pid = spawn(s);
        if (s->pid < 0)
            return -1;
        for (int i = 0; i < 300; i++) {
            if (waitpid(s->pid, &status, WNOHANG) == s->pid) {
                s->pid = 0;
                break;
            }
            if (ready(s))
                return 0;
            usleep(50 * 1000);
        }
        if (s->pid > 0) {
            kill(s->pid, SIGKILL);
            waitpid(s->pid, NULL, 0);
            s->pid = 0;
        }
        usleep(300 * 1000);
    }
    dump_log(s);
    return -1;
}

static void server_kill(server *s, int sig)
{
    int status = 0;
    if (s->pid <= 0)
        return;
    if (waitpid(s->pid, &status, WNOHANG) == s->pid) {
        fprintf(stderr, "slipway server exited unexpectedly (status 0x%x); its log:\n", status);
        dump_log(s);
        s->pid = 0;
        return;
    }
    kill(s->pid, sig);
    for (int i = 0; i < 100 && waitpid(s->pid, NULL, WNOHANG) == 0; i++)
        usleep(20 * 1000);
    if (waitpid(s->pid, NULL, WNOHANG) == 0) {
        kill(s->pid, SIGKILL);
        waitpid(s->pid, NULL, 0);
    }
    s->pid = 0;
}

static void cleanup(void)
{
    server_kill(&g_srv, SIGTERM);
    if (g_srv.dir[0]) {
        sw_path_remove_tree(g_srv.dir);
        g_srv.dir[0] = '\0';
    }
}

static json_t *obj(const char *text)
{
    json_t *j = NULL;
    if (sw_json_parse(text, strlen(text), 64, 0, &j) < 0)
        fail_msg("bad test JSON: %s", text);
    return j;
}

static void ensure_namespace(const char *name)
{
    json_t *ns = json_pack("{s:{s:s}}", "metadata", "name", name);
    int rc = sw_client_create(g_client, &sw_res_namespaces, NULL, ns, NULL);
    json_decref(ns);
    if (rc != 0 && rc != SW_EEXISTS)
        fail_msg("create namespace %s: %s", name, sw_error_msg());
}

static int group_setup(void **state)
{
    char path[128];
    if (!g_srv.bin[0]) {
        fprintf(stderr, "slipway binary not found (set SLIPWAY): live client tests skipped\n");
        return 0;
    }
    g_srv.no_controllers = knows_no_controllers(g_srv.bin);
    sw_strlcpy(g_srv.dir, "/tmp/sw-client-test-XXXXXX", sizeof(g_srv.dir));
    if (!mkdtemp(g_srv.dir)) {
        g_srv.dir[0] = '\0';
        return -1;
    }
    atexit(cleanup);
    snprintf(g_srv.listen, sizeof(g_srv.listen), "127.0.0.1:%d", free_port());
    if (server_start(&g_srv) < 0)
        return -1;
    snprintf(path, sizeof(path), "%s/admin.kubeconfig", g_srv.dir);
    if (sw_kubeconfig_load(&g_kc, path, NULL) < 0 || sw_client_new(&g_client, g_kc) < 0) {
        fprintf(stderr, "client: %s\n", sw_error_msg());
        return -1;
    }
    g_live = true;
    ensure_namespace("client-test");
    ensure_namespace("watch-test");
    ensure_namespace("inf-test");
    return 0;
}

static int group_teardown(void **state)
{
    sw_client_free(g_client);
    sw_kubeconfig_free(g_kc);
    g_client = NULL;
    g_kc = NULL;
    cleanup();
    return 0;
}

#define LIVE()                                                                                     \
    do {                                                                                           \
        if (!g_live)                                                                               \
            skip();                                                                                \
    } while (0)

static void expect_rc(int rc, int want, const char *what)
{
    if (rc != want)
        fail_msg("%s: got %d want %d (%s)", what, rc, want, sw_error_msg());
}

/* ---- REST ---- */

static void test_configmap_crud(void **state)
{
    LIVE();
    const sw_resource *r = &sw_res_configmaps;
    json_t *in =
        obj("{\"metadata\":{\"name\":\"c1\",\"labels\":{\"app\":\"x\"}},\"data\":{\"a\":\"1\"}}");
    json_t *created = NULL, *got = NULL, *updated = NULL, *patched = NULL, *list = NULL;
    expect_rc(sw_client_create(g_client, r, "client-test", in, &created), 0, "create");
    assert_non_null(sw_json_str_at(created, "metadata.uid"));
    assert_non_null(sw_json_str_at(created, "metadata.resourceVersion"));
    expect_rc(sw_client_create(g_client, r, "client-test", in, NULL), SW_EEXISTS, "create again");
    assert_non_null(strstr(sw_error_msg(), "already exists"));

    expect_rc(sw_client_get(g_client, r, "client-test", "c1", &got), 0, "get");
    assert_string_equal(sw_json_str_at(got, "data.a"), "1");
    expect_rc(sw_client_get(g_client, r, "client-test", "nope", NULL), SW_ENOTFOUND, "get missing");
    assert_non_null(strstr(sw_error_msg(), "not found"));

    /* update, then a stale update conflicts */
    json_object_set_new(json_object_get(got, "data"), "a", json_string("2"));
    expect_rc(sw_client_update(g_client, r, NULL, got, &updated), 0, "update");
    assert_string_equal(sw_json_str_at(updated, "data.a"), "2");
    assert_string_not_equal(sw_json_str_at(updated, "metadata.resourceVersion"),
                            sw_json_str_at(got, "metadata.resourceVersion"));
    expect_rc(sw_client_update(g_client, r, NULL, got, NULL), SW_ECONFLICT, "stale update");
    assert_non_null(strstr(sw_error_msg(), "modified"));

    json_t *p = obj("{\"data\":{\"b\":\"3\"}}");
    expect_rc(sw_client_patch(g_client, r, "client-test", "c1", "merge", p, &patched), 0, "merge");
    assert_string_equal(sw_json_str_at(patched, "data.a"), "2");
    assert_string_equal(sw_json_str_at(patched, "data.b"), "3");
    json_decref(p);
    json_decref(patched);
    p = obj("[{\"op\":\"replace\",\"path\":\"/data/"
            "a\",\"value\":\"9\"},{\"op\":\"remove\",\"path\":\"/data/b\"}]");
    expect_rc(sw_client_patch(g_client, r, "client-test", "c1", "json", p, &patched), 0,
              "json patch");
    assert_string_equal(sw_json_str_at(patched, "data.a"), "9");
    assert_null(sw_json_at(patched, "data.b"));
    json_decref(p);
    json_decref(patched);
    p = obj("{\"data\":{\"c\":\"4\"}}");
    expect_rc(sw_client_patch(g_client, r, "client-test", "c1", "strategic", p, &patched), 0,
              "smp");
    assert_string_equal(sw_json_str_at(patched, "data.c"), "4");
    expect_rc(sw_client_patch(g_client, r, "client-test", "c1", "yaml", p, NULL), SW_EINVALID,
              "bad patch type");
    json_decref(p);
    p = obj("[{\"op\":\"test\",\"path\":\"/data/a\",\"value\":\"nope\"}]");
    assert_true(sw_client_patch(g_client, r, "client-test", "c1", "json", p, NULL) < 0);
    json_decref(p);

    expect_rc(sw_client_list(g_client, r, "client-test", "app=x", &list), 0, "list");
    assert_int_equal(json_array_size(json_object_get(list, "items")), 1);
    json_decref(list);
    expect_rc(sw_client_list(g_client, r, "client-test", "app=y", &list), 0, "list none");
    assert_int_equal(json_array_size(json_object_get(list, "items")), 0);
    json_decref(list);

    expect_rc(sw_client_delete(g_client, r, "client-test", "c1"), 0, "delete");
    expect_rc(sw_client_get(g_client, r, "client-test", "c1", NULL), SW_ENOTFOUND, "get deleted");
    expect_rc(sw_client_delete(g_client, r, "client-test", "c1"), SW_ENOTFOUND, "delete again");
    json_decref(in);
    json_decref(created);
    json_decref(got);
    json_decref(updated);
    json_decref(patched);
}

static const char *digest0 =
    "sha256:0000000000000000000000000000000000000000000000000000000000000000";

static void set_status(json_t *is)
{
    json_t *item =
        json_pack("{s:s,s:s,s:s,s:i}", "created", "2024-01-01T00:00:00Z", "dockerImageReference",
                  "docker.io/library/ruby@sha256:0", "image", digest0, "generation", 1);
    json_object_set_new(is, "status",
                        json_pack("{s:[{s:s,s:[o]}]}", "tags", "tag", "latest", "items", item));
}

static void set_label(json_t *is)
{
    json_object_del(is, "status");
    sw_json_set_path(is, "metadata.labels", json_pack("{s:s}", "team", "a"));
}

/* GET, edit, PUT (or PUT status), retried on conflicts: the server's own controllers (the
 * import controller) may write the stream meanwhile. Returns the PUT's answer; *sent gets the
 * object that was PUT, which is stale afterwards. */
static json_t *update_retry(const sw_resource *r, const char *name, bool status,
                            void (*edit)(json_t *), json_t **sent)
{
    json_t *cur = NULL, *out = NULL;
    int rc = SW_ECONFLICT;
    for (int i = 0; i < 10 && rc == SW_ECONFLICT; i++) {
        json_decref(cur);
        cur = NULL;
        expect_rc(sw_client_get(g_client, r, "client-test", name, &cur), 0, "get");
        edit(cur);
        rc = status ? sw_client_update_status(g_client, r, NULL, cur, &out)
                    : sw_client_update(g_client, r, NULL, cur, &out);
    }
    expect_rc(rc, 0, status ? "update_status" : "update");
    *sent = cur;
    return out;
}

static void test_imagestream(void **state)
{
    LIVE();
    const sw_resource *r = &sw_res_imagestreams;
    /* No spec tags: the server's import controller has nothing to import (an in-flight
     * import could re-create the stream after the delete below). */
    json_t *in =
        obj("{\"metadata\":{\"name\":\"ruby\"},\"spec\":{\"lookupPolicy\":{\"local\":false}}}");
    json_t *is = NULL, *got = NULL, *out = NULL;
    expect_rc(sw_client_create(g_client, r, "client-test", in, &is), 0, "create is");
    assert_string_equal(sw_json_str_at(is, "kind"), "ImageStream");

    /* status through the subresource */
    json_t *sent = NULL;
    out = update_retry(r, "ruby", true, set_status, &sent);
    assert_string_equal(sw_json_str_at(json_array_get(sw_json_at(out, "status.tags"), 0), "tag"),
                        "latest");
    json_decref(out);
    json_decref(sent);

    /* a main-resource update keeps the status, and a stale one conflicts */
    out = update_retry(r, "ruby", false, set_label, &got);
    assert_non_null(sw_json_at(out, "status.tags"));
    assert_string_equal(sw_json_str_at(out, "metadata.labels.team"), "a");
    json_decref(out);
    expect_rc(sw_client_update(g_client, r, NULL, got, NULL), SW_ECONFLICT, "stale is update");

    json_t *p = obj("{\"spec\":{\"lookupPolicy\":{\"local\":true}}}");
    expect_rc(sw_client_patch(g_client, r, "client-test", "ruby", "merge", p, &out), 0, "merge is");
    assert_true(sw_json_bool_at(out, "spec.lookupPolicy.local"));
    json_decref(out);
    json_decref(p);
    p = obj("[{\"op\":\"add\",\"path\":\"/metadata/annotations\",\"value\":{\"k\":\"v\"}}]");
    expect_rc(sw_client_patch(g_client, r, "client-test", "ruby", "json", p, &out), 0, "json is");
    assert_string_equal(sw_json_str_at(out, "metadata.annotations.k"), "v");
    json_decref(out);
    json_decref(p);
    p = obj("{\"status\":{\"tags\":[]}}");
    expect_rc(sw_client_patch_sub(g_client, r, "client-test", "ruby", "status", "merge", p, &out),
              0, "patch status");
    assert_int_equal(json_array_size(sw_json_at(out, "status.tags")), 0);
    json_decref(out);
    json_decref(p);

    expect_rc(sw_client_delete(g_client, r, "client-test", "ruby"), 0, "delete is");
    expect_rc(sw_client_get(g_client, r, "client-test", "ruby", NULL), SW_ENOTFOUND, "gone is");
    json_decref(in);
    json_decref(is);
    json_decref(got);
}

static void test_list_pages(void **state)
{
    LIVE();
    char name[32];
    for (int i = 0; i < 23; i++) {
        snprintf(name, sizeof(name), "page-%02d", i);
        json_t *o = json_pack("{s:{s:s,s:{s:s}}}", "metadata", "name", name, "labels", "pg", "yes");
        expect_rc(sw_client_create(g_client, &sw_res_configmaps, "client-test", o, NULL), 0,
                  "create");
        json_decref(o);
    }
    /* The server really pages. */
    json_t *page = NULL, *list = NULL;
    expect_rc(sw_client_request(g_client, "GET",
                                "/api/v1/namespaces/client-test/configmaps?limit=5", NULL, NULL,
                                NULL, &page),
              0, "one page");
    assert_int_equal(json_array_size(json_object_get(page, "items")), 5);
    assert_non_null(sw_json_str_at(page, "metadata.continue"));
    json_decref(page);

    sw_list_opts o = {.label_selector = "pg=yes", .limit = 5};
    expect_rc(sw_client_list_opts(g_client, &sw_res_configmaps, "client-test", &o, &list), 0,
              "paged");
    json_t *items = json_object_get(list, "items");
    assert_int_equal(json_array_size(items), 23);
    assert_null(sw_json_at(list, "metadata.continue"));
    assert_non_null(sw_json_str_at(list, "metadata.resourceVersion"));
    for (size_t i = 0; i < 23; i++) {
        snprintf(name, sizeof(name), "page-%02zu", i);
        assert_string_equal(sw_json_str_at(json_array_get(items, i), "metadata.name"), name);
    }
    json_decref(list);
    /* all namespaces */
    expect_rc(sw_client_list(g_client, &sw_res_configmaps, NULL, "pg=yes", &list), 0, "all ns");
    assert_int_equal(json_array_size(json_object_get(list, "items")), 23);
    json_decref(list);
}

static void test_generic_request(void **state)
{
    LIVE();
    json_t *v = NULL;
    long status = 0;
    char *body = NULL;
    expect_rc(sw_client_request(g_client, "GET", "/version", NULL, NULL, &status, &v), 0,
              "version");
    assert_int_equal(status, 200);
    assert_non_null(sw_json_str_at(v, "gitVersion"));
    json_decref(v);
    expect_rc(sw_client_request(g_client, "GET", "/api/v1/namespaces/client-test/configmaps/none",
                                NULL, NULL, &status, &v),
              SW_ENOTFOUND, "404");
    assert_int_equal(status, 404);
    expect_rc(sw_client_request_raw(g_client, "GET", "/readyz", NULL, 0, NULL, NULL, &status, &body,
                                    NULL),
              0, "readyz");
    assert_string_equal(body, "ok");
    sw_free(body);
    /* a bad token is refused with 401 */
    sw_kubeconfig *kc = NULL;
    sw_client *bad = NULL;
    char path[128], *yaml = NULL;
    size_t len = 0;
    snprintf(path, sizeof(path), "%s/admin.kubeconfig", g_srv.dir);
    assert_int_equal(sw_kubeconfig_read_file(path, 1 << 20, &yaml, &len), 0);
    char *tok = strstr(yaml, "token: ");
    assert_non_null(tok);
    tok[7] = tok[7] == 'x' ? 'y' : 'x';
    expect_rc(sw_kubeconfig_parse(&kc, yaml, len, NULL, NULL), 0, "parse");
    expect_rc(sw_client_new(&bad, kc), 0, "client");
    expect_rc(sw_client_get(bad, &sw_res_configmaps, "client-test", "x", NULL), SW_EUNAUTHORIZED,
              "401");
    sw_client_free(bad);
    sw_kubeconfig_free(kc);
    sw_free(yaml);
}

/* ---- watch ---- */

typedef struct seen {
    char types[16][16];
    char names[16][32];
    int n;
} seen;

static int record(sw_watch_type t, json_t *o, void *payload)
{
    seen *s = payload;
    if (t == SW_WATCH_BOOKMARK)
        return 0;
    if (s->n < 16) {
        sw_strlcpy(s->types[s->n], sw_watch_type_name(t), sizeof(s->types[0]));
        sw_strlcpy(s->names[s->n], sw_json_str_at(o, "metadata.name"), sizeof(s->names[0]));
        s->n++;
    }
    return t == SW_WATCH_DELETED ? 1 : 0;
}

static void test_watch_events(void **state)
{
    LIVE();
    const sw_resource *r = &sw_res_configmaps;
    json_t *list = NULL, *o = obj("{\"metadata\":{\"name\":\"w1\"},\"data\":{\"a\":\"1\"}}");
    expect_rc(sw_client_list(g_client, r, "watch-test", NULL, &list), 0, "list");
    char rv[64];
    sw_strlcpy(rv, sw_json_str_at(list, "metadata.resourceVersion"), sizeof(rv));
    json_decref(list);
    expect_rc(sw_client_create(g_client, r, "watch-test", o, NULL), 0, "create");
    json_t *p = obj("{\"data\":{\"a\":\"2\"}}");
    expect_rc(sw_client_patch(g_client, r, "watch-test", "w1", "merge", p, NULL), 0, "patch");
    expect_rc(sw_client_delete(g_client, r, "watch-test", "w1"), 0, "delete");
    json_decref(p);
    json_decref(o);

    seen s = {0};
    sw_watch_opts wo = {.resource_version = rv, .timeout_seconds = 5};
    int64_t t0 = sw_time_mono_ms();
    expect_rc(sw_watch_run(NULL, g_client, r, "watch-test", &wo, record, &s), 0, "watch");
    assert_true(sw_time_mono_ms() - t0 < 4000);
    assert_int_equal(s.n, 3);
    assert_string_equal(s.types[0], "ADDED");
    assert_string_equal(s.types[1], "MODIFIED");
    assert_string_equal(s.types[2], "DELETED");
    for (int i = 0; i < 3; i++)
        assert_string_equal(s.names[i], "w1");

    /* Without a resourceVersion: synthetic ADDED for what exists; timeout ends it cleanly. */
    o = obj("{\"metadata\":{\"name\":\"w2\"}}");
    expect_rc(sw_client_create(g_client, r, "watch-test", o, NULL), 0, "create w2");
    json_decref(o);
    memset(&s, 0, sizeof(s));
    wo = (sw_watch_opts){.timeout_seconds = 1};
    expect_rc(sw_watch_run(NULL, g_client, r, "watch-test", &wo, record, &s), 0, "watch all");
    assert_int_equal(s.n, 1);
    assert_string_equal(s.types[0], "ADDED");
    assert_string_equal(s.names[0], "w2");
}

typedef struct bg_watch {
    sw_watch *w;
    int rc;
    int64_t ms;
} bg_watch;

static int ignore(sw_watch_type t, json_t *o, void *payload)
{
    return 0;
}

static void *watch_thread(void *arg)
{
    bg_watch *b = arg;
    sw_watch_opts wo = {.timeout_seconds = 30};
    int64_t t0 = sw_time_mono_ms();
    b->rc = sw_watch_run(b->w, g_client, &sw_res_configmaps, "watch-test", &wo, ignore, NULL);
    b->ms = sw_time_mono_ms() - t0;
    return NULL;
}

static void test_watch_cancel(void **state)
{
    LIVE();
    bg_watch b = {0};
    pthread_t t;
    sw_watch_new(&b.w);
    pthread_create(&t, NULL, watch_thread, &b);
    usleep(300 * 1000);
    sw_watch_cancel(b.w);
    pthread_join(t, NULL);
    assert_int_equal(b.rc, 0);
    assert_true(b.ms < 2000);
    assert_true(sw_watch_cancelled(b.w));
    sw_watch_free(b.w);
}

static int first_event_stops(sw_watch_type t, json_t *o, void *payload)
{
    return 1;
}

static void test_watch_gone(void **state)
{
    LIVE();
    json_t *o = obj("{\"metadata\":{\"name\":\"churn\"},\"data\":{\"n\":\"0\"}}");
    expect_rc(sw_client_create(g_client, &sw_res_configmaps, "watch-test", o, NULL), 0, "create");
    json_decref(o);
    for (int i = 0; i < 30; i++) {
        json_t *p = json_pack("{s:{s:s+}}", "data", "n", "x", i % 2 ? "1" : "2");
        expect_rc(
            sw_client_patch(g_client, &sw_res_configmaps, "watch-test", "churn", "merge", p, NULL),
            0, "churn");
        json_decref(p);
    }
    /* Compaction runs every second and keeps 20 revisions: revision 1 soon is too old. */
    int rc = 0;
    sw_watch_opts wo = {.resource_version = "1", .timeout_seconds = 2};
    for (int i = 0; i < 40; i++) {
        rc = sw_watch_run(NULL, g_client, &sw_res_configmaps, NULL, &wo, first_event_stops, NULL);
        if (rc == SW_EGONE)
            break;
        usleep(100 * 1000);
    }
    expect_rc(rc, SW_EGONE, "watch from a compacted revision");
    assert_non_null(strstr(sw_error_msg(), "too old"));
    /* A list still works, and a watch from its resourceVersion is fine. */
    json_t *list = NULL;
    expect_rc(sw_client_list(g_client, &sw_res_configmaps, "watch-test", NULL, &list), 0, "list");
    wo.resource_version = sw_json_str_at(list, "metadata.resourceVersion");
    wo.timeout_seconds = 1;
    expect_rc(sw_watch_run(NULL, g_client, &sw_res_configmaps, "watch-test", &wo, ignore, NULL), 0,
              "watch from fresh rv");
    json_decref(list);
}

/* ---- informer ---- */

typedef struct evlog {
    pthread_mutex_t mu;
    pthread_cond_t cond;
    char lines[256][96];
    int n;
    int resyncs;
} evlog;

static void log_line(evlog *l, const char *verb, json_t *o)
{
    pthread_mutex_lock(&l->mu);
    if (l->n < 256) {
        snprintf(l->lines[l->n], sizeof(l->lines[0]), "%s %s/%s %s", verb,
                 sw_json_str_at(o, "metadata.namespace"), sw_json_str_at(o, "metadata.name"),
                 sw_json_str_at(o, "metadata.resourceVersion"));
        l->n++;
    }
    pthread_cond_broadcast(&l->cond);
    pthread_mutex_unlock(&l->mu);
}

static void on_add(json_t *o, void *p)
{
    log_line(p, "ADD", o);
}

static void on_update(json_t *old, json_t *o, void *p)
{
    evlog *l = p;
    if (old == o) {
        pthread_mutex_lock(&l->mu);
        l->resyncs++;
        pthread_cond_broadcast(&l->cond);
        pthread_mutex_unlock(&l->mu);
        return;
    }
    log_line(p, "UPDATE", o);
}

static void on_delete(json_t *o, void *p)
{
    log_line(p, "DELETE", o);
}

/* Waits until a line starting with prefix was logged. */
static bool wait_line(evlog *l, const char *prefix, int timeout_ms)
{
    int64_t deadline = sw_time_mono_ms() + timeout_ms;
    bool found = false;
    pthread_mutex_lock(&l->mu);
    while (!found) {
        for (int i = 0; i < l->n && !found; i++)
            found = sw_str_prefix(l->lines[i], prefix);
        if (found || sw_time_mono_ms() >= deadline)
            break;
        pthread_mutex_unlock(&l->mu);
        usleep(10 * 1000);
        pthread_mutex_lock(&l->mu);
    }
    if (!found) {
        fprintf(stderr, "no event \"%s\"; seen:\n", prefix);
        for (int i = 0; i < l->n; i++)
            fprintf(stderr, "  %s\n", l->lines[i]);
    }
    pthread_mutex_unlock(&l->mu);
    return found;
}

static char *line_for(const char *verb, const char *name, json_t *o)
{
    static char buf[128];
    snprintf(buf, sizeof(buf), "%s inf-test/%s %s", verb, name,
             o ? sw_json_str_at(o, "metadata.resourceVersion") : "");
    return buf;
}

static evlog *evlog_new(void)
{
    evlog *l = sw_calloc(1, sizeof(*l));
    pthread_mutex_init(&l->mu, NULL);
    pthread_cond_init(&l->cond, NULL);
    return l;
}

static void evlog_free(evlog *l)
{
    pthread_mutex_destroy(&l->mu);
    pthread_cond_destroy(&l->cond);
    sw_free(l);
}

static json_t *cm(const char *name, const char *value)
{
    return json_pack("{s:{s:s},s:{s:s}}", "metadata", "name", name, "data", "v", value);
}

static json_t *create_cm(sw_client *c, const char *name, const char *value)
{
    json_t *in = cm(name, value), *out = NULL;
    expect_rc(sw_client_create(c, &sw_res_configmaps, "inf-test", in, &out), 0, name);
    json_decref(in);
    return out;
}

static json_t *patch_cm(sw_client *c, const char *name, const char *value)
{
    json_t *p = json_pack("{s:{s:s}}", "data", "v", value), *out = NULL;
    expect_rc(sw_client_patch(c, &sw_res_configmaps, "inf-test", name, "merge", p, &out), 0, name);
    json_decref(p);
    return out;
}

static void test_informer(void **state)
{
    LIVE();
    evlog *l = evlog_new();
    sw_client *other = NULL;
    sw_informer *inf = NULL;
    json_t *o = NULL;
    expect_rc(sw_client_new(&other, g_kc), 0, "second client");
    json_decref(create_cm(other, "pre", "0"));
    json_decref(create_cm(other, "pre2", "0"));

    sw_informer_handlers h = {on_add, on_update, on_delete, l, NULL, NULL};
    /* A long first backoff: after the restart below the changes land before the re-list. */
    sw_informer_opts io = {.ns = "inf-test",
                           .backoff_initial_ms = 1200,
                           .backoff_max_ms = 2000,
                           .watch_timeout_s = 30};
    expect_rc(sw_informer_new(&inf, g_client, &sw_res_configmaps, &io, &h), 0, "informer");
    assert_false(sw_informer_has_synced(inf));
    expect_rc(sw_informer_start(inf), 0, "start");
    expect_rc(sw_informer_wait_synced(inf, 10000), 0, "synced");
    assert_int_equal(sw_informer_size(inf), 2);
    assert_true(wait_line(l, "ADD inf-test/pre ", 5000));
    json_t *cached = sw_informer_get(inf, "inf-test/pre");
    assert_non_null(cached);
    assert_string_equal(sw_json_str_at(cached, "data.v"), "0");
    assert_string_equal(sw_json_str_at(cached, "kind"), "ConfigMap");
    json_decref(cached);
    assert_null(sw_informer_get(inf, "inf-test/none"));

    /* adds, updates and deletes made by another client */
    o = create_cm(other, "a", "1");
    assert_true(wait_line(l, line_for("ADD", "a", o), 5000));
    json_decref(o);
    o = patch_cm(other, "a", "2");
    assert_true(wait_line(l, line_for("UPDATE", "a", o), 5000));
    json_decref(o);
    expect_rc(sw_client_delete(other, &sw_res_configmaps, "inf-test", "a"), 0, "delete a");
    assert_true(wait_line(l, "DELETE inf-test/a ", 5000));
    assert_null(sw_informer_get(inf, "inf-test/a"));

    /* Restart the server. The watch drops; the changes made right after the restart reach the
     * informer through its re-list (as differences), the next one through the new watch. */
    server_kill(&g_srv, SIGKILL);
    assert_int_equal(server_start(&g_srv), 0);
    o = create_cm(other, "during", "1");
    char during[128];
    sw_strlcpy(during, line_for("ADD", "during", o), sizeof(during));
    json_decref(o);
    o = patch_cm(other, "pre", "1");
    char pre_update[128];
    sw_strlcpy(pre_update, line_for("UPDATE", "pre", o), sizeof(pre_update));
    json_decref(o);
    expect_rc(sw_client_delete(other, &sw_res_configmaps, "inf-test", "pre2"), 0, "delete pre2");
    assert_true(wait_line(l, during, 10000));
    assert_true(wait_line(l, pre_update, 10000));
    assert_true(wait_line(l, "DELETE inf-test/pre2 ", 10000));

    o = create_cm(other, "after", "1");
    assert_true(wait_line(l, line_for("ADD", "after", o), 10000));
    json_decref(o);
    cached = sw_informer_get(inf, "inf-test/pre");
    assert_string_equal(sw_json_str_at(cached, "data.v"), "1");
    json_decref(cached);
    assert_int_equal(sw_informer_size(inf), 3); /* pre, during, after */
    json_t *all = sw_informer_list(inf);
    assert_int_equal(json_array_size(all), 3);
    json_decref(all);

    sw_informer_free(inf);
    sw_client_free(other);
    evlog_free(l);
}

/* The informer's resourceVersion falls behind compaction while nothing it watches changes:
 * its next watch gets 410, it re-lists (its RV jumps to the list's) and keeps delivering. */
static void test_informer_gone(void **state)
{
    LIVE();
    evlog *l = evlog_new();
    sw_informer *inf = NULL;
    sw_informer_handlers h = {on_add, on_update, on_delete, l, NULL, NULL};
    sw_informer_opts io = {.ns = "inf-test", .watch_timeout_s = 1};
    char rv[64];
    int64_t rv0 = 0, rv1 = 0, head = 0;
    expect_rc(sw_informer_new(&inf, g_client, &sw_res_configmaps, &io, &h), 0, "informer");
    expect_rc(sw_informer_start(inf), 0, "start");
    expect_rc(sw_informer_wait_synced(inf, 10000), 0, "synced");
    sw_informer_resource_version(inf, rv, sizeof(rv));
    assert_int_equal(sw_str_to_i64(rv, &rv0), 0);
    json_t *out = NULL;
    for (int i = 0; i < 30; i++) {
        json_t *p = json_pack("{s:{s:s+}}", "data", "n", "y", i % 2 ? "1" : "2");
        json_decref(out);
        out = NULL;
        expect_rc(
            sw_client_patch(g_client, &sw_res_configmaps, "watch-test", "churn", "merge", p, &out),
            0, "churn");
        json_decref(p);
    }
    assert_int_equal(sw_str_to_i64(sw_json_str_at(out, "metadata.resourceVersion"), &head), 0);
    json_decref(out);
    for (int i = 0; i < 100 && rv1 < head; i++) {
        usleep(50 * 1000);
        sw_informer_resource_version(inf, rv, sizeof(rv));
        sw_str_to_i64(rv, &rv1);
    }
    assert_true(rv1 >= head);
    out = create_cm(g_client, "post-gone", "1");
    assert_true(wait_line(l, line_for("ADD", "post-gone", out), 5000));
    json_decref(out);
    sw_informer_free(inf);
    evlog_free(l);
}

static void test_informer_resync(void **state)
{
    LIVE();
    evlog *l = evlog_new();
    sw_informer *inf = NULL;
    sw_informer_handlers h = {on_add, on_update, on_delete, l, NULL, NULL};
    sw_informer_opts io = {.ns = "inf-test", .resync_ms = 150};
    expect_rc(sw_informer_new(&inf, g_client, &sw_res_configmaps, &io, &h), 0, "informer");
    expect_rc(sw_informer_start(inf), 0, "start");
    expect_rc(sw_informer_wait_synced(inf, 10000), 0, "synced");
    size_t n = sw_informer_size(inf);
    assert_true(n > 0);
    int64_t deadline = sw_time_mono_ms() + 5000;
    int resyncs = 0;
    while (sw_time_mono_ms() < deadline) {
        pthread_mutex_lock(&l->mu);
        resyncs = l->resyncs;
        pthread_mutex_unlock(&l->mu);
        if (resyncs >= (int)(2 * n))
            break;
        usleep(20 * 1000);
    }
    assert_true(resyncs >= (int)(2 * n));
    char rv[64];
    sw_informer_resource_version(inf, rv, sizeof(rv));
    assert_true(rv[0] != '\0');
    int64_t t0 = sw_time_mono_ms();
    sw_informer_stop(inf);
    assert_true(sw_time_mono_ms() - t0 < 2000);
    sw_informer_free(inf);
    evlog_free(l);
}

static json_t *owned_cm(const char *name, const char *owner_uid)
{
    json_t *o = cm(name, "x");
    if (owner_uid)
        json_object_set_new(json_object_get(o, "metadata"), "ownerReferences",
                            json_pack("[{s:s, s:s, s:s, s:s}]", "apiVersion", "v1", "kind",
                                      "ConfigMap", "name", "idx-owner", "uid", owner_uid));
    return o;
}

/* Waits until index name of inf holds n objects for value. */
static bool wait_index(sw_informer *inf, const char *name, const char *value, size_t n)
{
    for (int i = 0; i < 500; i++) {
        json_t *got = sw_informer_by_index(inf, name, value);
        size_t have = json_array_size(got);
        json_decref(got);
        if (have == n)
            return true;
        usleep(10 * 1000);
    }
    return false;
}

/* An index of dependents by owner uid follows adds, updates that drop the reference, deletes
 * and re-lists; the factory shares one informer per resource and mode. */
static void test_informer_index(void **state)
{
    LIVE();
    sw_informers *f = NULL;
    expect_rc(sw_informers_new(&f, g_client), 0, "factory");
    sw_informer_opts io = {.ns = "inf-test"};
    sw_informer *inf = sw_informers_get(f, &sw_res_configmaps, false, &io);
    assert_ptr_equal(sw_informers_get(f, &sw_res_configmaps, false, NULL), inf);
    assert_ptr_not_equal(sw_informers_get(f, &sw_res_configmaps, true, NULL), inf);
    expect_rc(sw_informer_add_index(inf, "owner", sw_index_owner_uids), 0, "index");
    json_t *owner = create_cm(g_client, "idx-owner", "o");
    char uid[64];
    sw_strlcpy(uid, sw_json_str_at(owner, "metadata.uid"), sizeof(uid));
    json_decref(owner);
    json_t *in = owned_cm("idx-a", uid), *out = NULL;
    expect_rc(sw_client_create(g_client, &sw_res_configmaps, "inf-test", in, NULL), 0, "idx-a");
    json_decref(in);
    expect_rc(sw_informers_start(f), 0, "start");
    expect_rc(sw_informers_wait_synced(f, 10000), 0, "synced");
    assert_true(wait_index(inf, "owner", uid, 1)); /* from the list */
    in = owned_cm("idx-b", uid);
    expect_rc(sw_client_create(g_client, &sw_res_configmaps, "inf-test", in, NULL), 0, "idx-b");
    json_decref(in);
    assert_true(wait_index(inf, "owner", uid, 2)); /* from the watch */
    json_t *p = json_pack("{s:{s:n}}", "metadata", "ownerReferences");
    expect_rc(sw_client_patch(g_client, &sw_res_configmaps, "inf-test", "idx-a", "merge", p, &out),
              0, "drop the reference");
    json_decref(p);
    json_decref(out);
    assert_true(wait_index(inf, "owner", uid, 1));
    json_t *got = sw_informer_by_index(inf, "owner", uid);
    assert_string_equal(sw_json_str_at(json_array_get(got, 0), "metadata.name"), "idx-b");
    json_decref(got);
    expect_rc(sw_client_delete(g_client, &sw_res_configmaps, "inf-test", "idx-b"), 0, "delete");
    assert_true(wait_index(inf, "owner", uid, 0));
    got = sw_informer_by_index(inf, "nosuchindex", uid);
    assert_int_equal(json_array_size(got), 0);
    json_decref(got);
    sw_informers_free(f);
}

typedef struct lean_log {
    pthread_mutex_t mu;
    int starts, synced, adds, deletes;
} lean_log;

static void lean_add(json_t *o, void *p)
{
    lean_log *l = p;
    pthread_mutex_lock(&l->mu);
    l->adds++;
    pthread_mutex_unlock(&l->mu);
}

static void lean_delete(json_t *o, void *p)
{
    lean_log *l = p;
    pthread_mutex_lock(&l->mu);
    l->deletes++;
    pthread_mutex_unlock(&l->mu);
}

static void lean_start(void *p)
{
    lean_log *l = p;
    pthread_mutex_lock(&l->mu);
    l->starts++;
    pthread_mutex_unlock(&l->mu);
}

static void lean_synced(void *p)
{
    lean_log *l = p;
    pthread_mutex_lock(&l->mu);
    l->synced++;
    pthread_mutex_unlock(&l->mu);
}

static int lean_count(lean_log *l, int *field)
{
    pthread_mutex_lock(&l->mu);
    int v = *field;
    pthread_mutex_unlock(&l->mu);
    return v;
}

/* A lean informer keeps nothing: listed and watched objects go to on_add (between on_list_start
 * and on_synced for a list), deletions to on_delete, and its cache reads are empty. */
static void test_informer_lean(void **state)
{
    LIVE();
    lean_log l = {.mu = PTHREAD_MUTEX_INITIALIZER};
    sw_informer *inf = NULL;
    sw_informer_handlers h = {.on_add = lean_add,
                              .on_delete = lean_delete,
                              .on_list_start = lean_start,
                              .on_synced = lean_synced,
                              .payload = &l};
    sw_informer_opts io = {.ns = "inf-test", .lean = true};
    for (int i = 0; i < 7; i++) {
        char name[32];
        snprintf(name, sizeof(name), "lean-%d", i);
        json_decref(create_cm(g_client, name, "1"));
    }
    json_t *list = NULL;
    expect_rc(sw_client_list(g_client, &sw_res_configmaps, "inf-test", NULL, &list), 0, "list");
    int listed = (int)json_array_size(json_object_get(list, "items"));
    json_decref(list);
    expect_rc(sw_informer_new(&inf, g_client, &sw_res_configmaps, &io, &h), 0, "informer");
    expect_rc(sw_informer_start(inf), 0, "start");
    expect_rc(sw_informer_wait_synced(inf, 10000), 0, "synced");
    for (int i = 0; i < 200 && lean_count(&l, &l.synced) < 1; i++)
        usleep(10 * 1000);
    assert_int_equal(lean_count(&l, &l.starts), 1);
    assert_int_equal(lean_count(&l, &l.synced), 1);
    assert_int_equal(lean_count(&l, &l.adds), listed);
    assert_int_equal(sw_informer_size(inf), 0);
    assert_null(sw_informer_get(inf, "inf-test/lean-0"));
    json_decref(create_cm(g_client, "lean-new", "1"));
    json_decref(patch_cm(g_client, "lean-new", "2"));
    expect_rc(sw_client_delete(g_client, &sw_res_configmaps, "inf-test", "lean-new"), 0, "del");
    for (int i = 0; i < 500 && lean_count(&l, &l.deletes) < 1; i++)
        usleep(10 * 1000);
    assert_int_equal(lean_count(&l, &l.adds), listed + 2); /* the add and the update */
    assert_int_equal(lean_count(&l, &l.deletes), 1);
    sw_informer_free(inf);
}

/* Discovery lists served resources with their verbs, subresources left out. */
static void test_discovery(void **state)
{
    LIVE();
    sw_api_resources r;
    expect_rc(sw_discovery_read(g_client, &r), 0, "discovery");
    const sw_api_resource *cmr = sw_api_resources_find_kind(&r, "", "ConfigMap");
    assert_non_null(cmr);
    assert_string_equal(cmr->res.plural, "configmaps");
    assert_true(cmr->res.namespaced);
    assert_true(cmr->verbs & SW_VERB_DELETECOLLECTION);
    const sw_api_resource *ns = sw_api_resources_find(&r, "", "namespaces");
    assert_non_null(ns);
    assert_false(ns->res.namespaced);
    assert_false(ns->verbs & SW_VERB_DELETECOLLECTION);
    assert_true(ns->verbs & SW_VERB_DELETE);
    const sw_api_resource *is = sw_api_resources_find_kind(&r, "image.openshift.io", "ImageStream");
    assert_non_null(is);
    assert_string_equal(is->res.version, "v1");
    assert_null(sw_api_resources_find(&r, "image.openshift.io", "imagestreams/status"));
    sw_api_resources copy;
    sw_api_resources_copy(&copy, &r);
    assert_int_equal(copy.count, r.count);
    sw_api_resources_dispose(&copy);
    sw_api_resources_dispose(&r);
}

int main(int argc, char **argv)
{
    signal(SIGPIPE, SIG_IGN);
    if (getenv("SW_TEST_V"))
        sw_log_set_verbosity(4);
    if (!find_binary(argc > 0 ? argv[0] : NULL, g_srv.bin, sizeof(g_srv.bin)))
        g_srv.bin[0] = '\0';
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_configmap_crud), cmocka_unit_test(test_imagestream),
        cmocka_unit_test(test_list_pages),     cmocka_unit_test(test_generic_request),
        cmocka_unit_test(test_watch_events),   cmocka_unit_test(test_watch_cancel),
        cmocka_unit_test(test_watch_gone),     cmocka_unit_test(test_informer),
        cmocka_unit_test(test_informer_gone),  cmocka_unit_test(test_informer_resync),
        cmocka_unit_test(test_informer_index), cmocka_unit_test(test_informer_lean),
        cmocka_unit_test(test_discovery),
    };
    return cmocka_run_group_tests_name("client/live", tests, group_setup, group_teardown);
}
