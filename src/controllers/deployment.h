/* deployment: the rollout a Deployment gets on a server where nothing runs (docs/workloads.md),
 * as kwok does it: what kube-controller-manager's deployment controller does to the objects —
 * one ReplicaSet per pod template (`<name>-<pod-template-hash>`, the pod-template-hash label,
 * the deployment.kubernetes.io/revision, desired-replicas and max-replicas annotations, a
 * controller ownerReference, old ones scaled to 0 and pruned past revisionHistoryLimit, a
 * rollback reusing the old ReplicaSet with a new revision) — and the status it would report if
 * every pod became ready at once. So `kubectl rollout status|history|undo|restart|pause|resume`
 * work unchanged. A paused Deployment gets no new ReplicaSet. StatefulSets and DaemonSets get
 * one ControllerRevision per template (kube's name, labels and data, the revision numbers,
 * pruning) and the status that rollout status|history|undo read, a DaemonSet as on a cluster of
 * one node. DeploymentConfigs get theirs from deploymentconfig.h's controller, which this one
 * starts and stops.
 *
 * It runs only against slipway's own server (in the default controller set it waits for the
 * server to say so, like the garbage collector): on a cluster the real controllers do this.
 * Its informers are its own and lean (they only wake it); every decision reads the objects from
 * the API. */
#ifndef SW_CONTROLLERS_DEPLOYMENT_H
#define SW_CONTROLLERS_DEPLOYMENT_H

#include "client/controller.h"
#include "client/rest.h"

#include <jansson.h>
#include <stddef.h>

typedef struct sw_deploy_controller sw_deploy_controller;

/* Makes and starts it, with informers of its own (f is not used: it starts after f's). */
int sw_deploy_controller_new(sw_deploy_controller **out, sw_client *c, sw_informers *f);
void sw_deploy_controller_free(sw_deploy_controller *d);

/* ---- pure helpers (exposed for tests) ---- */

/* The pod-template-hash of template (canonical JSON, without a pod-template-hash label) with
 * collision count cc: FNV-1a 32 bits, written in Kubernetes' safe alphabet (no vowels, no
 * characters that spell words). out >= 16. */
void sw_deploy_template_hash(const json_t *template, int64_t cc, char *out, size_t n);
/* Whether two pod templates are equal, ignoring the pod-template-hash label (kubectl's
 * EqualIgnoreHash). */
bool sw_deploy_same_template(const json_t *a, const json_t *b);

#endif
