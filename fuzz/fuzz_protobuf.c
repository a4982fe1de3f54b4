/* fuzz_protobuf: libFuzzer target for src/apiserver/protobuf. Decodes the input as a Kubernetes
 * protobuf request body and, when that succeeds, encodes the result as JSON (as the server does
 * before routing). Seeds: fuzz/corpus/protobuf/, bodies kubectl 1.32 really sent. */
#include "apiserver/protobuf.h"
#include "util/alloc.h"
#include "util/error.h"
#include "util/json.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    /* An exact-size copy, so any read past the end is caught by ASan. */
    char *body = sw_malloc(size ? size : 1);
    if (size)
        memcpy(body, data, size);
    json_t *obj = NULL;
    int error = sw_protobuf_decode(body, size, &obj);
    if (error == 0) {
        if (!json_is_object(obj))
            abort();
        size_t len;
        char *text = sw_json_dumps(obj, &len);
        sw_free(text);
        json_decref(obj);
    } else if (error != SW_EBADREQUEST && error != SW_EUNSUPPORTED) {
        abort();
    }
    sw_free(body);
    return 0;
}
