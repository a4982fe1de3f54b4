/* new_build: `slipway new-build`, as `oc new-build` for the Docker and Source strategies (Source:
 * --strategy=source with a builder image, --image or --image-stream): a BuildConfig from a
 * directory (Binary source, built with start-build --from-dir), a git repository (a URL, or a
 * local directory with .git), or a Dockerfile given inline or in a file; its output an image
 * stream tag (default <name>:latest; the stream is created when missing) or a registry image.
 * Like oc it labels what it creates build=<name>, adds generic and GitHub webhook triggers with
 * random secrets and, for non-binary sources, a ConfigChange trigger. See docs/cli.md. */
#include "cmd/cli.h"
#include "cmd/cmd.h"

#include "meta/names.h"

#include "util/alloc.h"
#include "util/buf.h"
#include "util/error.h"
#include "util/json.h"
#include "util/str.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define DOCKERFILE_MAX (1u << 20) /* bytes of --dockerfile-file */
#define NAME_MAX_LEN 253

typedef enum source_type { SRC_NONE, SRC_BINARY, SRC_GIT, SRC_DOCKERFILE } source_type;

typedef struct nb_opts {
    const char *name, *dockerfile, *dockerfile_file, *to, *to_docker, *push_secret;
    const char *strategy, *context_dir;
    const char *image, *image_stream; /* the Source strategy's builder image */
    bool source;                      /* --strategy=source */
    bool binary, no_output;
    const char *arg; /* the source argument, or NULL */
    source_type type;
    char uri[PATH_MAX + 16];                                /* the git URI */
    char ref[256];                                          /* the git ref after '#', or "" */
    char bc[NAME_MAX_LEN + 1];                              /* the BuildConfig's name */
    char stream[NAME_MAX_LEN + 1], tag[129], stream_ns[64]; /* ImageStreamTag output */
    char *dockerfile_text; /* --dockerfile or the file's content (owned) */
} nb_opts;

/* ---- the source ---- */

static bool is_url(const char *s)
{
    static const char *const schemes[] = {"https://", "http://", "file://", "git://",
                                          "ssh://",   "git@",    NULL};
    for (size_t i = 0; schemes[i]; i++)
        if (sw_str_prefix(s, schemes[i]))
            return true;
    return false;
}

/* A git URL: "uri#ref" splits into both. */
static int git_url(nb_opts *o, const char *s)
{
    const char *hash = strchr(s, '#');
    size_t len = hash ? (size_t)(hash - s) : strlen(s);
    if (len >= sizeof(o->uri) || (hash && strlen(hash + 1) >= sizeof(o->ref)))
        return sw_error_set(SW_EINVALID, "the repository URL is too long");
    memcpy(o->uri, s, len);
    o->uri[len] = '\0';
    sw_strlcpy(o->ref, hash ? hash + 1 : "", sizeof(o->ref));
    o->type = SRC_GIT;
    return 0;
}

/* A local directory: a git repository (file://<absolute path>) unless --binary or no .git. */
static int local_dir(nb_opts *o, const char *dir)
{
    struct stat st;
    char git[PATH_MAX], real[PATH_MAX];
    if (stat(dir, &st) < 0)
        return sw_error_set(SW_ENOTFOUND, "%s: %s", dir, sw_strerror(errno));
    if (!S_ISDIR(st.st_mode))
        return sw_error_set(SW_EINVALID, "%s is not a directory (nor a git repository URL)", dir);
    snprintf(git, sizeof(git), "%s/.git", dir);
    if (o->binary || access(git, F_OK) < 0) {
        o->type = SRC_BINARY;
        return 0;
    }
    if (!realpath(dir, real))
        return sw_error_set(SW_ERROR, "cannot resolve %s: %s", dir, sw_strerror(errno));
    snprintf(o->uri, sizeof(o->uri), "file://%s", real);
    o->type = SRC_GIT;
    return 0;
}

