/* Unit tests for src/util/sha256: FIPS 180-2 vectors, streaming equals one-shot whatever the
 * split, digest string validation. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "util/sha256.h"

#include <string.h>

#define ABC_DIGEST "sha256:ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
#define EMPTY_DIGEST "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"

static void test_sha256_vectors(void **state)
{
    char d[SW_SHA256_DIGEST_BUF];
    sw_sha256_digest("abc", 3, d);
    assert_string_equal(d, ABC_DIGEST);
    sw_sha256_digest("", 0, d);
    assert_string_equal(d, EMPTY_DIGEST);
    sw_sha256_digest("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq", 56, d);
    assert_string_equal(d,
                        "sha256:248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
}

static void test_sha256_streaming_matches_one_shot(void **state)
{
    unsigned char data[10000];
    for (size_t i = 0; i < sizeof(data); i++)
        data[i] = (unsigned char)(i * 7 + (i >> 5));
    char whole[SW_SHA256_DIGEST_BUF], parts[SW_SHA256_DIGEST_BUF];
    sw_sha256_digest(data, sizeof(data), whole);
    sw_sha256 h;
    sw_sha256_init(&h);
    size_t off = 0, step = 1;
    while (off < sizeof(data)) {
        size_t n = step < sizeof(data) - off ? step : sizeof(data) - off;
        sw_sha256_update(&h, data + off, n);
        off += n;
        step = step * 3 + 1;
    }
    sw_sha256_update(&h, data, 0);
    sw_sha256_final_digest(&h, parts);
    assert_string_equal(whole, parts);
    assert_null(h.ctx);
}

static void test_sha256_dispose_unfinished(void **state)
{
    sw_sha256 h;
    sw_sha256_init(&h);
    sw_sha256_update(&h, "x", 1);
    sw_sha256_dispose(&h);
    sw_sha256_dispose(&h); /* twice is harmless */
    assert_null(h.ctx);
}

static void test_sha256_digest_valid(void **state)
{
    assert_true(sw_sha256_digest_valid(ABC_DIGEST));
    assert_false(sw_sha256_digest_valid(NULL));
    assert_false(sw_sha256_digest_valid(""));
    assert_false(sw_sha256_digest_valid("sha256:"));
    assert_false(sw_sha256_digest_valid(
        "sha256:BA7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"));
    assert_false(sw_sha256_digest_valid(ABC_DIGEST "0"));
    assert_false(sw_sha256_digest_valid(
        "sha512:ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sha256_vectors),
        cmocka_unit_test(test_sha256_streaming_matches_one_shot),
        cmocka_unit_test(test_sha256_dispose_unfinished),
        cmocka_unit_test(test_sha256_digest_valid),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
