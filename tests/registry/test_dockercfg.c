/* Unit tests for src/registry/dockercfg: both secret types, auth vs username/password, URL-form
 * keys, docker.io aliases, path-scoped keys, wildcards, and errors that never echo secrets. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "registry/dockercfg.h"
#include "util/alloc.h"
#include "util/error.h"
#include "util/str.h"

#include <stdio.h>
#include <string.h>

static int setup(void **state)
{
    sw_creds *c;
    assert_int_equal(sw_creds_new(&c), 0);
    *state = c;
    return 0;
}

static int teardown(void **state)
{
    sw_creds_free(*state);
    return 0;
}

static void add(sw_creds *c, const char *type, const char *json)
{
    if (sw_creds_add_secret(c, type, json, strlen(json)) != 0)
        fail_msg("add_secret: %s", sw_error_msg());
}

static void expect(const sw_creds *c, const char *registry, const char *repo, const char *user,
                   const char *pass)
{
    const char *u = NULL, *p = NULL;
    bool found = sw_creds_lookup_repo(c, registry, repo, &u, &p);
    if (!user) {
        if (found)
            fail_msg("%s/%s: unexpected credentials for %s", registry, repo ? repo : "", u);
        return;
    }
    if (!found)
        fail_msg("%s/%s: no credentials", registry, repo ? repo : "");
    assert_string_equal(u, user);
    assert_string_equal(p, pass);
}

static void test_dockercfg__dockerconfigjson(void **state)
{
    sw_creds *c = *state;
    char *auth = sw_base64_encode("alice:s3cr:et", 13);
    char json[512];
    snprintf(json, sizeof(json),
             "{\"auths\":{\"quay.io\":{\"auth\":\"%s\"},"
             "\"localhost:5000\":{\"username\":\"bob\",\"password\":\"pw\"},"
             "\"empty.io\":{\"email\":\"x@y\"}}}",
             auth);
    sw_free(auth);
    add(c, SW_CREDS_TYPE_DOCKERCONFIGJSON, json);
    assert_int_equal(sw_creds_count(c), 2);         /* the entry without credentials is skipped */
    expect(c, "quay.io", NULL, "alice", "s3cr:et"); /* split at the first ':' */
    expect(c, "QUAY.IO", "a/b", "alice", "s3cr:et");
    expect(c, "localhost:5000", "x", "bob", "pw");
    expect(c, "localhost", "x", NULL, NULL); /* ports must match */
    expect(c, "localhost:5001", "x", NULL, NULL);
    expect(c, "empty.io", NULL, NULL, NULL);
    expect(c, "docker.io", NULL, NULL, NULL);
}

static void test_dockercfg__legacy_dockercfg(void **state)
{
    sw_creds *c = *state;
    add(c, SW_CREDS_TYPE_DOCKERCFG,
        "{\"https://registry.example.com/v1/\":{\"username\":\"u\",\"password\":\"p\","
        "\"email\":\"e\"}}");
    expect(c, "registry.example.com", "a", "u", "p");
    /* auth wins over username/password */
    sw_creds *c2;
    sw_creds_new(&c2);
    char *auth = sw_base64_encode("x:y", 3);
    char json[256];
    snprintf(json, sizeof(json),
             "{\"h.io\":{\"auth\":\"%s\",\"username\":\"no\","
             "\"password\":\"no\"}}",
             auth);
    sw_free(auth);
    add(c2, SW_CREDS_TYPE_DOCKERCFG, json);
    expect(c2, "h.io", NULL, "x", "y");
    sw_creds_free(c2);
}

static void test_dockercfg__docker_hub_aliases(void **state)
{
    const char *keys[] = {"https://index.docker.io/v1/",
                          "index.docker.io",
                          "docker.io",
                          "registry-1.docker.io",
                          "https://registry.hub.docker.com",
                          NULL};
    for (size_t i = 0; keys[i]; i++) {
        sw_creds *c;
        sw_creds_new(&c);
        char json[256];
        snprintf(json, sizeof(json),
                 "{\"auths\":{\"%s\":{\"username\":\"hub\",\"password\":\"pw\"}}}", keys[i]);
        add(c, SW_CREDS_TYPE_DOCKERCONFIGJSON, json);
        expect(c, "docker.io", "library/ruby", "hub", "pw");
        expect(c, "index.docker.io", NULL, "hub", "pw");
        expect(c, "registry-1.docker.io", NULL, "hub", "pw");
        expect(c, "quay.io", NULL, NULL, NULL);
        sw_creds_free(c);
    }
}

