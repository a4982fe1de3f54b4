/* rest: a thread-safe Kubernetes REST client over libcurl, for slipway's controllers and CLI,
 * against slipway's own server or any real cluster. A pool of easy handles, each keeping its
 * connection alive, sharing DNS and TLS sessions; TLS with the kubeconfig's CA; bearer token or
 * client certificate.
 * Every call returns 0 or an SW_E* code mapped from the HTTP status (404 SW_ENOTFOUND, 409
 * SW_EEXISTS / SW_ECONFLICT by reason, 410 SW_EGONE, 422 SW_EINVALID, 400 SW_EBADREQUEST, 401,
 * 403, 5xx and transport failures SW_EUNAVAILABLE) with the server's Status message as the
 * error message. Callers must ignore SIGPIPE (libcurl runs with CURLOPT_NOSIGNAL).
 * See docs/internals/client.md. */
#ifndef SW_CLIENT_REST_H
#define SW_CLIENT_REST_H

#include "client/kubeconfig.h"
#include "util/buf.h"

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct sw_client sw_client;

/* Names one resource collection; group "" (or NULL) is the core group (/api/v1). */
typedef struct sw_resource {
    const char *group;
    const char *version;
    const char *plural;
    bool namespaced;
} sw_resource;

extern const sw_resource sw_res_namespaces;      /* v1 namespaces */
extern const sw_resource sw_res_configmaps;      /* v1 configmaps */
extern const sw_resource sw_res_secrets;         /* v1 secrets */
extern const sw_resource sw_res_events;          /* v1 events */
extern const sw_resource sw_res_serviceaccounts; /* v1 serviceaccounts */
extern const sw_resource sw_res_imagestreams;    /* image.openshift.io/v1 imagestreams */
extern const sw_resource sw_res_imagestreamtags, sw_res_imagestreamimages,
    sw_res_imagestreamimports, sw_res_imagestreammappings;   /* image.openshift.io/v1 */
extern const sw_resource sw_res_builds, sw_res_buildconfigs; /* build.openshift.io/v1 */
extern const sw_resource sw_res_managedimages; /* image.slipway.dev/v1alpha1 managedimages */
extern const sw_resource sw_res_pods;          /* v1 pods */
extern const sw_resource sw_res_replicationcontrollers; /* v1 replicationcontrollers */
extern const sw_resource sw_res_deploymentconfigs;      /* apps.openshift.io/v1 deploymentconfigs */
extern const sw_resource sw_res_deployments, sw_res_replicasets, sw_res_statefulsets,
    sw_res_daemonsets, sw_res_controllerrevisions; /* apps/v1 */
extern const sw_resource sw_res_cronjobs;          /* batch/v1 cronjobs */
extern const sw_resource sw_res_leases;            /* coordination.k8s.io/v1 leases */

typedef struct sw_client_opts {
    const char *user_agent; /* NULL: "slipway/<version>" */
    int timeout_ms;         /* per request, streams excluded; 0: 60 s */
    size_t max_response;    /* bytes per response body; 0: 256 MiB */
} sw_client_opts;

/* Copies what it needs from kc (kc may be freed afterwards). */
int sw_client_new(sw_client **out, const sw_kubeconfig *kc);
int sw_client_new_opts(sw_client **out, const sw_kubeconfig *kc, const sw_client_opts *opts);
void sw_client_free(sw_client *c);
/* Ends every request and stream in progress (their transfers abort) and fails every later
 * one at once with SW_EUNAVAILABLE: the first step of stopping the controllers, whose workers
 * may be waiting on a long request (an import). Thread-safe. */
void sw_client_shutdown(sw_client *c);
const char *sw_client_server(const sw_client *c);
const char *sw_client_namespace(const sw_client *c); /* the kubeconfig's namespace */

/* Namespaces: for get/create/update/patch/delete a NULL ns means the object's
 * metadata.namespace (when there is an object), else the kubeconfig's namespace; it is ignored
 * for cluster-scoped resources. For list and watch a NULL ns means all namespaces.
 * Returned objects (*out) are new references. */
int sw_client_get(sw_client *c, const sw_resource *r, const char *ns, const char *name,
                  json_t **out);

typedef struct sw_list_opts {
    const char *label_selector;   /* or NULL */
    const char *field_selector;   /* or NULL */
    const char *resource_version; /* NULL: latest; "0": any (what informers ask first) */
    int64_t limit;                /* page size; 0: 500; negative: one unpaged request */
} sw_list_opts;

/* The whole List: every page followed through metadata.continue and merged, metadata.continue
 * removed, metadata.resourceVersion from the first page. A continue token that expired (410)
 * restarts the list once without paging, as client-go's pager does. */
int sw_client_list(sw_client *c, const sw_resource *r, const char *ns, const char *label_selector,
                   json_t **out);
int sw_client_list_opts(sw_client *c, const sw_resource *r, const char *ns,
                        const sw_list_opts *opts, json_t **out);
/* The objects of r in ns matching label_selector (may be NULL) whose controller ownerReference
 * has uid owner_uid: a new array of new references (empty, never NULL, on an error too). */
int sw_client_list_controlled(sw_client *c, const sw_resource *r, const char *ns,
                              const char *label_selector, const char *owner_uid, json_t **out);
/* Gets one listed item (borrowed, as are the page and its metadata); 0 goes on, a negative
 * SW_E* code stops the list with it. */
typedef int (*sw_client_item_fn)(const json_t *page, json_t *item, void *payload);
/* The List page by page (limit: opts->limit, else 500), each item handed to fn as it comes,
 * so a long list is never held whole; a page larger than the server's reply cap (413) is asked
 * again in smaller pages. rv (may be NULL) gets the first page's resourceVersion. A continue
 * token that expired (410) restarts the list once from the top, after fn(NULL, NULL, payload)
 * tells it so (what it got before is superseded). */
