/* api: the API server's shared request/response model and server context, used by the HTTP
 * front end (server.c) and the handlers (rest.c, watch.c, discovery.c, openapi.c, table.c). */
#ifndef SW_API_H
#define SW_API_H

#include "apiserver/authz.h"
#include "kinds/kind.h"
#include "store/store.h"
#include "util/buf.h"

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#define SW_API_MAX_BODY (3u * 1024 * 1024)

typedef struct sw_watchcache sw_watchcache;
typedef struct sw_notifier sw_notifier;
typedef struct sw_nscache sw_nscache;

typedef struct sw_api {
    sw_store *store;
    sw_watchcache *cache;
    sw_nscache *nscache;     /* namespaces in memory; NULL: read them from the store */
    sw_notifier *notifier;   /* registry notifications; NULL when not configured */
    sw_authz *authz;         /* RBAC; NULL: every authenticated request is allowed */
    const char *admin_token; /* the admin kubeconfig's token (system:masters) */
    sw_kind_ctx kctx;
    char listen_addr[128]; /* host:port clients reach us at */
} sw_api;

/* A streaming body: the HTTP layer calls next() until it returns <0 (end) and free() after. */
typedef struct sw_stream {
    /* Fills up to max bytes into buf; returns bytes written, 0 if nothing yet (called again),
     * -1 at the end of the stream, or SW_STREAM_CUT to end it abnormally (the client sees the
     * reply cut short, not complete). May block briefly. */
    long (*next)(void *state, char *buf, size_t max);
    void (*free)(void *state);
    void *state;
} sw_stream;

typedef struct sw_request {
    const char *method;
    const char *path;
    const char *content_type; /* may be NULL */
    const char *accept;       /* may be NULL */
    const char *body;
    size_t body_len;
    const char *body_file; /* a streamed upload kept in a file (instantiatebinary), or NULL */
    /* Query lookup, provided by the HTTP layer. Returns NULL when absent. */
    const char *(*query)(void *conn, const char *key);
    const char *(*header)(void *conn, const char *key); /* may be NULL */
    void *conn;
    const sw_user *user; /* who sent it, or NULL (a path anyone may call) */
} sw_request;

typedef struct sw_response {
    int status;
    const char *content_type; /* static string */
    sw_buf body;
    sw_stream stream; /* used when stream.next != NULL */
    char warning[256];
    /* what /metrics counts the request under (rest.c fills them for resources) */
    const char *verb; /* static string; NULL: the lower-cased method */
    char group[64], resource[64], subresource[32];
} sw_response;

static inline const char *sw_req_query(const sw_request *r, const char *key)
{
    return r->query ? r->query(r->conn, key) : NULL;
}

void sw_response_init(sw_response *resp);
void sw_response_dispose(sw_response *resp);
/* Sets a JSON body (not stolen). */
void sw_response_json(sw_response *resp, int status, const json_t *body);
/* A Kubernetes Status failure from an SW_E* code and the thread-local message; kind and name
 * (optional) fill details. */
void sw_response_error(sw_response *resp, int code, const char *message, const sw_kind *kind,
                       const char *name);
/* Builds the Status object for an error (used in watch ERROR events too). New reference. */
json_t *sw_status_failure(int code, const char *message, const sw_kind *kind, const char *name);

/* A build-scoped token's request: 0 when allowed, SW_EUNAUTHORIZED when the token is not
 * valid, SW_EFORBIDDEN for anything but its own build (buildauth.c). */
int sw_api_build_token_check(sw_api *api, const char *token, const char *method, const char *path);
/* A BuildConfig webhook call, POST .../namespaces/<ns>/buildconfigs/<bc>/webhooks/<secret>/<type>
 * (the path split by the caller), judged before any body is read: 0 when the secret opens a
 * trigger of that type, else SW_EUNAUTHORIZED, the same answer for a wrong secret, a wrong
 * type and a BuildConfig or namespace that does not exist. */
int sw_api_webhook_check(sw_api *api, const char *ns, const char *bc, const char *secret,
                         const char *type);

/* A bearer token's user (review.c): the admin token (system:masters) or a ServiceAccount
 * token that carries one of audiences (none given: the API server's) and whose ServiceAccount
 * still exists; audience (may be NULL) gets the one it matched. SW_EUNAUTHORIZED with the
 * reason set, SW_EUNAVAILABLE when the store cannot say. */
int sw_api_token_user(sw_api *api, const char *token, const char *const *audiences,
                      size_t naudiences, sw_user *u, char *audience, size_t audn);

/* Store access for code outside a request (notification worker, embedded controllers). */
sw_objects *sw_api_objects_new(sw_api *api);
void sw_api_objects_free(sw_objects *o);

/* Handlers; each fills resp. */
void sw_discovery_handle(sw_api *api, const sw_request *req, sw_response *resp);
void sw_openapi_handle(sw_api *api, const sw_request *req, sw_response *resp);
void sw_rest_handle(sw_api *api, const sw_request *req, sw_response *resp);
/* Whether path names a served resource (a kind, an object, a subresource): what is not gets 404
 * before its body is looked at. */
bool sw_rest_routes(const char *path);
bool sw_discovery_matches(const char *path);
bool sw_openapi_matches(const char *path);

int sw_api_bootstrap(sw_api *api);
/* The bootstrap ClusterRoles and ClusterRoleBindings (rbacpolicy.c). */
int sw_rbac_bootstrap(sw_api *api);

/* Object helpers shared by rest.c, watch.c and table.c. */
/* Store key of an object: /<group|core>/<plural>/[<ns>/]<name>; prefix when name is NULL. Keys
 * of valid objects always fit SW_API_KEY_MAX bytes (group 253, plural 63, namespace 63, name
 * 253); a longer key is cut, so give it a buffer of that size. */
#define SW_API_KEY_MAX 768
void sw_api_key(const sw_kind *k, const char *ns, const char *name, char *out, size_t n);
/* Parses a stored value into an object with resourceVersion set and the kind's decorations. */
int sw_api_decode(sw_api *api, const sw_kind *k, const char *value, size_t len, int64_t rev,
                  json_t **out);
/* The kind a store key belongs to (NULL if none). */
/* The kind a store key belongs to (referenced: sw_kind_release it), or NULL. */
const sw_kind *sw_api_kind_of_key(const char *key);

/* Wants a Table rendering (Accept has as=Table)? */
bool sw_table_wanted(const sw_request *req);
/* Table of objects (array of full objects). New reference. */
json_t *sw_table_build(const sw_kind *k, const json_t *items, const char *rv, const char *cont,
                       bool headers);

#endif
