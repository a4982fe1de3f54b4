/* objtext: renders a stored object's compact JSON for clients without decoding it: inserts
 * metadata.resourceVersion (never stored) and sets one computed status string (a kind's
 * decoration, e.g. ImageStream status.dockerImageRepository) by splicing text. Reads (get,
 * list, watch fan-out) use it; anything that changes an object still decodes it. */
#ifndef SW_OBJTEXT_H
#define SW_OBJTEXT_H

#include "util/buf.h"

#include <stddef.h>
#include <stdint.h>

/* Appends to out the object text with "resourceVersion":"<rev>" as the first key of metadata
 * and, when status_key is not NULL, status.<status_key> = status_value (replacing it when it is
 * status's first key, else inserted first; a status object is added when absent).
 * SW_EINVALID when text is not a JSON object with an object "metadata". */
int sw_objtext_render(const char *text, size_t len, int64_t rev, const char *status_key,
                      const char *status_value, sw_buf *out);

#endif
