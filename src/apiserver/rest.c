/* rest: URL routing onto kind descriptors, and the read verbs get and list (label/field
 * selectors, limit/continue with tokens bound to a store revision, Table output). */
#include "apiserver/rest.h"

#include "apiserver/nscache.h"
#include "apiserver/object.h"
#include "apiserver/selector.h"
#include "kinds/core.h"
#include "util/alloc.h"
#include "util/error.h"
#include "util/json.h"
#include "util/log.h"
#include "util/str.h"

#include <stdio.h>
#include <string.h>

#define MAX_SEGS 10

const char *sw_rest_resource(const sw_kind *k, char *buf, size_t n)
{
    if (k->group[0])
        snprintf(buf, n, "%s.%s", k->plural, k->group);
    else
        snprintf(buf, n, "%s", k->plural);
    return buf;
}

void sw_rest_not_found(sw_response *resp, const sw_route *rt, const char *name)
{
    char res[160], msg[600];
    snprintf(msg, sizeof(msg), "%s \"%s\" not found", sw_rest_resource(rt->kind, res, sizeof(res)),
             name);
    sw_response_error(resp, SW_ENOTFOUND, msg, rt->kind, name);
}

void sw_rest_fail(sw_response *resp, int code, const sw_route *rt)
{
    if (code == SW_ENOTFOUND && rt->has_name) {
        sw_rest_not_found(resp, rt, rt->name);
        return;
    }
    sw_response_error(resp, code, sw_error_msg(), rt->kind, rt->has_name ? rt->name : NULL);
}

bool sw_rest_dry_run(const sw_request *req)
{
    const char *d = sw_req_query(req, "dryRun");
    return d && !strcmp(d, "All");
}

static size_t split(char *path, char **segs)
{
    size_t n = 0;
    char *p = path;
    while (*p && n < MAX_SEGS) {
        while (*p == '/')
            p++;
        if (!*p)
            break;
        segs[n++] = p;
        char *slash = strchr(p, '/');
        if (!slash)
            break;
        *slash = '\0';
        p = slash + 1;
    }
    return n;
}

/* A namespace, name or subresource segment: no object is named "." or ".." (names are DNS
 * subdomains at most), and such a segment must never reach a file path built from it. */
static bool copy_seg(char *dst, size_t n, const char *src)
{
    if (!*src || !strcmp(src, ".") || !strcmp(src, ".."))
        return false;
    return sw_strlcpy(dst, src, n) < n;
}

static const sw_subresource *find_subresource(const sw_kind *k, const char *name)
{
    for (size_t i = 0; i < k->nsubresources; i++)
        if (!strcmp(k->subresources[i].name, name))
            return &k->subresources[i];
    return NULL;
}

/* The segments after a custom subresource, joined with '/'. */
static int rest_of_path(sw_route *rt, char **segs, size_t from, size_t n)
{
    if (from < n && !rt->subres->takes_path)
        return SW_ENOTFOUND;
    for (size_t j = from; j < n; j++) {
        size_t len = strlen(rt->rest);
        if (snprintf(rt->rest + len, sizeof(rt->rest) - len, "%s%s", j > from ? "/" : "",
                     segs[j]) >= (int)(sizeof(rt->rest) - len))
            return SW_ENOTFOUND;
    }
    return 0;
}

static int route_inner(const char *path, sw_route *rt);

/* Fills rt from /api/v1/... or /apis/<g>/<v>/...; SW_ENOTFOUND when nothing matches. On success
 * rt->kind is a reference (sw_kind_release it). */
static int route(const char *path, sw_route *rt)
{
    int error = route_inner(path, rt);
    if (error < 0) {
        sw_kind_release(rt->kind);
        rt->kind = NULL;
    }
    return error;
}

