/* Unit tests for src/registry/ref: docker-style normalisation, hosts and ports, tags and
 * digests, and every rejection (upper case, lengths, empty parts, bad digests). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "registry/ref.h"
#include "util/error.h"

#include <stdio.h>
#include <string.h>

#define D64 "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

/* Parses s and checks its canonical form. */
static void check_norm(const char *s, const char *want)
{
    sw_ref r;
    char out[1024];
    int rc = sw_ref_parse(s, &r);
    if (rc != 0)
        fail_msg("sw_ref_parse(%s): %s", s, sw_error_msg());
    sw_ref_format(&r, out, sizeof(out));
    assert_string_equal(out, want);
    /* The canonical form parses back to itself. */
    sw_ref again;
    assert_int_equal(sw_ref_parse(out, &again), 0);
    assert_memory_equal(&r, &again, sizeof(r));
}

static void check_bad(const char *s, const char *msg_part)
{
    sw_ref r;
    memset(&r, 0x5a, sizeof(r));
    sw_ref before = r;
    assert_int_equal(sw_ref_parse(s, &r), SW_EINVALID);
    if (msg_part && !strstr(sw_error_msg(), msg_part))
        fail_msg("sw_ref_parse(%s): message \"%s\" lacks \"%s\"", s, sw_error_msg(), msg_part);
    assert_memory_equal(&r, &before, sizeof(r)); /* untouched on failure */
}

static void test_ref__docker_hub_defaults(void **state)
{
    check_norm("ruby", "docker.io/library/ruby:latest");
    check_norm("ruby:2.7", "docker.io/library/ruby:2.7");
    check_norm("library/ruby", "docker.io/library/ruby:latest");
    check_norm("bitnami/redis:7", "docker.io/bitnami/redis:7");
    check_norm("docker.io/ruby", "docker.io/library/ruby:latest");
    check_norm("index.docker.io/ruby:3", "docker.io/library/ruby:3");
    check_norm("docker.io/a/b/c", "docker.io/a/b/c:latest");
    sw_ref r;
    assert_int_equal(sw_ref_parse("ruby", &r), 0);
    assert_string_equal(r.registry, "docker.io");
    assert_string_equal(r.repository, "library/ruby");
    assert_string_equal(r.tag, "latest");
    assert_string_equal(r.digest, "");
    assert_string_equal(sw_ref_endpoint(&r), "registry-1.docker.io");
}

static void test_ref__hosts_and_ports(void **state)
{
    check_norm("quay.io/a/b", "quay.io/a/b:latest");
    check_norm("localhost/x", "localhost/x:latest");
    check_norm("localhost:5000/x:1", "localhost:5000/x:1");
    check_norm("127.0.0.1:5000/team/app:v1.2.3", "127.0.0.1:5000/team/app:v1.2.3");
    check_norm("[::1]:5000/x", "[::1]:5000/x:latest");
    check_norm("my-registry.example.com:443/a/b_c/d__e/f-g/h.i",
               "my-registry.example.com:443/a/b_c/d__e/f-g/h.i:latest");
    /* Upper case makes the first component a host, as in docker. */
    check_norm("Registry/x", "Registry/x:latest");
    /* "localhost:5000" alone is a name with a tag. */
    check_norm("localhost:5000", "docker.io/library/localhost:5000");
    sw_ref r;
    assert_int_equal(sw_ref_parse("quay.io/a/b:1", &r), 0);
    assert_string_equal(sw_ref_endpoint(&r), "quay.io");
}

