/* dockercfg: a small keyring built from docker config Secret payloads. Keys are normalised once
 * on insert (scheme and /v1/ stripped, host lower-cased, docker.io aliases folded) so a lookup
 * is a linear scan of a short list. Secrets are wiped with OPENSSL_cleanse when freed. */
#include "registry/dockercfg.h"

#include "util/alloc.h"
#include "util/error.h"
#include "util/json.h"
#include "util/str.h"

#include <openssl/crypto.h>
#include <string.h>
#include <strings.h>

#define CREDS_JSON_MAX (1024 * 1024) /* a Secret is at most 1 MiB */
#define CREDS_MAX_ENTRIES 1024

typedef struct creds_entry {
    char host[256]; /* lower-case host[:port], docker.io aliases folded; may start with "*." */
    char path[256]; /* "" or "org/team" without leading or trailing '/' */
    char *user;     /* sw_malloc'd, wiped on free */
    char *pass;     /* sw_malloc'd, wiped on free */
} creds_entry;

struct sw_creds {
    creds_entry *v;
    size_t n, cap;
};

static const char *const docker_aliases[] = {"index.docker.io", "registry-1.docker.io",
                                             "registry.hub.docker.com", "docker.io", NULL};

static void wipe_free(char *s)
{
    if (!s)
        return;
    OPENSSL_cleanse(s, strlen(s));
    sw_free(s);
}

int sw_creds_new(sw_creds **out)
{
    *out = sw_calloc(1, sizeof(sw_creds));
    return 0;
}

void sw_creds_free(sw_creds *c)
{
    if (!c)
        return;
    for (size_t i = 0; i < c->n; i++) {
        wipe_free(c->v[i].user);
        wipe_free(c->v[i].pass);
    }
    sw_free(c->v);
    sw_free(c);
}

size_t sw_creds_count(const sw_creds *c)
{
    return c ? c->n : 0;
}

/* Lower-cases host in place and folds the docker.io aliases. */
static void normalise_host(char *host, size_t n)
{
    for (char *p = host; *p; p++)
        if (*p >= 'A' && *p <= 'Z')
            *p = (char)(*p - 'A' + 'a');
    for (size_t i = 0; docker_aliases[i]; i++)
        if (strcmp(host, docker_aliases[i]) == 0)
            sw_strlcpy(host, "docker.io", n);
}

/* Splits a keyring key into host and path; false if it does not fit or has no host. */
static bool parse_key(const char *key, char host[256], char path[256])
{
    if (strncasecmp(key, "https://", 8) == 0)
        key += 8;
    else if (strncasecmp(key, "http://", 7) == 0)
        key += 7;
    const char *slash = strchr(key, '/');
    size_t hlen = slash ? (size_t)(slash - key) : strlen(key);
    if (hlen == 0 || hlen >= 256)
        return false;
    memcpy(host, key, hlen);
    host[hlen] = '\0';
    normalise_host(host, 256);
    const char *p = slash ? slash : "";
    while (*p == '/')
        p++;
    size_t plen = strlen(p);
    while (plen && p[plen - 1] == '/')
        plen--;
    if (plen >= 256)
        return false;
    memcpy(path, p, plen);
    path[plen] = '\0';
    if (strcmp(path, "v1") == 0 || strcmp(path, "v2") == 0)
        path[0] = '\0';
    return true;
}

/* user and pass from an entry object: "auth" (base64 "user:pass") first, else
 * "username"/"password". Returns 1 with both set, 0 to skip the entry, or an error. */
static int entry_secrets(const char *key, json_t *v, char **user, char **pass)
{
    const char *auth = json_string_value(json_object_get(v, "auth"));
    if (auth && *auth) {
        unsigned char *raw = NULL;
        size_t rlen = 0;
        if (sw_base64_decode(auth, strlen(auth), &raw, &rlen) < 0)
            return sw_error_set(SW_EINVALID,
                                "docker config entry \"%.100s\": auth is not "
                                "valid base64",
                                key);
        char *colon = memchr(raw, ':', rlen);
        int result = 0;
        if (!colon || memchr(raw, '\0', rlen)) {
            result = sw_error_set(SW_EINVALID,
                                  "docker config entry \"%.100s\": auth is not "
                                  "base64 of user:password",
                                  key);
        } else {
            *user = sw_strndup((char *)raw, (size_t)(colon - (char *)raw));
            *pass = sw_strdup(colon + 1);
            result = 1;
        }
        OPENSSL_cleanse(raw, rlen);
        sw_free(raw);
        return result;
    }
    const char *u = json_string_value(json_object_get(v, "username"));
    const char *p = json_string_value(json_object_get(v, "password"));
    if (!u || !*u)
        return 0;
    *user = sw_strdup(u);
    *pass = sw_strdup(p ? p : "");
    return 1;
}