static int route_inner(const char *path, sw_route *rt)
{
    char buf[1024], *segs[MAX_SEGS];
    if (sw_strlcpy(buf, path, sizeof(buf)) >= sizeof(buf))
        return SW_ENOTFOUND;
    size_t n = split(buf, segs), i;
    const char *group, *version;
    memset(rt, 0, sizeof(*rt));
    if (n >= 2 && !strcmp(segs[0], "api")) {
        group = "";
        version = segs[1];
        i = 2;
    } else if (n >= 3 && !strcmp(segs[0], "apis")) {
        group = segs[1];
        version = segs[2];
        i = 3;
    } else {
        return SW_ENOTFOUND;
    }
    if (n - i >= 3 && !strcmp(segs[i], "namespaces")) {
        const sw_kind *k = sw_kinds_find(group, version, segs[i + 2]);
        bool namespaced = k && k->namespaced;
        sw_kind_release(k);
        if (namespaced) {
            rt->has_ns = true;
            if (!copy_seg(rt->ns, sizeof(rt->ns), segs[i + 1]))
                return SW_ENOTFOUND;
            i += 2;
        }
    }
    if (i >= n)
        return SW_ENOTFOUND;
    rt->kind = sw_kinds_find(group, version, segs[i]);
    if (!rt->kind || (rt->kind->namespaced == false && rt->has_ns))
        return SW_ENOTFOUND;
    if (++i < n) {
        rt->has_name = true;
        if (!copy_seg(rt->name, sizeof(rt->name), segs[i]))
            return SW_ENOTFOUND;
        if (++i < n && !copy_seg(rt->sub, sizeof(rt->sub), segs[i]))
            return SW_ENOTFOUND;
        rt->subres = find_subresource(rt->kind, rt->sub);
        if (rt->subres)
            return rest_of_path(rt, segs, i + 1, n);
        if (i + 1 < n)
            return SW_ENOTFOUND;
    }
    if (rt->sub[0] && strcmp(rt->sub, "status") && strcmp(rt->sub, "finalize"))
        return SW_ENOTFOUND;
    if (rt->sub[0] && !strcmp(rt->sub, "status") && !rt->kind->has_status)
        return SW_ENOTFOUND;
    if (!strcmp(rt->sub, "finalize") && strcmp(rt->kind->kind, "Namespace"))
        return SW_ENOTFOUND;
    return 0;
}

bool sw_rest_routes(const char *path)
{
    sw_route rt;
    bool ok = route(path, &rt) == 0;
    sw_kind_release(rt.kind);
    return ok;
}

void sw_rest_reply_object(sw_response *resp, const sw_request *req, const sw_kind *k, int status,
                          const json_t *obj)
{
    if (sw_table_wanted(req)) {
        json_t *items = json_pack("[O]", obj);
        json_t *t =
            sw_table_build(k, items, sw_json_str_at(obj, "metadata.resourceVersion"), NULL, true);
        sw_response_json(resp, status, t);
        json_decref(t);
        json_decref(items);
        return;
    }
    sw_response_json(resp, status, obj);
}

/* The namespace's state from the store, when no cache is running. */
static int namespace_state(sw_api *api, const char *ns)
{
    char key[300];
    sw_kv kv = {0};
    sw_api_key(&sw_kind_namespace, NULL, ns, key, sizeof(key));
    int error = sw_store_get(api->store, key, &kv);
    if (error == SW_ENOTFOUND)
        return SW_NS_ABSENT;
    if (error < 0)
        return error;
    json_t *obj = NULL;
    bool terminating = false;
    if (sw_api_decode(api, &sw_kind_namespace, kv.value, kv.value_len, kv.mod_rev, &obj) == 0)
        terminating = sw_json_at(obj, "metadata.deletionTimestamp") != NULL;
    json_decref(obj);
    sw_kv_dispose(&kv);
    return terminating ? SW_NS_TERMINATING : SW_NS_ACTIVE;
}

