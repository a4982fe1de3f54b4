/* kubeconfig: libyaml document -> jansson tree (bounded depth and node count, so alias bombs
 * stop early), then context -> cluster + user resolution (see kubeconfig.h). */
#include "client/kubeconfig.h"

#include "util/alloc.h"
#include "util/buf.h"
#include "util/error.h"
#include "util/json.h"
#include "util/path.h"
#include "util/str.h"

#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#define YAML_MAX_DEPTH 64
#define YAML_MAX_NODES 200000

struct sw_kubeconfig {
    char *server;          /* https://host:port, no trailing slash */
    char *ns;              /* context namespace or "default" */
    char *context;         /* the resolved context's name ("" in-cluster) */
    char *token;           /* bearer token, or NULL */
    char *token_file;      /* where the token came from, or NULL */
    char *tls_server_name; /* SNI / verification name override, or NULL */
    bool insecure;         /* insecure-skip-tls-verify */
    char *ca, *cert, *key; /* PEM bytes, NUL-terminated, or NULL */
    size_t ca_len, cert_len, key_len;
};

/* Where errors say the problem is. */
typedef struct src {
    const char *name;     /* "kubeconfig /path" */
    const char *base_dir; /* for relative file references, or NULL */
} src;

/* Prefixes the current thread-local message ("a: b: message"; b may be NULL). */
static int wrap_error(int code, const char *a, const char *b)
{
    char msg[1024];
    sw_strlcpy(msg, sw_error_msg(), sizeof(msg));
    return sw_error_set(code, "%s: %s%s%s", a, b ? b : "", b ? ": " : "", msg);
}

void sw_kubeconfig_free(sw_kubeconfig *kc)
{
    if (!kc)
        return;
    sw_free(kc->server);
    sw_free(kc->ns);
    sw_free(kc->context);
    sw_free(kc->token);
    sw_free(kc->token_file);
    sw_free(kc->tls_server_name);
    sw_free(kc->ca);
    sw_free(kc->cert);
    sw_free(kc->key);
    sw_free(kc);
}

int sw_kubeconfig_read_file(const char *path, size_t max, char **out, size_t *len)
{
    int error = sw_path_read(path, max, false, out, len);
    if (error == SW_ENOTFOUND)
        return sw_error_set(SW_ENOTFOUND, "cannot open %s: %s", path, sw_strerror(ENOENT));
    if (error == SW_EINVALID)
        return sw_error_set(SW_ELIMIT, "%s is larger than %zu bytes", path, max);
    return error;
}

/* ---- YAML -> JSON ---- */

typedef struct conv {
    yaml_document_t *doc;
    size_t nodes; /* converted so far, aliases counted each time they are expanded */
} conv;

static json_t *scalar_to_json(const yaml_node_t *n)
{
    const char *v = (const char *)n->data.scalar.value;
    size_t len = n->data.scalar.length;
    if (n->data.scalar.style == YAML_PLAIN_SCALAR_STYLE &&
        (len == 0 || !strcmp(v, "~") || !strcmp(v, "null") || !strcmp(v, "Null") ||
         !strcmp(v, "NULL")))
        return json_null();
    return json_stringn(v, len); /* NULL on invalid UTF-8 */
}

static int node_to_json(conv *c, yaml_node_t *n, int depth, json_t **out);

static int mapping_to_json(conv *c, yaml_node_t *n, int depth, json_t *obj)
{
    for (yaml_node_pair_t *p = n->data.mapping.pairs.start; p < n->data.mapping.pairs.top; p++) {
        yaml_node_t *k = yaml_document_get_node(c->doc, p->key);
        yaml_node_t *v = yaml_document_get_node(c->doc, p->value);
        json_t *val = NULL;
        if (!k || k->type != YAML_SCALAR_NODE || !v)
            return sw_error_set(SW_EINVALID, "line %zu: mapping keys must be scalars",
                                k ? k->start_mark.line + 1 : 0);
        int error = node_to_json(c, v, depth + 1, &val);
        if (error < 0)
            return error;
        char *key = sw_strndup((const char *)k->data.scalar.value, k->data.scalar.length);
        json_object_set_new(obj, key, val);
        sw_free(key);
    }
    return 0;
}