int sw_client_list_each(sw_client *c, const sw_resource *r, const char *ns,
                        const sw_list_opts *opts, sw_client_item_fn fn, void *payload, char *rv,
                        size_t rv_len);
int sw_client_create(sw_client *c, const sw_resource *r, const char *ns, const json_t *obj,
                     json_t **out);
/* PUT of obj (named by its metadata.name). Its metadata.resourceVersion, if any, is the
 * precondition: a stale one gives SW_ECONFLICT. */
int sw_client_update(sw_client *c, const sw_resource *r, const char *ns, const json_t *obj,
                     json_t **out);
int sw_client_update_status(sw_client *c, const sw_resource *r, const char *ns, const json_t *obj,
                            json_t **out);
/* patch_type: "merge" (RFC 7386), "json" (RFC 6902), "strategic", or a full content type. */
int sw_client_patch(sw_client *c, const sw_resource *r, const char *ns, const char *name,
                    const char *patch_type, const json_t *patch, json_t **out);
/* The same on a subresource ("status"; NULL: the object itself). */
int sw_client_patch_sub(sw_client *c, const sw_resource *r, const char *ns, const char *name,
                        const char *sub, const char *patch_type, const json_t *patch, json_t **out);
/* DELETE with propagationPolicy Background (kubectl's default). */
int sw_client_delete(sw_client *c, const sw_resource *r, const char *ns, const char *name);
/* DELETE with a propagation policy ("Orphan", "Background", "Foreground"; NULL or "": the
 * server's default for the kind) and uid and resourceVersion preconditions (NULL or "": none;
 * a mismatch is SW_ECONFLICT). *out (may be NULL) gets the reply: the object while finalizers
 * hold it, else a Status or the deleted object. */
int sw_client_delete_opts(sw_client *c, const sw_resource *r, const char *ns, const char *name,
                          const char *policy, const char *uid, const char *rv, json_t **out);

/* Any request; path_and_query starts with '/'. body may be NULL; content_type NULL means
 * application/json. *status (may be NULL) gets the HTTP status, 0 if none was received. On
 * 2xx, *out (may be NULL) gets the parsed JSON body, NULL when the body is empty. */
int sw_client_request(sw_client *c, const char *method, const char *path_and_query,
                      const json_t *body, const char *content_type, long *status, json_t **out);
/* The same with raw bytes both ways (logs, health checks). accept NULL means "* / *". *out is
 * sw_malloc'd and NUL-terminated. */
int sw_client_request_raw(sw_client *c, const char *method, const char *path_and_query,
                          const char *body, size_t body_len, const char *content_type,
                          const char *accept, long *status, char **out, size_t *out_len);

/* Hands over the next bytes of an upload body: copies at most max bytes into buf and returns
 * how many, 0 at the end, or a negative SW_E* code (with its message set) to abort. */
typedef long (*sw_client_read_fn)(char *buf, size_t max, void *payload);

/* A request whose body is pulled from fn while it is sent, never held in memory (binary build
 * uploads): len bytes as Content-Length, or chunked when len < 0. No overall timeout; a transfer
 * slower than 1 byte/s for 60 s fails. The 2xx body is parsed into *out as sw_client_request
 * does; fn's negative code is returned as it is. */
int sw_client_request_upload(sw_client *c, const char *method, const char *path_and_query,
                             sw_client_read_fn fn, void *payload, int64_t len,
                             const char *content_type, long *status, json_t **out);

/* ---- streams (watch, follow logs) ---- */

/* Cancels a stream from any thread; once fired it stays fired, so later streams using it
 * return at once (sw_client_cancel_reset re-arms it). */
typedef struct sw_client_cancel sw_client_cancel;
sw_client_cancel *sw_client_cancel_new(void);
void sw_client_cancel_free(sw_client_cancel *k);
void sw_client_cancel_fire(sw_client_cancel *k);
bool sw_client_cancel_fired(sw_client_cancel *k);
void sw_client_cancel_reset(sw_client_cancel *k);

/* Gets body bytes as they arrive, or (NULL, 0) at every tick. Returns 0 to go on, a positive
 * value to end the stream cleanly, or a negative SW_E* code (with its message set) to fail. */
typedef int (*sw_client_data_fn)(const char *data, size_t len, void *payload);

typedef struct sw_stream_opts {
    int timeout_ms;           /* whole stream, 0: none */
    int tick_ms;              /* call fn(NULL, 0) this often, 0: never */
    sw_client_cancel *cancel; /* or NULL */
} sw_stream_opts;

/* GET path_and_query and feed the 2xx body to fn on the calling thread. Returns 0 when the
 * server ended the stream, fn asked to stop, or the stream was cancelled; fn's negative code;
 * the mapped HTTP error (body read as a Status); SW_ETIMEOUT past timeout_ms; or
 * SW_EUNAVAILABLE for transport failures (connection refused or dropped). */
int sw_client_stream(sw_client *c, const char *path_and_query, const sw_stream_opts *opts,
                     sw_client_data_fn fn, void *payload);

/* ---- helpers ---- */

/* Appends /api/v1 or /apis/G/V, then /namespaces/NS (namespaced resources with ns), /PLURAL,
 * and /NAME and /SUB when given; segments are percent-encoded. */
int sw_client_path(sw_buf *out, const sw_resource *r, const char *ns, const char *name,
                   const char *sub);
/* Appends ?key=value or &key=value with value percent-encoded; nothing if value is NULL. */
int sw_client_query(sw_buf *out, const char *key, const char *value);
/* Maps an HTTP status (and Status reason) to an SW_E* code. */
int sw_client_status_code(long status, const char *reason);

#endif
