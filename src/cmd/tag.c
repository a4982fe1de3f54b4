/* tag: `slipway tag SOURCE DEST...` and `slipway tag -d DEST...`, as `oc tag`
 * (openshift-api.md §1.4): the source kind is inferred (registry host ⇒ DockerImage, "@" ⇒
 * ImageStreamImage, ":" ⇒ ImageStreamTag); without --alias an image stream tag is copied as the
 * image it points at now; each destination's spec tag is written by GET + PUT with conflict
 * retries (the stream is created when missing); -d deletes through imagestreamtags.
 * See docs/cli.md. */
#include "cmd/cli.h"
#include "cmd/cmd.h"

#include "kinds/imagestream.h"
#include "util/alloc.h"
#include "util/error.h"
#include "util/json.h"
#include "util/str.h"

#include <string.h>
#include <strings.h>

#define WRITE_ATTEMPTS 10

typedef struct tag_opts {
    bool del, alias, reference, scheduled, insecure;
    const char *reference_policy; /* source | local */
    const char *source_kind;      /* --source, or NULL */
} tag_opts;

/* An image reference split as library-go's reference.Parse does (no defaults filled in). */
typedef struct image_ref {
    char registry[256];
    char ns[256];
    char name[512];
    char tag[129];
    char id[128];
} image_ref;

typedef struct tag_source {
    const char *kind; /* DockerImage, ImageStreamTag or ImageStreamImage */
    image_ref ref;
    char docker[1024]; /* the pull spec, for DockerImage */
} tag_source;

/* ---- references ---- */

static bool copy_part(char *dst, size_t n, const char *s, size_t len)
{
    if (len >= n)
        return false;
    memcpy(dst, s, len);
    dst[len] = '\0';
    return true;
}

static bool registry_like(const char *s, size_t len)
{
    return memchr(s, '.', len) || memchr(s, ':', len) || (len == 9 && !strncmp(s, "localhost", 9));
}

/* [registry/][namespace/]name[:tag][@id]: the first component is a registry only when another
 * follows and it has a '.' or ':' or is "localhost". SW_EINVALID when a part is empty or long. */
static int parse_ref(const char *s, image_ref *r)
{
    const char *at = strchr(s, '@');
    size_t len = at ? (size_t)(at - s) : strlen(s);
    const char *slash = memchr(s, '/', len);
    const char *path = s, *last = s;
    bool ok = true;
    memset(r, 0, sizeof(*r));
    if (at)
        ok &= at[1] && copy_part(r->id, sizeof(r->id), at + 1, strlen(at + 1));
    if (slash && registry_like(s, (size_t)(slash - s))) {
        ok &= copy_part(r->registry, sizeof(r->registry), s, (size_t)(slash - s));
        path = slash + 1;
    }
    size_t plen = len - (size_t)(path - s);
    for (const char *p = path; p < path + plen; p++)
        if (*p == '/')
            last = p + 1;
    if (last < path)
        last = path;
    const char *colon = memchr(last, ':', plen - (size_t)(last - path));
    size_t nlen = colon ? (size_t)(colon - path) : plen;
    if (colon)
        ok &= colon + 1 < path + plen &&
              copy_part(r->tag, sizeof(r->tag), colon + 1, (size_t)(path + plen - colon - 1));
    const char *ns_end = memchr(path, '/', nlen);
    if (ns_end) {
        ok &= copy_part(r->ns, sizeof(r->ns), path, (size_t)(ns_end - path));
        ok &= copy_part(r->name, sizeof(r->name), ns_end + 1, nlen - (size_t)(ns_end - path) - 1);
    } else {
        ok &= copy_part(r->name, sizeof(r->name), path, nlen);
    }
    if (!ok || !r->name[0] || (ns_end && !r->ns[0]))
        return sw_error_set(SW_EINVALID, "invalid SOURCE: \"%s\" is not a valid image reference",
                            s);
    return 0;
}

/* "<name>:<tag>", "<name>@<id>" or "<name>" (DockerImageReference.NameString). */
static void name_string(const image_ref *r, char *out, size_t n)
{
    snprintf(out, n, "%s%s%s", r->name,
             r->id[0]    ? "@"
             : r->tag[0] ? ":"
                         : "",
             r->id[0] ? r->id : r->tag);
}

/* ---- source ---- */