/* SW_NS_* of ns, from memory when the server keeps it there. A namespace the memory does not
 * know yet is looked up in the store, as kube-apiserver's lifecycle admission does a live
 * lookup: a watcher may see a new namespace (and write into it) before the commit hook that
 * feeds the memory has run. */
static int ns_state(sw_api *api, const char *ns)
{
    int state = api->nscache ? sw_nscache_state(api->nscache, ns) : SW_NS_ABSENT;
    return state == SW_NS_ABSENT ? namespace_state(api, ns) : state;
}

int sw_rest_check_namespace(sw_api *api, const char *ns, bool creating)
{
    int state = ns_state(api, ns);
    if (state < 0)
        return state;
    if (state == SW_NS_ABSENT)
        return sw_error_set(SW_ENOTFOUND, "namespaces \"%s\" not found", ns);
    if (creating && state == SW_NS_TERMINATING)
        return sw_error_set(SW_EFORBIDDEN,
                            "unable to create new content in namespace %s because it is being "
                            "terminated",
                            ns);
    return 0;
}

bool sw_rest_namespace_terminating(sw_api *api, const char *ns)
{
    return ns_state(api, ns) == SW_NS_TERMINATING;
}

static void rest_get(sw_api *api, const sw_request *req, const sw_route *rt, sw_response *resp)
{
    char key[SW_API_KEY_MAX];
    sw_kv kv = {0};
    json_t *obj = NULL;
    sw_api_key(rt->kind, rt->ns, rt->name, key, sizeof(key));
    int error = sw_store_get(api->store, key, &kv);
    if (error == 0 && !sw_table_wanted(req)) {
        /* The stored text, spliced: no decoding on the read path. */
        sw_buf_reserve(&resp->body, kv.value_len + 64);
        error = sw_api_render(api, rt->kind, key, kv.value, kv.value_len, kv.mod_rev, &resp->body);
        sw_buf_putc(&resp->body, '\n');
        resp->status = 200;
    } else if (error == 0) {
        error = sw_api_decode(api, rt->kind, kv.value, kv.value_len, kv.mod_rev, &obj);
        if (error == 0)
            sw_rest_reply_object(resp, req, rt->kind, 200, obj);
    }
    if (error < 0) {
        sw_buf_clear(&resp->body);
        sw_rest_fail(resp, error, rt);
    }
    json_decref(obj);
    sw_kv_dispose(&kv);
}

/* Continue tokens: base64url of {"rv":N,"start":"<last key>"}. */
static char *make_continue(int64_t rev, const char *last_key)
{
    json_t *t = json_pack("{s:I, s:s}", "rv", (json_int_t)rev, "start", last_key);
    char *s = sw_json_dumps(t, NULL);
    char *enc = sw_base64url_encode(s, strlen(s));
    sw_free(s);
    json_decref(t);
    return enc;
}

static int parse_continue(const char *tok, int64_t *rev, char **start)
{
    unsigned char *raw = NULL;
    size_t n;
    json_t *t = NULL;
    int error = sw_base64url_decode(tok, &raw, &n);
    if (error == 0)
        error = sw_json_parse((const char *)raw, n, 4, 0, &t);
    if (error == 0 && (!sw_json_int_at(t, "rv", rev) || *rev <= 0 || !sw_json_str_at(t, "start")))
        error = SW_EBADREQUEST;
    if (error == 0)
        *start = sw_strdup(sw_json_str_at(t, "start"));
    sw_free(raw);
    json_decref(t);
    return error < 0 ? sw_error_set(SW_EBADREQUEST, "continue key is not valid: %.200s", tok) : 0;
}

typedef struct list_query {
    sw_selector *labels;
    sw_selector *fields;
    size_t limit;
    int64_t rev;
    char *start;
    sw_buf *text; /* no selectors, no Table: items rendered as text here, comma-separated */
    size_t ntext;
} list_query;

static void list_query_dispose(list_query *q)
{
    sw_selector_free(q->labels);
    sw_selector_free(q->fields);
    sw_free(q->start);
}

