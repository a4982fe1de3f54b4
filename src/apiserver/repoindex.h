/* repoindex: which ImageStreams name a registry repository, so a registry notification (a push
 * or a manifest delete) finds its streams without reading every stream. Fed from the server's
 * watch cache, as every server-side cache is, not from this server's own writes: a stream
 * written by another server on the same store is indexed the same way.
 *
 * A stream names "<registry>/<repository>" when a DockerImage spec tag imports from it or a
 * status tag's newest event was recorded from it. Lookups may briefly trail a write (the time
 * the watch cache takes to deliver it). */
#ifndef SW_REPOINDEX_H
#define SW_REPOINDEX_H

#include "apiserver/api.h"

#include <jansson.h>

typedef struct sw_repoindex sw_repoindex;

/* Lists the streams once and follows the watch cache from then on (a thread). api->cache
 * must exist and outlive the index. */
int sw_repoindex_new(sw_repoindex **out, sw_api *api);
void sw_repoindex_free(sw_repoindex *x);
/* The "<ns>/<name>" of the streams naming registry/repository: a new array (empty when none). */
json_t *sw_repoindex_lookup(sw_repoindex *x, const char *registry, const char *repository);

#endif