static int source_kind_flag(const char *v, const char **kind)
{
    static const char *const names[][2] = {
        {"imagestreamtag", "ImageStreamTag"},
        {"istag", "ImageStreamTag"},
        {"imagestreamimage", "ImageStreamImage"},
        {"isimage", "ImageStreamImage"},
        {"docker", "DockerImage"},
        {"dockerimage", "DockerImage"},
    };
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
        if (!strcasecmp(v, names[i][0])) {
            *kind = names[i][1];
            return 0;
        }
    return sw_error_set(SW_EINVALID,
                        "invalid source \"%s\"; valid values are docker, dockerimage, "
                        "imagestreamimage, imagestreamtag, isimage, istag",
                        v);
}

/* Parses the SOURCE argument and settles its kind (explicit --source, or inferred). */
static int parse_source(const tag_opts *o, const char *arg, tag_source *src)
{
    int error = parse_ref(arg, &src->ref);
    src->kind = NULL;
    if (error == 0 && o->source_kind)
        error = source_kind_flag(o->source_kind, &src->kind);
    if (error < 0)
        return error;
    sw_strlcpy(src->docker, arg, sizeof(src->docker));
    if (!src->kind)
        src->kind = src->ref.registry[0] ? "DockerImage"
                    : src->ref.id[0]     ? "ImageStreamImage"
                    : src->ref.tag[0]    ? "ImageStreamTag"
                                         : "DockerImage";
    if (!strcmp(src->kind, "DockerImage"))
        return 0;
    if (src->ref.registry[0])
        return sw_error_set(SW_EINVALID,
                            "server in SOURCE is only allowed when providing a container image");
    if (!strcmp(src->kind, "ImageStreamTag") && !src->ref.tag[0])
        return sw_error_set(SW_EINVALID,
                            "--source=ImageStreamTag requires a valid <name>:<tag> in SOURCE");
    if (!strcmp(src->kind, "ImageStreamImage") && !src->ref.id[0])
        return sw_error_set(SW_EINVALID,
                            "--source=ImageStreamImage requires a valid <name>@<id> in SOURCE");
    return 0;
}

/* Without --alias an image stream tag is copied as what it points at now: its image
 * (ImageStreamImage), or its pull spec when the event has no image (a reference tag). */
static int resolve_source(sw_cli *cli, const char *arg, tag_source *src)
{
    json_t *stream = NULL;
    const char *ns = src->ref.ns[0] ? src->ref.ns : cli->ns;
    int error = sw_client_get(cli->client, &sw_res_imagestreams, ns, src->ref.name, &stream);
    const json_t *ev = error == 0 ? sw_cli_latest_event(stream, src->ref.tag) : NULL;
    const char *image = sw_json_str_at(ev, "image");
    const char *pull = sw_json_str_at(ev, "dockerImageReference");
    if (error == 0 && !ev)
        error = sw_error_set(SW_ENOTFOUND,
                             "\"%s\" is not currently pointing to an image, cannot use it as the "
                             "source of a tag",
                             arg);
    if (error == 0 && image && *image) {
        sw_strlcpy(src->ref.id, image, sizeof(src->ref.id));
        src->ref.tag[0] = '\0';
        src->kind = "ImageStreamImage";
    } else if (error == 0) {
        error = parse_ref(pull ? pull : "", &src->ref);
        if (error < 0)
            error = sw_error_set(SW_EINVALID,
                                 "the image stream tag \"%s\" has an invalid pull spec and cannot "
                                 "be used to tag",
                                 arg);
        sw_strlcpy(src->docker, pull ? pull : "", sizeof(src->docker));
        src->kind = "DockerImage";
    }
    json_decref(stream);
    return error;
}

/* The source as oc prints it in its messages. */
static void source_text(const tag_source *src, char *out, size_t n)
{
    char name[700];
    if (!strcmp(src->kind, "DockerImage")) {
        sw_strlcpy(out, src->docker, n);
        return;
    }
    name_string(&src->ref, name, sizeof(name));
    snprintf(out, n, "%s%s%s", src->ref.ns, src->ref.ns[0] ? "/" : "", name);
}

/* ---- destinations ---- */

typedef struct tag_dest {
    char ns[256];
    char stream[256];
    char tag[129];
    const char *arg; /* "<stream>:<tag>" as given after any namespace */
} tag_dest;

