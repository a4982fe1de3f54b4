/* workloads: the Kubernetes workload kinds slipway stores and serves (apps.c, batch.c,
 * pod.c): Deployment, ReplicaSet, StatefulSet, DaemonSet, ControllerRevision, Job, CronJob,
 * ReplicationController and Pod. Their pod templates are podspec.h's. */
#ifndef SW_KINDS_WORKLOADS_H
#define SW_KINDS_WORKLOADS_H

#include "kinds/kind.h"

extern const sw_kind sw_kind_deployment, sw_kind_replicaset, sw_kind_statefulset, sw_kind_daemonset,
    sw_kind_controllerrevision;                                  /* apps/v1 */
extern const sw_kind sw_kind_job, sw_kind_cronjob;               /* batch/v1 */
extern const sw_kind sw_kind_pod, sw_kind_replicationcontroller; /* v1 */

/* Table cells shared by the workload kinds: the pod template's container names and images,
 * comma-separated (kubectl's -o wide CONTAINERS and IMAGES). */
void sw_workload_containers_cell(const json_t *obj, sw_buf *out);
void sw_workload_images_cell(const json_t *obj, sw_buf *out);
/* spec.replicas (default 1), status.replicas and status.readyReplicas (kubectl's DESIRED,
 * CURRENT and READY of ReplicaSets and ReplicationControllers). */
void sw_workload_desired_cell(const json_t *obj, sw_buf *out);
void sw_workload_current_cell(const json_t *obj, sw_buf *out);
void sw_workload_ready_cell(const json_t *obj, sw_buf *out);

#endif
