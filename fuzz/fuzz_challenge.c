/* fuzz_challenge: libFuzzer target for src/registry/challenge. Parses the input as a
 * WWW-Authenticate header into a small array (so the "more challenges than slots" path runs
 * too) and checks that every stored field is terminated and the selection is one of them.
 * Seeds: fuzz/corpus/challenge/. */
#include "registry/challenge.h"
#include "util/alloc.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *s = sw_strndup((const char *)data, size);
    sw_challenge v[3];
    size_t n = 0;
    if (sw_challenge_parse(s, v, 3, &n) == 0) {
        if (n == 0 || n > 3)
            abort();
        for (size_t i = 0; i < n; i++) {
            if (!v[i].scheme[0] || strlen(v[i].scheme) >= sizeof(v[i].scheme) ||
                strlen(v[i].realm) >= sizeof(v[i].realm) ||
                strlen(v[i].service) >= sizeof(v[i].service) ||
                strlen(v[i].scope) >= sizeof(v[i].scope))
                abort();
        }
        const sw_challenge *sel = sw_challenge_select(v, n);
        if (sel && (sel < v || sel >= v + n))
            abort();
    } else if (n != 0) {
        abort();
    }
    sw_free(s);
    return 0;
}
