/* object: helpers over API objects shared by the REST verbs: store encoding (resourceVersion is
 * never stored; it is the store revision injected on read), and the generic ObjectMeta rules. */
#ifndef SW_OBJECT_H
#define SW_OBJECT_H

#include "apiserver/api.h"

void sw_object_set_rv(json_t *obj, int64_t rev);
/* Applies the kind's computed status field to a decoded object. */
void sw_object_decorate(sw_api *api, const sw_kind *k, json_t *obj);
/* Appends the client's view of a stored value (resourceVersion, computed status) without
 * decoding it; key is the store key. A custom resource whose objects may predate its schema is
 * decoded and read through it (crd.h sw_cr_read_normalizes). */
int sw_api_render(sw_api *api, const sw_kind *k, const char *key, const char *value, size_t len,
                  int64_t rev, sw_buf *out);
/* The same for a value this request just wrote through the current schema: always spliced. */
int sw_api_render_written(sw_api *api, const sw_kind *k, const char *key, const char *value,
                          size_t len, int64_t rev, sw_buf *out);
/* 0 when absent or unparsable. */
int64_t sw_object_rv(const json_t *obj);
/* Compact JSON without metadata.resourceVersion; sw_malloc'd. */
char *sw_object_encode(const json_t *obj, size_t *len);
int sw_object_check_name(const sw_kind *k, const char *name);
void sw_object_init_meta(const sw_kind *k, json_t *obj);
void sw_object_keep_meta(const sw_kind *k, json_t *obj, const json_t *old);
void sw_object_bump_generation(const sw_kind *k, json_t *obj, const json_t *old);

#endif