static int node_to_json(conv *c, yaml_node_t *n, int depth, json_t **out)
{
    if (depth > YAML_MAX_DEPTH)
        return sw_error_set(SW_EINVALID, "nesting deeper than %d levels", YAML_MAX_DEPTH);
    if (++c->nodes > YAML_MAX_NODES)
        return sw_error_set(SW_ELIMIT, "more than %d nodes (after alias expansion)",
                            YAML_MAX_NODES);
    int error = 0;
    json_t *j = NULL;
    if (n->type == YAML_SCALAR_NODE) {
        if (!(j = scalar_to_json(n)))
            return sw_error_set(SW_EINVALID, "line %zu: invalid UTF-8", n->start_mark.line + 1);
    } else if (n->type == YAML_SEQUENCE_NODE) {
        j = json_array();
        for (yaml_node_item_t *it = n->data.sequence.items.start;
             error == 0 && it < n->data.sequence.items.top; it++) {
            json_t *v = NULL;
            yaml_node_t *child = yaml_document_get_node(c->doc, *it);
            error = child ? node_to_json(c, child, depth + 1, &v) : SW_EINVALID;
            if (error == 0)
                json_array_append_new(j, v);
        }
    } else if (n->type == YAML_MAPPING_NODE) {
        j = json_object();
        error = mapping_to_json(c, n, depth, j);
    } else {
        j = json_null();
    }
    if (error < 0) {
        json_decref(j);
        return error;
    }
    *out = j;
    return 0;
}

/* Parses the first YAML document of data into JSON (all scalars as strings). */
static int yaml_to_json(const src *s, const char *data, size_t len, json_t **out)
{
    yaml_parser_t p;
    yaml_document_t doc;
    int error = 0;
    if (!yaml_parser_initialize(&p))
        return sw_error_set(SW_ERROR, "%s: cannot initialise the YAML parser", s->name);
    yaml_parser_set_input_string(&p, (const unsigned char *)data, len);
    if (!yaml_parser_load(&p, &doc)) {
        error = sw_error_set(SW_EINVALID, "%s: invalid YAML at line %zu column %zu: %s", s->name,
                             p.problem_mark.line + 1, p.problem_mark.column + 1,
                             p.problem ? p.problem : "syntax error");
        yaml_parser_delete(&p);
        return error;
    }
    yaml_node_t *root = yaml_document_get_root_node(&doc);
    conv c = {&doc, 0};
    if (!root)
        *out = json_object();
    else if ((error = node_to_json(&c, root, 0, out)) < 0)
        error = wrap_error(error, s->name, NULL);
    yaml_document_delete(&doc);
    yaml_parser_delete(&p);
    return error;
}

/* ---- resolution ---- */

static const char *str_field(const json_t *obj, const char *key)
{
    const char *v = json_string_value(json_object_get(obj, key));
    return v && *v ? v : NULL;
}

/* The `inner` object of the entry of root[list] named name (e.g. contexts[].context). */
static const json_t *find_named(const json_t *root, const char *list, const char *name,
                                const char *inner)
{
    size_t i;
    const json_t *e;
    json_array_foreach(json_object_get(root, list), i, e)
    {
        if (sw_str_eq(str_field(e, "name"), name)) {
            const json_t *o = json_object_get(e, inner);
            return json_is_object(o) ? o : NULL;
        }
    }
    return NULL;
}

static char *resolve_path(const src *s, const char *p)
{
    if (p[0] == '/' || !s->base_dir)
        return sw_strdup(p);
    sw_buf b = SW_BUF_INIT(8192);
    sw_buf_printf(&b, "%s/%s", s->base_dir, p);
    return sw_buf_detach(&b, NULL);
}

/* Reads the file named by a kubeconfig field (relative to the kubeconfig's directory). */
static int read_ref(const src *s, const char *field, const char *p, char **out, size_t *len)
{
    char *path = resolve_path(s, p);
    int error = sw_kubeconfig_read_file(path, SW_KUBECONFIG_MAX_FILE, out, len);
    if (error < 0)
        error = wrap_error(error == SW_ENOTFOUND ? SW_EINVALID : error, s->name, field);
    sw_free(path);
    return error;
}

/* Decodes a *-data field (base64 of PEM). */
static int read_data(const src *s, const char *field, const char *b64, char **out, size_t *len)
{
    unsigned char *raw = NULL;
    size_t n = 0, k = 0;
    /* line breaks are skipped, as Go's decoder (and so kubectl) skips them: `base64` wraps */
    char *flat = sw_strdup(b64);
    for (const char *p = b64; *p; p++)
        if (*p != '\n' && *p != '\r')
            flat[k++] = *p;
    flat[k] = '\0';
    int error = sw_base64_decode(flat, k, &raw, &n);
    sw_free(flat);
    if (error < 0)
        return sw_error_set(SW_EINVALID, "%s: %s is not valid base64", s->name, field);
    *out = sw_strndup((const char *)raw, n);
    *len = n;
    sw_free(raw);
    return 0;
}