/* "[<namespace>/]<stream>:<tag>"; ns stays empty when not given (the default fills it). */
static int parse_dest(const char *arg, tag_dest *d)
{
    const char *slash = strchr(arg, '/');
    const char *nt = slash ? slash + 1 : arg;
    if (slash && (strchr(nt, '/') || slash == arg || !*nt))
        return sw_error_set(SW_EINVALID, "invalid image stream \"%s\"", arg);
    if (slash && !copy_part(d->ns, sizeof(d->ns), arg, (size_t)(slash - arg)))
        return sw_error_set(SW_EINVALID, "invalid namespace in \"%s\"", arg);
    d->arg = nt;
    const char *colon = strchr(nt, ':');
    if (!colon || colon == nt || !colon[1] || strchr(nt, '@') ||
        !copy_part(d->stream, sizeof(d->stream), nt, (size_t)(colon - nt)) ||
        !copy_part(d->tag, sizeof(d->tag), colon + 1, strlen(colon + 1)))
        return sw_error_set(SW_EINVALID, "\"%s\" must be of the form <stream_name>:<tag>", nt);
    return 0;
}

/* oc's Validate, the part that needs no server: flag combinations that cannot work. */
static int validate_flags(const tag_opts *o)
{
    if (o->del && o->alias)
        return sw_error_set(SW_EINVALID, "--alias and --delete may not be both specified");
    if (strcmp(o->reference_policy, "source") && strcmp(o->reference_policy, "local"))
        return sw_error_set(SW_EINVALID, "reference policy must be set to 'source' or 'local'");
    if (o->del && o->source_kind)
        return sw_error_set(SW_EINVALID, "cannot specify a source kind when deleting");
    if (o->del && (o->scheduled || o->insecure))
        return sw_error_set(SW_EINVALID, "cannot set flags for importing images when deleting a "
                                         "tag");
    if (o->alias && (o->scheduled || o->insecure))
        return sw_error_set(SW_EINVALID,
                            "cannot set a container image tag as an alias and also set import "
                            "flags");
    return 0;
}

/* The rest of oc's Validate, once the source is resolved. */
static int validate_source(const tag_opts *o, const tag_source *src, const tag_dest *dests,
                           size_t n, const char *ns)
{
    if (strcmp(src->kind, "DockerImage") && (o->scheduled || o->insecure))
        return sw_error_set(SW_EINVALID, "only container images can have importing flags set");
    const char *sns = src->ref.ns[0] ? src->ref.ns : ns;
    for (size_t i = 0; o->alias && i < n; i++)
        if (strcmp(dests[i].ns, sns) || strcmp(dests[i].stream, src->ref.name))
            return sw_error_set(SW_EINVALID, "cannot set alias across different Image Streams");
    return 0;
}

/* ---- writing ---- */

static json_t *new_spec_tag(const tag_opts *o, const tag_source *src, const tag_dest *d,
                            const char *ns)
{
    char from[1024];
    bool docker = !strcmp(src->kind, "DockerImage");
    if (docker)
        sw_strlcpy(from, src->docker, sizeof(from));
    else
        name_string(&src->ref, from, sizeof(from));
    json_t *t = json_pack("{s:s, s:b, s:{s:b, s:b}, s:{s:s}, s:{s:s, s:s}}", "name", d->tag,
                          "reference", o->reference, "importPolicy", "insecure", o->insecure,
                          "scheduled", o->scheduled, "referencePolicy", "type",
                          strcmp(o->reference_policy, "local") ? "Source" : "Local", "from", "kind",
                          src->kind, "name", from);
    if (docker) /* generation 0: import again even when the source did not change */
        json_object_set_new(t, "generation", json_integer(0));
    else if (src->ref.ns[0] || strcmp(d->ns, ns))
        json_object_set_new(json_object_get(t, "from"), "namespace",
                            json_string(src->ref.ns[0] ? src->ref.ns : ns));
    return t;
}

/* Puts tag into stream's spec.tags, replacing a tag of the same name. */
static void put_spec_tag(json_t *stream, const json_t *tag)
{
    json_t *tags = sw_json_at(stream, "spec.tags");
    json_t *old = sw_imagestream_spec_tag(stream, sw_json_str_at(tag, "name"));
    size_t i;
    json_t *t;
    if (!json_is_array(tags)) {
        tags = json_array();
        sw_json_set_path(stream, "spec.tags", tags);
    }
    json_array_foreach(tags, i, t)
    {
        if (t == old) {
            json_array_set(tags, i, (json_t *)tag);
            return;
        }
    }
    json_array_append(tags, (json_t *)tag);
}

