/* fuzz_reference: libFuzzer target for src/registry/ref. Parses the input as an image reference;
 * whatever parses must format to a canonical string that parses back to the same value, and
 * the endpoint must be a non-empty host. Seeds: fuzz/corpus/reference/. */
#include "registry/ref.h"
#include "util/alloc.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *s = sw_strndup((const char *)data, size);
    sw_ref r, again;
    if (sw_ref_parse(s, &r) == 0) {
        char out[1024];
        sw_ref_format(&r, out, sizeof(out));
        if (sw_ref_parse(out, &again) != 0 || memcmp(&r, &again, sizeof(r)) != 0)
            abort(); /* the canonical form must round-trip */
        if (!sw_ref_endpoint(&r)[0] || !r.repository[0] || (!r.tag[0] && !r.digest[0]))
            abort();
        if (r.digest[0] && !sw_ref_digest_valid(r.digest))
            abort();
        if (r.tag[0] && !sw_ref_tag_valid(r.tag))
            abort();
    }
    sw_free(s);
    return 0;
}