static int read_dockerfile(nb_opts *o)
{
    sw_buf b = SW_BUF_INIT(DOCKERFILE_MAX);
    char chunk[8192];
    size_t n;
    bool in = !strcmp(o->dockerfile_file, "-");
    FILE *f = in ? stdin : fopen(o->dockerfile_file, "r");
    if (!f)
        return sw_error_set(SW_ENOTFOUND, "cannot open %s: %s", o->dockerfile_file,
                            sw_strerror(errno));
    /* stop at the cap: /dev/zero or an endless stdin must not read forever */
    while ((n = fread(chunk, 1, sizeof(chunk), f)) > 0 && sw_buf_put(&b, chunk, n) == 0)
        ;
    int error = ferror(f) ? sw_error_set(SW_ERROR, "cannot read %s", o->dockerfile_file) : 0;
    if (!in)
        fclose(f);
    if (error == 0 && sw_buf_error(&b) < 0)
        error = sw_error_set(SW_ELIMIT, "%s is larger than %u bytes", o->dockerfile_file,
                             DOCKERFILE_MAX);
    if (error == 0)
        o->dockerfile_text = sw_buf_detach(&b, NULL);
    sw_buf_dispose(&b);
    return error;
}

/* ---- names ---- */

/* A DNS-1123 name from s (the last path component, ".git" dropped): lower case, other
 * characters as '-', trimmed. */
static void derive_name(const char *s, char *out, size_t n)
{
    size_t len = strlen(s), o = 0;
    while (len && s[len - 1] == '/')
        len--;
    if (len > 4 && !strncmp(s + len - 4, ".git", 4))
        len -= 4;
    size_t start = len;
    while (start && s[start - 1] != '/' && s[start - 1] != ':')
        start--;
    for (size_t i = start; i < len && o + 1 < n && o < 63; i++) {
        char c = s[i];
        if (c >= 'A' && c <= 'Z')
            c = (char)(c - 'A' + 'a');
        bool ok = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
        if (ok || (o && out[o - 1] != '-'))
            out[o++] = ok ? c : '-';
    }
    while (o && out[o - 1] == '-')
        o--;
    out[o] = '\0';
}

static int pick_name(nb_opts *o)
{
    char real[PATH_MAX];
    if (o->name) {
        if (strlen(o->name) >= sizeof(o->bc) || !*o->name)
            return sw_error_set(SW_EINVALID, "--name must be 1 to %d characters", NAME_MAX_LEN);
        if (sw_names_check_label(o->name) < 0) /* a BuildConfig name labels its builds */
            return sw_error_set(SW_EINVALID, "--name: %s", sw_error_msg());
        sw_strlcpy(o->bc, o->name, sizeof(o->bc));
        return 0;
    }
    if (o->arg && !is_url(o->arg) && realpath(o->arg, real))
        derive_name(real, o->bc, sizeof(o->bc));
    else if (o->arg)
        derive_name(o->uri[0] ? o->uri : o->arg, o->bc, sizeof(o->bc));
    if (!o->bc[0])
        return sw_error_set(SW_EINVALID, "a name cannot be derived from the source: give "
                                         "--name=NAME");
    return 0;
}

/* --to: [NS/]STREAM[:TAG]. */
static int parse_to(nb_opts *o)
{
    const char *to = o->to, *slash = strchr(to, '/');
    if (slash) {
        if ((size_t)(slash - to) >= sizeof(o->stream_ns) || slash == to)
            return sw_error_set(SW_EINVALID, "--to: invalid namespace in \"%s\"", to);
        memcpy(o->stream_ns, to, (size_t)(slash - to));
        o->stream_ns[slash - to] = '\0';
        to = slash + 1;
    }
    const char *colon = strchr(to, ':');
    size_t len = colon ? (size_t)(colon - to) : strlen(to);
    if (!len || len >= sizeof(o->stream) || strchr(to, '/') || strchr(to, '@') ||
        (colon && (!colon[1] || strlen(colon + 1) >= sizeof(o->tag) || strchr(colon + 1, ':'))))
        return sw_error_set(SW_EINVALID, "--to must be [NAMESPACE/]STREAM[:TAG], not \"%s\"",
                            o->to);
    memcpy(o->stream, to, len);
    o->stream[len] = '\0';
    sw_strlcpy(o->tag, colon ? colon + 1 : "latest", sizeof(o->tag));
    return 0;
}

