/* report: stages and the outcome of one build, as builds/<n>/details takes them. Stages are
 * kept as JSON from the start (they go nowhere else); times are RFC 3339 seconds, durations
 * milliseconds. Design: docs/builds.md ("The builder"). */
#include "builder/report.h"

#include "util/alloc.h"
#include "util/buf.h"
#include "util/error.h"
#include "util/json.h"
#include "util/str.h"
#include "util/time.h"

#include <string.h>

struct sw_report {
    json_t *stages; /* array of stage objects */
    json_t *open;   /* the open stage (borrowed from stages) or NULL */
    int64_t open_ms;
    char *reason, *message;
    char *reference, *digest;
    char *backend;
};

int sw_report_new(sw_report **out)
{
    sw_report *r = sw_calloc(1, sizeof(*r));
    r->stages = json_array();
    *out = r;
    return 0;
}

void sw_report_free(sw_report *r)
{
    if (!r)
        return;
    json_decref(r->stages);
    sw_free(r->reason);
    sw_free(r->message);
    sw_free(r->reference);
    sw_free(r->digest);
    sw_free(r->backend);
    sw_free(r);
}

static json_t *timed(const char *name, int64_t start_ms, int64_t end_ms)
{
    char ts[32];
    sw_time_format(start_ms / 1000, ts, sizeof(ts));
    return json_pack("{s:s, s:s, s:I}", "name", name, "startTime", ts, "durationMilliseconds",
                     (json_int_t)(end_ms > start_ms ? end_ms - start_ms : 0));
}

void sw_report_stage_end(sw_report *r, int64_t now_ms)
{
    if (!r->open)
        return;
    json_object_set_new(r->open, "durationMilliseconds",
                        json_integer(now_ms > r->open_ms ? now_ms - r->open_ms : 0));
    r->open = NULL;
}

void sw_report_stage_begin(sw_report *r, const char *name, int64_t now_ms)
{
    sw_report_stage_end(r, now_ms);
    json_t *st = timed(name, now_ms, now_ms);
    json_object_set_new(st, "steps", json_array());
    json_array_append_new(r->stages, st);
    r->open = st;
    r->open_ms = now_ms;
}

void sw_report_step(sw_report *r, const char *name, int64_t start_ms, int64_t end_ms)
{
    if (r->open)
        json_array_append_new(json_object_get(r->open, "steps"), timed(name, start_ms, end_ms));
}

/* A copy of s cut to at most max bytes at a UTF-8 character boundary. */
static char *cut_utf8(const char *s, size_t max)
{
    size_t len = strlen(s);
    if (len > max) {
        len = max;
        while (len > 0 && ((unsigned char)s[len] & 0xC0) == 0x80)
            len--;
    }
    return sw_strndup(s, len);
}

void sw_report_fail(sw_report *r, const char *reason, const char *message)
{
    if (r->reason)
        return;
    r->reason = sw_strdup(reason ? reason : SW_REASON_GENERIC);
    r->message = cut_utf8(message ? message : "", SW_REPORT_MESSAGE_MAX);
}

const char *sw_report_reason(const sw_report *r)
{
    return r->reason;
}

void sw_report_set_output(sw_report *r, const char *reference, const char *digest)
{
    sw_free(r->reference);
    sw_free(r->digest);
    r->reference = reference ? sw_strdup(reference) : NULL;
    r->digest = digest ? sw_strdup(digest) : NULL;
}

void sw_report_set_backend(sw_report *r, const char *backend)
{
    sw_free(r->backend);
    r->backend = backend ? sw_strdup(backend) : NULL;
}

/* json_string of text that may not be UTF-8 (messages quote inputs): invalid bytes become '?'. */
static json_t *safe_string(const char *s)
{
    json_t *j = json_string(s);
    if (j)
        return j;
    char *copy = sw_strdup(s);
    for (unsigned char *p = (unsigned char *)copy; *p; p++)
        if (*p >= 0x80)
            *p = '?';
    j = json_string(copy);
    sw_free(copy);
    return j;
}

json_t *sw_report_body(const sw_report *r, const char *ns, const char *name)
{
    json_t *stages = json_deep_copy(r->stages), *st;
    size_t i;
    json_array_foreach(stages, i, st)
    {
        if (json_array_size(json_object_get(st, "steps")) == 0)
            json_object_del(st, "steps"); /* omitempty, as OpenShift encodes it */
    }
    json_t *status = json_pack("{s:o}", "stages", stages);
    if (r->reason) {
        json_object_set_new(status, "reason", json_string(r->reason));
        json_object_set_new(status, "message", safe_string(r->message));
    }
    if (r->digest)
        json_object_set_new(status, "output",
                            json_pack("{s:{s:s}}", "to", "imageDigest", r->digest));
    if (r->reference)
        json_object_set_new(status, "outputDockerImageReference", safe_string(r->reference));
    if (r->backend)
        json_object_set_new(status, "backend", json_string(r->backend));
    return json_pack("{s:s, s:s, s:{s:s, s:s}, s:o}", "kind", "Build", "apiVersion",
                     "build.openshift.io/v1", "metadata", "name", name, "namespace", ns, "status",
                     status);
}

int sw_report_send(const sw_report *r, sw_client *c, const char *ns, const char *name)
{
    sw_buf path = SW_BUF_INIT(4096);
    json_t *body = sw_report_body(r, ns, name);
    int error = sw_client_path(&path, &sw_res_builds, ns, name, "details");
    if (error == 0)
        error = sw_buf_error(&path);
    if (error == 0)
        error = sw_client_request(c, "PUT", sw_buf_cstr(&path), body, NULL, NULL, NULL);
    json_decref(body);
    sw_buf_dispose(&path);
    return error;
}