static const char *const base_fields[] = {"metadata.name", "metadata.namespace", NULL};

/* The selectable fields of a kind: metadata.name/namespace plus the kind's own. */
int sw_rest_parse_selectors(const sw_kind *k, const sw_request *req, sw_selector **labels,
                            sw_selector **fields)
{
    const char *allowed[24];
    size_t n = 0;
    for (size_t i = 0; base_fields[i]; i++)
        allowed[n++] = base_fields[i];
    for (size_t i = 0; k->field_selectors && k->field_selectors[i] && n < 23; i++)
        allowed[n++] = k->field_selectors[i];
    allowed[n] = NULL;
    int error = sw_selector_parse_labels(sw_req_query(req, "labelSelector"), labels);
    if (error == 0)
        error = sw_selector_parse_fields(sw_req_query(req, "fieldSelector"), allowed, fields);
    return error;
}

static int list_parse(const sw_request *req, const sw_route *rt, list_query *q)
{
    int error = sw_rest_parse_selectors(rt->kind, req, &q->labels, &q->fields);
    const char *limit = sw_req_query(req, "limit");
    const char *cont = sw_req_query(req, "continue");
    uint64_t lim = 0;
    if (error == 0 && limit && *limit && sw_str_to_u64(limit, &lim) < 0)
        error = sw_error_set(SW_EBADREQUEST, "limit must be a non-negative integer: %s", limit);
    /* a limit no store reaches means all of it (and keeps limit + 1 from wrapping) */
    q->limit = lim > (1ULL << 40) ? 0 : (size_t)lim;
    if (error == 0 && cont && *cont)
        error = parse_continue(cont, &q->rev, &q->start);
    const char *rv = sw_req_query(req, "resourceVersion");
    const char *rvm = sw_req_query(req, "resourceVersionMatch");
    uint64_t rvn = 0;
    if (error == 0 && rv && *rv && sw_str_to_u64(rv, &rvn) < 0)
        error = sw_error_set(SW_EBADREQUEST,
                             "resourceVersion: Invalid value: \"%.64s\": must be "
                             "a non-negative integer",
                             rv);
    if (error == 0 && rvm &&
        !sw_str_one_of(rvm, (const char *const[]){"NotOlderThan", "Exact", NULL}))
        error = sw_error_set(SW_EBADREQUEST,
                             "resourceVersionMatch: Unsupported value: \"%.64s\": supported "
                             "values: \"NotOlderThan\", \"Exact\"",
                             rvm);
    return error;
}

static bool list_matches(const list_query *q, const json_t *obj)
{
    return sw_selector_match_labels(q->labels, sw_json_at(obj, "metadata.labels")) &&
           sw_selector_match_fields(q->fields, obj);
}

static size_t collected(const list_query *q, const json_t *items)
{
    return q->text ? q->ntext : json_array_size(items);
}

