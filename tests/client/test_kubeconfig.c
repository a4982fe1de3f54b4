/* kubeconfig tests: CA data + token, context selection, namespace default, file references
 * relative to the kubeconfig, in-cluster config, and clear errors for bad YAML, missing
 * contexts/clusters/users/servers, bad base64, half client certificates, exec users and alias
 * bombs. Also the REST path/query helpers and status mapping, which need no server. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "client/kubeconfig.h"
#include "client/rest.h"
#include "util/alloc.h"
#include "util/buf.h"
#include "util/error.h"
#include "util/str.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* base64("-----BEGIN CERTIFICATE-----\nCA\n-----END CERTIFICATE-----\n") */
#define CA_B64 "LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCkNBCi0tLS0tRU5EIENFUlRJRklDQVRFLS0tLS0K"
#define CA_PEM "-----BEGIN CERTIFICATE-----\nCA\n-----END CERTIFICATE-----\n"

static const char sample[] = "apiVersion: v1\n"
                             "kind: Config\n"
                             "clusters:\n"
                             "- name: main\n"
                             "  cluster:\n"
                             "    certificate-authority-data: " CA_B64 "\n"
                             "    server: https://127.0.0.1:6443/\n"
                             "- name: other\n"
                             "  cluster:\n"
                             "    server: https://other.example:8443\n"
                             "    insecure-skip-tls-verify: true\n"
                             "    tls-server-name: api.internal\n"
                             "users:\n"
                             "- name: admin\n"
                             "  user:\n"
                             "    token: abc123\n"
                             "- name: nobody\n"
                             "  user: {}\n"
                             "contexts:\n"
                             "- name: main\n"
                             "  context:\n"
                             "    cluster: main\n"
                             "    user: admin\n"
                             "    namespace: apps\n"
                             "- name: other\n"
                             "  context: {cluster: other, user: nobody}\n"
                             "current-context: main\n";

static sw_kubeconfig *parse_ok(const char *yaml, const char *ctx)
{
    sw_kubeconfig *kc = NULL;
    int rc = sw_kubeconfig_parse(&kc, yaml, strlen(yaml), NULL, ctx);
    if (rc != 0)
        fail_msg("parse failed: %s", sw_error_msg());
    return kc;
}

static void expect_error(const char *yaml, const char *ctx, int code, const char *needle)
{
    sw_kubeconfig *kc = NULL;
    int rc = sw_kubeconfig_parse(&kc, yaml, strlen(yaml), NULL, ctx);
    assert_int_equal(rc, code);
    assert_null(kc);
    if (!strstr(sw_error_msg(), needle))
        fail_msg("message \"%s\" does not mention \"%s\"", sw_error_msg(), needle);
}

static void test_current_context(void **state)
{
    sw_kubeconfig *kc = parse_ok(sample, NULL);
    size_t n = 0;
    assert_string_equal(sw_kubeconfig_server(kc), "https://127.0.0.1:6443");
    assert_string_equal(sw_kubeconfig_token(kc), "abc123");
    assert_string_equal(sw_kubeconfig_namespace(kc), "apps");
    assert_string_equal(sw_kubeconfig_context(kc), "main");
    const char *ca = sw_kubeconfig_ca(kc, &n);
    assert_non_null(ca);
    assert_int_equal(n, strlen(CA_PEM));
    assert_memory_equal(ca, CA_PEM, n);
    assert_false(sw_kubeconfig_insecure(kc));
    assert_null(sw_kubeconfig_client_cert(kc, NULL));
    assert_null(sw_kubeconfig_tls_server_name(kc));
    sw_kubeconfig_free(kc);
}

static void test_named_context(void **state)
{
    sw_kubeconfig *kc = parse_ok(sample, "other");
    assert_string_equal(sw_kubeconfig_server(kc), "https://other.example:8443");
    assert_string_equal(sw_kubeconfig_namespace(kc), "default");
    assert_true(sw_kubeconfig_insecure(kc));
    assert_null(sw_kubeconfig_token(kc));
    assert_null(sw_kubeconfig_ca(kc, NULL));
    assert_string_equal(sw_kubeconfig_tls_server_name(kc), "api.internal");

    /* tls-server-name: the URL names it, CONNECT_TO points at the real host. */
    sw_client *c = NULL;
    assert_int_equal(sw_client_new(&c, kc), 0);
    assert_string_equal(sw_client_server(c), "https://api.internal:8443");
    assert_string_equal(sw_client_namespace(c), "default");
    sw_client_free(c);
    sw_kubeconfig_free(kc);
}

