/* fuzz_selector: libFuzzer target for src/apiserver/selector. Feeds the input to both the label
 * and the field selector parsers (with and without an allowed-field list) and matches every
 * parsed selector against a fixed object. Seeds: fuzz/corpus/selector/. */
#include "apiserver/selector.h"
#include "util/alloc.h"

#include <stdint.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char *const allowed[] = {"metadata.name", "metadata.namespace", "spec.replicas",
                                      "status.phase", NULL};

static json_t *fixed_object(void)
{
    static json_t *obj;
    if (!obj)
        obj = json_pack("{s:{s:s,s:s,s:{s:s,s:s,s:s}},s:{s:i,s:b}}", "metadata", "name", "a,b=c",
                        "namespace", "default", "labels", "app", "ruby", "tier", "", "n", "42",
                        "spec", "replicas", 3, "paused", 1);
    return obj;
}

static void exercise(sw_selector *sel, const json_t *obj)
{
    (void)sw_selector_match_labels(sel,
                                   json_object_get(json_object_get(obj, "metadata"), "labels"));
    (void)sw_selector_match_fields(sel, obj);
    const char *v = sw_selector_field_equals(sel, "metadata.name");
    if (v)
        (void)strlen(v);
    (void)sw_selector_empty(sel);
    sw_selector_free(sel);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const json_t *obj = fixed_object();
    char *s = sw_strndup((const char *)data, size);
    sw_selector *sel = NULL;
    if (sw_selector_parse_labels(s, &sel) == 0)
        exercise(sel, obj);
    if (sw_selector_parse_fields(s, allowed, &sel) == 0)
        exercise(sel, obj);
    if (sw_selector_parse_fields(s, NULL, &sel) == 0)
        exercise(sel, obj);
    sw_free(s);
    return 0;
}
