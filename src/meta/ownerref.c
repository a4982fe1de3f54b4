/* ownerref: ownerReferences validation and the garbage-collection finalizer sets (see
 * ownerref.h). Messages follow apimachinery's ValidateOwnerReferences and ValidateFinalizers. */
#include "meta/ownerref.h"

#include "meta/names.h"
#include "util/alloc.h"
#include "util/buf.h"
#include "util/error.h"
#include "util/json.h"
#include "util/str.h"

#include <stdlib.h>
#include <string.h>

#define REFS "metadata.ownerReferences"

sw_propagation sw_propagation_parse(const char *s)
{
    if (sw_str_eq(s, "Orphan"))
        return SW_PROPAGATE_ORPHAN;
    if (sw_str_eq(s, "Background"))
        return SW_PROPAGATE_BACKGROUND;
    if (sw_str_eq(s, "Foreground"))
        return SW_PROPAGATE_FOREGROUND;
    return SW_PROPAGATE_UNSET;
}

const char *sw_propagation_name(sw_propagation p)
{
    switch (p) {
    case SW_PROPAGATE_ORPHAN:
        return "Orphan";
    case SW_PROPAGATE_BACKGROUND:
        return "Background";
    case SW_PROPAGATE_FOREGROUND:
        return "Foreground";
    default:
        return "";
    }
}

int sw_ownerref_split_api_version(const char *api_version, char *group, size_t gn, char *version,
                                  size_t vn)
{
    const char *av = api_version ? api_version : "";
    const char *slash = strchr(av, '/');
    const char *v = slash ? slash + 1 : av;
    size_t glen = slash ? (size_t)(slash - av) : 0;
    if (!*v || strchr(v, '/') || glen >= gn || strlen(v) >= vn)
        return sw_error_set(SW_EINVALID, "apiVersion %.64s has no version", av);
    memcpy(group, av, glen);
    group[glen] = '\0';
    sw_strlcpy(version, v, vn);
    return 0;
}

static const char *str_field(const json_t *ref, const char *key)
{
    const char *s = json_string_value(json_object_get(ref, key));
    return s ? s : "";
}

int sw_ownerref_validate(const json_t *refs)
{
    char first[600] = "";
    size_t i;
    json_t *ref;
    if (!refs || json_is_null(refs))
        return 0;
    if (!json_is_array(refs))
        return sw_error_set(SW_EINVALID, REFS ": Invalid value: must be a list");
    json_array_foreach(refs, i, ref)
    {
        char group[256], version[128];
        if (!json_is_object(ref))
            return sw_error_set(SW_EINVALID, REFS "[%zu]: Invalid value: must be an object", i);
        const char *av = str_field(ref, "apiVersion"), *kind = str_field(ref, "kind");
        if (sw_ownerref_split_api_version(av, group, sizeof(group), version, sizeof(version)) < 0)
            return sw_names_invalid(SW_EINVALID, REFS ".apiVersion", av,
                                    "version must not be empty");
        if (!*kind)
            return sw_names_invalid(SW_EINVALID, REFS ".kind", "", "kind must not be empty");
        if (!*str_field(ref, "name"))
            return sw_names_invalid(SW_EINVALID, REFS ".name", "", "name must not be empty");
        if (!*str_field(ref, "uid"))
            return sw_names_invalid(SW_EINVALID, REFS ".uid", "", "uid must not be empty");
        if (!group[0] && !strcmp(version, "v1") && !strcmp(kind, "Event"))
            return sw_error_set(SW_EINVALID,
                                REFS ": Invalid value: \"%.253s\": /v1, Kind=Event is disallowed "
                                     "from being an owner",
                                str_field(ref, "name"));
        if (!sw_json_bool_at(ref, "controller"))
            continue;
        char cur[600];
        sw_buf b = SW_BUF_INIT(sizeof(cur));
        sw_buf_printf(&b, "%.200s/%.253s", kind, str_field(ref, "name"));
        sw_strlcpy(cur, sw_buf_cstr(&b), sizeof(cur));
        sw_buf_dispose(&b);
        if (first[0])
            return sw_error_set(SW_EINVALID,
                                REFS
                                ": Invalid value: \"%s\": Only one reference can have "
                                "Controller set to true. Found \"true\" in references for %s and "
                                "%s",
                                cur, first, cur);
        sw_strlcpy(first, cur, sizeof(first));
    }
    return 0;
}