/* GET the stream, set the tag, PUT it back (or create the stream); retried on conflicts. */
static int write_tag(sw_cli *cli, const tag_dest *d, const json_t *tag, json_t **saved)
{
    int error = 0;
    for (int attempt = 0; attempt < WRITE_ATTEMPTS; attempt++) {
        json_t *stream = NULL;
        error = sw_client_get(cli->client, &sw_res_imagestreams, d->ns, d->stream, &stream);
        if (error == SW_ENOTFOUND) {
            stream = json_pack("{s:s, s:s, s:{s:s, s:s}, s:{s:[O]}}", "apiVersion",
                               "image.openshift.io/v1", "kind", "ImageStream", "metadata", "name",
                               d->stream, "namespace", d->ns, "spec", "tags", tag);
            error = sw_client_create(cli->client, &sw_res_imagestreams, d->ns, stream, saved);
        } else if (error == 0) {
            put_spec_tag(stream, tag);
            error = sw_client_update(cli->client, &sw_res_imagestreams, d->ns, stream, saved);
        }
        json_decref(stream);
        if (error != SW_ECONFLICT && error != SW_EEXISTS)
            break;
    }
    return error;
}

/* The Image an ImageStreamImage source names (the digest may be a prefix): *out is new, and
 * NULL for other kinds. Fails (before anything is written) when the image is unknown. */
static int source_image(sw_cli *cli, const tag_source *src, json_t **out)
{
    char name[700];
    *out = NULL;
    if (strcmp(src->kind, "ImageStreamImage"))
        return 0;
    name_string(&src->ref, name, sizeof(name));
    return sw_client_get(cli->client, &sw_res_imagestreamimages,
                         src->ref.ns[0] ? src->ref.ns : cli->ns, name, out);
}

/* A tag copied from an image of another stream gets that image in its status. The server
 * records it when it resolves ImageStreamImage references itself; when it has not, the event is
 * recorded through an ImageStreamMapping, as a registry push would be. */
static int ensure_image_event(sw_cli *cli, const json_t *isimage, const tag_dest *d,
                              const json_t *saved)
{
    const char *head = sw_json_str_at(sw_cli_latest_event(saved, d->tag), "image");
    const json_t *image = json_object_get(isimage, "image");
    const char *id = sw_json_str_at(image, "metadata.name");
    if (!isimage || (head && sw_str_eq(head, id)))
        return 0;
    json_t *mapping =
        json_pack("{s:s, s:s, s:{s:s, s:s}, s:O, s:s}", "apiVersion", "image.openshift.io/v1",
                  "kind", "ImageStreamMapping", "metadata", "name", d->stream, "namespace", d->ns,
                  "image", image, "tag", d->tag);
    int error = sw_client_create(cli->client, &sw_res_imagestreammappings, d->ns, mapping, NULL);
    json_decref(mapping);
    return error;
}

static void print_done(const tag_opts *o, const tag_source *src, const tag_dest *d, const char *ns)
{
    char what[1100], dest[600];
    source_text(src, what, sizeof(what));
    if (strcmp(d->ns, ns))
        snprintf(dest, sizeof(dest), "%s/%s", d->ns, d->arg);
    else
        snprintf(dest, sizeof(dest), "%s", d->arg);
    if (o->alias)
        printf("Tag %s set up to track %s.\n", dest, what);
    else if (o->scheduled)
        printf("Tag %s set to import %s periodically.\n", dest, what);
    else
        printf("Tag %s set to %s.\n", dest, what);
    fflush(stdout);
}

static int tag_all(sw_cli *cli, const tag_opts *o, const tag_source *src, const tag_dest *dests,
                   size_t n)
{
    json_t *isimage = NULL;
    int error = source_image(cli, src, &isimage);
    for (size_t i = 0; i < n && error == 0; i++) {
        json_t *saved = NULL, *spec = new_spec_tag(o, src, &dests[i], cli->ns);
        error = write_tag(cli, &dests[i], spec, &saved);
        if (error == 0)
            error = ensure_image_event(cli, isimage, &dests[i], saved);
        if (error == 0)
            print_done(o, src, &dests[i], cli->ns);
        json_decref(spec);
        json_decref(saved);
    }
    json_decref(isimage);
    return error;
}

static int delete_all(sw_cli *cli, const tag_dest *dests, size_t n)
{
    int error = 0;
    for (size_t i = 0; i < n && error == 0; i++) {
        error = sw_client_delete(cli->client, &sw_res_imagestreamtags, dests[i].ns, dests[i].arg);
        if (error == 0) {
            printf("Deleted tag %s/%s.\n", dests[i].ns, dests[i].arg);
            fflush(stdout);
        }
    }
    return error;
}

