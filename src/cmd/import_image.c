/* import_image: `slipway import-image <stream>[:tag]`, as `oc import-image`: works out what to
 * import (a new stream from --from with --confirm, an existing DockerImage tag again, a whole
 * repository with --all), posts one ImageStreamImport and prints the resulting stream and images
 * the way oc does. Any failed image makes the command exit 1. See docs/cli.md. */
#include "cmd/cli.h"
#include "cmd/cmd.h"
#include "cmd/describe.h"

#include "kinds/imagestream.h"
#include "util/error.h"
#include "util/json.h"
#include "util/str.h"
#include "util/time.h"

#include <string.h>

#define OUT_MAX (64u << 20)
#define IMPORT_TIMEOUT_MS (10 * 60 * 1000) /* a 50-tag repository import can take a while */
#define INSECURE_ANNOTATION "openshift.io/image.insecureRepository"

typedef struct import_opts {
    const char *target; /* the argument, <stream>[:tag] */
    const char *from;   /* --from */
    bool confirm, all, scheduled, insecure, dry_run;
    bool insecure_given;          /* --insecure was on the command line */
    const char *import_mode;      /* --import-mode, or NULL */
    const char *reference_policy; /* --reference-policy, or NULL */
    char name[256];               /* the stream */
    char tag[129];                /* the tag ("" with --all) */
} import_opts;

/* ---- arguments ---- */

static int parse_target(import_opts *o)
{
    const char *t = o->target;
    const char *base = strrchr(t, '/');
    base = base ? base + 1 : t;
    const char *colon = strchr(base, ':');
    size_t nlen = colon ? (size_t)(colon - base) : strlen(base);
    if (strchr(t, '@'))
        return sw_error_set(SW_EINVALID, "to import images by ID, use the 'tag' command");
    if (colon && o->all)
        return sw_error_set(SW_EINVALID, "cannot specify a tag \"%s\" as well as --all", t);
    bool bad_tag = colon && (!colon[1] || strlen(colon + 1) >= sizeof(o->tag));
    if (nlen == 0 || nlen >= sizeof(o->name) || bad_tag)
        return sw_error_set(SW_EINVALID,
                            "the image name must be a valid container image pull spec or "
                            "reference to an image stream (e.g. myregistry/myteam/image:tag)");
    memcpy(o->name, base, nlen);
    o->name[nlen] = '\0';
    sw_strlcpy(o->tag, colon ? colon + 1 : o->all ? "" : "latest", sizeof(o->tag));
    return 0;
}

static int check_flags(const import_opts *o)
{
    const char *m = o->import_mode, *r = o->reference_policy;
    if (m && strcmp(m, "Legacy") && strcmp(m, "PreserveOriginal"))
        return sw_error_set(SW_EINVALID,
                            "--import-mode must be Legacy or PreserveOriginal, not "
                            "\"%s\"",
                            m);
    if (r && strcmp(r, "source") && strcmp(r, "local"))
        return sw_error_set(SW_EINVALID, "reference policy must be set to 'source' or 'local'");
    return 0;
}

/* ---- the ImageStreamImport ---- */

static json_t *new_isi(const import_opts *o, const char *ns)
{
    return json_pack("{s:s, s:s, s:{s:s, s:s}, s:{s:b, s:[]}}", "apiVersion",
                     "image.openshift.io/v1", "kind", "ImageStreamImport", "metadata", "name",
                     o->name, "namespace", ns, "spec", "import", !o->dry_run, "images");
}

/* importPolicy from the flags, merged with an existing spec tag's (old may be NULL). */
static json_t *import_policy(const import_opts *o, bool insecure, const json_t *old)
{
    const char *mode =
        o->import_mode ? o->import_mode : sw_json_str_at(old, "importPolicy.importMode");
    json_t *p = json_pack("{s:b, s:b}", "insecure",
                          insecure || sw_json_bool_at(old, "importPolicy.insecure"), "scheduled",
                          o->scheduled || sw_json_bool_at(old, "importPolicy.scheduled"));
    if (mode && *mode)
        json_object_set_new(p, "importMode", json_string(mode));
    return p;
}

/* referencePolicy from --reference-policy, else the existing spec tag's; NULL: leave unset. */
static json_t *reference_policy(const import_opts *o, const json_t *old)
{
    const char *type = o->reference_policy
                           ? (strcmp(o->reference_policy, "local") ? "Source" : "Local")
                           : sw_json_str_at(old, "referencePolicy.type");
    return type && *type ? json_pack("{s:s}", "type", type) : NULL;
}

