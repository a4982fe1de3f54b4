/* deploymentconfig: apps.openshift.io/v1 DeploymentConfig (etcd-triggers.md §7,
 * docs/workloads.md), stored and served as OpenShift's API server does — its defaults
 * (triggers → [ConfigChange], selector → the template's labels, from.kind ImageStreamTag,
 * from.namespace, the Rolling strategy's parameters, revisionHistoryLimit 10), its validation,
 * the `instantiate` subresource (DeploymentRequest: `oc rollout latest`) and the `rollback`
 * subresource (DeploymentConfigRollback: returns the rolled-back config, saves nothing) — and
 * the pure rules its controller (controllers/deploymentconfig.c) shares with them: resolving
 * ImageChange triggers by digest, the causes of a new version, the version bump.
 *
 * The rule that differs from OpenShift is the digest rule of every slipway trigger: a container
 * and lastTriggeredImage change only when the tag's digest differs from the one they hold. */
#ifndef SW_KINDS_DEPLOYMENTCONFIG_H
#define SW_KINDS_DEPLOYMENTCONFIG_H

#include "kinds/kind.h"

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

extern const sw_kind sw_kind_deploymentconfig;

/* The annotations and labels of a DeploymentConfig's ReplicationControllers (OpenShift's). */
#define SW_DC_NAME_ANN "openshift.io/deployment-config.name"
#define SW_DC_ENCODED_ANN "openshift.io/encoded-deployment-config"
#define SW_DC_PHASE_ANN "openshift.io/deployment.phase"
#define SW_DC_VERSION_ANN "openshift.io/deployment-config.latest-version"
#define SW_DC_REASON_ANN "openshift.io/deployment.status-reason"
#define SW_DC_REPLICAS_ANN "openshift.io/deployment.replicas"
#define SW_DC_DESIRED_ANN "kubectl.kubernetes.io/desired-replicas"
#define SW_DC_LABEL "deploymentconfig"
#define SW_DC_DEPLOYMENT_LABEL "deployment"

/* Version v's ReplicationController: "<dc>-<v>" into out. */
void sw_dc_rc_name(const char *dc, int64_t v, char *out, size_t n);

/* Fetches ImageStream ns/name for the resolver (a new reference into *out); SW_ENOTFOUND when
 * there is none. */
typedef int (*sw_dc_stream_fn)(void *ctx, const char *ns, const char *name, json_t **out);

/* Resolves dc's ImageChange triggers (dc is a copy the caller owns and changes): the automatic
 * ones, and the manual ones too when manual is set, each through sw_imagestream_tag_image. A
 * resolved trigger sets lastTriggeredImage and the image of every container and init container
 * it names, each only where the digest differs. *changed says whether dc changed; *unresolved
 * whether a considered trigger has no image yet and never had one (then nothing is changed, as
 * OpenShift's reactor writes nothing then). SW_EINVALID when a named container is missing;
 * other errors of get pass through (SW_ENOTFOUND counts as unresolved). */
int sw_dc_resolve(json_t *dc, bool manual, sw_dc_stream_fn get, void *ctx, bool *changed,
                  bool *unresolved);

/* The causes of a new version of dc whose latest ReplicationController is rc (NULL when there
 * is none): a new array, empty when nothing calls for one. force: [{type: Manual}]. Version 0:
 * nothing while an automatic ImageChange trigger has no lastTriggeredImage; then ConfigChange
 * when dc has that trigger, else one ImageChange cause per automatic trigger. Later versions:
 * an ImageChange cause per automatic trigger whose lastTriggeredImage no container of rc runs
 * (by digest), else ConfigChange when dc has that trigger and its template differs from the
 * one rc was made from. */
json_t *sw_dc_causes(const json_t *dc, const json_t *rc, bool force);

/* Records a new version on dc (a copy): status.latestVersion + 1 and status.details
 * {message: "config change" | "image change" | "manual change", causes} (causes is taken). */
void sw_dc_bump(json_t *dc, json_t *causes);

#endif