static void test_errors(void **state)
{
    expect_error(sample, "nope", SW_ENOTFOUND, "context nope not found");
    expect_error("clusters: [\n  - name: x\n", NULL, SW_EINVALID, "invalid YAML at line");
    expect_error("just a string\n", NULL, SW_EINVALID, "not a YAML mapping");
    expect_error("contexts: []\n", NULL, SW_EINVALID, "no current-context");
    expect_error("", NULL, SW_EINVALID, "no current-context");
    expect_error("current-context: a\ncontexts:\n- name: a\n  context: {cluster: c}\n"
                 "clusters:\n- name: c\n  cluster: {certificate-authority-data: " CA_B64 "}\n",
                 NULL, SW_EINVALID, "cluster c has no server");
    expect_error("current-context: a\ncontexts:\n- name: a\n  context: {cluster: missing}\n", NULL,
                 SW_EINVALID, "cluster missing, which is not defined");
    expect_error("current-context: a\ncontexts:\n- name: a\n  context: {cluster: c, user: u}\n"
                 "clusters:\n- name: c\n  cluster: {server: 'https://h'}\n",
                 NULL, SW_EINVALID, "user u, which is not defined");
    expect_error("current-context: a\ncontexts:\n- name: a\n  context: {user: u}\n", NULL,
                 SW_EINVALID, "names no cluster");
    expect_error("current-context: a\ncontexts:\n- name: a\n  context: {cluster: c}\n"
                 "clusters:\n- name: c\n  cluster: {server: 'ftp://h'}\n",
                 NULL, SW_EINVALID, "not an http(s) URL");
    expect_error("current-context: a\ncontexts:\n- name: a\n  context: {cluster: c}\n"
                 "clusters:\n- name: c\n  cluster: {server: 'https://h', "
                 "certificate-authority-data: '!!!'}\n",
                 NULL, SW_EINVALID, "certificate-authority-data is not valid base64");
    expect_error("current-context: a\ncontexts:\n- name: a\n  context: {cluster: c}\n"
                 "clusters:\n- name: c\n  cluster: {server: 'https://h', "
                 "insecure-skip-tls-verify: maybe}\n",
                 NULL, SW_EINVALID, "not a bool");
    expect_error("current-context: a\ncontexts:\n- name: a\n  context: {cluster: c, user: u}\n"
                 "clusters:\n- name: c\n  cluster: {server: 'https://h'}\n"
                 "users:\n- name: u\n  user: {client-certificate-data: " CA_B64 "}\n",
                 NULL, SW_EINVALID, "not both");
    expect_error("current-context: a\ncontexts:\n- name: a\n  context: {cluster: c, user: u}\n"
                 "clusters:\n- name: c\n  cluster: {server: 'https://h'}\n"
                 "users:\n- name: u\n  user: {exec: {command: aws}}\n",
                 NULL, SW_EINVALID, "exec or auth-provider");
    expect_error("current-context: a\ncontexts:\n- name: a\n  context: {cluster: c}\n"
                 "clusters:\n- name: c\n  cluster: {server: 'https://h', "
                 "certificate-authority: /nonexistent/ca.crt}\n",
                 NULL, SW_EINVALID, "/nonexistent/ca.crt");
    /* a CA and insecure-skip-tls-verify: kubectl refuses it rather than guess which was meant
     * (verification was silently off) */
    expect_error("current-context: a\ncontexts:\n- name: a\n  context: {cluster: c}\n"
                 "clusters:\n- name: c\n  cluster: {server: 'https://h', "
                 "insecure-skip-tls-verify: true, certificate-authority-data: " CA_B64 "}\n",
                 NULL, SW_EINVALID, "with the insecure flag is not allowed");
}

/* *-data wrapped by `base64` (76 columns) decodes, as kubectl reads it. */
static void test_wrapped_base64(void **state)
{
    const char yaml[] =
        "current-context: a\ncontexts:\n- name: a\n  context: {cluster: c}\n"
        "clusters:\n- name: c\n  cluster:\n    server: https://h\n"
        "    certificate-authority-data: |\n"
        "      LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCkNBCi0tLS0tRU5EIENFUlRJRklDQVRF\r\n"
        "      LS0tLS0K\n";
    sw_kubeconfig *kc = parse_ok(yaml, NULL);
    size_t n = 0;
    const char *ca = sw_kubeconfig_ca(kc, &n);
    assert_int_equal(n, strlen(CA_PEM));
    assert_memory_equal(ca, CA_PEM, n);
    sw_kubeconfig_free(kc);
}