static int check_flags(const nb_opts *o)
{
    if (o->dockerfile && o->dockerfile_file)
        return sw_error_set(SW_EINVALID, "give --dockerfile or --dockerfile-file, not both");
    if (!!o->to + !!o->to_docker + o->no_output > 1)
        return sw_error_set(SW_EINVALID, "only one of --to, --to-docker and --no-output may be "
                                         "given");
    if (o->push_secret && o->no_output)
        return sw_error_set(SW_EINVALID, "--push-secret needs an output");
    if (o->push_secret && sw_names_check_subdomain(o->push_secret) < 0)
        return sw_names_invalid(SW_EINVALID, "--push-secret", o->push_secret, sw_error_msg());
    if (o->strategy && strcmp(o->strategy, "docker") && strcmp(o->strategy, "Docker") &&
        strcmp(o->strategy, "source") && strcmp(o->strategy, "Source"))
        return sw_error_set(
            SW_EINVALID, "--strategy \"%s\" is not supported: want docker or source", o->strategy);
    if (o->source && !o->image == !o->image_stream)
        return sw_error_set(SW_EINVALID, "--strategy=source needs the builder image: give "
                                         "--image=REF or --image-stream=STREAM[:TAG]");
    if (!o->source && (o->image || o->image_stream))
        return sw_error_set(SW_EINVALID, "--image and --image-stream name the builder image of "
                                         "--strategy=source");
    if (o->source && (o->dockerfile || o->dockerfile_file))
        return sw_error_set(SW_EINVALID, "--strategy=source builds with the builder image's "
                                         "assemble script, not a Dockerfile");
    if (o->to_docker && !*o->to_docker)
        return sw_error_set(SW_EINVALID, "--to-docker needs an image reference");
    if (o->binary && o->arg && is_url(o->arg))
        return sw_error_set(SW_EINVALID, "--binary takes a local directory, not a repository "
                                         "URL");
    return 0;
}

/* Works out the source, the name and the output from the arguments (usage errors). */
static int plan(const sw_cli *cli, nb_opts *o)
{
    if (cli->nargs > 1)
        return sw_error_set(SW_EINVALID, "new-build takes one source: a directory or a git "
                                         "repository URL");
    o->arg = cli->nargs ? cli->args[0] : NULL;
    o->source = o->strategy && !strcasecmp(o->strategy, "source");
    int error = check_flags(o);
    if (error == 0 && o->dockerfile)
        o->dockerfile_text = sw_strdup(o->dockerfile);
    else if (error == 0 && o->dockerfile_file)
        error = read_dockerfile(o);
    if (error == 0 && o->arg)
        error = is_url(o->arg) ? git_url(o, o->arg) : local_dir(o, o->arg);
    if (error == 0 && !o->arg)
        o->type = o->binary ? SRC_BINARY : o->dockerfile_text ? SRC_DOCKERFILE : SRC_NONE;
    if (error == 0 && o->type == SRC_NONE)
        error = sw_error_set(SW_EINVALID, "you must give a source: a directory, a git repository "
                                          "URL, --dockerfile, --dockerfile-file or --binary");
    if (error == 0)
        error = pick_name(o);
    if (error == 0 && o->to)
        error = parse_to(o);
    else if (error == 0 && !o->to_docker && !o->no_output) {
        sw_strlcpy(o->stream, o->bc, sizeof(o->stream));
        sw_strlcpy(o->tag, "latest", sizeof(o->tag));
    }
    return error;
}

/* ---- the objects ---- */

