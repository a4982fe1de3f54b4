/* podspec: the PodSpec and PodTemplateSpec every workload kind embeds (Pod, Deployment,
 * ReplicaSet, StatefulSet, DaemonSet, Job, CronJob, ReplicationController): their strict
 * schema text, the defaults kube-apiserver fills in (so that `kubectl apply`'s three-way diff
 * and `kubectl rollout` see what they expect), and the validation slipway does (container
 * names and images, unique names, ports), with Kubernetes' field paths and messages. Nothing
 * runs here: slipway stores pods, it does not start them. */
#ifndef SW_KINDS_PODSPEC_H
#define SW_KINDS_PODSPEC_H

#include <jansson.h>

/* The schema text of one container (a JSON object). */
#define SW_CONTAINER_SCHEMA                                                                        \
    "{\"name\":\"string\",\"image\":\"string\",\"command\":[\"string\"],\"args\":[\"string\"],"    \
    "\"workingDir\":\"string\",\"ports\":[{\"name\":\"string\",\"hostPort\":\"integer\","          \
    "\"containerPort\":\"integer\",\"protocol\":\"string\",\"hostIP\":\"string\"}],"               \
    "\"envFrom\":[\"any\"],\"env\":[{\"name\":\"string\",\"value\":\"string\",\"valueFrom\":"      \
    "\"any\"}],\"resources\":\"any\",\"resizePolicy\":[\"any\"],\"restartPolicy\":\"string\","     \
    "\"volumeMounts\":[\"any\"],\"volumeDevices\":[\"any\"],\"livenessProbe\":\"any\","            \
    "\"readinessProbe\":\"any\",\"startupProbe\":\"any\",\"lifecycle\":\"any\","                   \
    "\"terminationMessagePath\":\"string\",\"terminationMessagePolicy\":\"string\","               \
    "\"imagePullPolicy\":\"string\",\"securityContext\":\"any\",\"stdin\":\"boolean\","            \
    "\"stdinOnce\":\"boolean\",\"tty\":\"boolean\"}"

/* The schema text of a PodSpec (a JSON object). */
#define SW_POD_SPEC_SCHEMA                                                                         \
    "{\"volumes\":[\"any\"],\"initContainers\":[" SW_CONTAINER_SCHEMA                              \
    "],\"containers\":[" SW_CONTAINER_SCHEMA                                                       \
    "],\"ephemeralContainers\":[\"any\"],\"restartPolicy\":\"string\","                            \
    "\"terminationGracePeriodSeconds\":\"integer\",\"activeDeadlineSeconds\":\"integer\","         \
    "\"dnsPolicy\":\"string\",\"nodeSelector\":\"map\",\"serviceAccountName\":\"string\","         \
    "\"serviceAccount\":\"string\",\"automountServiceAccountToken\":\"boolean\","                  \
    "\"nodeName\":\"string\",\"hostNetwork\":\"boolean\",\"hostPID\":\"boolean\","                 \
    "\"hostIPC\":\"boolean\",\"shareProcessNamespace\":\"boolean\",\"securityContext\":\"any\","   \
    "\"imagePullSecrets\":[{\"name\":\"string\"}],\"hostname\":\"string\",\"subdomain\":"          \
    "\"string\",\"affinity\":\"any\",\"schedulerName\":\"string\",\"tolerations\":[\"any\"],"      \
    "\"hostAliases\":[\"any\"],\"priorityClassName\":\"string\",\"priority\":\"integer\","         \
    "\"dnsConfig\":\"any\",\"readinessGates\":[\"any\"],\"runtimeClassName\":\"string\","          \
    "\"enableServiceLinks\":\"boolean\",\"preemptionPolicy\":\"string\",\"overhead\":\"any\","     \
    "\"topologySpreadConstraints\":[\"any\"],\"setHostnameAsFQDN\":\"boolean\",\"os\":\"any\","    \
    "\"hostUsers\":\"boolean\",\"schedulingGates\":[\"any\"],\"resourceClaims\":[\"any\"]}"

/* A PodTemplateSpec: its metadata is an ObjectMeta (labels and annotations checked). */
#define SW_POD_TEMPLATE_SCHEMA "{\"metadata\":\"any\",\"spec\":" SW_POD_SPEC_SCHEMA "}"

/* A LabelSelector. */
#define SW_SELECTOR_SCHEMA "{\"matchLabels\":\"map\",\"matchExpressions\":[\"any\"]}"

/* Fills the defaults kube-apiserver gives a PodSpec (restartPolicy Always unless dflt_restart
 * says otherwise, terminationGracePeriodSeconds 30, dnsPolicy ClusterFirst, schedulerName
 * default-scheduler, securityContext {}; per container terminationMessagePath and Policy,
 * imagePullPolicy from the tag (Always for :latest or none), port protocol TCP). spec may be
 * NULL (nothing happens). */
void sw_podspec_default(json_t *spec, const char *dflt_restart);

/* Validates the PodSpec at field (e.g. "spec.template.spec"): at least one container; each
 * container (and init container) with a DNS-label name unique in the pod and an image; ports
 * 1-65535 with protocol TCP, UDP or SCTP; restartPolicy among allowed (NULL: Always,
 * OnFailure, Never). SW_EINVALID with Kubernetes' message. */
int sw_podspec_validate(const json_t *spec, const char *field, const char *const *allowed_restart);

/* Validates a PodTemplateSpec at field: its metadata's labels and annotations, then its spec. */
int sw_podtemplate_validate(const json_t *tmpl, const char *field,
                            const char *const *allowed_restart);

/* apps/v1's selector rule: spec.selector is required, non-empty, and matches the template's
 * labels (`spec.template.metadata.labels: Invalid value: ...: `selector` does not match
 * template `labels``). */
int sw_podspec_check_selector(const json_t *obj);

/* The same for the plain map selector of ReplicationControllers and DeploymentConfigs. */
int sw_podspec_check_map_selector(const json_t *obj);

/* The path of the PodSpec inside obj for its kind ("spec" for a Pod, "spec.template.spec",
 * "spec.jobTemplate.spec.template.spec" for a CronJob), or NULL for a kind without one. */
const char *sw_podspec_path(const char *kind);

#endif
