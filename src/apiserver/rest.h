/* rest: the generic REST verbs over kind descriptors. rest.c routes and serves reads (get, list),
 * write.c serves create/update/patch, delete.c delete and deletecollection, watch.c serves
 * watches from the watch cache. */
#ifndef SW_REST_H
#define SW_REST_H

#include "apiserver/api.h"

typedef struct sw_route {
    const sw_kind *kind;
    char ns[256];
    char name[256];
    char sub[32];   /* "", "status", "finalize", or a custom subresource's name */
    char rest[512]; /* path after a custom subresource that takes one */
    const sw_subresource *subres;
    bool has_ns;
    bool has_name;
} sw_route;

/* Resource name for messages: "imagestreams.image.openshift.io" or "configmaps". */
const char *sw_rest_resource(const sw_kind *k, char *buf, size_t n);
void sw_rest_not_found(sw_response *resp, const sw_route *rt, const char *name);
/* Fails the response from the current thread-local error. */
void sw_rest_fail(sw_response *resp, int code, const sw_route *rt);
bool sw_rest_dry_run(const sw_request *req);
/* Writes obj (a single object) honouring Table requests. */
void sw_rest_reply_object(sw_response *resp, const sw_request *req, const sw_kind *k, int status,
                          const json_t *obj);
/* Namespace must exist and not be terminating, for writes into it. */
int sw_rest_check_namespace(sw_api *api, const char *ns, bool creating);
bool sw_rest_namespace_terminating(sw_api *api, const char *ns);

typedef struct sw_selector sw_selector;
/* Parses labelSelector/fieldSelector for kind k (metadata.name/namespace plus the kind's fields).
 */
int sw_rest_parse_selectors(const sw_kind *k, const sw_request *req, sw_selector **labels,
                            sw_selector **fields);

void sw_rest_create(sw_api *api, const sw_request *req, const sw_route *rt, sw_response *resp);
void sw_rest_update(sw_api *api, const sw_request *req, const sw_route *rt, sw_response *resp);
void sw_rest_patch(sw_api *api, const sw_request *req, const sw_route *rt, sw_response *resp);
void sw_rest_delete(sw_api *api, const sw_request *req, const sw_route *rt, sw_response *resp);
/* DeleteOptions of a DELETE: from its body when it has one, else from the query; dryRun from
 * either. SW_EBADREQUEST for a malformed body, SW_EINVALID for values Kubernetes rejects. */
int sw_rest_delete_opts(const sw_request *req, sw_delete_opts *o);
/* The delete pipeline on one object. *out (new reference) gets what the reply carries: the
 * object while finalizers hold it or when the kind returns deleted objects, else a Status;
 * *status the HTTP status (200, or 202 for orphanDependents: false on a held object). */
int sw_rest_delete_one(sw_api *api, const sw_kind *k, const char *ns, const char *name,
                       const sw_delete_opts *o, json_t **out, int *status);
/* sw_rest_delete_one with the kind's default options, for server-side callers. */
int sw_rest_delete_obj(sw_api *api, const sw_kind *k, const char *ns, const char *name,
                       bool dry_run);
/* Removes the stored object at key (expected revision, 0 for any) and runs the kind's removed
 * hook; obj gets the deletion's resourceVersion. Writes nothing on a dry run. */
int sw_rest_remove(sw_api *api, const sw_kind *k, const char *key, json_t *obj, int64_t expected,
                   bool dry_run);
void sw_rest_delete_collection(sw_api *api, const sw_request *req, const sw_route *rt,
                               sw_response *resp);
/* Parses, type-checks and strict-validates a request body for rt's kind. */
int sw_rest_read_body(const sw_request *req, const sw_route *rt, sw_response *resp, json_t **out);
/* The create/update pipelines on an object (namespace/name from its metadata). */
int sw_rest_create_obj(sw_api *api, const sw_kind *k, json_t *obj, bool dry_run);
int sw_rest_update_obj(sw_api *api, const sw_kind *k, json_t **objp, bool status, bool dry_run);
/* Serves a custom subresource of a stored kind. */
void sw_rest_subresource(sw_api *api, const sw_request *req, const sw_route *rt, sw_response *resp);
/* Serves a virtual kind through its sw_virtual_ops. */
void sw_rest_virtual(sw_api *api, const sw_request *req, const sw_route *rt, sw_response *resp);

/* The authentication.k8s.io / authorization.k8s.io reviews (review.c). */
bool sw_review_kind(const sw_kind *k);
void sw_review_handle(sw_api *api, const sw_request *req, const sw_route *rt, sw_response *resp);

void sw_watch_serve(sw_api *api, const sw_request *req, const sw_route *rt, sw_response *resp);

#endif