static json_t *webhook_trigger(const char *type, const char *key)
{
    unsigned char raw[10];
    char secret[21];
    sw_random_bytes(raw, sizeof(raw));
    sw_hex(raw, sizeof(raw), secret);
    return json_pack("{s:s, s:{s:s}}", "type", type, key, "secret", secret);
}

static json_t *source_json(const nb_opts *o)
{
    json_t *src = json_object();
    static const char *const types[] = {"None", "Binary", "Git", "Dockerfile"};
    json_object_set_new(src, "type", json_string(types[o->type]));
    if (o->type == SRC_BINARY)
        json_object_set_new(src, "binary", json_object());
    if (o->type == SRC_GIT) {
        json_t *git = json_pack("{s:s}", "uri", o->uri);
        if (o->ref[0])
            json_object_set_new(git, "ref", json_string(o->ref));
        json_object_set_new(src, "git", git);
    }
    if (o->dockerfile_text)
        json_object_set_new(src, "dockerfile", json_string(o->dockerfile_text));
    if (o->context_dir && *o->context_dir)
        json_object_set_new(src, "contextDir", json_string(o->context_dir));
    return src;
}

static json_t *output_json(const nb_opts *o)
{
    char name[NAME_MAX_LEN + 140];
    json_t *out = json_object();
    if (o->to_docker) {
        json_object_set_new(out, "to",
                            json_pack("{s:s, s:s}", "kind", "DockerImage", "name", o->to_docker));
    } else if (o->stream[0]) {
        snprintf(name, sizeof(name), "%s:%s", o->stream, o->tag);
        json_t *to = json_pack("{s:s, s:s}", "kind", "ImageStreamTag", "name", name);
        if (o->stream_ns[0])
            json_object_set_new(to, "namespace", json_string(o->stream_ns));
        json_object_set_new(out, "to", to);
    }
    if (o->push_secret)
        json_object_set_new(out, "pushSecret", json_pack("{s:s}", "name", o->push_secret));
    return out;
}

/* The strategy: Docker, or Source with its builder image (and an ImageChange trigger on it when
 * it is a stream tag, as oc adds). */
static json_t *strategy_json(const nb_opts *o, json_t *triggers)
{
    if (!o->source)
        return json_pack("{s:s, s:{}}", "type", "Docker", "dockerStrategy");
    json_t *from;
    if (o->image) {
        from = json_pack("{s:s, s:s}", "kind", "DockerImage", "name", o->image);
    } else {
        char tag[600];
        snprintf(tag, sizeof(tag), "%s%s", o->image_stream,
                 strchr(o->image_stream, ':') ? "" : ":latest");
        from = json_pack("{s:s, s:s}", "kind", "ImageStreamTag", "name", tag);
        json_array_append_new(triggers,
                              json_pack("{s:s, s:{}}", "type", "ImageChange", "imageChange"));
    }
    return json_pack("{s:s, s:{s:o}}", "type", "Source", "sourceStrategy", "from", from);
}

static json_t *buildconfig(const nb_opts *o, const char *ns)
{
    json_t *triggers = json_array();
    json_array_append_new(triggers, webhook_trigger("GitHub", "github"));
    json_array_append_new(triggers, webhook_trigger("Generic", "generic"));
    if (o->type != SRC_BINARY)
        json_array_append_new(triggers, json_pack("{s:s}", "type", "ConfigChange"));
    json_t *strategy = strategy_json(o, triggers);
    return json_pack("{s:s, s:s, s:{s:s, s:s, s:{s:s}, s:{s:s}}, "
                     "s:{s:o, s:s, s:o, s:o, s:o}}",
                     "apiVersion", "build.openshift.io/v1", "kind", "BuildConfig", "metadata",
                     "name", o->bc, "namespace", ns, "labels", "build", o->bc, "annotations",
                     "openshift.io/generated-by", "slipway new-build", "spec", "triggers", triggers,
                     "runPolicy", "Serial", "source", source_json(o), "strategy", strategy,
                     "output", output_json(o));
}

