/* describe: `slipway describe is/<name>`, `istag/<stream:tag>`, `isimage/<stream@digest>` (and,
 * through describe_build.c, bc/, build/ and managedimage/), in the
 * layout of `oc describe` (openshift/oc pkg/helpers/describe): metadata, then for streams every
 * tag with its source, conditions and history newest first. See docs/cli.md. */
#include "cmd/describe.h"
#include "cmd/describe_int.h"

#include "cmd/cli.h"
#include "cmd/cmd.h"
#include "kinds/imagestream.h"
#include "kinds/import.h"
#include "util/alloc.h"
#include "util/error.h"
#include "util/json.h"
#include "util/str.h"
#include "util/time.h"

#include <stdlib.h>
#include <string.h>

#define TEXT_MAX (64u << 20)
#define TW_MAX_COLUMNS 16
#define TW_TAB_WIDTH 8

/* ---- column layout: Go's text/tabwriter with minwidth 0, tabwidth 8, padding 1, padchar '\t' ----
 */

typedef struct tw_line {
    sw_str *cells; /* split at '\t'; the last one is the line's trailing text */
    size_t n;
} tw_line;

typedef struct tw {
    tw_line *lines;
    size_t nlines;
    size_t widths[TW_MAX_COLUMNS];
    sw_buf *out;
} tw;

static size_t runes(sw_str s)
{
    size_t n = 0;
    for (size_t i = 0; i < s.len; i++)
        n += ((unsigned char)s.ptr[i] & 0xC0) != 0x80;
    return n;
}

/* Lines from..to with the first ncols cells padded to the column widths. */
static void tw_write(tw *t, size_t from, size_t to, size_t ncols)
{
    for (size_t l = from; l < to; l++) {
        const tw_line *ln = &t->lines[l];
        for (size_t j = 0; j < ln->n; j++) {
            sw_buf_put(t->out, ln->cells[j].ptr, ln->cells[j].len);
            if (j + 1 == ln->n || j >= ncols)
                continue;
            size_t cellw = (t->widths[j] + TW_TAB_WIDTH - 1) / TW_TAB_WIDTH * TW_TAB_WIDTH;
            size_t textw = runes(ln->cells[j]);
            size_t pad = cellw > textw ? cellw - textw : 0;
            for (size_t k = 0; k < (pad + TW_TAB_WIDTH - 1) / TW_TAB_WIDTH; k++)
                sw_buf_putc(t->out, '\t');
        }
        sw_buf_putc(t->out, '\n');
    }
}

/* A column block is a run of consecutive lines having a cell in column col; its width is the
 * widest cell plus the padding. Blocks nest, as in Go's tabwriter.format. */
static void tw_format(tw *t, size_t line0, size_t line1, size_t col)
{
    for (size_t cur = line0; col < TW_MAX_COLUMNS && cur < line1; cur++) {
        if (col + 1 >= t->lines[cur].n)
            continue;
        tw_write(t, line0, cur, col);
        line0 = cur;
        size_t width = 0;
        for (; cur < line1 && col + 1 < t->lines[cur].n; cur++) {
            size_t w = runes(t->lines[cur].cells[col]) + 1;
            if (w > width)
                width = w;
        }
        t->widths[col] = width;
        tw_format(t, line0, cur, col + 1);
        line0 = cur;
        if (cur == line1)
            break;
    }
    tw_write(t, line0, line1, col);
}

/* Appends text (lines of tab-separated cells, each ending in '\n') to out, aligned. */
void sw_describe__align(sw_buf *out, const char *text)
{
    tw t = {.out = out};
    size_t cap = 1;
    for (const char *p = text; *p; p++)
        cap += *p == '\n';
    t.lines = sw_calloc(cap, sizeof(*t.lines));
    for (const char *p = text; *p;) {
        const char *end = strchr(p, '\n');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        tw_line *ln = &t.lines[t.nlines++];
        size_t cells = 1;
        for (size_t i = 0; i < len; i++)
            cells += p[i] == '\t';
        ln->cells = sw_calloc(cells, sizeof(sw_str));
        const char *c = p;
        for (size_t i = 0; i <= len; i++) {
            if (i == len || p[i] == '\t') {
                ln->cells[ln->n++] = (sw_str){c, (size_t)(p + i - c)};
                c = p + i + 1;
            }
        }
        p += len + (end ? 1 : 0);
    }
    tw_format(&t, 0, t.nlines, 0);
    for (size_t i = 0; i < t.nlines; i++)
        sw_free(t.lines[i].cells);
    sw_free(t.lines);
}