/* Whether imports of stream skip TLS checks: --insecure when given, else its annotation. */
static bool stream_insecure(const import_opts *o, const json_t *stream)
{
    if (o->insecure_given)
        return o->insecure;
    const json_t *ann = sw_json_at(stream, "metadata.annotations");
    return sw_str_eq(json_string_value(json_object_get(ann, INSECURE_ANNOTATION)), "true");
}

static void add_image(json_t *isi, const import_opts *o, const char *from, const char *to,
                      bool insecure, const json_t *old)
{
    json_t *e = json_pack("{s:{s:s, s:s}, s:{s:s}, s:o}", "from", "kind", "DockerImage", "name",
                          from, "to", "name", to, "importPolicy", import_policy(o, insecure, old));
    json_t *rp = reference_policy(o, old);
    if (rp)
        json_object_set_new(e, "referencePolicy", rp);
    json_array_append_new(sw_json_at(isi, "spec.images"), e);
}

static void set_repository(json_t *isi, const import_opts *o, const char *from, bool insecure)
{
    json_t *repo = json_pack("{s:{s:s, s:s}, s:o}", "from", "kind", "DockerImage", "name", from,
                             "importPolicy", import_policy(o, insecure, NULL));
    json_t *rp = reference_policy(o, NULL);
    if (rp)
        json_object_set_new(repo, "referencePolicy", rp);
    sw_json_set_path(isi, "spec.repository", repo);
}

/* A stream that does not exist yet: --from (or the argument itself) is the source. */
static int plan_new(const import_opts *o, json_t *isi)
{
    const char *from = o->from ? o->from : o->target;
    if (!o->confirm)
        return sw_error_set(SW_ENOTFOUND,
                            "no image stream named \"%s\" exists, pass --confirm to create and "
                            "import",
                            o->name);
    if (o->all)
        set_repository(isi, o, from, o->insecure);
    else
        add_image(isi, o, from, o->tag, o->insecure, NULL);
    return 0;
}

/* --all on an existing stream: its repository, or else every DockerImage spec tag. */
static int plan_all(const import_opts *o, const json_t *stream, json_t *isi)
{
    const char *repo = sw_json_str_at(stream, "spec.dockerImageRepository");
    const char *from = o->from ? o->from : repo && *repo ? repo : NULL;
    bool insecure = stream_insecure(o, stream);
    if (!from) {
        size_t i;
        json_t *t;
        json_array_foreach(sw_json_at(stream, "spec.tags"), i, t)
        {
            if (sw_str_eq(sw_json_str_at(t, "from.kind"), "DockerImage") &&
                sw_json_str_at(t, "from.name") && sw_json_str_at(t, "name"))
                add_image(isi, o, sw_json_str_at(t, "from.name"), sw_json_str_at(t, "name"),
                          insecure, t);
        }
        if (json_array_size(sw_json_at(isi, "spec.images")) == 0)
            return sw_error_set(SW_EINVALID, "image stream does not have tags pointing to "
                                             "external container images");
        return 0;
    }
    if (!sw_str_eq(from, repo) && !o->confirm) {
        if (!repo || !*repo)
            return sw_error_set(SW_EINVALID, "the image stream does not currently import an "
                                             "entire Docker repository, pass --confirm to update");
        return sw_error_set(SW_EINVALID,
                            "the image stream has a different import spec \"%s\", pass --confirm "
                            "to update",
                            repo);
    }
    set_repository(isi, o, from, insecure);
    return 0;
}

/* A tag the stream has no spec for: --from (with --confirm) or the stream's repository. */
static int plan_missing_tag(const import_opts *o, const json_t *stream, json_t *isi)
{
    const char *repo = sw_json_str_at(stream, "spec.dockerImageRepository");
    const char *from = o->from;
    if (!from && !strcmp(o->tag, "latest") && repo && *repo)
        from = repo;
    if (!from)
        return sw_error_set(SW_ENOTFOUND,
                            "the tag \"%s\" does not exist on the image stream - choose an "
                            "existing tag to import or use the 'tag' command to create a new tag",
                            o->tag);
    if (o->from && !o->confirm)
        return sw_error_set(SW_ENOTFOUND,
                            "the tag \"%s\" does not exist on the image stream - choose an "
                            "existing tag to import or use the 'confirm' flag to create a new "
                            "image stream or tag",
                            o->tag);
    add_image(isi, o, from, o->tag, stream_insecure(o, stream), NULL);
    return 0;
}

