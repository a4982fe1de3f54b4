/* discovery: which resources an API server serves, read from its legacy discovery (/api,
 * /api/v1, /apis, /apis/<group>/<preferred version>) as client-go's discovery client does, so
 * controllers that act on every kind (the garbage collector, the namespace controller) pick up
 * kinds added later without code changes. Subresources are left out. */
#ifndef SW_CLIENT_DISCOVERY_H
#define SW_CLIENT_DISCOVERY_H

#include "client/rest.h"

#include <stdbool.h>
#include <stddef.h>

enum {
    SW_VERB_GET = 1 << 0,
    SW_VERB_LIST = 1 << 1,
    SW_VERB_WATCH = 1 << 2,
    SW_VERB_CREATE = 1 << 3,
    SW_VERB_UPDATE = 1 << 4,
    SW_VERB_PATCH = 1 << 5,
    SW_VERB_DELETE = 1 << 6,
    SW_VERB_DELETECOLLECTION = 1 << 7,
};

typedef struct sw_api_resource {
    sw_resource res;  /* group ("" for core), preferred version, plural, namespaced */
    const char *kind; /* "ConfigMap" */
    unsigned verbs;   /* SW_VERB_* */
} sw_api_resource;

/* The resources of one discovery pass; strings are owned by the list. */
typedef struct sw_api_resources {
    sw_api_resource *items;
    size_t count;
    bool partial; /* some group version could not be read (it is left out) */
} sw_api_resources;

/* Reads discovery. SW_E* when /api or /apis cannot be read; a group version that fails is left
 * out and marks the result partial. */
int sw_discovery_read(sw_client *c, sw_api_resources *out);
void sw_api_resources_dispose(sw_api_resources *l);
/* The resource of kind in group (any served version), or NULL. */
const sw_api_resource *sw_api_resources_find_kind(const sw_api_resources *l, const char *group,
                                                  const char *kind);
/* The resource group/plural, or NULL. */
const sw_api_resource *sw_api_resources_find(const sw_api_resources *l, const char *group,
                                             const char *plural);
/* A deep copy (for a controller that keeps the last pass while a new one is read). */
void sw_api_resources_copy(sw_api_resources *dst, const sw_api_resources *src);

#endif
