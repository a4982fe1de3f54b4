/* patch: the three Kubernetes PATCH algorithms as pure functions over jansson documents:
 * RFC 7386 JSON merge patch, RFC 6902 JSON patch and Kubernetes strategic merge patch (SMP),
 * plus the SMP merge-key schema of the built-in kinds slipway serves. Inputs are untrusted:
 * every function bounds its recursion and work, never modifies its inputs, and on failure
 * returns SW_EINVALID with a one-line message and leaves *out untouched. See
 * docs/internals/patch.md. */
#ifndef SW_PATCH_H
#define SW_PATCH_H

#include <jansson.h>
#include <stddef.h>

/* Deepest nesting of a patch (or of an object it creates) the algorithms accept. */
#define SW_PATCH_MAX_DEPTH 128
/* Most operations in one JSON patch (the Kubernetes apiserver's limit). */
#define SW_PATCH_MAX_OPS 10000
/* Budget for "copy" operations in one JSON patch, in approximate bytes of copied JSON
 * (stops a patch that doubles the document with every op). */
#define SW_PATCH_MAX_COPY_BYTES (8u * 1024 * 1024)

/* RFC 7386 JSON merge patch: returns a new document (caller owns). A non-object patch replaces
 * the document; null members delete keys. Returns 0 or SW_EINVALID (nesting too deep). */
int sw_patch_merge(const json_t *doc, const json_t *patch, json_t **out);

/* RFC 6902 JSON patch (add, remove, replace, move, copy, test; JSON Pointer with ~0 ~1 escapes,
 * "-" appends to arrays). patch must be an array. SW_EINVALID (message says which op index and
 * why) for malformed ops, missing paths, failed test. Returns a new document (caller owns). */
int sw_patch_json(const json_t *doc, const json_t *patch, json_t **out);

/* Strategic merge patch schema: which lists merge by key, and which are sets of primitives. */
typedef struct sw_smp_list_rule {
    const char *path;      /* dotted path of the list field, list levels written as "[]", e.g.
                              "spec.template.spec.containers[].env", "metadata.finalizers" */
    const char *merge_key; /* "name", "containerPort", "uid"...; NULL for a primitive set */
} sw_smp_list_rule;

typedef struct sw_smp_schema {
    const sw_smp_list_rule *rules; /* looked up by exact path */
    size_t count;                  /* number of rules */
} sw_smp_schema;

/* Kubernetes strategic merge patch. Lists not named in the schema are replaced (like merge patch).
 * Maps merge recursively; null deletes a key. Directives: "$patch": "replace" | "delete" | "merge"
 * (on maps and on list elements of keyed lists; a list element {"$patch":"replace"} replaces the
 * whole list), "$retainKeys": [...] (drop keys of that map not listed, after merging),
 * "$setElementOrder/<list>": [...] (order of the merged keyed list / primitive set),
 * "$deleteFromPrimitiveList/<list>": [...] (remove those values from a primitive list).
 * Unknown $-directives are SW_EINVALID. The directives never appear in the output.
 * A map value {"$patch":"delete"} deletes that key; at the top level it yields {}.
 * patch must be an object. schema may be NULL (then it behaves as a merge patch that still
 * understands and strips the directives). Returns a new document (caller owns). */
int sw_patch_strategic(const json_t *doc, const json_t *patch, const sw_smp_schema *schema,
                       json_t **out);

/* The merge-key rules of the Kubernetes built-in types we serve (ObjectMeta: ownerReferences by
 * uid, finalizers as a set; PodSpec inside Deployment/StatefulSet/DaemonSet templates
 * (spec.template.spec.*) and CronJob (spec.jobTemplate.spec.template.spec.*): containers,
 * initContainers, ephemeralContainers, volumes, imagePullSecrets by name; containers[].env by
 * name, containers[].ports by containerPort, containers[].volumeMounts by mountPath,
 * containers[].volumeDevices by devicePath; ServiceAccount secrets and imagePullSecrets by name).
 * Static; never NULL. */
const sw_smp_schema *sw_smp_schema_core(void);

#endif