static void test_ref__digests(void **state)
{
    check_norm("quay.io/a/b@sha256:" D64, "quay.io/a/b@sha256:" D64);
    check_norm("ruby@sha256:" D64, "docker.io/library/ruby@sha256:" D64);
    check_norm("ruby:3@sha256:" D64, "docker.io/library/ruby:3@sha256:" D64);
    check_norm("localhost:5000/x@sha256:" D64, "localhost:5000/x@sha256:" D64);
    sw_ref r;
    assert_int_equal(sw_ref_parse("quay.io/a/b@sha256:" D64, &r), 0);
    assert_string_equal(r.tag, ""); /* a digest alone gets no tag */
    assert_string_equal(r.digest, "sha256:" D64);
    assert_true(sw_ref_digest_valid("sha256:" D64));
    assert_false(sw_ref_digest_valid("sha256:" D64 "0"));
    assert_false(sw_ref_digest_valid("sha512:" D64));
    assert_false(sw_ref_digest_valid(NULL));
    check_bad("ruby@", "empty digest");
    check_bad("ruby@sha256", "algorithm:hex");
    check_bad("ruby@sha256:abc", "64 lower-case hex");
    check_bad("ruby@sha256:"
              "0123456789ABCDEF0123456789abcdef0123456789abcdef0123456789abcdef",
              "64 lower-case hex");
    check_bad("ruby@sha512:" D64 D64, "unsupported digest algorithm");
    check_bad("ruby@sha256:" D64 "@sha256:" D64, NULL);
    check_bad(D64, "64-byte hexadecimal");
}

static void test_ref__tags(void **state)
{
    check_norm("x:_a", "docker.io/library/x:_a");
    check_norm("x:A.b-C_9", "docker.io/library/x:A.b-C_9");
    char tag[200];
    memset(tag, 'a', 128);
    tag[128] = '\0';
    char ref[300];
    snprintf(ref, sizeof(ref), "x:%s", tag);
    sw_ref r;
    assert_int_equal(sw_ref_parse(ref, &r), 0);
    assert_string_equal(r.tag, tag);
    snprintf(ref, sizeof(ref), "x:%sa", tag);
    check_bad(ref, "tag must match");
    check_bad("x:", "tag must match");
    check_bad("x:-a", "tag must match");
    check_bad("x:.a", "tag must match");
    check_bad("x:a/b", NULL);
    check_bad("x:a b", "tag must match");
    assert_true(sw_ref_tag_valid("latest"));
    assert_false(sw_ref_tag_valid(""));
    assert_false(sw_ref_tag_valid(NULL));
}

static void test_ref__rejects(void **state)
{
    check_bad("", "empty reference");
    check_bad(NULL, "empty reference");
    check_bad("Ruby", "must be lowercase");
    check_bad("quay.io/Team/app", "must be lowercase");
    check_bad("a//b", "path components");
    check_bad("a/", "path components");
    check_bad("/a", "path components");
    check_bad("quay.io/", "repository name is empty");
    check_bad(":tag", "repository name is empty");
    check_bad("a..b", "path components");
    check_bad("a-", "path components");
    check_bad("-a", "path components");
    check_bad("a___b", "path components");
    check_bad("a b", "path components");
    check_bad("quay.io:99999/a", "invalid registry host");
    check_bad("quay.io:/a", "invalid registry host");
    check_bad("-bad.io/a", "invalid registry host");
    check_bad("bad-.io/a", "invalid registry host");
    check_bad("[::g]:5000/a", "invalid registry host");
}

static void test_ref__lengths(void **state)
{
    char name[400];
    /* 255 characters of the normalised name is the limit (docker's). */
    memcpy(name, "quay.io/", 8);
    memset(name + 8, 'a', 247);
    name[255] = '\0';
    sw_ref r;
    assert_int_equal(sw_ref_parse(name, &r), 0);
    name[255] = 'a';
    name[256] = '\0';
    check_bad(name, "not be more than 255");
    /* A docker.io name that only overflows once "library/" is added. */
    memset(name, 'a', 250);
    name[250] = '\0';
    check_bad(name, "not be more than 255");
    char huge[2000];
    memset(huge, 'a', sizeof(huge) - 1);
    huge[sizeof(huge) - 1] = '\0';
    check_bad(huge, "longer than");
}

static void test_ref__format_truncates(void **state)
{
    sw_ref r;
    assert_int_equal(sw_ref_parse("quay.io/a/b:1", &r), 0);
    char out[8];
    sw_ref_format(&r, out, sizeof(out));
    assert_string_equal(out, "quay.io");
    sw_ref_format(&r, out, 0); /* no write at all */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ref__docker_hub_defaults),
        cmocka_unit_test(test_ref__hosts_and_ports),
        cmocka_unit_test(test_ref__digests),
        cmocka_unit_test(test_ref__tags),
        cmocka_unit_test(test_ref__rejects),
        cmocka_unit_test(test_ref__lengths),
        cmocka_unit_test(test_ref__format_truncates),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
