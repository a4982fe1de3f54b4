/* describe_build: `slipway describe bc/<name>`, `build/<name>` and `managedimage/<name>`, in
 * the layout of `oc describe` and `kubectl describe` (fields, then tables of builds,
 * conditions and Events). What the object alone does not say (its builds, the ManagedImage's
 * owned objects, the Events about it) is read with the same client. */
#include "cmd/describe.h"

#include "cmd/describe_int.h"
#include "kinds/managedimage.h"
#include "util/alloc.h"
#include "util/json.h"
#include "util/str.h"
#include "util/time.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BUILDS_SHOWN 10

static const char *str_or(const char *s, const char *dflt)
{
    return s && *s ? s : dflt;
}

/* "Kind name" of a from/to object reference ("DockerImage r/x:1", "ImageStreamTag ns/s:t"). */
static void ref_text(const json_t *ref, char *out, size_t n)
{
    const char *kind = sw_json_str_at(ref, "kind"), *name = sw_json_str_at(ref, "name");
    const char *ns = sw_json_str_at(ref, "namespace");
    if (!name)
        snprintf(out, n, "<none>");
    else
        snprintf(out, n, "%s %s%s%s", kind ? kind : "", ns && *ns ? ns : "", ns && *ns ? "/" : "",
                 name);
}

static void put_strategy(sw_buf *b, const json_t *spec)
{
    char text[800];
    sw_describe__field(b, "Strategy", str_or(sw_json_str_at(spec, "strategy.type"), "Docker"));
    const char *src = sw_json_str_at(spec, "source.type");
    sw_describe__field(b, "Source", str_or(src, "None"));
    if (sw_json_str_at(spec, "source.git.uri")) {
        sw_describe__field(b, "URL", sw_json_str_at(spec, "source.git.uri"));
        if (sw_json_str_at(spec, "source.git.ref"))
            sw_describe__field(b, "Ref", sw_json_str_at(spec, "source.git.ref"));
    }
    if (sw_json_str_at(spec, "source.contextDir"))
        sw_describe__field(b, "ContextDir", sw_json_str_at(spec, "source.contextDir"));
    const char *df = sw_json_str_at(spec, "source.dockerfile");
    if (df) {
        size_t len = strlen(df);
        while (len && df[len - 1] == '\n')
            len--;
        char *trimmed = sw_strndup(df, len);
        sw_describe__field(b, "Dockerfile", trimmed);
        sw_free(trimmed);
    }
    const char *from = sw_str_eq(sw_json_str_at(spec, "strategy.type"), "Source")
                           ? "strategy.sourceStrategy.from"
                           : "strategy.dockerStrategy.from";
    if (sw_json_at(spec, from)) {
        ref_text(sw_json_at(spec, from), text, sizeof(text));
        sw_describe__field(b, "From Image", text);
    }
    ref_text(sw_json_at(spec, "output.to"), text, sizeof(text));
    sw_describe__field(b, "Output to", text);
}

/* The Build's "Status" cell: phase, and (reason) when there is one. */
static void status_text(const json_t *build, char *out, size_t n)
{
    const char *phase = str_or(sw_json_str_at(build, "status.phase"), "New");
    const char *reason = sw_json_str_at(build, "status.reason");
    snprintf(out, n, "%s%s%s%s", phase, reason && *reason ? " (" : "", reason ? reason : "",
             reason && *reason ? ")" : "");
}

static int by_number_desc(const void *a, const void *b)
{
    const json_t *x = *(const json_t *const *)a, *y = *(const json_t *const *)b;
    const char *nx = json_string_value(
        json_object_get(sw_json_at(x, "metadata.annotations"), "openshift.io/build.number"));
    const char *ny = json_string_value(
        json_object_get(sw_json_at(y, "metadata.annotations"), "openshift.io/build.number"));
    int64_t ix = 0, iy = 0;
    if (nx)
        sw_str_to_i64(nx, &ix);
    if (ny)
        sw_str_to_i64(ny, &iy);
    return ix < iy ? 1 : ix > iy ? -1 : 0;
}