static void test_alias_bomb(void **state)
{
    sw_buf b = SW_BUF_INIT(1 << 20);
    sw_buf_puts(&b, "a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n");
    for (int i = 1; i < 10; i++)
        sw_buf_printf(&b,
                      "a%d: &a%d [*a%d, *a%d, *a%d, *a%d, *a%d, *a%d, *a%d, *a%d, *a%d, *a%d]\n", i,
                      i, i - 1, i - 1, i - 1, i - 1, i - 1, i - 1, i - 1, i - 1, i - 1, i - 1);
    sw_kubeconfig *kc = NULL;
    assert_int_equal(sw_kubeconfig_parse(&kc, sw_buf_cstr(&b), b.len, NULL, NULL), SW_ELIMIT);
    sw_buf_dispose(&b);
}

/* ---- files ---- */

static void write_file(const char *dir, const char *name, const char *text)
{
    char path[512];
    snprintf(path, sizeof(path), "%s/%s", dir, name);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

static void remove_files(const char *dir, const char *const *names)
{
    char path[512];
    for (; *names; names++) {
        snprintf(path, sizeof(path), "%s/%s", dir, *names);
        unlink(path);
    }
    rmdir(dir);
}

static void test_load_file(void **state)
{
    char dir[] = "/tmp/sw-kubeconfig-XXXXXX", path[512];
    assert_non_null(mkdtemp(dir));
    write_file(dir, "ca.crt", CA_PEM);
    write_file(dir, "tok", "from-file\n");
    write_file(dir, "client.crt", "CERT");
    write_file(dir, "client.key", "KEY");
    write_file(dir, "config",
               "current-context: a\ncontexts:\n- name: a\n  context: {cluster: c, user: u}\n"
               "clusters:\n- name: c\n  cluster:\n    server: http://127.0.0.1:1\n"
               "    certificate-authority: ca.crt\n"
               "users:\n- name: u\n  user:\n    tokenFile: tok\n"
               "    client-certificate: client.crt\n    client-key: client.key\n");
    snprintf(path, sizeof(path), "%s/config", dir);
    sw_kubeconfig *kc = NULL;
    size_t n = 0;
    assert_int_equal(sw_kubeconfig_load(&kc, path, NULL), 0);
    assert_string_equal(sw_kubeconfig_token(kc), "from-file");
    assert_non_null(strstr(sw_kubeconfig_token_file(kc), "/tok"));
    assert_string_equal(sw_kubeconfig_ca(kc, &n), CA_PEM);
    assert_string_equal(sw_kubeconfig_client_cert(kc, NULL), "CERT");
    assert_string_equal(sw_kubeconfig_client_key(kc, NULL), "KEY");
    sw_kubeconfig_free(kc);

    snprintf(path, sizeof(path), "%s/missing", dir);
    kc = NULL;
    assert_int_equal(sw_kubeconfig_load(&kc, path, NULL), SW_ENOTFOUND);
    assert_non_null(strstr(sw_error_msg(), "missing"));
    static const char *const names[] = {"ca.crt",     "tok",    "client.crt",
                                        "client.key", "config", NULL};
    remove_files(dir, names);
}

static void test_in_cluster(void **state)
{
    char dir[] = "/tmp/sw-sa-XXXXXX";
    assert_non_null(mkdtemp(dir));
    write_file(dir, "token", "sa-token\n");
    write_file(dir, "ca.crt", CA_PEM);
    write_file(dir, "namespace", "builds\n");
    sw_kubeconfig *kc = NULL;
    unsetenv("KUBERNETES_SERVICE_HOST");
    assert_int_equal(sw_kubeconfig_in_cluster_dir(&kc, dir), SW_ENOTFOUND);
    setenv("KUBERNETES_SERVICE_HOST", "10.0.0.1", 1);
    setenv("KUBERNETES_SERVICE_PORT", "443", 1);
    assert_int_equal(sw_kubeconfig_in_cluster_dir(&kc, dir), 0);
    assert_string_equal(sw_kubeconfig_server(kc), "https://10.0.0.1:443");
    assert_string_equal(sw_kubeconfig_token(kc), "sa-token");
    assert_string_equal(sw_kubeconfig_namespace(kc), "builds");
    assert_string_equal(sw_kubeconfig_ca(kc, NULL), CA_PEM);
    sw_kubeconfig_free(kc);
    setenv("KUBERNETES_SERVICE_HOST", "fd00::1", 1);
    assert_int_equal(sw_kubeconfig_in_cluster_dir(&kc, dir), 0);
    assert_string_equal(sw_kubeconfig_server(kc), "https://[fd00::1]:443");
    sw_kubeconfig_free(kc);
    unsetenv("KUBERNETES_SERVICE_HOST");
    unsetenv("KUBERNETES_SERVICE_PORT");
    static const char *const names[] = {"token", "ca.crt", "namespace", NULL};
    remove_files(dir, names);
}

/* ---- REST helpers ---- */

static void test_paths(void **state)
{
    sw_buf b = SW_BUF_INIT(4096);
    assert_int_equal(sw_client_path(&b, &sw_res_configmaps, "ns1", "a b", NULL), 0);
    assert_string_equal(sw_buf_cstr(&b), "/api/v1/namespaces/ns1/configmaps/a%20b");
    sw_buf_clear(&b);
    sw_client_path(&b, &sw_res_imagestreams, "p", "ruby", "status");
    assert_string_equal(sw_buf_cstr(&b),
                        "/apis/image.openshift.io/v1/namespaces/p/imagestreams/ruby/status");
    sw_buf_clear(&b);
    sw_client_path(&b, &sw_res_imagestreams, NULL, NULL, NULL);
    assert_string_equal(sw_buf_cstr(&b), "/apis/image.openshift.io/v1/imagestreams");
    sw_buf_clear(&b);
    sw_client_path(&b, &sw_res_namespaces, "ignored", "default", NULL);
    assert_string_equal(sw_buf_cstr(&b), "/api/v1/namespaces/default");
    sw_client_query(&b, "labelSelector", "app in (a,b),!x");
    sw_client_query(&b, "skipped", NULL);
    sw_client_query(&b, "limit", "5");
    assert_string_equal(
        sw_buf_cstr(&b),
        "/api/v1/namespaces/default?labelSelector=app%20in%20%28a%2Cb%29%2C%21x&limit=5");
    sw_buf_clear(&b);
    assert_int_equal(sw_client_path(&b, &sw_res_configmaps, "n", "", NULL), SW_EINVALID);
    sw_buf_dispose(&b);
}

static void test_status_mapping(void **state)
{
    assert_int_equal(sw_client_status_code(404, "NotFound"), SW_ENOTFOUND);
    assert_int_equal(sw_client_status_code(409, "AlreadyExists"), SW_EEXISTS);
    assert_int_equal(sw_client_status_code(409, "Conflict"), SW_ECONFLICT);
    assert_int_equal(sw_client_status_code(409, NULL), SW_ECONFLICT);
    assert_int_equal(sw_client_status_code(410, "Expired"), SW_EGONE);
    assert_int_equal(sw_client_status_code(422, "Invalid"), SW_EINVALID);
    assert_int_equal(sw_client_status_code(400, "BadRequest"), SW_EBADREQUEST);
    assert_int_equal(sw_client_status_code(401, NULL), SW_EUNAUTHORIZED);
    assert_int_equal(sw_client_status_code(403, NULL), SW_EFORBIDDEN);
    assert_int_equal(sw_client_status_code(500, NULL), SW_EUNAVAILABLE);
    assert_int_equal(sw_client_status_code(503, NULL), SW_EUNAVAILABLE);
    assert_int_equal(sw_client_status_code(418, NULL), SW_ERROR);
}

static void test_unreachable_server(void **state)
{
    const char *yaml = "current-context: a\ncontexts:\n- name: a\n  context: {cluster: c}\n"
                       "clusters:\n- name: c\n  cluster: {server: 'http://127.0.0.1:1'}\n";
    sw_kubeconfig *kc = parse_ok(yaml, NULL);
    sw_client *c = NULL;
    json_t *out = NULL;
    assert_int_equal(sw_client_new(&c, kc), 0);
    assert_int_equal(sw_client_get(c, &sw_res_configmaps, "x", "y", &out), SW_EUNAVAILABLE);
    assert_non_null(strstr(sw_error_msg(), "127.0.0.1"));
    assert_null(out);
    sw_client_free(c);
    sw_kubeconfig_free(kc);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_current_context), cmocka_unit_test(test_named_context),
        cmocka_unit_test(test_errors),          cmocka_unit_test(test_wrapped_base64),
        cmocka_unit_test(test_alias_bomb),      cmocka_unit_test(test_load_file),
        cmocka_unit_test(test_in_cluster),      cmocka_unit_test(test_paths),
        cmocka_unit_test(test_status_mapping),  cmocka_unit_test(test_unreachable_server),
    };
    return cmocka_run_group_tests_name("client/kubeconfig", tests, NULL, NULL);
}
