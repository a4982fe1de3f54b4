/* imagepolicy: OpenShift's image lookup admission for workloads (openshift-api.md §1.5): a
 * container image that is a short name `<stream>[:<tag>]` is resolved to the tag's pull spec
 * when the stream of that name in the object's namespace has `spec.lookupPolicy.local: true`.
 * Pods are always resolved; the other workload kinds only when they carry the annotation
 * `alpha.image.policy.openshift.io/resolve-names: "*"`. A name that does not resolve (no such
 * stream, local lookup off, a tag with no image yet) is left as written, as OpenShift leaves
 * it. */
#ifndef SW_KINDS_IMAGEPOLICY_H
#define SW_KINDS_IMAGEPOLICY_H

#include "kinds/kind.h"

#define SW_RESOLVE_NAMES_ANNOTATION "alpha.image.policy.openshift.io/resolve-names"

/* Resolves the short names in obj (of kind) in place; 0, or an error reading streams. */
int sw_image_policy_admit(const sw_kind_ctx *ctx, sw_objects *o, const char *kind, json_t *obj);

/* Defines fn, a kind's admit callback resolving the names of a KIND object. */
#define SW_IMAGE_POLICY_ADMIT(fn, KIND)                                                            \
    static int fn(const sw_kind_ctx *ctx, sw_objects *o, json_t *obj)                              \
    {                                                                                              \
        return sw_image_policy_admit(ctx, o, KIND, obj);                                           \
    }

#endif
