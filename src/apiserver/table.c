/* table: meta.k8s.io/v1 Table rendering for kubectl get: Name, the kind's columns, and a
 * server-formatted Age; rows carry PartialObjectMetadata so -A and --show-labels work. */
#include "apiserver/api.h"

#include "meta/jsonpath.h"
#include "util/json.h"
#include "util/str.h"
#include "util/time.h"

#include <string.h>

bool sw_table_wanted(const sw_request *req)
{
    return req->accept && strstr(req->accept, "as=Table") != NULL;
}

static json_t *column(const char *name, const char *type, const char *format, const char *desc,
                      int priority)
{
    return json_pack("{s:s, s:s, s:s, s:s, s:i}", "name", name, "type", type, "format", format,
                     "description", desc, "priority", priority);
}

static json_t *row(const sw_kind *k, const json_t *obj)
{
    json_t *cells = json_array();
    const char *name = sw_json_str_at(obj, "metadata.name");
    json_array_append_new(cells, json_string(name ? name : ""));
    sw_buf b = SW_BUF_INIT(64 * 1024);
    for (size_t i = 0; i < k->ncolumns; i++) {
        const sw_column *col = &k->columns[i];
        if (!col->cell) { /* a JSONPath column: the value itself, typed */
            const json_t *v = sw_jsonpath_first(obj, col->json_path);
            char age[32];
            int64_t t;
            if (v && sw_str_eq(col->type, "date") && json_is_string(v) &&
                sw_time_parse(json_string_value(v), &t) == 0) {
                sw_time_human(sw_time_now() - t, age, sizeof(age));
                json_array_append_new(cells, json_string(age));
            } else if (v && (json_is_object(v) || json_is_array(v))) {
                char text[4096];
                sw_jsonpath_text(v, text, sizeof(text));
                json_array_append_new(cells, json_string(text));
            } else {
                json_array_append_new(cells, v ? json_deep_copy(v) : json_null());
            }
            continue;
        }
        sw_buf_clear(&b);
        col->cell(obj, &b);
        json_array_append_new(cells, json_string(sw_buf_cstr(&b)));
    }
    sw_buf_dispose(&b);
    if (!k->no_age) {
        char age[32] = "<unknown>";
        int64_t created;
        const char *ts = sw_json_str_at(obj, "metadata.creationTimestamp");
        if (ts && sw_time_parse(ts, &created) == 0)
            sw_time_human(sw_time_now() - created, age, sizeof(age));
        json_array_append_new(cells, json_string(age));
    }
    json_t *meta = json_deep_copy(json_object_get(obj, "metadata"));
    json_object_del(meta, "managedFields");
    return json_pack("{s:o, s:{s:s, s:s, s:o}}", "cells", cells, "object", "kind",
                     "PartialObjectMetadata", "apiVersion", "meta.k8s.io/v1", "metadata",
                     meta ? meta : json_object());
}

json_t *sw_table_build(const sw_kind *k, const json_t *items, const char *rv, const char *cont,
                       bool headers)
{
    json_t *t =
        json_pack("{s:s, s:s, s:{}}", "kind", "Table", "apiVersion", "meta.k8s.io/v1", "metadata");
    json_t *meta = json_object_get(t, "metadata");
    if (rv)
        json_object_set_new(meta, "resourceVersion", json_string(rv));
    if (cont)
        json_object_set_new(meta, "continue", json_string(cont));
    json_t *cols = json_array();
    if (headers) {
        json_array_append_new(cols, column("Name", "string", "name", "Name of the object", 0));
        for (size_t i = 0; i < k->ncolumns; i++)
            json_array_append_new(cols,
                                  column(k->columns[i].name, k->columns[i].type,
                                         k->columns[i].format ? k->columns[i].format : "",
                                         k->columns[i].description ? k->columns[i].description : "",
                                         k->columns[i].priority));
        if (!k->no_age)
            json_array_append_new(cols, column("Age", "string", "", "Time since creation", 0));
    }
    json_object_set_new(t, "columnDefinitions", cols);
    json_t *rows = json_array();
    size_t i;
    json_t *obj;
    json_array_foreach(items, i, obj) json_array_append_new(rows, row(k, obj));
    json_object_set_new(t, "rows", rows);
    return t;
}
