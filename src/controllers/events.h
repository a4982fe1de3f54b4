/* events: v1 Events recorded by controllers through the API (their shape is meta/event.h's,
 * client-go's EventRecorder's). Recording is best effort: a failure is logged, never returned,
 * so a controller's work does not depend on its events. */
#ifndef SW_CONTROLLERS_EVENTS_H
#define SW_CONTROLLERS_EVENTS_H

#include "client/rest.h"

#include <jansson.h>

/* Records an Event about obj (an object with apiVersion, kind and metadata) in its namespace
 * ("default" for a cluster-scoped object, as kubectl describe looks there). type is "Normal"
 * or "Warning". */
void sw_event_record(sw_client *c, const json_t *obj, const char *type, const char *reason,
                     const char *component, const char *message);

#endif