/* Inline data wins over the file, as in client-go. */
static int read_pem(const src *s, const json_t *o, const char *data_key, const char *file_key,
                    char **out, size_t *len)
{
    const char *v;
    if ((v = str_field(o, data_key)))
        return read_data(s, data_key, v, out, len);
    if ((v = str_field(o, file_key)))
        return read_ref(s, file_key, v, out, len);
    return 0;
}

static int resolve_cluster(const src *s, const json_t *cl, const char *name, sw_kubeconfig *kc)
{
    const char *server = str_field(cl, "server"), *v;
    if (!server)
        return sw_error_set(SW_EINVALID, "%s: cluster %s has no server", s->name, name);
    if (!sw_str_prefix(server, "https://") && !sw_str_prefix(server, "http://"))
        return sw_error_set(SW_EINVALID, "%s: cluster %s: server %s is not an http(s) URL", s->name,
                            name, server);
    kc->server = sw_strdup(server);
    size_t n = strlen(kc->server);
    while (n > 0 && kc->server[n - 1] == '/')
        kc->server[--n] = '\0';
    if ((v = str_field(cl, "insecure-skip-tls-verify")) && sw_str_to_bool(v, &kc->insecure) < 0)
        return sw_error_set(SW_EINVALID, "%s: cluster %s: insecure-skip-tls-verify: not a bool: %s",
                            s->name, name, v);
    if ((v = str_field(cl, "tls-server-name")))
        kc->tls_server_name = sw_strdup(v);
    if (kc->insecure &&
        (str_field(cl, "certificate-authority-data") || str_field(cl, "certificate-authority")))
        return sw_error_set(SW_EINVALID, /* kubectl refuses it too: which one was meant? */
                            "%s: cluster %s: specifying a root certificates file with the "
                            "insecure flag is not allowed",
                            s->name, name);
    return read_pem(s, cl, "certificate-authority-data", "certificate-authority", &kc->ca,
                    &kc->ca_len);
}

static int resolve_user(const src *s, const json_t *u, const char *name, sw_kubeconfig *kc)
{
    const char *v;
    size_t len;
    int error;
    if ((v = str_field(u, "token"))) {
        kc->token = sw_strdup(v);
    } else if ((v = str_field(u, "tokenFile"))) {
        kc->token_file = resolve_path(s, v);
        if ((error = read_ref(s, "tokenFile", v, &kc->token, &len)) < 0)
            return error;
        while (len && (kc->token[len - 1] == '\n' || kc->token[len - 1] == '\r'))
            kc->token[--len] = '\0';
    }
    if ((error = read_pem(s, u, "client-certificate-data", "client-certificate", &kc->cert,
                          &kc->cert_len)) < 0 ||
        (error = read_pem(s, u, "client-key-data", "client-key", &kc->key, &kc->key_len)) < 0)
        return error;
    if (!kc->cert != !kc->key)
        return sw_error_set(SW_EINVALID, "%s: user %s has a client certificate or key but not both",
                            s->name, name);
    if (!kc->token && !kc->cert &&
        (json_object_get(u, "exec") || json_object_get(u, "auth-provider")))
        return sw_error_set(SW_EINVALID,
                            "%s: user %s uses exec or auth-provider credentials, which slipway "
                            "does not support; use a token or a client certificate",
                            s->name, name);
    return 0;
}

static int resolve(const src *s, const json_t *root, const char *context, sw_kubeconfig *kc)
{
    const char *ctxname = context ? context : str_field(root, "current-context");
    if (!json_is_object(root))
        return sw_error_set(SW_EINVALID, "%s: not a YAML mapping", s->name);
    if (!ctxname)
        return sw_error_set(SW_EINVALID, "%s: no current-context is set and no context was given",
                            s->name);
    const json_t *ctx = find_named(root, "contexts", ctxname, "context");
    if (!ctx)
        return sw_error_set(SW_ENOTFOUND, "%s: context %s not found", s->name, ctxname);
    kc->context = sw_strdup(ctxname);
    const char *clname = str_field(ctx, "cluster"), *uname = str_field(ctx, "user");
    const char *ns = str_field(ctx, "namespace");
    kc->ns = sw_strdup(ns ? ns : "default");
    if (!clname)
        return sw_error_set(SW_EINVALID, "%s: context %s names no cluster", s->name, ctxname);
    const json_t *cl = find_named(root, "clusters", clname, "cluster");
    if (!cl)
        return sw_error_set(SW_EINVALID, "%s: context %s names cluster %s, which is not defined",
                            s->name, ctxname, clname);
    int error = resolve_cluster(s, cl, clname, kc);
    if (error < 0 || !uname)
        return error;
    const json_t *u = find_named(root, "users", uname, "user");
    if (!u)
        return sw_error_set(SW_EINVALID, "%s: context %s names user %s, which is not defined",
                            s->name, ctxname, uname);
    return resolve_user(s, u, uname, kc);
}