/* The output stream, created unless it exists (*created says which). */
static int ensure_stream(sw_cli *cli, const nb_opts *o, bool *created)
{
    const char *ns = o->stream_ns[0] ? o->stream_ns : cli->ns;
    json_t *is = NULL;
    int error = sw_client_get(cli->client, &sw_res_imagestreams, ns, o->stream, &is);
    json_decref(is);
    *created = false;
    if (error == 0) {
        printf("    imagestream.image.openshift.io \"%s\" already exists, using it\n", o->stream);
        return 0;
    }
    if (error != SW_ENOTFOUND)
        return error;
    is = json_pack("{s:s, s:s, s:{s:s, s:s, s:{s:s}, s:{s:s}}, s:{s:{s:b}}}", "apiVersion",
                   "image.openshift.io/v1", "kind", "ImageStream", "metadata", "name", o->stream,
                   "namespace", ns, "labels", "build", o->bc, "annotations",
                   "openshift.io/generated-by", "slipway new-build", "spec", "lookupPolicy",
                   "local", 0);
    error = sw_client_create(cli->client, &sw_res_imagestreams, ns, is, NULL);
    json_decref(is);
    *created = error == 0;
    if (error == 0)
        printf("    imagestream.image.openshift.io \"%s\" created\n", o->stream);
    return error;
}

static void print_next(const nb_opts *o)
{
    printf("--> Success\n");
    if (o->type == SRC_BINARY)
        printf("    Build configuration \"%s\" created; its builds take an upload.\n"
               "    Run 'slipway start-build %s --from-dir=%s' to start a build.\n",
               o->bc, o->bc, o->arg ? o->arg : ".");
    else
        printf("    Build configuration \"%s\" created; a build starts when the controllers "
               "see it (ConfigChange).\n"
               "    Run 'slipway logs -f bc/%s' to follow it.\n",
               o->bc, o->bc);
}

static int run(sw_cli *cli, const nb_opts *o)
{
    json_t *bc = NULL;
    int error = sw_client_get(cli->client, &sw_res_buildconfigs, cli->ns, o->bc, &bc);
    json_decref(bc);
    bc = NULL;
    if (error == 0)
        return sw_error_set(SW_EEXISTS, "buildconfigs.build.openshift.io \"%s\" already exists",
                            o->bc);
    if (error != SW_ENOTFOUND)
        return error;
    printf("--> Creating resources with label build=%s ...\n", o->bc);
    fflush(stdout);
    bool stream_created = false;
    error = o->stream[0] ? ensure_stream(cli, o, &stream_created) : 0;
    if (error == 0) {
        bc = buildconfig(o, cli->ns);
        error = sw_client_create(cli->client, &sw_res_buildconfigs, cli->ns, bc, NULL);
    }
    if (error < 0 && stream_created) { /* nothing of a failed new-build stays behind */
        char msg[1024];
        sw_strlcpy(msg, sw_error_msg(), sizeof(msg));
        sw_client_delete(cli->client, &sw_res_imagestreams,
                         o->stream_ns[0] ? o->stream_ns : cli->ns, o->stream);
        printf("    imagestream.image.openshift.io \"%s\" deleted again\n", o->stream);
        sw_error_set(error, "%s", msg);
    }
    if (error == 0) {
        printf("    buildconfig.build.openshift.io \"%s\" created\n", o->bc);
        print_next(o);
    }
    fflush(stdout);
    json_decref(bc);
    return error;
}

