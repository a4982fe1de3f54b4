/* ownerref: ObjectMeta's ownerReferences and the garbage-collection finalizers as pure JSON:
 * validation in apimachinery's words, reading references, and the finalizer set a deletion's
 * propagation policy asks for. The API server validates and deletes with it; the garbage
 * collector (an API client) reads references with it. No HTTP, no store. */
#ifndef SW_META_OWNERREF_H
#define SW_META_OWNERREF_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#define SW_FINALIZER_ORPHAN "orphan"                 /* orphan the dependents, then go */
#define SW_FINALIZER_FOREGROUND "foregroundDeletion" /* delete blocking dependents first */

typedef enum sw_propagation {
    SW_PROPAGATE_UNSET = 0, /* none asked: the kind's default */
    SW_PROPAGATE_ORPHAN,
    SW_PROPAGATE_BACKGROUND,
    SW_PROPAGATE_FOREGROUND,
} sw_propagation;

/* "Orphan", "Background", "Foreground" (case-sensitive) or SW_PROPAGATE_UNSET; and back. */
sw_propagation sw_propagation_parse(const char *s);
const char *sw_propagation_name(sw_propagation p);

/* metadata.ownerReferences (absent or null is fine): each entry an object whose apiVersion
 * has a version, with kind, name and uid; v1 Event never an owner; at most one entry with
 * controller: true. SW_EINVALID with apimachinery's message and field path, e.g.
 * `metadata.ownerReferences.uid: Invalid value: "": uid must not be empty`. */
int sw_ownerref_validate(const json_t *refs);

/* Splits an apiVersion ("apps/v1", "v1") into group ("" for the core group) and version.
 * SW_EINVALID when the version is empty or a part does not fit. */
int sw_ownerref_split_api_version(const char *api_version, char *group, size_t gn, char *version,
                                  size_t vn);

/* Whether the finalizer list (an array, or NULL) holds name. */
bool sw_finalizers_has(const json_t *finalizers, const char *name);
/* metadata.finalizers must not hold both orphan and foregroundDeletion: SW_EINVALID. */
int sw_finalizers_check_gc(const json_t *finalizers);
/* An update of an object being deleted may remove finalizers, never add one: SW_EINVALID
 * `metadata.finalizers: Forbidden: no new finalizers can be added if the object is being
 * deleted, found new finalizers []string{"b"}` (new names sorted, as Go lists a set). */
int sw_finalizers_check_no_new(const json_t *now, const json_t *old);

/* The finalizers a DELETE leaves on an object: finalizers without orphan and
 * foregroundDeletion, then orphan and/or foregroundDeletion as asked. A new array. */
json_t *sw_finalizers_for_delete(const json_t *finalizers, bool orphan, bool foreground);
/* Whether two finalizer lists hold the same set of names. */
bool sw_finalizers_same_set(const json_t *a, const json_t *b);

#endif
