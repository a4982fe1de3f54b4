/* event: the v1 Event object that reports something about another object, as client-go's
 * EventRecorder writes it (involvedObject from the object, source component, first/last
 * timestamps, count 1, a name generated from the object's), as pure JSON. Controllers record
 * it through the API (client/events.h); the API server records its own (an import failure)
 * through its store. One shape for both. */
#ifndef SW_META_EVENT_H
#define SW_META_EVENT_H

#include <jansson.h>

/* A new Event about obj (an object with apiVersion, kind and metadata) in obj's namespace
 * ("default" for a cluster-scoped object, where kubectl describe looks). type is "Normal" or
 * "Warning"; message is cut to 1,024 bytes, as kube-apiserver limits it. */
json_t *sw_event_new(const json_t *obj, const char *type, const char *reason, const char *component,
                     const char *message);

#endif