/* The builds of BuildConfig bc, newest first, as a table. */
static void put_builds(sw_buf *b, sw_client *c, const char *ns, const char *bc, int64_t now)
{
    char sel[400];
    json_t *list = NULL;
    snprintf(sel, sizeof(sel), "openshift.io/build-config.name=%s", bc);
    if (sw_client_list(c, &sw_res_builds, ns, sel, &list) < 0) {
        sw_describe__field(b, "Builds", "<cannot list them>");
        return;
    }
    json_t *items = json_object_get(list, "items");
    size_t n = json_array_size(items);
    if (n == 0) {
        sw_describe__field(b, "Builds", "");
        json_decref(list);
        return;
    }
    const json_t **sorted = sw_calloc(n, sizeof(*sorted));
    for (size_t i = 0; i < n; i++)
        sorted[i] = json_array_get(items, i);
    qsort(sorted, n, sizeof(*sorted), by_number_desc);
    sw_buf_puts(b, "\nBuild\tStatus\tDuration\tCreation Time\n");
    for (size_t i = 0; i < n && i < BUILDS_SHOWN; i++) {
        char st[200], dur[64] = "", created[80];
        int64_t ns_dur;
        status_text(sorted[i], st, sizeof(st));
        if (sw_json_int_at(sorted[i], "status.duration", &ns_dur))
            sw_describe__duration(ns_dur / 1000000000, dur, sizeof(dur));
        sw_describe__age(sw_json_str_at(sorted[i], "metadata.creationTimestamp"), now, created,
                         sizeof(created));
        sw_buf_printf(b, "%s\t%s\t%s\t%s\n", sw_json_str_at(sorted[i], "metadata.name") ?: "", st,
                      dur[0] ? dur : "<none>", created);
    }
    if (n > BUILDS_SHOWN)
        sw_buf_printf(b, "... and %zu older\n", n - BUILDS_SHOWN);
    sw_free(sorted);
    json_decref(list);
}

/* Events oldest first (RFC 3339 in UTC sorts as text), then by name. */
static int by_time(const void *a, const void *b)
{
    const json_t *x = *(const json_t *const *)a, *y = *(const json_t *const *)b;
    int c =
        strcmp(sw_json_str_at(x, "lastTimestamp") ?: "", sw_json_str_at(y, "lastTimestamp") ?: "");
    return c ? c
             : strcmp(sw_json_str_at(x, "metadata.name") ?: "",
                      sw_json_str_at(y, "metadata.name") ?: "");
}

/* kubectl's Events table: the Events about obj (by uid), oldest first. */
static void put_events(sw_buf *b, sw_client *c, const json_t *obj, int64_t now)
{
    json_t *list = NULL;
    const char *uid = sw_json_str_at(obj, "metadata.uid");
    if (!uid || sw_client_list(c, &sw_res_events, sw_json_str_at(obj, "metadata.namespace"), NULL,
                               &list) < 0) {
        sw_buf_puts(b, "\nEvents:\t<unknown>\n");
        return;
    }
    json_t *items = json_object_get(list, "items");
    size_t n = json_array_size(items), shown = 0;
    const json_t **sorted = sw_calloc(n + 1, sizeof(*sorted));
    for (size_t i = 0; i < n; i++)
        sorted[i] = json_array_get(items, i);
    qsort(sorted, n, sizeof(*sorted), by_time);
    for (size_t i = 0; i < n; i++) {
        const json_t *e = sorted[i];
        if (!sw_str_eq(sw_json_str_at(e, "involvedObject.uid"), uid))
            continue;
        if (shown++ == 0)
            sw_buf_puts(b, "\nEvents:\n  Type\tReason\tAge\tFrom\tMessage\n"
                           "  ----\t------\t----\t----\t-------\n");
        char age[80], d[64];
        int64_t t;
        const char *when = sw_json_str_at(e, "lastTimestamp");
        if (when && sw_time_parse(when, &t) == 0) {
            sw_describe__duration(now - t, d, sizeof(d));
            snprintf(age, sizeof(age), "%s", d);
        } else {
            snprintf(age, sizeof(age), "<unknown>");
        }
        char msg[1100];
        sw_strlcpy(msg, sw_json_str_at(e, "message") ?: "", sizeof(msg));
        for (char *p = msg; *p; p++)
            if (*p == '\n' || *p == '\t')
                *p = ' ';
        sw_buf_printf(b, "  %s\t%s\t%s\t%s\t%s\n", sw_json_str_at(e, "type") ?: "",
                      sw_json_str_at(e, "reason") ?: "", age,
                      sw_json_str_at(e, "source.component") ?: "", msg);
    }
    if (!shown)
        sw_buf_puts(b, "\nEvents:\t<none>\n");
    sw_free(sorted);
    json_decref(list);
}