/* Collects up to q->limit matching items, reading the store in pages at one revision. */
static int list_collect(sw_api *api, const sw_route *rt, list_query *q, json_t *items,
                        int64_t *rev_out, char **cont_out)
{
    char prefix[SW_API_KEY_MAX];
    sw_api_key(rt->kind, rt->has_ns ? rt->ns : NULL, NULL, prefix, sizeof(prefix));
    const char *pinned = sw_selector_field_equals(q->fields, "metadata.name");
    sw_store_list_opts o = {.prefix = prefix, .start_after = q->start, .rev = q->rev};
    char *start = q->start ? sw_strdup(q->start) : NULL;
    int error = 0;
    for (;;) {
        sw_kv_list l = {0};
        o.start_after = start;
        o.limit = q->limit ? q->limit + 1 : 0;
        error = sw_store_list(api->store, &o, &l);
        if (error == SW_EINVALID && q->start) /* a continue key from the future: forged */
            error = sw_error_set(SW_EBADREQUEST, "continue key is not valid: its "
                                                 "resourceVersion is newer than the store");
        if (error < 0)
            break;
        o.rev = l.rev;
        *rev_out = l.rev;
        size_t i;
        for (i = 0; i < l.count; i++) {
            if (q->limit && collected(q, items) == q->limit) {
                *cont_out = make_continue(l.rev, start);
                break;
            }
            sw_free(start);
            start = sw_strdup(l.items[i].key);
            if (pinned && !sw_str_suffix(l.items[i].key, pinned))
                continue;
            if (q->text) {
                if (q->ntext++)
                    sw_buf_putc(q->text, ',');
                error = sw_api_render(api, rt->kind, l.items[i].key, l.items[i].value,
                                      l.items[i].value_len, l.items[i].mod_rev, q->text);
                if (error < 0)
                    break;
                continue;
            }
            json_t *obj = NULL;
            error = sw_api_decode(api, rt->kind, l.items[i].value, l.items[i].value_len,
                                  l.items[i].mod_rev, &obj);
            if (error < 0)
                break;
            if (list_matches(q, obj))
                json_array_append_new(items, obj);
            else
                json_decref(obj);
        }
        bool more = l.more || i < l.count;
        sw_kv_list_dispose(&l);
        if (error < 0 || *cont_out || !more)
            break;
        if (q->limit && collected(q, items) == q->limit) {
            *cont_out = make_continue(o.rev, start);
            break;
        }
    }
    sw_free(start);
    if (error == SW_EGONE)
        error = sw_error_set(SW_EGONE, "The provided continue parameter is too old to display a "
                                       "consistent list result. You can start a new list without "
                                       "the continue parameter.");
    return error;
}

/* Writes the List envelope around already-rendered items. */
static void list_text_reply(const sw_kind *k, int64_t rev, const char *cont, const sw_buf *items,
                            sw_response *resp)
{
    char av[400];
    resp->status = 200;
    sw_buf_printf(&resp->body,
                  "{\"kind\":\"%sList\",\"apiVersion\":\"%s\",\"metadata\":{\"resourceVersion\":"
                  "\"%lld\"",
                  k->kind, sw_kind_api_version(k, av, sizeof(av)), (long long)rev);
    if (cont)
        sw_buf_printf(&resp->body, ",\"continue\":\"%s\"", cont);
    sw_buf_puts(&resp->body, "},\"items\":[");
    sw_buf_put(&resp->body, items->ptr ? items->ptr : "", items->len);
    sw_buf_puts(&resp->body, "]}\n");
}

/* ---- unpaged lists, streamed ----
 * An unpaged LIST without selectors is read from the store in pages at one revision and sent
 * as it is read, so its size is not bounded by the response buffer (kubectl --chunk-size=0 and
 * the Python client's list calls on big namespaces). A list that fits in one page is answered
 * as before, in one buffer. A failure after the first bytes cuts the reply short. */

#define LIST_PAGE 500

typedef struct list_stream {
    sw_api *api;
    const sw_kind *kind; /* referenced */
    char prefix[SW_API_KEY_MAX];
    char *start; /* the last key rendered */
    int64_t rev;
    size_t count;
    sw_buf chunk; /* rendered, not yet sent from off */
    size_t off;
    bool done; /* the closing "]}" is in chunk */
} list_stream;

/* Renders the next page into ls->chunk (after what is there). */
static int list_stream_page(list_stream *ls)
{
    sw_kv_list l = {0};
    sw_store_list_opts o = {
        .prefix = ls->prefix, .start_after = ls->start, .rev = ls->rev, .limit = LIST_PAGE};
    int error = sw_store_list(ls->api->store, &o, &l);
    if (error < 0)
        return error;
    ls->rev = l.rev;
    for (size_t i = 0; i < l.count && error == 0; i++) {
        if (ls->count++)
            sw_buf_putc(&ls->chunk, ',');
        error = sw_api_render(ls->api, ls->kind, l.items[i].key, l.items[i].value,
                              l.items[i].value_len, l.items[i].mod_rev, &ls->chunk);
        sw_free(ls->start);
        ls->start = sw_strdup(l.items[i].key);
    }
    if (error == 0 && !l.more) {
        sw_buf_puts(&ls->chunk, "]}\n");
        ls->done = true;
    }
    sw_kv_list_dispose(&l);
    return error ? error : sw_buf_error(&ls->chunk);
}