static int parse_src(sw_kubeconfig **out, const src *s, const char *yaml, size_t len,
                     const char *context)
{
    json_t *root = NULL;
    sw_kubeconfig *kc = NULL;
    int error;
    if (len > SW_KUBECONFIG_MAX_BYTES)
        return sw_error_set(SW_ELIMIT, "%s is larger than %u bytes", s->name,
                            SW_KUBECONFIG_MAX_BYTES);
    if ((error = yaml_to_json(s, yaml, len, &root)) < 0)
        goto done;
    kc = sw_calloc(1, sizeof(*kc));
    if ((error = resolve(s, root, context, kc)) < 0)
        goto done;
    *out = kc;
    kc = NULL;
done:
    sw_kubeconfig_free(kc);
    json_decref(root);
    return error;
}

int sw_kubeconfig_parse(sw_kubeconfig **out, const char *yaml, size_t len, const char *base_dir,
                        const char *context)
{
    src s = {"kubeconfig", base_dir};
    return parse_src(out, &s, yaml, len, context);
}

static char *with_prefix(const char *prefix, const char *s)
{
    sw_buf b = SW_BUF_INIT(8192);
    sw_buf_printf(&b, "%s%s", prefix, s);
    return sw_buf_detach(&b, NULL);
}

/* $KUBECONFIG's first entry, else ~/.kube/config. sw_malloc'd. */
static char *default_path(void)
{
    const char *env = getenv("KUBECONFIG"), *home = getenv("HOME");
    if (env && *env) {
        const char *colon = strchr(env, ':');
        return colon ? sw_strndup(env, (size_t)(colon - env)) : sw_strdup(env);
    }
    return with_prefix(home ? home : "", "/.kube/config");
}

int sw_kubeconfig_load(sw_kubeconfig **out, const char *path, const char *context)
{
    char *p = path ? sw_strdup(path) : default_path(), *data = NULL, *dir = NULL;
    char *name = with_prefix("kubeconfig ", p);
    const char *slash = strrchr(p, '/');
    size_t len = 0;
    src s = {name, NULL};
    int error = sw_kubeconfig_read_file(p, SW_KUBECONFIG_MAX_BYTES, &data, &len);
    if (error < 0) {
        error = wrap_error(error, "kubeconfig", NULL);
        goto done;
    }
    if (slash)
        s.base_dir = dir = sw_strndup(p, slash == p ? 1 : (size_t)(slash - p));
    error = parse_src(out, &s, data, len, context);
done:
    sw_free(p);
    sw_free(data);
    sw_free(dir);
    sw_free(name);
    return error;
}

/* ---- in-cluster ---- */

static char *join(const char *dir, const char *file)
{
    sw_buf b = SW_BUF_INIT(8192);
    sw_buf_printf(&b, "%s/%s", dir, file);
    return sw_buf_detach(&b, NULL);
}

static void trim(char *s, size_t *len)
{
    while (*len && (s[*len - 1] == '\n' || s[*len - 1] == '\r' || s[*len - 1] == ' '))
        s[--*len] = '\0';
}

static int in_cluster_server(sw_kubeconfig *kc)
{
    const char *host = getenv("KUBERNETES_SERVICE_HOST"), *port = getenv("KUBERNETES_SERVICE_PORT");
    if (!host || !*host || !port || !*port)
        return sw_error_set(SW_ENOTFOUND, "not running in a cluster: KUBERNETES_SERVICE_HOST and "
                                          "KUBERNETES_SERVICE_PORT must be set");
    sw_buf b = SW_BUF_INIT(4096);
    bool v6 = strchr(host, ':') != NULL;
    sw_buf_printf(&b, "https://%s%s%s:%s", v6 ? "[" : "", host, v6 ? "]" : "", port);
    kc->server = sw_buf_detach(&b, NULL);
    return 0;
}

