/* store/etcdscan: a reader for the reply that dominates a list, etcd's Range response as its
 * JSON gateway writes it ({"header":{..,"revision":"N",..},"kvs":[{"key":"<base64>",
 * "create_revision":"N","mod_revision":"N","version":"N","value":"<base64>"},..],"more":true,
 * "count":"N"}), straight into sw_kv items without a jansson tree: jansson took 81% of slipway's
 * CPU in a list over etcd (bench/README.md). It declines anything outside that shape (an
 * escape, another type, a field it does not know, a key outside the prefix) and the caller
 * then parses the text with jansson, so it never has to be complete, only right. */
#ifndef SW_STORE_ETCDSCAN_H
#define SW_STORE_ETCDSCAN_H

#include "store/store.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Appends the reply's kvs to out (keys without prefix) and gives its header revision and
 * "more". 0, or SW_EINVALID when it declines (out is then as it was). */
int sw_etcdscan_range(const char *text, size_t len, const char *prefix, size_t prefix_len,
                      sw_kv_list *out, int64_t *rev_out, bool *more_out);

#endif