static int add_entry(sw_creds *c, const char *key, json_t *v)
{
    if (!json_is_object(v))
        return sw_error_set(SW_EINVALID, "docker config entry \"%.100s\" is not an object", key);
    creds_entry e;
    memset(&e, 0, sizeof(e));
    if (!parse_key(key, e.host, e.path))
        return sw_error_set(SW_EINVALID, "docker config key \"%.100s\" is not a registry", key);
    int r = entry_secrets(key, v, &e.user, &e.pass);
    if (r <= 0)
        return r;
    if (c->n == CREDS_MAX_ENTRIES) {
        wipe_free(e.user);
        wipe_free(e.pass);
        return sw_error_set(SW_EINVALID, "more than %d docker config entries", CREDS_MAX_ENTRIES);
    }
    if (c->n == c->cap) {
        c->cap = c->cap ? c->cap * 2 : 4;
        c->v = sw_realloc(c->v, c->cap * sizeof(creds_entry));
    }
    c->v[c->n++] = e;
    return 0;
}

int sw_creds_add_secret(sw_creds *c, const char *type, const char *json, size_t len)
{
    json_t *root = NULL;
    int error = 0;
    bool cfgjson = sw_str_eq(type, SW_CREDS_TYPE_DOCKERCONFIGJSON);
    if (!cfgjson && !sw_str_eq(type, SW_CREDS_TYPE_DOCKERCFG))
        return sw_error_set(SW_EINVALID,
                            "unsupported secret type \"%.100s\" for registry "
                            "credentials",
                            type ? type : "");
    if (!json || len > CREDS_JSON_MAX)
        return sw_error_set(SW_EINVALID, "docker config payload missing or larger than 1 MiB");
    /* jansson's messages quote the input near the error: never pass them on. */
    if (sw_json_parse(json, len, 16, 0, &root) < 0 || !json_is_object(root)) {
        error = sw_error_set(SW_EINVALID, "%s payload is not a JSON object", type);
        goto done;
    }
    json_t *auths = root;
    if (cfgjson) {
        auths = json_object_get(root, "auths");
        if (!auths)
            goto done; /* e.g. only credHelpers: nothing usable */
        if (!json_is_object(auths)) {
            error = sw_error_set(SW_EINVALID, "%s payload: auths is not an object", type);
            goto done;
        }
    }
    const char *key;
    json_t *v;
    json_object_foreach(auths, key, v)
    {
        error = add_entry(c, key, v);
        if (error < 0)
            goto done;
    }
done:
    json_decref(root);
    return error;
}

/* "*.example.com" matches "a.example.com" (same number of labels, same port). */
static bool host_matches(const char *pattern, const char *host)
{
    if (strcmp(pattern, host) == 0)
        return true;
    if (strncmp(pattern, "*.", 2) != 0)
        return false;
    const char *dot = strchr(host, '.');
    return dot && dot != host && strcmp(dot, pattern + 1) == 0;
}

/* -1 if path does not cover repository, else the length of the match. */
static long path_match(const char *path, const char *repository)
{
    size_t n = strlen(path);
    if (n == 0)
        return 0;
    if (!repository || strncmp(path, repository, n) != 0)
        return -1;
    if (repository[n] != '\0' && repository[n] != '/')
        return -1;
    return (long)n;
}

bool sw_creds_lookup_repo(const sw_creds *c, const char *registry, const char *repository,
                          const char **user, const char **pass)
{
    if (!c || !registry)
        return false;
    char host[256];
    if (sw_strlcpy(host, registry, sizeof(host)) >= sizeof(host))
        return false;
    normalise_host(host, sizeof(host));
    const creds_entry *best = NULL;
    long best_len = -1;
    for (size_t i = 0; i < c->n; i++) {
        const creds_entry *e = &c->v[i];
        if (!host_matches(e->host, host))
            continue;
        long m = path_match(e->path, repository);
        if (m > best_len) {
            best = e;
            best_len = m;
        }
    }
    if (!best)
        return false;
    *user = best->user;
    *pass = best->pass;
    return true;
}

bool sw_creds_lookup(const sw_creds *c, const char *registry, const char **user, const char **pass)
{
    return sw_creds_lookup_repo(c, registry, NULL, user, pass);
}