/* One tag of an existing stream, following same-stream references to the DockerImage tag. */
static int plan_tag(const import_opts *o, const json_t *stream, json_t *isi)
{
    const char *final, *tag = o->tag;
    const json_t *ref;
    bool multiple;
    switch (sw_cli_follow_tag(stream, tag, &final, &ref, &multiple)) {
    case SW_CLI_FOLLOW_NOT_FOUND:
        return plan_missing_tag(o, stream, isi);
    case SW_CLI_FOLLOW_CROSS:
        return sw_error_set(SW_EINVALID,
                            "tag \"%s\" points to an imagestreamtag from another ImageStream", tag);
    case SW_CLI_FOLLOW_CIRCULAR:
        return sw_error_set(SW_EINVALID,
                            "tag \"%s\" on the image stream is a reference to same tag", tag);
    case SW_CLI_FOLLOW_INVALID:
        return sw_error_set(SW_EINVALID, "tag \"%s\" points to an invalid imagestreamtag", tag);
    default:
        break;
    }
    const char *kind = sw_json_str_at(ref, "from.kind"), *fname = sw_json_str_at(ref, "from.name");
    if (!kind || !fname)
        return sw_error_set(SW_EINVALID,
                            "tag \"%s\" already exists - you must use the 'tag' command if you "
                            "want to change the source to \"%s\"",
                            tag, o->from ? o->from : "");
    if (strcmp(kind, "DockerImage"))
        return sw_error_set(SW_EINVALID,
                            "tag \"%s\" points to existing %s \"%s\", it cannot be re-imported",
                            tag, kind, fname);
    if (o->from && strcmp(o->from, fname)) {
        if (multiple)
            return sw_error_set(SW_EINVALID,
                                "the tag \"%s\" points to the tag \"%s\" which points to \"%s\" - "
                                "use the 'tag' command if you want to change the source to \"%s\"",
                                tag, final, fname, o->from);
        return sw_error_set(SW_EINVALID,
                            "the tag \"%s\" points to \"%s\" - use the 'tag' command if you want "
                            "to change the source to \"%s\"",
                            tag, fname, o->from);
    }
    add_image(isi, o, fname, final, stream_insecure(o, stream), ref);
    return 0;
}

/* Builds the request: *isi is new on success. */
static int plan(sw_cli *cli, const import_opts *o, json_t **isi)
{
    json_t *stream = NULL;
    int error = sw_client_get(cli->client, &sw_res_imagestreams, cli->ns, o->name, &stream);
    *isi = new_isi(o, cli->ns);
    if (error == SW_ENOTFOUND)
        error = plan_new(o, *isi);
    else if (error == 0)
        error = o->all ? plan_all(o, stream, *isi) : plan_tag(o, stream, *isi);
    json_decref(stream);
    if (error < 0) {
        json_decref(*isi);
        *isi = NULL;
    }
    return error;
}

/* ---- the result ---- */

static bool failed(const json_t *item)
{
    return sw_str_eq(sw_json_str_at(item, "status.status"), "Failure");
}

static bool any_failure(const json_t *result)
{
    size_t i;
    json_t *item;
    json_array_foreach(sw_json_at(result, "status.images"), i, item)
    {
        if (failed(item))
            return true;
    }
    json_array_foreach(sw_json_at(result, "status.repository.images"), i, item)
    {
        if (failed(item))
            return true;
    }
    return failed(sw_json_at(result, "status.repository"));
}

/* Each newly imported image's description; each failure as `error: tag X failed: <message>`.
 * slipway's server sends no image for a tag whose digest did not change (it only asked the
 * registry with HEAD), so there is nothing to describe for those. */
static void report_images(sw_buf *out, const json_t *items, const char *stream, const char *what)
{
    size_t i;
    json_t *item;
    json_array_foreach(items, i, item)
    {
        const char *tag = sw_json_str_at(item, "tag") ?: "";
        const json_t *image = json_object_get(item, "image");
        char name[600];
        if (failed(item)) {
            fprintf(stderr, "error: %s %s failed: %s\n", what, tag,
                    sw_json_str_at(item, "status.message") ?: "the import failed");
            continue;
        }
        if (!json_is_object(image))
            continue; /* the registry still has the image imported last time */
        snprintf(name, sizeof(name), "%s:%s", stream, tag);
        sw_describe_image(out, image, name, sw_time_now());
        sw_buf_putc(out, '\n');
    }
}

