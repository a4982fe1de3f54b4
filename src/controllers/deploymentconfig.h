/* deploymentconfig: what OpenShift's DeploymentConfig controllers do, on a server where nothing
 * runs (docs/workloads.md): the image trigger reactor (an automatic ImageChange trigger sets
 * lastTriggeredImage and the images of the containers it names when the tag's digest changes,
 * nothing while a trigger is unresolved), the versioning (a new status.latestVersion with its
 * causes when an image or, with a ConfigChange trigger, the template changed; the first version
 * waits for every automatic trigger), one ReplicationController per version `<dc>-<n>` with
 * OpenShift's labels and annotations, its deployment simulated (phase New, then Complete with
 * every replica, the older ones scaled to 0), pruning past revisionHistoryLimit, and the status
 * a cluster would report with every pod ready. A paused config gets its status only.
 *
 * It belongs to the `deployment` controller (deployment.c starts it, only against slipway's
 * own server: OpenShift runs its own). Informers of its own: DeploymentConfigs (cached, indexed
 * by the streams their triggers name), lean ones of ImageStreams and ReplicationControllers
 * that only wake it; every decision reads the objects from the API. */
#ifndef SW_CONTROLLERS_DEPLOYMENTCONFIG_H
#define SW_CONTROLLERS_DEPLOYMENTCONFIG_H

#include "client/rest.h"

typedef struct sw_dc_controller sw_dc_controller;

/* Makes and starts it. */
int sw_dc_controller_new(sw_dc_controller **out, sw_client *c);
void sw_dc_controller_free(sw_dc_controller *d);

#endif
