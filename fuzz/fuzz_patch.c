/* fuzz_patch: libFuzzer target for the three patch algorithms of src/meta/patch.h.
 * Input: a document's JSON, a NUL byte, then a patch's JSON. Both are parsed with the bounded
 * parser (depth 64) and run through merge patch, JSON patch and strategic merge patch (core
 * schema and no schema); every result is freed. Checks that a successful strategic merge of a
 * document without $-keys yields a document without $-keys (directives never leak out). */
#include "meta/patch.h"
#include "util/json.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* True when some object key in v starts with '$'. */
static bool has_dollar_key(const json_t *v, int depth)
{
    const char *key;
    json_t *child;
    size_t i;
    if (depth > SW_PATCH_MAX_DEPTH + 2)
        return false;
    if (json_is_object(v)) {
        json_object_foreach((json_t *)v, key, child)
        {
            if (key[0] == '$' || has_dollar_key(child, depth + 1))
                return true;
        }
    }
    if (json_is_array(v)) {
        json_array_foreach(v, i, child)
        {
            if (has_dollar_key(child, depth + 1))
                return true;
        }
    }
    return false;
}

static void run_strategic(const json_t *doc, const json_t *patch, const sw_smp_schema *schema)
{
    json_t *out = NULL;
    if (sw_patch_strategic(doc, patch, schema, &out) < 0)
        return;
    if (!has_dollar_key(doc, 0) && has_dollar_key(out, 0))
        abort();
    json_decref(out);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *text = (const char *)data;
    const char *nul = memchr(text, '\0', size);
    json_t *doc = NULL, *patch = NULL, *out = NULL;
    if (!nul)
        return 0;
    size_t doc_len = (size_t)(nul - text);
    if (sw_json_parse(text, doc_len, SW_JSON_MAX_DEPTH, 0, &doc) < 0)
        goto done;
    if (sw_json_parse(nul + 1, size - doc_len - 1, SW_JSON_MAX_DEPTH, 0, &patch) < 0)
        goto done;
    if (sw_patch_merge(doc, patch, &out) == 0)
        json_decref(out);
    out = NULL;
    if (sw_patch_json(doc, patch, &out) == 0)
        json_decref(out);
    run_strategic(doc, patch, sw_smp_schema_core());
    run_strategic(doc, patch, NULL);
done:
    json_decref(doc);
    json_decref(patch);
    return 0;
}
