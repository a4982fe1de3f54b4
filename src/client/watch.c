/* watch: builds the watch URL, splits the chunked body into lines (bounded), decodes events and
 * maps ERROR events to codes; the transport is sw_client_stream (see watch.h). */
#include "client/watch.h"

#include "util/alloc.h"
#include "util/error.h"
#include "util/json.h"
#include "util/str.h"

#include <stdio.h>
#include <string.h>

#define URL_MAX (64u << 10)

struct sw_watch {
    sw_client_cancel *cancel;
};

int sw_watch_new(sw_watch **out)
{
    sw_watch *w = sw_calloc(1, sizeof(*w));
    w->cancel = sw_client_cancel_new();
    *out = w;
    return 0;
}

void sw_watch_free(sw_watch *w)
{
    if (!w)
        return;
    sw_client_cancel_free(w->cancel);
    sw_free(w);
}

void sw_watch_cancel(sw_watch *w)
{
    sw_client_cancel_fire(w->cancel);
}

bool sw_watch_cancelled(sw_watch *w)
{
    return sw_client_cancel_fired(w->cancel);
}

const char *sw_watch_type_name(sw_watch_type t)
{
    static const char *const names[] = {"ADDED", "MODIFIED", "DELETED", "BOOKMARK"};
    return (unsigned)t < 4 ? names[t] : "UNKNOWN";
}

/* One run's decoding state. */
typedef struct run {
    sw_buf line; /* a partial line carried between chunks */
    sw_watch_fn fn;
    sw_watch_tick_fn tick;
    void *payload;
} run;

static int parse_type(const char *s, sw_watch_type *t)
{
    static const char *const names[] = {"ADDED", "MODIFIED", "DELETED", "BOOKMARK"};
    for (int i = 0; i < 4; i++)
        if (sw_str_eq(s, names[i])) {
            *t = (sw_watch_type)i;
            return 0;
        }
    return -1;
}

/* An ERROR event's Status as an error code. */
static int error_event(const json_t *st)
{
    int64_t code = 0;
    const char *msg = sw_json_str_at(st, "message");
    sw_json_int_at(st, "code", &code);
    int e = sw_client_status_code((long)code, sw_json_str_at(st, "reason"));
    if (code == 410)
        e = SW_EGONE;
    return sw_error_set(e == 0 ? SW_ERROR : e, "watch: %s (code %lld)",
                        msg && *msg ? msg : "error event", (long long)code);
}

static int deliver(run *r, const char *line, size_t len)
{
    json_t *ev = NULL;
    sw_watch_type t;
    size_t i = 0;
    while (i < len && (line[i] == ' ' || line[i] == '\r' || line[i] == '\t'))
        i++;
    if (i == len)
        return 0; /* blank line (keep-alive) */
    int error = sw_json_parse(line, len, SW_JSON_MAX_DEPTH + 1, 0, &ev);
    if (error < 0)
        return sw_error_set(SW_EBADREQUEST, "watch: an event is not JSON");
    const char *type = sw_json_str_at(ev, "type");
    json_t *obj = json_object_get(ev, "object");
    if (sw_str_eq(type, "ERROR"))
        error = error_event(obj);
    else if (!json_is_object(obj) || parse_type(type, &t) < 0)
        error =
            sw_error_set(SW_EBADREQUEST, "watch: unknown event type %s", type ? type : "(none)");
    else
        error = r->fn(t, obj, r->payload);
    json_decref(ev);
    return error;
}

/* Splits chunks into lines; a complete line found in one chunk is parsed in place. */
static int on_data(const char *data, size_t len, void *ud)
{
    run *r = ud;
    if (!data)
        return r->tick ? r->tick(r->payload) : 0;
    while (len) {
        const char *nl = memchr(data, '\n', len);
        size_t n = nl ? (size_t)(nl - data) : len;
        int error = 0;
        if (sw_buf_put(&r->line, data, n) < 0)
            return sw_error_set(SW_ELIMIT, "watch: an event is longer than %zu bytes",
                                r->line.limit);
        if (!nl)
            break;
        error = deliver(r, sw_buf_cstr(&r->line), r->line.len);
        sw_buf_clear(&r->line);
        if (error != 0)
            return error;
        data = nl + 1;
        len -= n + 1;
    }
    return 0;
}

static int watch_path(sw_buf *p, const sw_resource *r, const char *ns, const sw_watch_opts *o)
{
    char ts[32];
    snprintf(ts, sizeof(ts), "%d", o->timeout_seconds > 0 ? o->timeout_seconds : 300);
    sw_client_path(p, r, ns, NULL, NULL);
    sw_client_query(p, "watch", "1");
    sw_client_query(p, "allowWatchBookmarks", o->no_bookmarks ? NULL : "true");
    sw_client_query(p, "resourceVersion",
                    o->resource_version && *o->resource_version ? o->resource_version : NULL);
    sw_client_query(p, "labelSelector",
                    o->label_selector && *o->label_selector ? o->label_selector : NULL);
    sw_client_query(p, "fieldSelector",
                    o->field_selector && *o->field_selector ? o->field_selector : NULL);
    sw_client_query(p, "timeoutSeconds", ts);
    return sw_buf_error(p) < 0 ? sw_error_set(SW_ELIMIT, "watch request path too long") : 0;
}

int sw_watch_run(sw_watch *w, sw_client *c, const sw_resource *r, const char *ns,
                 const sw_watch_opts *opts, sw_watch_fn fn, void *payload)
{
    sw_watch_opts o = opts ? *opts : (sw_watch_opts){0};
    run rn = {.line = SW_BUF_INIT(o.max_line ? o.max_line : SW_WATCH_MAX_LINE),
              .fn = fn,
              .tick = o.on_tick,
              .payload = payload};
    sw_buf p = SW_BUF_INIT(URL_MAX);
    int timeout_s = o.timeout_seconds > 0 ? o.timeout_seconds : 300;
    if (timeout_s > 86400)
        timeout_s = o.timeout_seconds = 86400;
    /* The server ends the stream at timeoutSeconds; the client gives up well after that. */
    sw_stream_opts so = {.timeout_ms = (timeout_s + 30) * 1000,
                         .tick_ms = o.on_tick ? o.tick_ms : 0,
                         .cancel = w ? w->cancel : NULL};
    int error = watch_path(&p, r, ns, &o);
    if (error == 0)
        error = sw_client_stream(c, sw_buf_cstr(&p), &so, on_data, &rn);
    /* A last event without its newline, if the stream ended cleanly. */
    if (error == 0 && rn.line.len && !(w && sw_watch_cancelled(w)))
        error = deliver(&rn, sw_buf_cstr(&rn.line), rn.line.len);
    if (error > 0)
        error = 0;
    sw_buf_dispose(&rn.line);
    sw_buf_dispose(&p);
    return error;
}