static long list_stream_next(void *p, char *buf, size_t max)
{
    list_stream *ls = p;
    if (ls->off == ls->chunk.len) {
        if (ls->done)
            return -1;
        sw_buf_clear(&ls->chunk);
        ls->off = 0;
        if (list_stream_page(ls) < 0) {
            sw_log(SW_LOG_WARN, "list %s: cut short after %zu items: %s", ls->prefix, ls->count,
                   sw_error_msg());
            return SW_STREAM_CUT;
        }
    }
    size_t n = ls->chunk.len - ls->off < max ? ls->chunk.len - ls->off : max;
    memcpy(buf, ls->chunk.ptr + ls->off, n);
    ls->off += n;
    return (long)n;
}

static void list_stream_free(void *p)
{
    list_stream *ls = p;
    sw_kind_release(ls->kind);
    sw_free(ls->start);
    sw_buf_dispose(&ls->chunk);
    sw_free(ls);
}

/* The unpaged, unselected list: one page read now; the rest streamed when there is more. */
static void list_streamed(sw_api *api, const sw_route *rt, sw_response *resp)
{
    list_stream *ls = sw_calloc(1, sizeof(*ls));
    ls->api = api;
    ls->kind = sw_kind_ref(rt->kind);
    sw_buf_init(&ls->chunk, 256u << 20); /* one page of objects, each bounded on write */
    sw_api_key(rt->kind, rt->has_ns ? rt->ns : NULL, NULL, ls->prefix, sizeof(ls->prefix));
    /* the envelope needs the revision: read the first page, then write the header before it */
    int error = list_stream_page(ls);
    if (error < 0) {
        sw_rest_fail(resp, error, rt);
        list_stream_free(ls);
        return;
    }
    char av[400];
    sw_buf head = SW_BUF_INIT(1024);
    sw_buf_printf(&head,
                  "{\"kind\":\"%sList\",\"apiVersion\":\"%s\",\"metadata\":{\"resourceVersion\":"
                  "\"%lld\"},\"items\":[",
                  rt->kind->kind, sw_kind_api_version(rt->kind, av, sizeof(av)),
                  (long long)ls->rev);
    resp->status = 200;
    resp->content_type = "application/json";
    if (ls->done && ls->chunk.len + head.len <= resp->body.limit) {
        sw_buf_put(&resp->body, head.ptr, head.len);
        sw_buf_put(&resp->body, ls->chunk.ptr ? ls->chunk.ptr : "", ls->chunk.len);
        sw_buf_dispose(&head);
        list_stream_free(ls);
        return;
    }
    sw_buf rest = SW_BUF_INIT(256u << 20);
    sw_buf_put(&rest, head.ptr, head.len);
    sw_buf_put(&rest, ls->chunk.ptr ? ls->chunk.ptr : "", ls->chunk.len);
    sw_buf_dispose(&head);
    sw_buf_dispose(&ls->chunk);
    ls->chunk = rest;
    ls->off = 0;
    resp->stream.next = list_stream_next;
    resp->stream.free = list_stream_free;
    resp->stream.state = ls;
}

