/* events: Events recorded by controllers through the API (see events.h). */
#include "controllers/events.h"

#include "meta/event.h"
#include "util/error.h"
#include "util/json.h"
#include "util/log.h"

void sw_event_record(sw_client *c, const json_t *obj, const char *type, const char *reason,
                     const char *component, const char *message)
{
    json_t *ev = sw_event_new(obj, type, reason, component, message);
    const char *ns = sw_json_str_at(ev, "metadata.namespace");
    if (!ev || sw_client_create(c, &sw_res_events, ns, ev, NULL) < 0)
        sw_log(SW_LOG_WARN, "%s: cannot record an event (%s) for %s/%s: %s", component, reason,
               ns ? ns : "", sw_json_str_at(obj, "metadata.name") ?: "", sw_error_msg());
    json_decref(ev);
}