/* ---- values as oc prints them ---- */

/* docker/go-units HumanDuration. */
void sw_describe__duration(int64_t secs, char *out, size_t n)
{
    int64_t minutes = secs / 60, hours = (secs + 1800) / 3600;
    if (secs < 1)
        snprintf(out, n, "Less than a second");
    else if (secs == 1)
        snprintf(out, n, "1 second");
    else if (secs < 60)
        snprintf(out, n, "%lld seconds", (long long)secs);
    else if (minutes == 1)
        snprintf(out, n, "About a minute");
    else if (minutes < 60)
        snprintf(out, n, "%lld minutes", (long long)minutes);
    else if (hours == 1)
        snprintf(out, n, "About an hour");
    else if (hours < 48)
        snprintf(out, n, "%lld hours", (long long)hours);
    else if (hours < 24 * 7 * 2)
        snprintf(out, n, "%lld days", (long long)(hours / 24));
    else if (hours < 24 * 30 * 2)
        snprintf(out, n, "%lld weeks", (long long)(hours / 24 / 7));
    else if (hours < 24 * 365 * 2)
        snprintf(out, n, "%lld months", (long long)(hours / 24 / 30));
    else
        snprintf(out, n, "%lld years", (long long)(secs / 3600 / 24 / 365));
}

/* "<age> ago" of an RFC 3339 time, or "<none>" when absent or unparsable. */
void sw_describe__age(const char *when, int64_t now, char *out, size_t n)
{
    int64_t t;
    char d[64];
    if (!when || sw_time_parse(when, &t) < 0) {
        snprintf(out, n, "<none>");
        return;
    }
    sw_describe__duration(now - t, d, sizeof(d));
    snprintf(out, n, "%s ago", d);
}

/* docker/go-units HumanSize: decimal units, 4 significant digits. */
static void human_size(double size, char *out, size_t n)
{
    static const char *const units[] = {"B", "kB", "MB", "GB", "TB", "PB", "EB", "ZB", "YB"};
    size_t i = 0;
    while (size >= 1000.0 && i < sizeof(units) / sizeof(units[0]) - 1) {
        size /= 1000.0;
        i++;
    }
    snprintf(out, n, "%.4g%s", size, units[i]);
}