void sw_describe_buildconfig(sw_buf *out, sw_client *c, const json_t *bc, int64_t now)
{
    sw_buf b = SW_BUF_INIT(8u << 20);
    const json_t *spec = json_object_get(bc, "spec");
    int64_t v = 0;
    char num[32];
    sw_describe__meta(&b, json_object_get(bc, "metadata"), now);
    sw_json_int_at(bc, "status.lastVersion", &v);
    snprintf(num, sizeof(num), "%lld", (long long)v);
    sw_describe__field(&b, "Latest Version", num);
    sw_buf_puts(&b, "\n");
    put_strategy(&b, spec);
    sw_buf_puts(&b, "\n");
    sw_describe__field(&b, "Build Run Policy", str_or(sw_json_str_at(spec, "runPolicy"), "Serial"));
    size_t i;
    json_t *t;
    sw_buf trig = SW_BUF_INIT(4096);
    json_array_foreach(json_object_get(spec, "triggers"), i, t)
        sw_buf_printf(&trig, "%s%s", i ? ", " : "", sw_json_str_at(t, "type") ?: "?");
    sw_describe__field(&b, "Triggered by", sw_buf_cstr(&trig));
    sw_buf_dispose(&trig);
    const json_t *owner = json_array_get(sw_json_at(bc, "metadata.ownerReferences"), 0);
    if (owner) {
        char o[400];
        snprintf(o, sizeof(o), "%s/%s", sw_json_str_at(owner, "kind") ?: "",
                 sw_json_str_at(owner, "name") ?: "");
        sw_describe__field(&b, "Controlled By", o);
    }
    put_builds(&b, c, sw_json_str_at(bc, "metadata.namespace"),
               sw_json_str_at(bc, "metadata.name") ?: "", now);
    put_events(&b, c, bc, now);
    sw_describe__align(out, sw_buf_cstr(&b));
    sw_buf_dispose(&b);
}

void sw_describe_build(sw_buf *out, sw_client *c, const json_t *build, int64_t now)
{
    sw_buf b = SW_BUF_INIT(8u << 20);
    char text[300], age[80];
    sw_describe__meta(&b, json_object_get(build, "metadata"), now);
    sw_buf_puts(&b, "\n");
    status_text(build, text, sizeof(text));
    sw_describe__field(&b, "Status", text);
    if (sw_json_str_at(build, "status.message"))
        sw_describe__field(&b, "Message", sw_json_str_at(build, "status.message"));
    sw_describe__age(sw_json_str_at(build, "status.startTimestamp"), now, age, sizeof(age));
    sw_describe__field(&b, "Started", age);
    int64_t ns_dur;
    if (sw_json_int_at(build, "status.duration", &ns_dur)) {
        sw_describe__duration(ns_dur / 1000000000, text, sizeof(text));
        sw_describe__field(&b, "Duration", text);
    }
    sw_describe__field(&b, "Build Config", sw_json_str_at(build, "status.config.name"));
    sw_buf_puts(&b, "\n");
    put_strategy(&b, json_object_get(build, "spec"));
    if (sw_json_str_at(build, "status.backend")) /* slipway's: native or buildah */
        sw_describe__field(&b, "Backend", sw_json_str_at(build, "status.backend"));
    if (sw_json_str_at(build, "status.outputDockerImageReference"))
        sw_describe__field(&b, "Output Image",
                           sw_json_str_at(build, "status.outputDockerImageReference"));
    if (sw_json_str_at(build, "status.output.to.imageDigest"))
        sw_describe__field(&b, "Output Digest",
                           sw_json_str_at(build, "status.output.to.imageDigest"));
    const char *why =
        sw_json_str_at(json_array_get(sw_json_at(build, "spec.triggeredBy"), 0), "message");
    sw_describe__field(&b, "Build trigger cause", why);
    const char *snippet = sw_json_str_at(build, "status.logSnippet");
    if (snippet && *snippet)
        sw_describe__field(&b, "Log Tail", snippet);
    put_events(&b, c, build, now);
    sw_describe__align(out, sw_buf_cstr(&b));
    sw_buf_dispose(&b);
}

