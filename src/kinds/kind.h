/* kind: the descriptor of one API kind (group, version, names, scope, subresources, strict schema,
 * merge keys, table columns) and its strategy callbacks. The REST layer is generic over these;
 * everything kind-specific lives in the kind's own file in src/kinds/. Adding a kind = one file
 * plus one line in kinds.c. */
#ifndef SW_KIND_H
#define SW_KIND_H

#include "meta/patch.h"
#include "meta/ownerref.h"
#include "util/buf.h"

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

typedef struct sw_schema sw_schema;
typedef struct sw_kind sw_kind;
typedef struct sw_registry sw_registry;

/* What a strategy may consult: server-wide settings. */
/* What a stream's next() returns to end its reply abnormally (see sw_subresp, sw_stream). */
#define SW_STREAM_CUT (-2L)

#define SW_KIND_MAX_NAMES 32 /* shortNames, categories */

typedef struct sw_kind_ctx {
    const char *image_registry; /* --image-registry HOST:PORT or "" */
    sw_registry *registry;      /* OCI registry client for imports (NULL: imports unavailable) */
    const char *data_dir;       /* the server's data directory (build logs live under it) */
    const unsigned char *build_token_key; /* HMAC key of build-scoped tokens */
    size_t build_token_key_len;
    const unsigned char *sa_token_key; /* HMAC key of ServiceAccount tokens (satoken.c) */
    size_t sa_token_key_len;
    bool stopping; /* the server is stopping: long waits (build log follows) end (__atomic) */
} sw_kind_ctx;

/* A DELETE's options, read once from the request (apiserver/delete.c). */
typedef struct sw_delete_opts {
    sw_propagation policy; /* propagationPolicy; UNSET when none was given */
    int orphan_dependents; /* the legacy orphanDependents: -1 unset, 0 false, 1 true */
    bool has_uid, has_rv;  /* a precondition was given (an empty one too: it never matches) */
    char uid[128];         /* preconditions.uid (cut: a longer one never matches either) */
    char rv[32];           /* preconditions.resourceVersion, compared as the string it is */
    bool dry_run;
    int64_t grace_seconds; /* gracePeriodSeconds, -1 unset (accepted: no kind here is graceful) */
} sw_delete_opts;

/* What a kind's prepare_delete decided (besides a negative error). */
enum {
    SW_DELETE_GENERIC = 0, /* the generic rules go on */
    SW_DELETE_WRITE = 1,   /* store obj as prepare_delete changed it and answer with it */
    SW_DELETE_KEEP = 2,    /* answer with obj; nothing is written */
};

/* Access to stored objects for virtual kinds, implemented by the API server. Objects come back
 * decoded (resourceVersion set, decorated); writes run the stored kind's full strategy. */
typedef struct sw_objects sw_objects;
struct sw_objects {
    int (*get)(sw_objects *o, const sw_kind *k, const char *ns, const char *name, json_t **out);
    /* Every object of kind k in ns (all namespaces when ns is NULL). */
    int (*list)(sw_objects *o, const sw_kind *k, const char *ns, json_t **items);
    int (*create)(sw_objects *o, const sw_kind *k, json_t *obj, json_t **out);
    /* Compare-and-swap on obj's metadata.resourceVersion (SW_ECONFLICT when stale). */
    int (*update)(sw_objects *o, const sw_kind *k, json_t *obj, json_t **out);
    int (*update_status)(sw_objects *o, const sw_kind *k, json_t *obj, json_t **out);
    /* A DELETE with the kind's default propagation, through the one delete pipeline. */
    int (*del)(sw_objects *o, const sw_kind *k, const char *ns, const char *name);
    /* A copy that stays valid after the request (for streamed replies); free with release. */
    sw_objects *(*hold)(sw_objects *o);
    void (*release)(sw_objects *o);
    bool dry_run;
};

/* Handlers of a virtual kind (imagestreamtags, imagestreamimports...): any may be NULL (405). */
typedef struct sw_virtual_ops {
    int (*get)(const sw_kind_ctx *ctx, sw_objects *o, const char *ns, const char *name,
               json_t **out);
    int (*list)(const sw_kind_ctx *ctx, sw_objects *o, const char *ns, json_t **items);
    int (*create)(const sw_kind_ctx *ctx, sw_objects *o, const char *ns, json_t *body,
                  json_t **out);
    int (*update)(const sw_kind_ctx *ctx, sw_objects *o, const char *ns, const char *name,
                  json_t *body, json_t **out);
    int (*del)(const sw_kind_ctx *ctx, sw_objects *o, const char *ns, const char *name,
               json_t **out);
} sw_virtual_ops;

typedef struct sw_column {
    const char *name;
    const char *type; /* "string", "integer", "date", ... */
    const char *description;
    int priority; /* >0: only with -o wide */
    /* Appends the cell text for obj. */
    void (*cell)(const json_t *obj, sw_buf *out);
    /* When cell is NULL: the cell is the first match of this JSONPath (meta/jsonpath.h), null
     * when none, a human age for type "date" (a CRD's additionalPrinterColumns). */
    const char *json_path;
    const char *format;
} sw_column;