static void rest_list(sw_api *api, const sw_request *req, const sw_route *rt, sw_response *resp)
{
    list_query q = {0};
    json_t *items = json_array(), *out = NULL;
    int64_t rev = 0;
    char *cont = NULL, rvs[24], av[128], kind[128];
    sw_buf text = SW_BUF_INIT(resp->body.limit);
    int error = list_parse(req, rt, &q);
    if (error == 0 && sw_selector_empty(q.labels) && sw_selector_empty(q.fields) &&
        !sw_table_wanted(req))
        q.text = &text;
    if (error == 0 && q.text && !q.limit && !q.start && !q.rev) {
        list_streamed(api, rt, resp);
        goto done;
    }
    if (error == 0)
        error = list_collect(api, rt, &q, items, &rev, &cont);
    if (error < 0) {
        sw_rest_fail(resp, error, rt);
        goto done;
    }
    if (q.text) {
        list_text_reply(rt->kind, rev, cont, &text, resp);
        goto done;
    }
    snprintf(rvs, sizeof(rvs), "%lld", (long long)rev);
    if (sw_table_wanted(req)) {
        out = sw_table_build(rt->kind, items, rvs, cont, true);
    } else {
        snprintf(kind, sizeof(kind), "%sList", rt->kind->kind);
        out = json_pack("{s:s, s:s, s:{s:s}, s:O}", "kind", kind, "apiVersion",
                        sw_kind_api_version(rt->kind, av, sizeof(av)), "metadata",
                        "resourceVersion", rvs, "items", items);
        if (cont)
            json_object_set_new(json_object_get(out, "metadata"), "continue", json_string(cont));
    }
    sw_response_json(resp, 200, out);
done:
    json_decref(out);
    json_decref(items);
    sw_buf_dispose(&text);
    sw_free(cont);
    list_query_dispose(&q);
}

static bool is_watch(const sw_request *req)
{
    bool w = false;
    const char *v = sw_req_query(req, "watch");
    return v && sw_str_to_bool(v, &w) == 0 && w;
}

/* 0 when the query parameter key is absent or one of allowed, else a 400 naming them. */
static int check_option(const sw_request *req, const char *key, const char *const *allowed,
                        const char *shown)
{
    const char *v = sw_req_query(req, key);
    if (!v || sw_str_one_of(v, allowed))
        return 0;
    return sw_error_set(SW_EBADREQUEST, "%s: Unsupported value: \"%.64s\": supported values: %s",
                        key, v, shown);
}

/* The write options a client may misspell: an unknown value is a 400, as in Kubernetes, never
 * silently the default (a misspelled dryRun must not write for real). */
static int check_write_options(const sw_request *req)
{
    static const char *const fv[] = {"Ignore", "Warn", "Strict", NULL};
    const char *d = sw_req_query(req, "dryRun");
    if (d && strcmp(d, "All"))
        return sw_error_set(SW_EBADREQUEST, "Invalid dry run value: \"%.64s\" (only \"All\")", d);
    /* propagationPolicy and the other DeleteOptions are checked by delete.c (422) */
    return check_option(req, "fieldValidation", fv, "\"Ignore\", \"Warn\", \"Strict\"");
}

/* The Kubernetes verb of a request on a stored kind (subresources count as their parent's
 * get/update/patch). */
static const char *verb_of(const sw_request *req, const sw_route *rt)
{
    const char *m = req->method;
    if (!strcmp(m, "GET"))
        return rt->has_name ? "get" : is_watch(req) ? "watch" : "list";
    if (!strcmp(m, "POST"))
        return "create";
    if (!strcmp(m, "PUT"))
        return "update";
    if (!strcmp(m, "PATCH"))
        return "patch";
    if (!strcmp(m, "DELETE"))
        return rt->has_name ? "delete" : "deletecollection";
    return "";
}

static void handle_routed(sw_api *api, const sw_request *req, sw_route rt, sw_response *resp);

/* A write of an RBAC object may not grant more than its writer holds (authz.h). A body that
 * does not parse is left to the write pipeline to refuse. */
