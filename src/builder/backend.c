/* backend: the table of build backends and the choice between them (see backend.h). */
#include "builder/backend.h"

#include "builder/buildah.h"
#include "util/error.h"
#include "util/str.h"

#include <string.h>

extern const sw_backend sw_backend_native; /* builder.c */

static const sw_backend *const backends[] = {&sw_backend_native, &sw_backend_buildah};

const sw_backend *sw_backend_find(const char *name)
{
    for (size_t i = 0; name && i < sizeof(backends) / sizeof(backends[0]); i++)
        if (!strcmp(backends[i]->name, name))
            return backends[i];
    return NULL;
}

/* Calls fn for each name of a comma-separated list; stops at the first error. */
static int each_name(const char *list, int (*fn)(const char *name, size_t len, void *arg),
                     void *arg)
{
    for (const char *p = list; p;) {
        const char *comma = strchr(p, ',');
        size_t len = comma ? (size_t)(comma - p) : strlen(p);
        int rc = fn(p, len, arg);
        if (rc)
            return rc;
        p = comma ? comma + 1 : NULL; /* "a," has an empty last name */
    }
    return 0;
}

static int check_one(const char *name, size_t len, void *arg)
{
    unsigned *seen = arg;
    for (size_t i = 0; i < sizeof(backends) / sizeof(backends[0]); i++)
        if (strlen(backends[i]->name) == len && !memcmp(backends[i]->name, name, len)) {
            if (*seen & (1u << i))
                return sw_error_set(SW_EINVALID, "build backend %s is listed twice",
                                    backends[i]->name);
            *seen |= 1u << i;
            return 0;
        }
    return sw_error_set(SW_EINVALID, "unknown build backend \"%.*s\": want native or buildah",
                        (int)(len > 40 ? 40 : len), name);
}

int sw_backend_list_check(const char *list)
{
    unsigned seen = 0;
    if (!list || !*list)
        return sw_error_set(SW_EINVALID, "the build backend list is empty: want native, buildah "
                                         "or both");
    return each_name(list, check_one, &seen);
}

static int match_one(const char *name, size_t len, void *want)
{
    return strlen(want) == len && !memcmp(want, name, len);
}

bool sw_backend_allowed(const char *list, const char *name)
{
    return name && each_name(list ? list : SW_BACKENDS_DEFAULT, match_one, (void *)name) == 1;
}

int sw_backend_choose(const char *forced, const char *allowed, int native_parse,
                      const char *native_msg, const char *buildah_unavailable,
                      const sw_backend **out)
{
    native_msg = native_msg ? native_msg : "the native backend cannot build this Dockerfile";
    const char *list = allowed ? allowed : SW_BACKENDS_DEFAULT;
    if (forced && *forced) {
        const sw_backend *b = sw_backend_find(forced);
        if (!b)
            return sw_error_set(SW_EINVALID,
                                "annotation " SW_BACKEND_KEY ": unknown backend \"%.40s\": want "
                                "native or buildah",
                                forced);
        if (!sw_backend_allowed(list, forced))
            return sw_error_set(SW_EINVALID,
                                "annotation " SW_BACKEND_KEY ": backend %s is not allowed by "
                                "this server (--build-backends %.100s)",
                                forced, list);
        if (b == &sw_backend_buildah && buildah_unavailable)
            return sw_error_set(SW_EUNSUPPORTED,
                                "annotation " SW_BACKEND_KEY ": buildah cannot run here: %s",
                                buildah_unavailable);
        if (b == &sw_backend_native && native_parse < 0)
            return sw_error_set(native_parse, "%s", native_msg); /* it names the line */
        *out = b;
        return 0;
    }
    if (native_parse == 0 && sw_backend_allowed(list, "native")) {
        *out = &sw_backend_native;
        return 0;
    }
    if (native_parse < 0 && native_parse != SW_EUNSUPPORTED)
        return sw_error_set(native_parse, "%s", native_msg);
    if (!sw_backend_allowed(list, "buildah")) {
        if (native_parse < 0)
            return sw_error_set(SW_EUNSUPPORTED,
                                "%s (the buildah backend, which builds the whole grammar, is "
                                "not allowed by this server: --build-backends %.100s)",
                                native_msg, list);
        return sw_error_set(SW_EUNSUPPORTED,
                            "no allowed backend: the native backend is not allowed by this "
                            "server (--build-backends %.100s)",
                            list);
    }
    if (buildah_unavailable)
        return native_parse < 0
                   ? sw_error_set(SW_EUNSUPPORTED,
                                  "%s (the buildah backend, which builds the whole grammar, "
                                  "cannot run here: %s)",
                                  native_msg, buildah_unavailable)
                   : sw_error_set(SW_EUNSUPPORTED,
                                  "the native backend is not allowed by this server and buildah "
                                  "cannot run here: %s",
                                  buildah_unavailable);
    *out = &sw_backend_buildah;
    return 0;
}