/* formatString: "label:" then "\t<line>" for each line of value ("<none>" when empty). */
void sw_describe__field(sw_buf *b, const char *label, const char *value)
{
    sw_buf_printf(b, "%s:", label);
    if (!value || !*value)
        value = "<none>";
    for (const char *p = value;;) {
        const char *nl = strchr(p, '\n');
        size_t len = nl ? (size_t)(nl - p) : strlen(p);
        sw_buf_printf(b, "\t%.*s\n", (int)len, p);
        if (!nl)
            break;
        p = nl + 1;
    }
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* The keys of a JSON object, sorted; skip is left out (NULL: none). Free with sw_free. */
static const char **sorted_keys(const json_t *obj, const char *skip, size_t *n)
{
    const char **keys = sw_calloc(json_object_size(obj) + 1, sizeof(char *));
    const char *k;
    json_t *v;
    *n = 0;
    json_object_foreach((json_t *)obj, k, v)
    {
        if (!skip || strcmp(k, skip))
            keys[(*n)++] = k;
    }
    qsort(keys, *n, sizeof(char *), cmp_str);
    return keys;
}

/* formatMapStringString: sorted key=value, the first on the label's line. */
static void put_map(sw_buf *b, const char *label, const json_t *map, const char *skip)
{
    size_t n;
    const char **keys = sorted_keys(json_is_object(map) ? map : NULL, skip, &n);
    if (n == 0)
        sw_describe__field(b, label, "");
    for (size_t i = 0; i < n; i++) {
        const json_t *v = json_object_get(map, keys[i]);
        sw_buf_printf(b, "%s%s\t%s=%s\n", i ? "" : label, i ? "" : ":", keys[i],
                      json_is_string(v) ? json_string_value(v) : "");
    }
    sw_free(keys);
}

/* formatAnnotations: a Description line for "description", then the other annotations. */
static void put_annotations(sw_buf *b, const json_t *meta)
{
    const json_t *ann = json_object_get(meta, "annotations");
    const char *desc = json_string_value(json_object_get(ann, "description"));
    if (desc && *desc)
        sw_describe__field(b, "Description", desc);
    put_map(b, "Annotations", ann, "description");
}

void sw_describe__meta(sw_buf *b, const json_t *meta, int64_t now)
{
    char age[80];
    sw_describe__field(b, "Name", sw_json_str_at(meta, "name"));
    const char *ns = sw_json_str_at(meta, "namespace");
    if (ns && *ns)
        sw_describe__field(b, "Namespace", ns);
    const char *created = sw_json_str_at(meta, "creationTimestamp");
    if (created && *created) {
        sw_describe__age(created, now, age, sizeof(age));
        sw_describe__field(b, "Created", age);
    }
    put_map(b, "Labels", json_object_get(meta, "labels"), NULL);
    put_annotations(b, meta);
}

/* ---- image streams ---- */

/* Distinct images in the history (image-less reference events count by pull spec). */
static size_t unique_images(const json_t *stream)
{
    json_t *seen = json_object();
    size_t i, j;
    json_t *st, *ev;
    json_array_foreach(sw_json_at(stream, "status.tags"), i, st)
    {
        json_array_foreach(json_object_get(st, "items"), j, ev)
        {
            const char *id = sw_json_str_at(ev, "image");
            const char *ref = sw_json_str_at(ev, "dockerImageReference");
            const char *key = id && *id ? id : ref;
            if (key && *key)
                json_object_set_new(seen, key, json_true());
        }
    }
    size_t n = json_object_size(seen);
    json_decref(seen);
    return n;
}

/* The generation the import controller last observed for tag (latestObservedTagGeneration). */
static int64_t observed_generation(const json_t *stream, const char *tag)
{
    const json_t *st = sw_imagestream_status_tag(stream, tag);
    int64_t gen = 0, g;
    size_t i;
    json_t *c;
    if (sw_json_int_at(sw_cli_latest_event(stream, tag), "generation", &g) && g > gen)
        gen = g;
    json_array_foreach(json_object_get(st, "conditions"), i, c)
    {
        if (!sw_str_eq(sw_json_str_at(c, "type"), "ImportSuccess"))
            continue;
        if (sw_json_int_at(c, "generation", &g) && g > gen)
            gen = g;
        break;
    }
    return gen;
}

/* Tags in the order oc lists them, and which spec tags are same-stream aliases (shown next to
 * the tag they resolve to instead of on their own). */
typedef struct tag_list {
    const char **names; /* status tags, then spec-only tags, prioritized */
    size_t n;
    const char **alias;  /* spec tags that follow another tag */
    const char **target; /* the tag each alias resolves to */
    size_t nalias;
} tag_list;

static void tag_list_build(tag_list *tl, const json_t *stream)
{
    const json_t *spec = sw_json_at(stream, "spec.tags"),
                 *status = sw_json_at(stream, "status.tags");
    size_t i, cap = json_array_size(spec) + json_array_size(status) + 1;
    json_t *t;
    memset(tl, 0, sizeof(*tl));
    tl->names = sw_calloc(cap, sizeof(char *));
    tl->alias = sw_calloc(cap, sizeof(char *));
    tl->target = sw_calloc(cap, sizeof(char *));
    json_array_foreach(status, i, t)
    {
        if (sw_json_str_at(t, "tag"))
            tl->names[tl->n++] = sw_json_str_at(t, "tag");
    }
    json_array_foreach(spec, i, t)
    {
        const char *name = sw_json_str_at(t, "name"), *final;
        const json_t *ref;
        bool multiple;
        if (!name)
            continue;
        if (sw_cli_follow_tag(stream, name, &final, &ref, &multiple) == SW_CLI_FOLLOW_OK &&
            multiple) {
            tl->alias[tl->nalias] = name;
            tl->target[tl->nalias++] = final;
        }
        if (!sw_imagestream_status_tag(stream, name))
            tl->names[tl->n++] = name;
    }
    qsort(tl->names, tl->n, sizeof(char *), sw_import_tag_cmp);
}

static void tag_list_dispose(tag_list *tl)
{
    sw_free(tl->names);
    sw_free(tl->alias);
    sw_free(tl->target);
}

static bool is_alias(const tag_list *tl, const char *tag)
{
    for (size_t i = 0; i < tl->nalias; i++)
        if (!strcmp(tl->alias[i], tag))
            return true;
    return false;
}

/* "tag" or "tag (alias1, alias2)". */
static void put_tag_header(sw_buf *b, const tag_list *tl, const char *tag)
{
    const char **refs = sw_calloc(tl->nalias + 1, sizeof(char *));
    size_t n = 0;
    for (size_t i = 0; i < tl->nalias; i++)
        if (!strcmp(tl->target[i], tag))
            refs[n++] = tl->alias[i];
    qsort(refs, n, sizeof(char *), sw_import_tag_cmp);
    sw_buf_puts(b, tag);
    for (size_t i = 0; i < n; i++)
        sw_buf_printf(b, "%s%s", i ? ", " : " (", refs[i]);
    sw_buf_puts(b, n ? ")\n" : "\n");
    sw_free(refs);
}

/* Where the tag comes from: "tagged from X", "updates automatically from registry X", ... */
static void put_tag_source(sw_buf *b, const json_t *stream, const json_t *spec)
{
    const char *kind = sw_json_str_at(spec, "from.kind");
    const char *fname = sw_json_str_at(spec, "from.name");
    const char *fns = sw_json_str_at(spec, "from.namespace");
    bool reference = sw_json_bool_at(spec, "reference");
    bool scheduled = sw_json_bool_at(spec, "importPolicy.scheduled");
    char name[1024];
    if (fns && *fns && !sw_str_eq(fns, sw_json_str_at(stream, "metadata.namespace")))
        snprintf(name, sizeof(name), "%s/%s", fns, fname ? fname : "");
    else
        snprintf(name, sizeof(name), "%s", fname ? fname : "");
    if (!spec)
        sw_buf_puts(b, "  no spec tag\n");
    else if (!json_is_object(json_object_get(spec, "from")))
        sw_buf_puts(b, "  tag without source image\n");
    else if (sw_str_eq(kind, "ImageStreamTag"))
        sw_buf_printf(b, "  %s %s\n",
                      reference   ? "reference to"
                      : scheduled ? "updates automatically from"
                                  : "tagged from",
                      name);
    else if (sw_str_eq(kind, "DockerImage"))
        sw_buf_printf(b, "  %s %s\n",
                      reference   ? "reference to registry"
                      : scheduled ? "updates automatically from registry"
                                  : "tagged from",
                      name);
    else if (sw_str_eq(kind, "ImageStreamImage"))
        sw_buf_printf(b, "  %s %s\n", reference ? "reference to image" : "tagged from", name);
    else
        sw_buf_printf(b, "  %s %s %s\n", reference ? "reference to" : "updates from",
                      kind ? kind : "", name);
    if (sw_json_bool_at(spec, "importPolicy.insecure"))
        sw_buf_puts(b, "    will use insecure HTTPS or HTTP connections\n");
    if (sw_str_eq(sw_json_str_at(spec, "referencePolicy.type"), "Local"))
        sw_buf_puts(b, "    prefer registry pullthrough when referencing this tag\n");
    sw_buf_putc(b, '\n');
}

/* The sample-catalog annotations oc shows under a tag. */
static void put_tag_annotations(sw_buf *b, const json_t *spec)
{
    const json_t *ann = json_object_get(spec, "annotations");
    const char *d = json_string_value(json_object_get(ann, "description"));
    const char *tags = json_string_value(json_object_get(ann, "tags"));
    const char *supports = json_string_value(json_object_get(ann, "supports"));
    const char *repo = json_string_value(json_object_get(ann, "sampleRepo"));
    bool any = false;
    if (d && *d) {
        sw_buf_printf(b, "  %s\n", d);
        any = true;
    }
    for (int k = 0; k < 2; k++) {
        const char *list = k ? supports : tags;
        if (!list || !*list)
            continue;
        sw_buf_puts(b, k ? "  Supports: " : "  Tags: ");
        for (const char *p = list; *p; p++) {
            if (*p == ',')
                sw_buf_puts(b, ", ");
            else
                sw_buf_putc(b, *p);
        }
        sw_buf_putc(b, '\n');
        any = true;
    }
    if (repo && *repo) {
        sw_buf_printf(b, "  Example Repo: %s\n", repo);
        any = true;
    }
    if (any)
        sw_buf_putc(b, '\n');
}

/* Failed imports, then the history newest first (the digest shown when the pull spec is not by
 * that digest). */
static void put_tag_status(sw_buf *b, const json_t *st, bool importing, int64_t now)
{
    size_t i;
    json_t *c, *ev;
    char age[80];
    if (importing)
        sw_buf_puts(b, "  ~ importing latest image ...\n");
    json_array_foreach(json_object_get(st, "conditions"), i, c)
    {
        if (!sw_str_eq(sw_json_str_at(c, "type"), "ImportSuccess") ||
            !sw_str_eq(sw_json_str_at(c, "status"), "False"))
            continue;
        sw_describe__age(sw_json_str_at(c, "lastTransitionTime"), now, age, sizeof(age));
        sw_buf_printf(b, "  ! error: Import failed (%s): %s\n      %s\n",
                      sw_json_str_at(c, "reason") ?: "", sw_json_str_at(c, "message") ?: "", age);
    }
    if (json_array_size(json_object_get(st, "items")) == 0) {
        sw_buf_puts(b, "  not available\n");
        return;
    }
    json_array_foreach(json_object_get(st, "items"), i, ev)
    {
        const char *ref = sw_json_str_at(ev, "dockerImageReference") ?: "";
        const char *id = sw_json_str_at(ev, "image");
        const char *at = strrchr(ref, '@');
        sw_describe__age(sw_json_str_at(ev, "created"), now, age, sizeof(age));
        sw_buf_printf(b, "%s%s\n", i ? "    " : "  * ", ref);
        if (id && *id && !(at && !strcmp(at + 1, id)))
            sw_buf_printf(b, "      %s\t%s\n", age, id);
        else
            sw_buf_printf(b, "      %s\n", age);
    }
}

static void put_tag(sw_buf *b, const json_t *stream, const tag_list *tl, const char *tag,
                    int64_t now)
{
    const json_t *spec = sw_imagestream_spec_tag(stream, tag);
    bool importing = false;
    int64_t gen;
    if (spec && json_is_object(json_object_get(spec, "from")) &&
        !sw_json_bool_at(spec, "reference") && sw_json_int_at(spec, "generation", &gen))
        importing = gen > observed_generation(stream, tag);
    put_tag_header(b, tl, tag);
    put_tag_source(b, stream, spec);
    put_tag_annotations(b, spec);
    put_tag_status(b, sw_imagestream_status_tag(stream, tag), importing, now);
}

static void put_stream_tags(sw_buf *b, const json_t *stream, int64_t now)
{
    tag_list tl;
    bool first = true;
    if (!json_array_size(sw_json_at(stream, "status.tags")) &&
        !json_array_size(sw_json_at(stream, "spec.tags"))) {
        sw_buf_puts(b, "Tags:\t<none>\n");
        return;
    }
    tag_list_build(&tl, stream);
    sw_buf_printf(b, "Unique Images:\t%zu\nTags:\t%zu\n\n", unique_images(stream), tl.n);
    for (size_t i = 0; i < tl.n; i++) {
        if (is_alias(&tl, tl.names[i]))
            continue;
        if (!first)
            sw_buf_putc(b, '\n');
        first = false;
        put_tag(b, stream, &tl, tl.names[i], now);
    }
    tag_list_dispose(&tl);
}

void sw_describe_imagestream(sw_buf *out, const json_t *stream, int64_t now)
{
    sw_buf b = SW_BUF_INIT(TEXT_MAX);
    const char *pub = sw_json_str_at(stream, "status.publicDockerImageRepository");
    sw_describe__meta(&b, json_object_get(stream, "metadata"), now);
    sw_describe__field(&b, "Image Repository",
                       pub && *pub ? pub : sw_json_str_at(stream, "status.dockerImageRepository"));
    sw_buf_printf(&b, "Image Lookup:\tlocal=%s\n",
                  sw_json_bool_at(stream, "spec.lookupPolicy.local") ? "true" : "false");
    put_stream_tags(&b, stream, now);
    sw_describe__align(out, sw_buf_cstr(&b));
    sw_buf_dispose(&b);
}

/* ---- images ---- */

/* Lines of a string array joined by sep. */
static void join_strings(sw_buf *b, const json_t *arr, const char *sep)
{
    size_t i;
    json_t *v;
    json_array_foreach(arr, i, v)
    {
        sw_buf_printf(b, "%s%s", i ? sep : "", json_is_string(v) ? json_string_value(v) : "");
    }
}

/* Puts label with the values of arr (strings) joined by sep; nothing when empty unless always. */
static void put_joined(sw_buf *b, const char *label, const json_t *arr, const char *sep)
{
    sw_buf v = SW_BUF_INIT(TEXT_MAX);
    join_strings(&v, arr, sep);
    sw_describe__field(b, label, sw_buf_cstr(&v));
    sw_buf_dispose(&v);
}

static void put_layers(sw_buf *b, const json_t *image, const json_t *md)
{
    const json_t *layers = json_object_get(image, "dockerImageLayers");
    char size[32];
    int64_t total = 0;
    sw_json_int_at(md, "Size", &total);
    human_size((double)total, size, sizeof(size));
    if (json_array_size(layers) == 0) {
        sw_describe__field(b, "Layer Size", size);
        return;
    }
    sw_buf_printf(b, "Image Size:\t%s in %zu layers\n", size, json_array_size(layers));
    size_t i;
    json_t *l;
    json_array_foreach(layers, i, l)
    {
        int64_t n = 0;
        sw_json_int_at(l, "size", &n);
        human_size((double)n, size, sizeof(size));
        sw_buf_printf(b, "%s\t%s\t%s\n", i ? "" : "Layers:", size, sw_json_str_at(l, "name") ?: "");
    }
}

static void put_manifests(sw_buf *b, const json_t *image)
{
    size_t i;
    json_t *m;
    json_array_foreach(json_object_get(image, "dockerImageManifests"), i, m)
    {
        sw_buf_printf(b, "%s\t%s/%s\t%s\n", i ? "" : "Manifests:", sw_json_str_at(m, "os") ?: "",
                      sw_json_str_at(m, "architecture") ?: "", sw_json_str_at(m, "digest") ?: "");
    }
}

/* Sorted keys of an object, one per line after the label, or one line joined by ", ". */
static void put_key_lines(sw_buf *b, const char *label, const json_t *obj, bool one_line)
{
    size_t n;
    const char **keys = sorted_keys(json_is_object(obj) ? obj : NULL, NULL, &n);
    if (one_line) {
        sw_buf_printf(b, "%s:\t", label);
        for (size_t i = 0; i < n; i++)
            sw_buf_printf(b, "%s%s", i ? ", " : "", keys[i]);
        sw_buf_puts(b, n ? "\n" : "<none>\n");
    }
    for (size_t i = 0; !one_line && i < n; i++)
        sw_buf_printf(b, "%s\t%s\n", i ? "" : label, keys[i]);
    sw_free(keys);
}

/* describeDockerImage: the container configuration. */
static void put_config(sw_buf *b, const json_t *conf)
{
    const json_t *ep = json_object_get(conf, "Entrypoint"), *cmd = json_object_get(conf, "Cmd");
    if (json_array_size(ep))
        put_joined(b, "Entrypoint", ep, " ");
    if (json_array_size(cmd) || !json_array_size(ep))
        put_joined(b, "Command", cmd, " ");
    sw_describe__field(b, "Working Dir", sw_json_str_at(conf, "WorkingDir"));
    sw_describe__field(b, "User", sw_json_str_at(conf, "User"));
    put_key_lines(b, "Exposes Ports", json_object_get(conf, "ExposedPorts"), true);
    put_map(b, "Docker Labels", json_object_get(conf, "Labels"), NULL);
    size_t i;
    json_t *e;
    json_array_foreach(json_object_get(conf, "Env"), i, e)
    {
        sw_buf_printf(b, "%s\t%s\n", i ? "" : "Environment:", json_string_value(e) ?: "");
    }
    put_key_lines(b, "Volumes", json_object_get(conf, "Volumes"), false);
}

void sw_describe_image(sw_buf *out, const json_t *image, const char *name, int64_t now)
{
    sw_buf b = SW_BUF_INIT(TEXT_MAX);
    const json_t *meta = json_object_get(image, "metadata");
    const json_t *md = json_object_get(image, "dockerImageMetadata");
    char age[80];
    if (name && *name)
        sw_describe__field(&b, "Image Name", name);
    sw_describe__field(&b, "Docker Image", sw_json_str_at(image, "dockerImageReference"));
    sw_describe__field(&b, "Name", sw_json_str_at(meta, "name"));
    if (sw_json_str_at(meta, "creationTimestamp")) {
        sw_describe__age(sw_json_str_at(meta, "creationTimestamp"), now, age, sizeof(age));
        sw_describe__field(&b, "Created", age);
    }
    if (json_object_size(json_object_get(meta, "labels")))
        put_map(&b, "Labels", json_object_get(meta, "labels"), NULL);
    if (json_object_size(json_object_get(meta, "annotations")))
        put_annotations(&b, meta);
    put_layers(&b, image, md);
    sw_describe__age(sw_json_str_at(md, "Created"), now, age, sizeof(age));
    sw_describe__field(&b, "Image Created", age);
    sw_describe__field(&b, "Author", sw_json_str_at(md, "Author"));
    sw_describe__field(&b, "Arch", sw_json_str_at(md, "Architecture"));
    sw_describe__field(&b, "OS", sw_json_str_at(md, "Os"));
    put_manifests(&b, image);
    put_config(&b, json_object_get(md, "Config"));
    sw_describe__align(out, sw_buf_cstr(&b));
    sw_buf_dispose(&b);
}

/* ---- the command ---- */

enum target_kind { T_STREAM, T_TAG, T_IMAGE, T_BC, T_BUILD, T_MI, T_UNKNOWN };

static enum target_kind kind_of(const char *type, size_t len)
{
    static const struct {
        const char *name;
        enum target_kind kind;
    } names[] = {
        {"is", T_STREAM},       {"imagestream", T_STREAM},     {"imagestreams", T_STREAM},
        {"istag", T_TAG},       {"imagestreamtag", T_TAG},     {"imagestreamtags", T_TAG},
        {"isimage", T_IMAGE},   {"imagestreamimage", T_IMAGE}, {"imagestreamimages", T_IMAGE},
        {"bc", T_BC},           {"buildconfig", T_BC},         {"buildconfigs", T_BC},
        {"build", T_BUILD},     {"builds", T_BUILD},           {"mi", T_MI},
        {"managedimage", T_MI}, {"managedimages", T_MI},
    };
    static const char *const groups[] = {".image.openshift.io", ".build.openshift.io",
                                         ".image.slipway.dev"};
    for (size_t g = 0; g < sizeof(groups) / sizeof(groups[0]); g++)
        if (len > strlen(groups[g]) &&
            !strncmp(type + len - strlen(groups[g]), groups[g], strlen(groups[g])))
            len -= strlen(groups[g]);
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
        if (strlen(names[i].name) == len && !strncmp(names[i].name, type, len))
            return names[i].kind;
    return T_UNKNOWN;
}

static int unknown_type(const char *type, size_t len)
{
    return sw_error_set(SW_EINVALID,
                        "the resource type \"%.*s\" cannot be described: slipway describe knows "
                        "imagestreams (is), imagestreamtags (istag), imagestreamimages "
                        "(isimage), buildconfigs (bc), builds and managedimages (mi)",
                        (int)len, type);
}

/* Describes one object into out. */
static int describe_one(sw_cli *cli, enum target_kind kind, const char *name, sw_buf *out)
{
    json_t *obj = NULL;
    char full[600];
    int error;
    if (kind == T_STREAM) {
        error = sw_client_get(cli->client, &sw_res_imagestreams, cli->ns, name, &obj);
        if (error == 0)
            sw_describe_imagestream(out, obj, sw_time_now());
    } else if (kind == T_BC || kind == T_BUILD || kind == T_MI) {
        const sw_resource *r = kind == T_BC      ? &sw_res_buildconfigs
                               : kind == T_BUILD ? &sw_res_builds
                                                 : &sw_res_managedimages;
        error = sw_client_get(cli->client, r, cli->ns, name, &obj);
        if (error == 0 && kind == T_BC)
            sw_describe_buildconfig(out, cli->client, obj, sw_time_now());
        else if (error == 0 && kind == T_BUILD)
            sw_describe_build(out, cli->client, obj, sw_time_now());
        else if (error == 0)
            sw_describe_managedimage(out, cli->client, obj, sw_time_now());
    } else {
        const sw_resource *r = kind == T_TAG ? &sw_res_imagestreamtags : &sw_res_imagestreamimages;
        /* A tag name without ":<tag>" means latest, as oc's ImageStreamTag describer does. */
        snprintf(full, sizeof(full), "%s%s", name,
                 kind == T_TAG && !strchr(name, ':') ? ":latest" : "");
        error = sw_client_get(cli->client, r, cli->ns, full, &obj);
        if (error == 0)
            sw_describe_image(out, json_object_get(obj, "image"),
                              sw_json_str_at(obj, "image.metadata.name"), sw_time_now());
    }
    json_decref(obj);
    return error;
}

/* `describe is` without a name: every stream of the namespace. */
static int describe_all(sw_cli *cli, sw_buf *out, size_t *count)
{
    json_t *list = NULL;
    int error = sw_client_list(cli->client, &sw_res_imagestreams, cli->ns, NULL, &list);
    size_t i;
    json_t *s;
    json_array_foreach(json_object_get(list, "items"), i, s)
    {
        if ((*count)++)
            sw_buf_puts(out, "\n\n");
        sw_describe_imagestream(out, s, sw_time_now());
    }
    json_decref(list);
    return error;
}

/* The kind and name argument i stands for: "TYPE/NAME" each, or TYPE then names. */
static int parse_target(const sw_cli *cli, size_t i, bool slashed, enum target_kind *kind,
                        const char **name)
{
    const char *a = cli->args[i], *s = strchr(a, '/');
    if (!slashed) {
        *kind = kind_of(cli->args[0], strlen(cli->args[0]));
        *name = a;
    } else if (!s) {
        return sw_error_set(SW_EINVALID,
                            "there is no resource type in \"%s\": use TYPE/NAME for every "
                            "argument",
                            a);
    } else {
        *kind = kind_of(a, (size_t)(s - a));
        *name = s + 1;
        if (*kind == T_UNKNOWN)
            return unknown_type(a, (size_t)(s - a));
    }
    if (!**name)
        return sw_error_set(SW_EINVALID, "\"%s\": the name is empty", a);
    return 0;
}

/* Describes every argument, printing each description as soon as it is ready. */
static int describe_args(sw_cli *cli)
{
    const char *first = cli->args[0];
    bool slashed = strchr(first, '/') != NULL;
    size_t count = 0;
    int error = 0;
    sw_buf out = SW_BUF_INIT(TEXT_MAX);
    if (!slashed && kind_of(first, strlen(first)) == T_UNKNOWN)
        error = unknown_type(first, strlen(first));
    else if (!slashed && cli->nargs == 1 && kind_of(first, strlen(first)) == T_STREAM)
        error = describe_all(cli, &out, &count);
    fputs(sw_buf_cstr(&out), stdout);
    for (size_t i = slashed ? 0 : 1; error == 0 && i < cli->nargs; i++) {
        enum target_kind kind = T_UNKNOWN;
        const char *name = NULL;
        sw_buf_clear(&out);
        error = parse_target(cli, i, slashed, &kind, &name);
        if (error == 0)
            error = describe_one(cli, kind, name, &out);
        if (error == 0)
            printf("%s%s", count++ ? "\n\n" : "", sw_buf_cstr(&out));
    }
    if (error == 0 && count == 0)
        fprintf(stderr, "No resources found in %s namespace.\n", cli->ns);
    fflush(stdout);
    sw_buf_dispose(&out);
    return error;
}

int sw_cmd_describe(int argc, char **argv)
{
    sw_cli cli;
    int rc;
    static const sw_cli_command cmd = {
        .name = "describe",
        .usage = "(TYPE/NAME | TYPE [NAME...])",
        .summary =
            "Show details of image streams, image stream tags and images, as `oc describe` does.\n"
            "\n"
            "TYPE is is (imagestream), istag (imagestreamtag), isimage (imagestreamimage), bc\n"
            "(buildconfig), build or mi (managedimage).\n"
            "An image stream shows every tag with where it comes from, failed imports and its\n"
            "history, newest first; a tag or image shows the image's metadata; a build config\n"
            "its strategy and builds; a build its phase, cause and log tail; a ManagedImage its\n"
            "conditions, latest image, inputs, owned objects, builds and Events.",
        .examples = "  slipway describe is/ruby\n"
                    "  slipway describe imagestreams ruby python\n"
                    "  slipway describe istag/ruby:3.3\n"
                    "  slipway describe isimage/ruby@sha256:4e6c\n"
                    "  slipway describe mi/web bc/web build/web-1\n",
    };
    if (sw_cli_start(&cli, &cmd, argc, argv, &rc))
        return rc;
    if (cli.nargs == 0) {
        sw_error_set(SW_EINVALID, "you must specify the type of resource to describe");
        return sw_cli_usage_error(&cli);
    }
    int error = sw_cli_connect(&cli);
    if (error == 0)
        error = describe_args(&cli);
    return sw_cli_finish(&cli, error);
}
