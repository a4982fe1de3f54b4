/* crdcleanup: what kube-apiserver's CRD finalizer does (crd-gc.md §1.14), as an API client: a
 * CustomResourceDefinition being deleted with the customresourcecleanup finalizer gets
 * Terminating=True/InstanceDeletionInProgress, its instances are deleted (propagation
 * Background, so their own finalizers hold), it is looked at again every second while some are
 * left (InstanceDeletionCheck says how many), then Terminating=False/InstanceDeletionCompleted
 * and the finalizer goes, so the server removes the CRD. When a CRD is gone, the CRDs of its
 * group refused for a name conflict are written again unchanged, so the server decides their
 * names anew (kube's naming controller). It starts with the namespace controller
 * (only against slipway's own server); its informer is its own. */
#ifndef SW_CONTROLLERS_CRDCLEANUP_H
#define SW_CONTROLLERS_CRDCLEANUP_H

#include "client/rest.h"

typedef struct sw_crd_cleanup sw_crd_cleanup;

/* Makes and starts it; c must outlive it. */
int sw_crd_cleanup_new(sw_crd_cleanup **out, sw_client *c);
void sw_crd_cleanup_free(sw_crd_cleanup *d);

extern const sw_resource sw_res_crds; /* apiextensions.k8s.io/v1 customresourcedefinitions */

#endif