int sw_kubeconfig_in_cluster_dir(sw_kubeconfig **out, const char *dir)
{
    sw_kubeconfig *kc = sw_calloc(1, sizeof(*kc));
    char *ca_path = join(dir, "ca.crt"), *ns_path = join(dir, "namespace"), *ns = NULL;
    size_t len = 0;
    int error = in_cluster_server(kc);
    if (error < 0)
        goto done;
    kc->token_file = join(dir, "token");
    if ((error = sw_kubeconfig_read_file(kc->token_file, SW_KUBECONFIG_MAX_FILE, &kc->token,
                                         &len)) < 0) {
        error = wrap_error(error, "in-cluster config", NULL);
        goto done;
    }
    trim(kc->token, &len);
    error = sw_kubeconfig_read_file(ca_path, SW_KUBECONFIG_MAX_FILE, &kc->ca, &kc->ca_len);
    if (error < 0 && error != SW_ENOTFOUND)
        goto done;
    if (sw_kubeconfig_read_file(ns_path, 4096, &ns, &len) == 0)
        trim(ns, &len);
    kc->ns = sw_strdup(ns && *ns ? ns : "default");
    kc->context = sw_strdup("");
    *out = kc;
    kc = NULL;
    error = 0;
done:
    sw_kubeconfig_free(kc);
    sw_free(ca_path);
    sw_free(ns_path);
    sw_free(ns);
    return error;
}

int sw_kubeconfig_in_cluster(sw_kubeconfig **out)
{
    return sw_kubeconfig_in_cluster_dir(out, SW_IN_CLUSTER_DIR);
}

int sw_kubeconfig_from_parts(sw_kubeconfig **out, const char *server, const char *ca_file,
                             const char *token_file, const char *ns)
{
    sw_kubeconfig *kc = sw_calloc(1, sizeof(*kc));
    size_t len = 0;
    int error = 0;
    if (!server || (!sw_str_prefix(server, "https://") && !sw_str_prefix(server, "http://"))) {
        error = sw_error_set(SW_EINVALID, "server \"%.200s\" is not an http(s) URL",
                             server ? server : "");
        goto done;
    }
    kc->server = sw_strdup(server);
    len = strlen(kc->server);
    while (len > 0 && kc->server[len - 1] == '/')
        kc->server[--len] = '\0';
    if (ca_file && (error = sw_kubeconfig_read_file(ca_file, SW_KUBECONFIG_MAX_FILE, &kc->ca,
                                                    &kc->ca_len)) < 0)
        goto done;
    if (token_file) {
        kc->token_file = sw_strdup(token_file);
        if ((error =
                 sw_kubeconfig_read_file(token_file, SW_KUBECONFIG_MAX_FILE, &kc->token, &len)) < 0)
            goto done;
        trim(kc->token, &len);
    }
    kc->ns = sw_strdup(ns && *ns ? ns : "default");
    kc->context = sw_strdup("");
    *out = kc;
    kc = NULL;
done:
    sw_kubeconfig_free(kc);
    return error;
}

/* ---- accessors ---- */

const char *sw_kubeconfig_server(const sw_kubeconfig *kc)
{
    return kc->server;
}

const char *sw_kubeconfig_namespace(const sw_kubeconfig *kc)
{
    return kc->ns;
}

const char *sw_kubeconfig_context(const sw_kubeconfig *kc)
{
    return kc->context;
}

const char *sw_kubeconfig_token(const sw_kubeconfig *kc)
{
    return kc->token;
}

const char *sw_kubeconfig_token_file(const sw_kubeconfig *kc)
{
    return kc->token_file;
}

const char *sw_kubeconfig_tls_server_name(const sw_kubeconfig *kc)
{
    return kc->tls_server_name;
}

bool sw_kubeconfig_insecure(const sw_kubeconfig *kc)
{
    return kc->insecure;
}

const char *sw_kubeconfig_ca(const sw_kubeconfig *kc, size_t *len)
{
    if (len)
        *len = kc->ca_len;
    return kc->ca;
}

const char *sw_kubeconfig_client_cert(const sw_kubeconfig *kc, size_t *len)
{
    if (len)
        *len = kc->cert_len;
    return kc->cert;
}

const char *sw_kubeconfig_client_key(const sw_kubeconfig *kc, size_t *len)
{
    if (len)
        *len = kc->key_len;
    return kc->key;
}