/* Prints the result as oc does; returns true when an image (or the repository) failed. */
static bool report(const import_opts *o, const json_t *result)
{
    bool bad = any_failure(result);
    const json_t *stream = sw_json_at(result, "status.import");
    const json_t *extra = sw_json_at(result, "status.repository.additionalTags");
    sw_buf out = SW_BUF_INIT(OUT_MAX);
    sw_buf_printf(&out, "imagestream.image.openshift.io/%s imported%s%s\n\n", o->name,
                  bad ? " with errors" : "", o->dry_run ? " (dry run)" : "");
    if (json_is_object(stream)) {
        sw_describe_imagestream(&out, stream, sw_time_now());
        sw_buf_putc(&out, '\n');
    }
    if (failed(sw_json_at(result, "status.repository")))
        fprintf(stderr, "error: repository %s failed: %s\n",
                sw_json_str_at(result, "spec.repository.from.name") ?: "",
                sw_json_str_at(result, "status.repository.status.message") ?: "");
    report_images(&out, sw_json_at(result, "status.repository.images"), o->name, "repository tag");
    report_images(&out, sw_json_at(result, "status.images"), o->name, "tag");
    if (json_array_size(extra)) {
        sw_buf_printf(&out,
                      "\ninfo: The remote repository contained %zu additional tags which were not "
                      "imported: ",
                      json_array_size(extra));
        size_t i;
        json_t *t;
        json_array_foreach(extra, i, t)
        {
            sw_buf_printf(&out, "%s%s", i ? ", " : "", json_string_value(t) ?: "");
        }
        sw_buf_putc(&out, '\n');
    }
    fputs(sw_buf_cstr(&out), stdout);
    fflush(stdout);
    sw_buf_dispose(&out);
    return bad;
}

static int run(sw_cli *cli, const import_opts *o, bool *bad)
{
    json_t *isi = NULL, *result = NULL;
    int error = plan(cli, o, &isi);
    if (error == 0)
        error = sw_client_create(cli->client, &sw_res_imagestreamimports, cli->ns, isi, &result);
    if (error == 0)
        *bad = report(o, result);
    json_decref(isi);
    json_decref(result);
    return error;
}

int sw_cmd_import_image(int argc, char **argv)
{
    import_opts o = {0};
    sw_cli cli;
    bool bad = false;
    int rc;
    const sw_cli_flag flags[] = {
        {.name = "from",
         .kind = SW_CLI_STRING,
         .value = &o.from,
         .arg = "REF",
         .help = "A container image repository (or image) to import images from."},
        {.name = "confirm",
         .kind = SW_CLI_BOOL,
         .value = &o.confirm,
         .help = "Allow creating the image stream, or a tag it does not have yet."},
        {.name = "all",
         .kind = SW_CLI_BOOL,
         .value = &o.all,
         .help = "Import every tag of the repository (at most 50; the rest are listed)."},
        {.name = "scheduled",
         .kind = SW_CLI_BOOL,
         .value = &o.scheduled,
         .help = "Re-import the imported tags periodically."},
        {.name = "insecure",
         .kind = SW_CLI_BOOL,
         .value = &o.insecure,
         .seen = &o.insecure_given,
         .help = "Allow registries served over HTTP or with invalid HTTPS certificates."},
        {.name = "import-mode",
         .kind = SW_CLI_STRING,
         .value = &o.import_mode,
         .arg = "MODE",
         .help = "Legacy (one platform of a manifest list) or PreserveOriginal (all of it)."},
        {.name = "reference-policy",
         .kind = SW_CLI_STRING,
         .value = &o.reference_policy,
         .arg = "POLICY",
         .help = "source (pull from the source registry) or local."},
        {.name = "dry-run",
         .kind = SW_CLI_BOOL,
         .value = &o.dry_run,
         .help = "Fetch information about the images without changing the image stream."},
    };
    const sw_cli_command cmd = {
        .name = "import-image",
        .usage = "IMAGESTREAM[:TAG]",
        .summary =
            "Import the latest image information from a tag in a container image registry.\n"
            "\n"
            "Without --from, the tag (default latest) is imported again from where its spec\n"
            "points. With --from, a new image stream or tag needs --confirm. Only the image\n"
            "metadata is copied, not the image contents. To change where a tag points, use\n"
            "'slipway tag'.",
        .examples =
            "  slipway import-image mystream --from=registry.io/repo/image:latest --confirm\n"
            "  slipway import-image mystream:stable\n"
            "  slipway import-image mystream --from=registry.io/repo/image --all --confirm\n",
        .flags = flags,
        .nflags = sizeof(flags) / sizeof(flags[0]),
    };
    if (sw_cli_start(&cli, &cmd, argc, argv, &rc))
        return rc;
    int error = 0;
    if (cli.nargs != 1)
        error = sw_error_set(SW_EINVALID, "%s",
                             cli.nargs ? "import-image takes one image stream name"
                                       : "you must specify the name of an image stream");
    if (error == 0) {
        o.target = cli.args[0];
        error = check_flags(&o);
    }
    if (error == 0)
        error = parse_target(&o);
    if (error < 0)
        return sw_cli_usage_error(&cli);
    cli.timeout_ms = IMPORT_TIMEOUT_MS;
    error = sw_cli_connect(&cli);
    if (error == 0)
        error = run(&cli, &o, &bad);
    rc = sw_cli_finish(&cli, error);
    return rc ? rc : bad ? 1 : 0;
}