bool sw_finalizers_has(const json_t *finalizers, const char *name)
{
    size_t i;
    json_t *f;
    json_array_foreach(finalizers, i, f)
    {
        if (sw_str_eq(json_string_value(f), name))
            return true;
    }
    return false;
}

int sw_finalizers_check_gc(const json_t *finalizers)
{
    if (sw_finalizers_has(finalizers, SW_FINALIZER_ORPHAN) &&
        sw_finalizers_has(finalizers, SW_FINALIZER_FOREGROUND))
        return sw_error_set(SW_EINVALID,
                            "metadata.finalizers: Invalid value: \"" SW_FINALIZER_ORPHAN
                            "\": finalizer " SW_FINALIZER_ORPHAN " and " SW_FINALIZER_FOREGROUND
                            " cannot be both set");
    return 0;
}

static int by_string(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* The names of a finalizer list as a set (a jansson object: hashed, so every check here is
 * linear in the list, whatever its length). */
static json_t *name_set(const json_t *finalizers)
{
    json_t *set = json_object(), *f;
    size_t i;
    json_array_foreach(finalizers, i, f)
    {
        if (json_is_string(f))
            json_object_set_new(set, json_string_value(f), json_true());
    }
    return set;
}

int sw_finalizers_check_no_new(const json_t *now, const json_t *old)
{
    size_t n = json_array_size(now), extra = 0, i;
    if (!n)
        return 0;
    json_t *had = name_set(old), *seen = json_object(), *f;
    const char **names = sw_calloc(n, sizeof(*names));
    json_array_foreach(now, i, f)
    {
        const char *s = json_string_value(f);
        if (!s || json_object_get(had, s) || json_object_get(seen, s))
            continue;
        json_object_set_new(seen, s, json_true());
        names[extra++] = s;
    }
    int error = 0;
    if (extra) {
        qsort(names, extra, sizeof(*names), by_string);
        sw_buf b = SW_BUF_INIT(4096);
        for (i = 0; i < extra; i++)
            sw_buf_printf(&b, "%s\"%.253s\"", i ? ", " : "", names[i]);
        error = sw_error_set(SW_EINVALID,
                             "metadata.finalizers: Forbidden: no new finalizers can be added if "
                             "the object is being deleted, found new finalizers []string{%s}",
                             sw_buf_cstr(&b));
        sw_buf_dispose(&b);
    }
    sw_free(names);
    json_decref(had);
    json_decref(seen);
    return error;
}

json_t *sw_finalizers_for_delete(const json_t *finalizers, bool orphan, bool foreground)
{
    json_t *out = json_array(), *f;
    size_t i;
    json_array_foreach(finalizers, i, f)
    {
        const char *s = json_string_value(f);
        if (!sw_str_eq(s, SW_FINALIZER_ORPHAN) && !sw_str_eq(s, SW_FINALIZER_FOREGROUND))
            json_array_append(out, f);
    }
    if (orphan)
        json_array_append_new(out, json_string(SW_FINALIZER_ORPHAN));
    if (foreground)
        json_array_append_new(out, json_string(SW_FINALIZER_FOREGROUND));
    return out;
}

bool sw_finalizers_same_set(const json_t *a, const json_t *b)
{
    json_t *sa = name_set(a), *sb = name_set(b);
    bool same = json_object_size(sa) == json_object_size(sb);
    const char *k;
    json_t *v;
    json_object_foreach(sa, k, v)
    {
        if (same && !json_object_get(sb, k))
            same = false;
    }
    json_decref(sa);
    json_decref(sb);
    return same;
}