enum { SW_NAME_SUBDOMAIN = 0, SW_NAME_LABEL = 1, SW_NAME_PATH_SEGMENT = 2 };

/* A request to a custom subresource of a stored kind (buildconfigs/<n>/instantiate ...). */
typedef struct sw_subreq {
    const sw_kind *kind; /* the parent's */
    const char *method;
    const char *ns;   /* NULL for cluster-scoped kinds */
    const char *name; /* the parent object */
    const char *rest; /* the path after the subresource name ("<secret>/github"), or "" */
    const char *content_type;
    const char *body;
    size_t body_len;
    const char *body_file; /* a streamed upload kept in a file (instantiatebinary), or NULL */
    const char *(*query)(void *conn, const char *key);
    const char *(*header)(void *conn, const char *key);
    void *conn;
} sw_subreq;

typedef struct sw_subresp {
    int status;  /* HTTP status of the success; 0 means 200 */
    json_t *obj; /* the reply (owned); NULL answers a Status Success, unless text or next is set */
    char *text;  /* a text/plain reply (sw_malloc'd, owned), or NULL */
    const char *content_type; /* of text and streamed replies; NULL: text/plain */
    size_t text_len;
    /* A streamed text/plain reply: next() fills buf and returns the byte count, 0 when it has
     * nothing yet (it may block briefly), -1 at the end, or SW_STREAM_CUT to cut the reply
     * short (the client must not take it as complete); free() releases state. */
    long (*next)(void *state, char *buf, size_t max);
    void (*free)(void *state);
    void *state;
} sw_subresp;

typedef struct sw_subresource {
    const char *name;
    const char *kind;         /* what discovery says it returns */
    const char *const *verbs; /* NULL-terminated, for discovery */
    bool takes_path;          /* accepts segments after its name (webhooks/<secret>/<type>) */
    int (*handle)(const sw_kind_ctx *ctx, sw_objects *o, const sw_subreq *r, sw_subresp *out);
} sw_subresource;

struct sw_kind {
    const char *group; /* "" for the core group */
    const char *version;
    const char *kind;
    const char *plural;
    const char *singular;
    const char *short_names[SW_KIND_MAX_NAMES]; /* NULL after the last */
    const char *categories[SW_KIND_MAX_NAMES];
    bool namespaced;
    bool has_status;      /* has a status subresource; main-resource writes keep old status */
    bool spec_generation; /* metadata.generation starts at 1 and bumps on non-metadata change */
    const char *spec_subresource;       /* spec changes only through this subresource (Namespace:
                                         * finalize); a main-resource update keeps the old spec */
    int name_rule;                      /* SW_NAME_* */
    const char *schema_text;            /* strict schema (see meta/schema.h) */
    const struct sw_field_doc *docs;    /* field documentation for explain, or NULL */
    const char *const *field_selectors; /* extra selectable fields, NULL-terminated */
    const sw_smp_schema *(*smp)(void);  /* strategic merge keys; NULL: merge semantics */
    const sw_column *columns;           /* extra table columns between Name and Age */
    size_t ncolumns;
    bool no_age; /* no automatic Age column (a CRD with additionalPrinterColumns) */

    /* Strategy; every callback may be NULL. Errors are SW_E* codes with sw_error_set. */
    int (*prepare_create)(const sw_kind_ctx *ctx, json_t *obj);
    /* Main-resource update (spec); generation was already bumped by the generic rule. */
    int (*prepare_update)(const sw_kind_ctx *ctx, json_t *obj, const json_t *old);
    /* A main-resource update of a kind with a status keeps the old status; this may then take
     * fields of the status the client sent (sent may be NULL) into obj's (DeploymentConfig's
     * legacy latestVersion bump). Runs before prepare_update. */
    void (*carry_status)(json_t *obj, const json_t *sent, const json_t *old);
    /* Status update: obj is old with the new status copied in. */
    int (*prepare_status_update)(const sw_kind_ctx *ctx, json_t *obj, const json_t *old);
    /* Admission with access to other objects, after prepare_create / prepare_update of a
     * main-resource write (an image name resolved against ImageStreams). */
    int (*admit)(const sw_kind_ctx *ctx, sw_objects *o, json_t *obj);
    /* old is NULL on create. */
    int (*validate)(const sw_kind_ctx *ctx, const json_t *obj, const json_t *old);
    /* After a create or update of this kind is stored (not on dry runs): obj as stored. For
     * wake-ups only (a build log follower learning that its build finished); must not block. */
    void (*committed)(const sw_kind_ctx *ctx, const json_t *obj);
    /* After a delete of this kind is stored (not on dry runs): for files kept beside the
     * object (a Build's uploaded source and log). Must not block for long. */
    void (*removed)(const sw_kind_ctx *ctx, const char *ns, const char *name);
    /* Deletion (apiserver/delete.c). gc_default: what a DELETE naming no propagation policy
     * does to dependents (UNSET: Background, as for most kinds; Orphan for the kinds that
     * Kubernetes orphans by default). return_deleted: a DELETE that removes the object answers
     * with it (ReturnDeletedObject) instead of a Status. */
    sw_propagation gc_default;
    bool return_deleted;
    /* Runs first, on the current object (which it may change): SW_DELETE_GENERIC,
     * SW_DELETE_WRITE or SW_DELETE_KEEP, or a negative error. */
    int (*prepare_delete)(const sw_kind_ctx *ctx, json_t *obj, const sw_delete_opts *o);
    /* Whether an object being deleted whose metadata.finalizers are all gone may be removed
     * (NULL: yes). A Namespace waits for its spec.finalizers too. */
    bool (*removable)(const json_t *obj);

