/* rollouthook: rollout notifications for standalone users (docs/workloads.md): one signed JSON
 * record per container an image trigger rolled out, POSTed to a webhook named by a Secret.
 *
 * The Secret (`--rollout-webhook-secret NAMESPACE/NAME`) holds `url` (http or https) and
 * `secret` (the HMAC-SHA256 key); it is read when a delivery starts (at most every 30 s), so
 * rotating it needs no restart. Each record carries `X-Slipway-Delivery` (a unique id, for the
 * receiver to drop a repeat) and `X-Slipway-Signature-256: sha256=<hex HMAC of the body>`.
 * Records wait in a bounded queue (the oldest is dropped, with a warning, when it is full) and
 * are sent in order by one thread; a failure (no connection, a timeout, a status other than
 * 2xx) is retried with a growing pause (1 s doubling to 60 s), so a receiver that is down for a
 * while gets every record once it is back. Delivery is at least once. The URL and the key are
 * never logged (only the URL's host). */
#ifndef SW_CONTROLLERS_ROLLOUTHOOK_H
#define SW_CONTROLLERS_ROLLOUTHOOK_H

#include "client/rest.h"

#include <jansson.h>
#include <stddef.h>

typedef struct sw_rollout_hook sw_rollout_hook;

#define SW_ROLLOUT_HOOK_QUEUE 1024

/* secret_ref is "NAMESPACE/NAME" (checked: SW_EINVALID otherwise). c must outlive the hook. */
int sw_rollout_hook_new(sw_rollout_hook **out, sw_client *c, const char *secret_ref);
/* Queues record (borrowed; a copy is kept). Never blocks on the network. */
void sw_rollout_hook_send(sw_rollout_hook *h, const json_t *record);
/* Stops the sender (records still queued are dropped, with a count in the log) and frees. */
void sw_rollout_hook_free(sw_rollout_hook *h);

/* The signature header value for body under key: "sha256=<64 hex>" into out (>= 72). */
void sw_rollout_hook_sign(const char *key, size_t keylen, const char *body, size_t len, char *out,
                          size_t n);

#endif
