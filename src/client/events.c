/* events: the Event object a controller records (see events.h). */
#include "client/events.h"

#include "util/error.h"
#include "util/json.h"
#include "util/log.h"
#include "util/str.h"
#include "util/time.h"

#include <stdio.h>

void sw_event_record(sw_client *c, const json_t *obj, const char *type, const char *reason,
                     const char *component, const char *message)
{
    char now[32], gen[300];
    const char *name = sw_json_str_at(obj, "metadata.name") ?: "";
    const char *ns = sw_json_str_at(obj, "metadata.namespace");
    const char *evns = ns && *ns ? ns : "default";
    sw_time_format(sw_time_now(), now, sizeof(now));
    snprintf(gen, sizeof(gen), "%.240s.", name);
    json_t *involved = json_pack("{s:s, s:s, s:s, s:s}", "apiVersion",
                                 sw_json_str_at(obj, "apiVersion") ?: "", "kind",
                                 sw_json_str_at(obj, "kind") ?: "", "name", name, "uid",
                                 sw_json_str_at(obj, "metadata.uid") ?: "");
    if (ns && *ns)
        json_object_set_new(involved, "namespace", json_string(ns));
    json_t *ev = json_pack("{s:s, s:s, s:{s:s, s:s}, s:o, s:s, s:s, s:s, s:{s:s}, s:s, s:s, s:i}",
                           "apiVersion", "v1", "kind", "Event", "metadata", "generateName", gen,
                           "namespace", evns, "involvedObject", involved, "reason", reason,
                           "message", message, "type", type, "source", "component", component,
                           "firstTimestamp", now, "lastTimestamp", now, "count", 1);
    if (sw_client_create(c, &sw_res_events, evns, ev, NULL) < 0)
        sw_log(SW_LOG_WARN, "%s: cannot record an event (%s) for %s/%s: %s", component, reason,
               evns, name, sw_error_msg());
    json_decref(ev);
}