    /* A status string computed on every read and never stored (ImageStream's
     * status.dockerImageRepository): computed_status writes status.<computed_status_key> for
     * the object ns/name into out and returns true, or returns false to leave the stored
     * object as it is. */
    const char *computed_status_key;
    bool (*computed_status)(const sw_kind_ctx *ctx, const char *ns, const char *name, char *out,
                            size_t n);

    /* Virtual kinds are served by these handlers instead of the store. verbs lists the verbs
     * served and advertised (NULL: every verb); the router refuses the others with 405. */
    const sw_virtual_ops *virt;
    const char *const *verbs;

    /* Custom subresources of a stored kind, besides status. */
    const sw_subresource *subresources;
    size_t nsubresources;

    /* Kinds registered at run time (CustomResourceDefinitions, kinds/crd.h): set by the
     * registry, never in a static descriptor. data is what the registrant keeps with the kind
     * (a CRD version's compiled schema and columns). */
    bool dynamic;
    const void *data;
};

/* The kind registry: the built-in kinds (a static table) and the kinds registered at run time.
 * A run-time kind is reference-counted: every lookup below takes a reference the caller gives
 * back with sw_kind_release (a no-op for built-in kinds), so a request or a watch that holds a
 * kind keeps it valid after its CRD is deleted; it is destroyed after unregister and the last
 * release. Thread-safe. */

/* Every kind, in discovery order (built-in first, then run-time ones in registration order): a
 * sw_malloc'd array of references, freed with sw_kinds_list_free. */
const sw_kind **sw_kinds_list(size_t *count);
void sw_kinds_list_free(const sw_kind **kinds, size_t count);
/* The kind serving group/plural (in version, or any when version is NULL), referenced. */
const sw_kind *sw_kinds_find(const char *group, const char *version, const char *plural);
const sw_kind *sw_kinds_find_kind(const char *group, const char *kind);
/* Another reference to k (returned), and giving one back. NULL is fine for both. */
const sw_kind *sw_kind_ref(const sw_kind *k);
void sw_kind_release(const sw_kind *k);
/* Registers a copy of tmpl (its strings must live in data, or be static): lookups find it from
 * now. data is the registrant's and destroy(data) runs when the kind is destroyed (after
 * sw_kinds_unregister and the last release). *out (may be NULL) gets a reference.
 * SW_EEXISTS when a kind serves tmpl's group/version/plural already (data is then not taken). */
int sw_kinds_register(const sw_kind *tmpl, void *data, void (*destroy)(void *data),
                      const sw_kind **out);
/* Lookups stop finding k (a reference the caller holds stays valid until released). */
void sw_kinds_unregister(const sw_kind *k);
/* Puts a copy of tmpl where old is, in one step, so that no lookup in between finds neither
 * (a CRD's change re-registers its kinds while requests go on); old is unregistered as above.
 * When old is not registered, the same as sw_kinds_register. */
int sw_kinds_replace(const sw_kind *old, const sw_kind *tmpl, void *data,
                     void (*destroy)(void *data), const sw_kind **out);
/* Whether k serves verb ("get", "list", "watch", "create", "update", "patch", "delete",
 * "deletecollection"). */
bool sw_kind_serves(const sw_kind *k, const char *verb);
/* "apps/v1" or "v1" into buf. */
const char *sw_kind_api_version(const sw_kind *k, char *buf, size_t n);
/* The parsed strict schema (parsed once, lazily; NULL when the kind has none). */
const sw_schema *sw_kind_schema(const sw_kind *k);

/* Validation shared by kinds: the string at path in obj must be one of set (absent is fine
 * unless required). SW_EINVALID "<prefix>.<path>: Unsupported value: ...: supported values:
 * ..." (or "Required value") otherwise; prefix may be NULL. */
int sw_kind_check_enum(const json_t *obj, const char *prefix, const char *path,
                       const char *const *set, bool required);

/* The JSON object a custom subresource was POSTed (what names it in messages: "a
 * BuildRequest"): {} for an empty body, SW_ELIMIT past max bytes, SW_EBADREQUEST when it is not
 * a JSON object. */
int sw_subreq_json(const sw_subreq *r, const char *what, size_t max, json_t **out);

/* Table cell helpers shared by kinds. */
void sw_column_str(const json_t *obj, const char *path, sw_buf *out);

#endif
