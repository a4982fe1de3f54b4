/* crd: apiextensions.k8s.io/v1 CustomResourceDefinition (crd-gc.md Part 1, docs/crds.md) and
 * the kinds it defines. A CRD is stored and validated as kube-apiserver does (names, scope,
 * versions, structural schemas through meta/openapischema.h); its NamesAccepted and Established
 * conditions are decided when it is written (names against the other CRDs of its group), so a
 * CRD is served the moment its write is acknowledged. Each served version becomes a kind in the
 * run-time registry (kind.h) that the generic REST path serves like a built-in one, with the
 * CRD's schema pipeline in place of a strict schema: prune, drop nulls, default, validate (every
 * keyword, Kubernetes' causes). Deleting a CRD puts the customresourcecleanup finalizer on it
 * (controllers/crdcleanup.h removes its instances, then the finalizer); a CRD being deleted
 * refuses new instances. Changing a CRD re-registers its kinds; stored objects are never
 * re-validated.
 *
 * CEL (x-kubernetes-validations): slipway has no CEL evaluator, and never pretends a rule was
 * checked: a CRD with rules is refused with 422 saying so. */
#ifndef SW_KINDS_CRD_H
#define SW_KINDS_CRD_H

#include "kinds/kind.h"

#include <jansson.h>
#include <stdbool.h>

extern const sw_kind sw_kind_crd;

#define SW_CRD_FINALIZER "customresourcecleanup.apiextensions.k8s.io"

/* Registers the kinds of every stored CRD (at server start, before serving). */
void sw_crd_register_all(const sw_kind_ctx *ctx, sw_objects *o);

/* ---- the pipeline of a custom resource (k->dynamic), called by the generic write path ---- */

/* Prunes obj with k's schema (each pruned field's path appended to unknown, an array, when it
 * is not NULL), drops nulls and applies defaults. */
void sw_cr_normalize(const sw_kind *k, json_t *obj, json_t *unknown);
/* Whether stored objects of k must be normalized when read (its schema has defaults, or its CRD
 * changed since the first version: objects may predate the schema). */
bool sw_cr_read_normalizes(const sw_kind *k);
/* Validates obj against k's schema: 0, or SW_EINVALID with the causes kept with the error
 * (util/json.h sw_error_set_causes). On an update (old not NULL) failures at fields the update
 * did not change are not reported (ratcheting), so a tightened schema never locks old objects. */
int sw_cr_validate(const sw_kind *k, const json_t *obj, const json_t *old);
/* Whether new objects of k are refused (its CRD is being deleted): SW_EFORBIDDEN with
 * kube-apiserver's message, else 0. */
int sw_cr_check_create(const sw_kind *k, const char *name);
/* The OpenAPI v3 component schema of k (new reference): its schema with apiVersion, kind and
 * metadata and its group-version-kind, for /openapi/v3 and kubectl explain. */
json_t *sw_cr_openapi(const sw_kind *k);
/* The verbs discovery lists for k: NULL (all eight) or, while its CRD is being deleted, the five
 * kube-apiserver lists then (updates still work, so finalizers can be removed). */
const char *const *sw_cr_verbs(const sw_kind *k);

#endif
