/* discovery: legacy discovery into a flat list of resources (see discovery.h). */
#include "client/discovery.h"

#include "util/alloc.h"
#include "util/buf.h"
#include "util/error.h"
#include "util/json.h"
#include "util/log.h"
#include "util/str.h"

#include <string.h>

static unsigned verb_bits(const json_t *verbs)
{
    static const struct {
        const char *name;
        unsigned bit;
    } map[] = {{"get", SW_VERB_GET},       {"list", SW_VERB_LIST},
               {"watch", SW_VERB_WATCH},   {"create", SW_VERB_CREATE},
               {"update", SW_VERB_UPDATE}, {"patch", SW_VERB_PATCH},
               {"delete", SW_VERB_DELETE}, {"deletecollection", SW_VERB_DELETECOLLECTION}};
    unsigned bits = 0;
    size_t i;
    json_t *v;
    json_array_foreach(verbs, i, v)
    {
        for (size_t j = 0; j < sizeof(map) / sizeof(map[0]); j++)
            if (sw_str_eq(json_string_value(v), map[j].name))
                bits |= map[j].bit;
    }
    return bits;
}

static void add(sw_api_resources *l, size_t *cap, const char *group, const char *version,
                const char *plural, bool namespaced, const char *kind, unsigned verbs)
{
    if (l->count == *cap) {
        *cap = *cap ? *cap * 2 : 16;
        l->items = sw_realloc(l->items, *cap * sizeof(*l->items));
    }
    sw_api_resource *r = &l->items[l->count++];
    r->res.group = sw_strdup(group);
    r->res.version = sw_strdup(version);
    r->res.plural = sw_strdup(plural);
    r->res.namespaced = namespaced;
    r->kind = sw_strdup(kind);
    r->verbs = verbs;
}

/* One APIResourceList (/api/v1 or /apis/<g>/<v>) into l. */
static int read_group_version(sw_client *c, const char *path, const char *group,
                              const char *version, sw_api_resources *l, size_t *cap)
{
    json_t *list = NULL, *r;
    size_t i;
    int error = sw_client_request(c, "GET", path, NULL, NULL, NULL, &list);
    if (error < 0)
        return error;
    json_array_foreach(json_object_get(list, "resources"), i, r)
    {
        const char *name = sw_json_str_at(r, "name"), *kind = sw_json_str_at(r, "kind");
        if (!name || !*name || strchr(name, '/') || !kind || !*kind)
            continue; /* subresources are not resources */
        add(l, cap, group, version, name, sw_json_bool_at(r, "namespaced"), kind,
            verb_bits(json_object_get(r, "verbs")));
    }
    json_decref(list);
    return 0;
}

int sw_discovery_read(sw_client *c, sw_api_resources *out)
{
    json_t *groups = NULL, *g;
    size_t cap = 0, i;
    memset(out, 0, sizeof(*out));
    int error = read_group_version(c, "/api/v1", "", "v1", out, &cap);
    if (error == 0)
        error = sw_client_request(c, "GET", "/apis", NULL, NULL, NULL, &groups);
    json_array_foreach(error == 0 ? json_object_get(groups, "groups") : NULL, i, g)
    {
        const char *name = sw_json_str_at(g, "name");
        const char *ver = sw_json_str_at(g, "preferredVersion.version");
        if (!ver)
            ver = sw_json_str_at(json_array_get(json_object_get(g, "versions"), 0), "version");
        if (!name || !*name || !ver || !*ver || strchr(name, '/') || strchr(ver, '/'))
            continue;
        sw_buf p = SW_BUF_INIT(1024);
        sw_buf_printf(&p, "/apis/%s/%s", name, ver);
        if (sw_buf_error(&p) == 0 &&
            read_group_version(c, sw_buf_cstr(&p), name, ver, out, &cap) < 0) {
            sw_log(SW_LOG_INFO, "discovery of %s/%s failed: %s", name, ver, sw_error_msg());
            out->partial = true;
        }
        sw_buf_dispose(&p);
    }
    json_decref(groups);
    if (error < 0)
        sw_api_resources_dispose(out);
    return error;
}

void sw_api_resources_dispose(sw_api_resources *l)
{
    for (size_t i = 0; i < l->count; i++) {
        sw_free((char *)l->items[i].res.group);
        sw_free((char *)l->items[i].res.version);
        sw_free((char *)l->items[i].res.plural);
        sw_free((char *)l->items[i].kind);
    }
    sw_free(l->items);
    memset(l, 0, sizeof(*l));
}

const sw_api_resource *sw_api_resources_find_kind(const sw_api_resources *l, const char *group,
                                                  const char *kind)
{
    for (size_t i = 0; i < l->count; i++)
        if (sw_str_eq(l->items[i].res.group, group ? group : "") &&
            sw_str_eq(l->items[i].kind, kind))
            return &l->items[i];
    return NULL;
}

const sw_api_resource *sw_api_resources_find(const sw_api_resources *l, const char *group,
                                             const char *plural)
{
    for (size_t i = 0; i < l->count; i++)
        if (sw_str_eq(l->items[i].res.group, group ? group : "") &&
            sw_str_eq(l->items[i].res.plural, plural))
            return &l->items[i];
    return NULL;
}

void sw_api_resources_copy(sw_api_resources *dst, const sw_api_resources *src)
{
    size_t cap = 0;
    memset(dst, 0, sizeof(*dst));
    for (size_t i = 0; i < src->count; i++) {
        const sw_api_resource *r = &src->items[i];
        add(dst, &cap, r->res.group, r->res.version, r->res.plural, r->res.namespaced, r->kind,
            r->verbs);
    }
    dst->partial = src->partial;
}
