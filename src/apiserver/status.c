/* status: responses and Kubernetes Status objects (apimachinery's error shapes). */
#include "apiserver/api.h"

#include "util/alloc.h"
#include "util/error.h"
#include "util/json.h"
#include "util/str.h"

#include <stdio.h>
#include <string.h>

void sw_response_init(sw_response *resp)
{
    resp->status = 200;
    resp->content_type = "application/json";
    sw_buf_init(&resp->body, 64u * 1024 * 1024);
    resp->stream.next = NULL;
    resp->stream.free = NULL;
    resp->stream.state = NULL;
    resp->warning[0] = '\0';
    resp->verb = NULL;
    resp->group[0] = resp->resource[0] = resp->subresource[0] = '\0';
}

void sw_response_dispose(sw_response *resp)
{
    sw_buf_dispose(&resp->body);
    if (resp->stream.free)
        resp->stream.free(resp->stream.state);
    resp->stream.next = NULL;
    resp->stream.free = NULL;
}

void sw_response_json(sw_response *resp, int status, const json_t *body)
{
    resp->status = status;
    resp->content_type = "application/json";
    sw_buf_clear(&resp->body);
    sw_json_dump_buf(body, &resp->body);
    sw_buf_putc(&resp->body, '\n');
    if (sw_buf_error(&resp->body) < 0) {
        /* never a cut-off body under a success code: say what happened instead */
        char msg[128];
        snprintf(msg, sizeof(msg), "the response is larger than the server's %zu-byte limit",
                 resp->body.limit);
        sw_buf_clear(&resp->body);
        json_t *st = sw_status_failure(SW_ELIMIT, msg, NULL, NULL);
        resp->status = 500;
        sw_json_dump_buf(st, &resp->body);
        sw_buf_putc(&resp->body, '\n');
        json_decref(st);
    }
}

/* Invalid: "<Kind>.<group> \"<name>\" is invalid: <field>: <detail>" with one cause naming the
 * field, which is what kubectl prints. */
/* The causes kept with the current error, when message is (a clean copy of) its message. */
static const json_t *causes_of(const char *message)
{
    const json_t *c = sw_error_causes();
    return c && json_is_array(c) && sw_str_eq(message, sw_error_msg()) ? c : NULL;
}

static json_t *invalid_status(const char *message, const sw_kind *kind, const char *name)
{
    char full[1600], field[256] = "";
    const char *colon = strstr(message, ": ");
    if (colon && (size_t)(colon - message) < sizeof(field) &&
        !memchr(message, ' ', (size_t)(colon - message))) {
        memcpy(field, message, (size_t)(colon - message));
        field[colon - message] = '\0';
    }
    snprintf(full, sizeof(full), "%s%s%s \"%s\" is invalid: %s", kind->kind,
             kind->group[0] ? "." : "", kind->group, name, message);
    /* the causes the error came with (several fields at once), else the one its message names */
    const json_t *kept = causes_of(message);
    json_t *causes = kept ? json_deep_copy(kept) : json_array();
    if (!kept) {
        json_t *cause = json_pack("{s:s, s:s}", "reason", "FieldValueInvalid", "message",
                                  field[0] ? colon + 2 : message);
        if (field[0])
            json_object_set_new(cause, "field", json_string(field));
        json_array_append_new(causes, cause);
    }
    return json_pack("{s:s, s:s, s:{}, s:s, s:s, s:s, s:{s:s, s:s, s:s, s:o}, s:i}", "kind",
                     "Status", "apiVersion", "v1", "metadata", "status", "Failure", "message", full,
                     "reason", "Invalid", "details", "name", name, "group", kind->group, "kind",
                     kind->kind, "causes", causes, "code", 422);
}

static json_t *status_of(int code, const char *message, const sw_kind *kind, const char *name);

/* message and name may carry client bytes cut anywhere (%.200s): jansson refuses a string
 * that is not UTF-8, which would leave the reply without its Status, so both are cleaned. */
json_t *sw_status_failure(int code, const char *message, const sw_kind *kind, const char *name)
{
    char *msg = sw_utf8_clean(message ? message : ""), *nm = sw_utf8_clean(name);
    json_t *st = status_of(code, msg, kind, nm);
    sw_free(msg);
    sw_free(nm);
    return st;
}

static json_t *status_of(int code, const char *message, const sw_kind *kind, const char *name)
{
    if (code == SW_EINVALID && kind && name)
        return invalid_status(message, kind, name);
    json_t *st = json_pack("{s:s, s:s, s:{}, s:s, s:s, s:s, s:i}", "kind", "Status", "apiVersion",
                           "v1", "metadata", "status", "Failure", "message", message, "reason",
                           sw_error_reason(code), "code", sw_error_http_status(code));
    if (kind || name) {
        json_t *d = json_object();
        if (name)
            json_object_set_new(d, "name", json_string(name));
        if (kind) {
            json_object_set_new(d, "group", json_string(kind->group));
            json_object_set_new(d, "kind", json_string(kind->plural));
        }
        json_object_set_new(st, "details", d);
    }
    return st;
}

void sw_response_error(sw_response *resp, int code, const char *message, const sw_kind *kind,
                       const char *name)
{
    json_t *st = sw_status_failure(code, message, kind, name);
    sw_response_json(resp, sw_error_http_status(code), st);
    json_decref(st);
}