/* One line per owned object: kind/name and what it shows now. */
static void put_owned(sw_buf *b, sw_client *c, const json_t *mi)
{
    const char *ns = sw_json_str_at(mi, "metadata.namespace");
    const char *name = sw_json_str_at(mi, "metadata.name") ?: "";
    char stream[256], tag[256];
    json_t *s = NULL, *bc = NULL;
    sw_buf_puts(b, "\nOwned Objects:\n");
    if (sw_mi_output(mi, stream, sizeof(stream), tag, sizeof(tag))) {
        if (sw_client_get(c, &sw_res_imagestreams, ns, stream, &s) == 0) {
            const char *img = NULL;
            size_t i;
            json_t *st;
            json_array_foreach(sw_json_at(s, "status.tags"), i, st)
            {
                if (sw_str_eq(sw_json_str_at(st, "tag"), tag))
                    img = sw_json_str_at(json_array_get(json_object_get(st, "items"), 0), "image");
            }
            sw_buf_printf(b, "  ImageStream/%s\ttag %s: %s\n", stream, tag, str_or(img, "<none>"));
        } else {
            sw_buf_printf(b, "  ImageStream/%s\t<missing>\n", stream);
        }
    }
    if (sw_client_get(c, &sw_res_buildconfigs, ns, name, &bc) == 0) {
        int64_t v = 0;
        sw_json_int_at(bc, "status.lastVersion", &v);
        sw_buf_printf(b, "  BuildConfig/%s\tlast version %lld\n", name, (long long)v);
    } else {
        sw_buf_printf(b, "  BuildConfig/%s\t<missing>\n", name);
    }
    json_decref(s);
    json_decref(bc);
}

void sw_describe_managedimage(sw_buf *out, sw_client *c, const json_t *mi, int64_t now)
{
    sw_buf b = SW_BUF_INIT(8u << 20);
    char text[300];
    sw_describe__meta(&b, json_object_get(mi, "metadata"), now);
    sw_buf_puts(&b, "\n");
    sw_describe__field(&b, "Output", sw_json_str_at(mi, "spec.output.to.name"));
    sw_describe__field(&b, "Latest Image", sw_json_str_at(mi, "status.latestImage"));
    sw_describe__field(&b, "Latest Build", sw_json_str_at(mi, "status.latestBuild"));
    snprintf(text, sizeof(text), "every %llds (0: on registry notifications only)",
             (long long)sw_mi_verify_interval(mi));
    sw_describe__field(&b, "Verified", text);
    sw_describe__field(&b, "Rebuild on base change", sw_mi_rebuild_on_base(mi) ? "yes" : "no");
    const json_t *in = sw_json_at(mi, "status.inputs");
    sw_buf_puts(&b, "Inputs:\n");
    int64_t gen = 0;
    snprintf(text, sizeof(text), "%lld",
             sw_json_int_at(in, "generation", &gen) ? (long long)gen : 0LL);
    sw_buf_printf(&b, "  Spec Generation:\t%s\n", in ? text : "<none>");
    sw_buf_printf(&b, "  Spec Hash:\t%s\n", str_or(sw_json_str_at(in, "specHash"), "<none>"));
    sw_buf_printf(&b, "  Base Image:\t%s\n", str_or(sw_json_str_at(in, "baseImage"), "<none>"));
    sw_buf_printf(&b, "  Source Revision:\t%s\n",
                  str_or(sw_json_str_at(in, "sourceRevision"), "<none>"));
    sw_buf_puts(&b, "\n");
    put_strategy(&b, json_object_get(mi, "spec"));
    sw_buf_puts(&b, "\nConditions:\n  Type\tStatus\tReason\tLast Transition\tMessage\n"
                    "  ----\t------\t------\t---------------\t-------\n");
    size_t i;
    json_t *cond;
    json_array_foreach(sw_json_at(mi, "status.conditions"), i, cond)
    {
        char age[80], msg[1400];
        sw_describe__age(sw_json_str_at(cond, "lastTransitionTime"), now, age, sizeof(age));
        sw_strlcpy(msg, sw_json_str_at(cond, "message") ?: "", sizeof(msg));
        for (char *p = msg; *p; p++)
            if (*p == '\n' || *p == '\t')
                *p = ' ';
        sw_buf_printf(&b, "  %s\t%s\t%s\t%s\t%s\n", sw_json_str_at(cond, "type") ?: "",
                      sw_json_str_at(cond, "status") ?: "", sw_json_str_at(cond, "reason") ?: "",
                      age, msg);
    }
    put_owned(&b, c, mi);
    put_builds(&b, c, sw_json_str_at(mi, "metadata.namespace"),
               sw_json_str_at(mi, "metadata.name") ?: "", now);
    put_events(&b, c, mi, now);
    sw_describe__align(out, sw_buf_cstr(&b));
    sw_buf_dispose(&b);
}