static int check_grant(sw_api *api, const sw_request *req, const sw_route *rt)
{
    const char *m = req->method;
    if (!api->authz || !req->user || strcmp(rt->kind->group, "rbac.authorization.k8s.io") ||
        (strcmp(m, "POST") && strcmp(m, "PUT") && strcmp(m, "PATCH")) || rt->sub[0])
        return 0;
    json_t *obj = NULL;
    if (strcmp(m, "PATCH") &&
        sw_json_parse(req->body, req->body_len, SW_JSON_MAX_DEPTH, 0, &obj) < 0)
        return 0;
    if (!obj)
        obj = json_pack("{s:{s:s}}", "metadata", "name", rt->name);
    int error = sw_authz_check_grant(api->authz, req->user, m, rt->kind->kind,
                                     rt->has_ns ? rt->ns : NULL, obj);
    json_decref(obj);
    return error;
}

void sw_rest_handle(sw_api *api, const sw_request *req, sw_response *resp)
{
    sw_route rt;
    if (route(req->path, &rt) < 0) {
        sw_response_error(resp, SW_ENOTFOUND, "the server could not find the requested resource",
                          NULL, NULL);
        return;
    }
    resp->verb = verb_of(req, &rt);
    sw_strlcpy(resp->group, rt.kind->group, sizeof(resp->group));
    sw_strlcpy(resp->resource, rt.kind->plural, sizeof(resp->resource));
    sw_strlcpy(resp->subresource, rt.sub, sizeof(resp->subresource));
    if (sw_review_kind(rt.kind))
        sw_review_handle(api, req, &rt, resp);
    else if (check_grant(api, req, &rt) < 0)
        sw_rest_fail(resp, SW_EFORBIDDEN, &rt);
    else
        handle_routed(api, req, rt, resp);
    sw_kind_release(rt.kind); /* a watch took its own reference */
}

static void handle_routed(sw_api *api, const sw_request *req, sw_route rt, sw_response *resp)
{
    const char *m = req->method;
    if (strcmp(m, "GET") && check_write_options(req) < 0) {
        sw_response_error(resp, SW_EBADREQUEST, sw_error_msg(), NULL, NULL);
        return;
    }
    /* A namespaced kind across all namespaces serves list and watch only (kube-apiserver has
     * no all-namespaces delete or create); /finalize serves update only. */
    bool refused = (!rt.kind->virt && !rt.subres && !sw_kind_serves(rt.kind, verb_of(req, &rt))) ||
                   (rt.kind->namespaced && !rt.has_ns && strcmp(m, "GET")) ||
                   (!strcmp(rt.sub, "finalize") && strcmp(m, "PUT"));
    if (refused)
        sw_response_error(resp, SW_EMETHOD,
                          "the server does not allow this method on the requested resource",
                          rt.kind, NULL);
    else if (rt.kind->virt)
        sw_rest_virtual(api, req, &rt, resp);
    else if (rt.subres)
        sw_rest_subresource(api, req, &rt, resp);
    else if (!strcmp(m, "GET") && !rt.has_name && is_watch(req))
        sw_watch_serve(api, req, &rt, resp);
    else if (!strcmp(m, "GET") && rt.has_name)
        rest_get(api, req, &rt, resp);
    else if (!strcmp(m, "GET"))
        rest_list(api, req, &rt, resp);
    else if (!strcmp(m, "POST") && !rt.has_name)
        sw_rest_create(api, req, &rt, resp);
    else if (!strcmp(m, "PUT") && rt.has_name)
        sw_rest_update(api, req, &rt, resp);
    else if (!strcmp(m, "PATCH") && rt.has_name)
        sw_rest_patch(api, req, &rt, resp);
    else if (!strcmp(m, "DELETE") && rt.has_name && !rt.sub[0])
        sw_rest_delete(api, req, &rt, resp);
    else if (!strcmp(m, "DELETE") && !rt.has_name)
        sw_rest_delete_collection(api, req, &rt, resp);
    else
        sw_response_error(resp, SW_EMETHOD,
                          "the server does not allow this method on the "
                          "requested resource",
                          rt.kind, NULL);
}
