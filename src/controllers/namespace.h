/* namespace: the namespace controller (kube-controller-manager's namespace deleter) as a pure
 * API client. A namespace being deleted (phase Terminating, `kubernetes` in spec.finalizers) is
 * emptied: every namespaced resource discovery lists with list and delete goes through
 * deletecollection (else list + delete) with propagationPolicy Background, so the objects'
 * own finalizers are honoured. Its status conditions say each pass what is left
 * (NamespaceDeletionContentFailure, NamespaceContentRemaining, NamespaceFinalizersRemaining);
 * once nothing is, `kubernetes` leaves spec.finalizers through /finalize and the server
 * removes the namespace (or its metadata.finalizers keep it).
 *
 * It also does what kube-controller-manager's serviceaccounts controller and root CA publisher
 * do for an active namespace: a `default` ServiceAccount, and a `kube-root-ca.crt` ConfigMap
 * whose `ca.crt` is the CA the controller's kubeconfig trusts (none without one). Each is
 * created when missing (the ConfigMap put right when its data differs) when the namespace is
 * seen and at every resync of the namespace informer. */
#ifndef SW_CONTROLLERS_NAMESPACE_H
#define SW_CONTROLLERS_NAMESPACE_H

#include "client/controller.h"
#include "client/rest.h"

typedef struct sw_namespace_controller sw_namespace_controller;

typedef struct sw_namespace_controller_opts {
    int workers;         /* 0: 5 (kube's --concurrent-namespace-syncs... is 10; two cores here) */
    int recheck_ms;      /* how soon a namespace with content left is looked at again; 0: 1000 */
    const char *root_ca; /* PEM for kube-root-ca.crt (copied), or NULL: no ConfigMap */
    size_t root_ca_len;
} sw_namespace_controller_opts;

/* c and f must outlive the controller. */
int sw_namespace_controller_new(sw_namespace_controller **out, sw_client *c, sw_informers *f,
                                const sw_namespace_controller_opts *opts);
int sw_namespace_controller_start(sw_namespace_controller *nc);
/* Stop the informer factory first. */
void sw_namespace_controller_free(sw_namespace_controller *nc);

#endif
