/* event: the Event object (see event.h). */
#include "meta/event.h"

#include "util/json.h"
#include "util/time.h"

#include <stdio.h>
#include <string.h>

#define MESSAGE_MAX 1024

json_t *sw_event_new(const json_t *obj, const char *type, const char *reason, const char *component,
                     const char *message)
{
    char now[32], gen[300];
    const char *name = sw_json_str_at(obj, "metadata.name") ?: "";
    const char *ns = sw_json_str_at(obj, "metadata.namespace");
    const char *evns = ns && *ns ? ns : "default";
    sw_time_format(sw_time_now(), now, sizeof(now));
    snprintf(gen, sizeof(gen), "%.240s.", name);
    json_t *involved =
        json_pack("{s:s, s:s, s:s, s:s}", "apiVersion", sw_json_str_at(obj, "apiVersion") ?: "",
                  "kind", sw_json_str_at(obj, "kind") ?: "", "name", name, "uid",
                  sw_json_str_at(obj, "metadata.uid") ?: "");
    if (ns && *ns)
        json_object_set_new(involved, "namespace", json_string(ns));
    size_t len = strlen(message);
    /* cut on a UTF-8 boundary: never half a character */
    if (len > MESSAGE_MAX) {
        len = MESSAGE_MAX;
        while (len && ((unsigned char)message[len] & 0xC0) == 0x80)
            len--;
    }
    return json_pack("{s:s, s:s, s:{s:s, s:s}, s:o, s:s, s:s%, s:s, s:{s:s}, s:s, s:s, s:i}",
                     "apiVersion", "v1", "kind", "Event", "metadata", "generateName", gen,
                     "namespace", evns, "involvedObject", involved, "reason", reason, "message",
                     message, len, "type", type, "source", "component", component, "firstTimestamp",
                     now, "lastTimestamp", now, "count", 1);
}