static void test_dockercfg__paths_and_wildcards(void **state)
{
    sw_creds *c = *state;
    add(c, SW_CREDS_TYPE_DOCKERCONFIGJSON,
        "{\"auths\":{"
        "\"quay.io\":{\"username\":\"host\",\"password\":\"1\"},"
        "\"https://quay.io/org/\":{\"username\":\"org\",\"password\":\"2\"},"
        "\"quay.io/org/team\":{\"username\":\"team\",\"password\":\"3\"},"
        "\"*.example.com\":{\"username\":\"wild\",\"password\":\"4\"}}}");
    expect(c, "quay.io", "other/x", "host", "1");
    expect(c, "quay.io", "org/x", "org", "2");
    expect(c, "quay.io", "org/team/x", "team", "3");
    expect(c, "quay.io", "organ/x", "host", "1"); /* path match is per component */
    expect(c, "quay.io", NULL, "host", "1");
    const char *u, *p;
    assert_true(sw_creds_lookup(c, "quay.io", &u, &p));
    assert_string_equal(u, "host");
    expect(c, "a.example.com", "x", "wild", "4");
    expect(c, "a.b.example.com", "x", NULL, NULL);
    expect(c, "example.com", "x", NULL, NULL);
    /* A second secret adds entries; the first added wins among equals. */
    add(c, SW_CREDS_TYPE_DOCKERCONFIGJSON,
        "{\"auths\":{\"quay.io\":{\"username\":\"later\",\"password\":\"5\"}}}");
    expect(c, "quay.io", "other/x", "host", "1");
    /* Only org-scoped credentials: no match for other repositories. */
    sw_creds *c2;
    sw_creds_new(&c2);
    add(c2, SW_CREDS_TYPE_DOCKERCONFIGJSON,
        "{\"auths\":{\"ghcr.io/acme\":{\"username\":\"a\",\"password\":\"b\"}}}");
    expect(c2, "ghcr.io", "acme/app", "a", "b");
    expect(c2, "ghcr.io", "other/app", NULL, NULL);
    sw_creds_free(c2);
}

static void expect_error(sw_creds *c, const char *type, const char *json, const char *secret)
{
    assert_int_equal(sw_creds_add_secret(c, type, json, json ? strlen(json) : 0), SW_EINVALID);
    if (secret && strstr(sw_error_msg(), secret))
        fail_msg("error message leaks a secret: %s", sw_error_msg());
}

static void test_dockercfg__errors(void **state)
{
    sw_creds *c = *state;
    expect_error(c, "Opaque", "{}", NULL);
    expect_error(c, NULL, "{}", NULL);
    expect_error(c, SW_CREDS_TYPE_DOCKERCONFIGJSON, NULL, NULL);
    expect_error(c, SW_CREDS_TYPE_DOCKERCONFIGJSON, "[]", NULL);
    /* jansson would quote the text near the error: the message must not. */
    expect_error(c, SW_CREDS_TYPE_DOCKERCONFIGJSON,
                 "{\"auths\":{\"h\":{\"password\":\"hunter2\" oops}}}", "hunter2");
    expect_error(c, SW_CREDS_TYPE_DOCKERCONFIGJSON, "{\"auths\":[]}", NULL);
    expect_error(c, SW_CREDS_TYPE_DOCKERCONFIGJSON, "{\"auths\":{\"h\":\"str\"}}", NULL);
    expect_error(c, SW_CREDS_TYPE_DOCKERCFG, "{\"h\":{\"auth\":\"not base64!\"}}", NULL);
    char *noc = sw_base64_encode("nocolonsecret", 13);
    char json[256];
    snprintf(json, sizeof(json), "{\"h\":{\"auth\":\"%s\"}}", noc);
    sw_free(noc);
    expect_error(c, SW_CREDS_TYPE_DOCKERCFG, json, "nocolonsecret");
    expect_error(c, SW_CREDS_TYPE_DOCKERCFG, "{\"\":{\"username\":\"u\"}}", NULL);
    assert_int_equal(sw_creds_count(c), 0);
    /* No auths at all (credHelpers only) is fine and adds nothing. */
    add(c, SW_CREDS_TYPE_DOCKERCONFIGJSON, "{\"credHelpers\":{\"x\":\"y\"}}");
    assert_int_equal(sw_creds_count(c), 0);
    const char *u, *p;
    assert_false(sw_creds_lookup(NULL, "x", &u, &p));
    assert_false(sw_creds_lookup(c, NULL, &u, &p));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_dockercfg__dockerconfigjson, setup, teardown),
        cmocka_unit_test_setup_teardown(test_dockercfg__legacy_dockercfg, setup, teardown),
        cmocka_unit_test(test_dockercfg__docker_hub_aliases),
        cmocka_unit_test_setup_teardown(test_dockercfg__paths_and_wildcards, setup, teardown),
        cmocka_unit_test_setup_teardown(test_dockercfg__errors, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
