/* notify: the registry notification webhook and its re-import worker (see notify.c). */
#ifndef SW_NOTIFY_H
#define SW_NOTIFY_H

#include "apiserver/api.h"

typedef struct sw_notifier sw_notifier;

/* api->cache (the watch cache) must exist: the notifier's stream index follows it. */
int sw_notifier_new(sw_notifier **out, sw_api *api, const char *token_file);
void sw_notifier_free(sw_notifier *n);
bool sw_notify_matches(const char *path);
/* Whether auth (the request's Authorization header) carries the notification token; false
 * for a NULL notifier. The server asks before it reads the body. */
bool sw_notify_authorized(const sw_notifier *n, const char *auth);
/* auth: the request's Authorization header. A NULL notifier answers 401. */
void sw_notify_handle(sw_notifier *n, const sw_request *req, const char *auth, sw_response *resp);

#endif