/* Checks the arguments; on success dests holds every destination. */
static int parse_args(const sw_cli *cli, const tag_opts *o, tag_source *src, tag_dest *dests,
                      size_t *n)
{
    size_t first = o->del ? 0 : 1;
    int error = validate_flags(o);
    if (error == 0 && cli->nargs < first + 1)
        error = sw_error_set(SW_EINVALID, "you must specify a source and at least one "
                                          "destination or one or more tags to delete");
    if (error == 0 && !o->del)
        error = parse_source(o, cli->args[0], src);
    for (size_t i = first; error == 0 && i < cli->nargs; i++)
        error = parse_dest(cli->args[i], &dests[(*n)++]);
    return error;
}

static int run(sw_cli *cli, const tag_opts *o, tag_source *src, tag_dest *dests, size_t n)
{
    int error = 0;
    for (size_t i = 0; i < n; i++)
        if (!dests[i].ns[0])
            sw_strlcpy(dests[i].ns, cli->ns, sizeof(dests[i].ns));
    if (o->del)
        return delete_all(cli, dests, n);
    if (!strcmp(src->kind, "ImageStreamTag") && !o->alias)
        error = resolve_source(cli, cli->args[0], src);
    if (error == 0)
        error = validate_source(o, src, dests, n, cli->ns);
    if (error == 0)
        error = tag_all(cli, o, src, dests, n);
    return error;
}

int sw_cmd_tag(int argc, char **argv)
{
    tag_opts o = {.reference_policy = "source"};
    tag_source src = {0};
    tag_dest *dests = NULL;
    size_t n = 0;
    sw_cli cli;
    int rc;
    const sw_cli_flag flags[] = {
        {.name = "source",
         .kind = SW_CLI_STRING,
         .value = &o.source_kind,
         .arg = "KIND",
         .help =
             "The source's type: docker, imagestreamtag (istag) or imagestreamimage (isimage)."},
        {.name = "delete",
         .short_name = 'd',
         .kind = SW_CLI_BOOL,
         .value = &o.del,
         .help = "Delete the given spec tags (and their history)."},
        {.name = "alias",
         .kind = SW_CLI_BOOL,
         .value = &o.alias,
         .help = "Track the source tag: follow it whenever it changes (same image stream only)."},
        {.name = "reference",
         .kind = SW_CLI_BOOL,
         .value = &o.reference,
         .help = "Point at the source without importing it."},
        {.name = "scheduled",
         .kind = SW_CLI_BOOL,
         .value = &o.scheduled,
         .help = "Re-import a container image periodically from its registry."},
        {.name = "insecure",
         .kind = SW_CLI_BOOL,
         .value = &o.insecure,
         .help = "The registry is served over HTTP or has an invalid HTTPS certificate."},
        {.name = "reference-policy",
         .kind = SW_CLI_STRING,
         .value = &o.reference_policy,
         .arg = "POLICY",
         .help = "source (default) or local: where consumers pull from."},
    };
    const sw_cli_command cmd = {
        .name = "tag",
        .usage = "SOURCE DEST [DEST...] | -d DEST...",
        .summary =
            "Tag existing images into image streams.\n"
            "\n"
            "SOURCE is a container image (a registry host in its first component), an image\n"
            "stream image (<stream>@<digest>) or an image stream tag (<stream>:<tag>); DEST is\n"
            "[<namespace>/]<stream>:<tag>. An image stream tag is copied as the image it points\n"
            "at now unless --alias makes DEST follow it.",
        .examples = "  slipway tag quay.io/org/ruby:3.3 ruby:3.3\n"
                    "  slipway tag ruby:3.3 ruby:stable\n"
                    "  slipway tag --alias ruby:3.3 ruby:latest\n"
                    "  slipway tag -d ruby:old\n",
        .flags = flags,
        .nflags = sizeof(flags) / sizeof(flags[0]),
    };
    if (sw_cli_start(&cli, &cmd, argc, argv, &rc))
        return rc;
    dests = sw_calloc(cli.nargs + 1, sizeof(*dests));
    int error = parse_args(&cli, &o, &src, dests, &n);
    if (error < 0) {
        sw_free(dests);
        return sw_cli_usage_error(&cli);
    }
    error = sw_cli_connect(&cli);
    if (error == 0)
        error = run(&cli, &o, &src, dests, n);
    sw_free(dests);
    return sw_cli_finish(&cli, error);
}