int sw_cmd_new_build(int argc, char **argv)
{
    nb_opts o = {0};
    sw_cli cli;
    int rc;
    const sw_cli_flag flags[] = {
        {.name = "name",
         .kind = SW_CLI_STRING,
         .value = &o.name,
         .arg = "NAME",
         .help = "The BuildConfig's name (default: from the directory or repository)."},
        {.name = "dockerfile",
         .short_name = 'D',
         .kind = SW_CLI_STRING,
         .value = &o.dockerfile,
         .arg = "TEXT",
         .help = "The Dockerfile itself (a Dockerfile source, or one that "
                 "replaces the source's)."},
        {.name = "dockerfile-file",
         .kind = SW_CLI_STRING,
         .value = &o.dockerfile_file,
         .arg = "FILE",
         .help = "Read the Dockerfile text from FILE (- for stdin)."},
        {.name = "to",
         .kind = SW_CLI_STRING,
         .value = &o.to,
         .arg = "STREAM:TAG",
         .help = "Push to this image stream tag (default NAME:latest); the stream is created."},
        {.name = "to-docker",
         .kind = SW_CLI_STRING,
         .value = &o.to_docker,
         .arg = "REF",
         .help = "Push to this registry image instead of an image stream."},
        {.name = "push-secret",
         .kind = SW_CLI_STRING,
         .value = &o.push_secret,
         .arg = "SECRET",
         .help = "The secret with the credentials to push the output."},
        {.name = "no-output",
         .kind = SW_CLI_BOOL,
         .value = &o.no_output,
         .help = "Build without pushing the result anywhere."},
        {.name = "strategy",
         .kind = SW_CLI_STRING,
         .value = &o.strategy,
         .arg = "docker|source",
         .help = "The build strategy: docker (the default) or source (s2i-style: the builder "
                 "image's /usr/libexec/s2i/assemble runs on the source)."},
        {.name = "image",
         .kind = SW_CLI_STRING,
         .value = &o.image,
         .arg = "REF",
         .help = "The Source strategy's builder image, a registry image."},
        {.name = "image-stream",
         .short_name = 'i',
         .kind = SW_CLI_STRING,
         .value = &o.image_stream,
         .arg = "STREAM[:TAG]",
         .help = "The Source strategy's builder image, an image stream tag (rebuilt when it "
                 "changes)."},
        {.name = "binary",
         .kind = SW_CLI_BOOL,
         .value = &o.binary,
         .help = "A Binary source: builds get their files from start-build --from-*."},
        {.name = "context-dir",
         .kind = SW_CLI_STRING,
         .value = &o.context_dir,
         .arg = "DIR",
         .help = "The subdirectory of the source to build in."},
    };
    const sw_cli_command cmd = {
        .name = "new-build",
        .usage = "[DIR | GIT-URL] [--dockerfile=TEXT | --dockerfile-file=FILE]",
        .summary =
            "Create a build configuration (and the image stream it pushes to).\n"
            "\n"
            "A directory makes a Binary source (start builds with 'slipway start-build\n"
            "NAME --from-dir=DIR'); a git URL (https://, file://, ...) or a local directory\n"
            "with a .git makes a Git source (URL#REF picks a branch or tag); --dockerfile\n"
            "alone makes a Dockerfile source. The strategy is Docker unless --strategy=source\n"
            "names a builder image; the output is the image stream tag NAME:latest unless\n"
            "--to or --to-docker says otherwise.",
        .examples = "  slipway new-build ./app --name=app\n"
                    "  slipway new-build https://git.example.com/org/app.git#main\n"
                    "  slipway new-build --name=hello --dockerfile=$'FROM scratch\\nCOPY . /'\n"
                    "  slipway new-build --binary --name=web --to-docker=registry:5000/web:1\n"
                    "  slipway new-build ./app --strategy=source --image-stream=python:3.11\n",
        .flags = flags,
        .nflags = sizeof(flags) / sizeof(flags[0]),
    };
    if (sw_cli_start(&cli, &cmd, argc, argv, &rc))
        return rc;
    int error = plan(&cli, &o);
    if (error == SW_EINVALID) {
        sw_free(o.dockerfile_text);
        return sw_cli_usage_error(&cli);
    }
    if (error == 0)
        error = sw_cli_connect(&cli);
    if (error == 0)
        error = run(&cli, &o);
    sw_free(o.dockerfile_text);
    return sw_cli_finish(&cli, error);
}
