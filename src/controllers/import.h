/* import: the ImageStream import controller, a pure API client (informer + rate-limited work
 * queue) as OpenShift's ImageStreamController and ScheduledImageStreamController are: it posts
 * an ImageStreamImport for every stream whose DockerImage tags have a spec generation ahead of
 * what status observed, re-imports importPolicy.scheduled tags every interval (spread over
 * time, capped per minute), and records every import failure as a Warning Event. */
#ifndef SW_CONTROLLERS_IMPORT_H
#define SW_CONTROLLERS_IMPORT_H

#include "client/controller.h"
#include "client/rest.h"

typedef struct sw_import_controller sw_import_controller;

typedef struct sw_import_controller_opts {
    int workers;                  /* concurrent imports; 0: 8 */
    int scheduled_interval_s;     /* minimum seconds between scheduled imports; 0: 900 */
    int max_scheduled_per_minute; /* global cap on scheduled imports; 0: 60 */
} sw_import_controller_opts;

/* c and f must outlive the controller; its ImageStream informer is f's (started by f's owner,
 * who stops f before freeing the controller). */
int sw_import_controller_new(sw_import_controller **out, sw_client *c, sw_informers *f,
                             const sw_import_controller_opts *opts);
int sw_import_controller_start(sw_import_controller *ic);
void sw_import_controller_free(sw_import_controller *ic);

/* Tags of stream whose spec generation is ahead of status (OpenShift's tagNeedsImport); a new
 * array of tag names. */
json_t *sw_import_pending_tags(const json_t *stream);

#endif
