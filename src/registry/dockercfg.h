/* dockercfg: registry credentials from the payload of kubernetes.io/dockerconfigjson
 * ({"auths":{KEY:{...}}}) and kubernetes.io/dockercfg ({KEY:{...}}) Secrets, looked up the way
 * the kubelet keyring does. Credentials are never logged and never appear in error messages;
 * they are wiped from memory on free. Design note: docs/internals/registry.md. */
#ifndef SW_REGISTRY_DOCKERCFG_H
#define SW_REGISTRY_DOCKERCFG_H

#include <stdbool.h>
#include <stddef.h>

#define SW_CREDS_TYPE_DOCKERCONFIGJSON "kubernetes.io/dockerconfigjson"
#define SW_CREDS_TYPE_DOCKERCFG "kubernetes.io/dockercfg"

typedef struct sw_creds sw_creds;

int sw_creds_new(sw_creds **out);

/* Adds every entry of one secret payload (the base64-decoded JSON of .dockerconfigjson or
 * .dockercfg). An entry has "auth" (base64 of "user:pass", preferred) or "username" and
 * "password"; entries with neither are skipped. Keys may be "host", "host:port",
 * "https://host/v1/", "host/path" or "*.domain". Returns 0, or SW_EINVALID (unknown type, bad
 * JSON, bad base64); the message names the key at most, never a credential. */
int sw_creds_add_secret(sw_creds *c, const char *type, const char *json, size_t len);

/* Credentials for a registry host ("docker.io", "quay.io", "localhost:5000"). The docker.io
 * aliases (index.docker.io, registry-1.docker.io, registry.hub.docker.com) are one host.
 * Among keys without a path, the first added wins; keys with a path match only through
 * sw_creds_lookup_repo(). The strings stay valid until sw_creds_free(). */
bool sw_creds_lookup(const sw_creds *c, const char *registry, const char **user, const char **pass);

/* As sw_creds_lookup(), for one repository: a key "host/org" applies to repositories under
 * "org/"; the longest matching path wins, then the earliest added; repository may be NULL. */
bool sw_creds_lookup_repo(const sw_creds *c, const char *registry, const char *repository,
                          const char **user, const char **pass);

/* Number of usable entries (for tests and diagnostics). */
size_t sw_creds_count(const sw_creds *c);

void sw_creds_free(sw_creds *c);

#endif
