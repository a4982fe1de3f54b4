/* kubeconfig: where an API server is and how to authenticate to it, from a kubeconfig file
 * (libyaml) or from a pod's service account ("in-cluster"). Resolves one context into one
 * cluster + user: server URL, CA (inline or file), insecure-skip-tls-verify, tls-server-name,
 * bearer token (inline or tokenFile), client certificate and key (inline or files), namespace.
 * See docs/internals/client.md. */
#ifndef SW_CLIENT_KUBECONFIG_H
#define SW_CLIENT_KUBECONFIG_H

#include <stdbool.h>
#include <stddef.h>

typedef struct sw_kubeconfig sw_kubeconfig;

#define SW_KUBECONFIG_MAX_BYTES (4u << 20) /* a kubeconfig larger than this is refused */
#define SW_KUBECONFIG_MAX_FILE (1u << 20)  /* CA, certificate, key and token files */
#define SW_IN_CLUSTER_DIR "/var/run/secrets/kubernetes.io/serviceaccount"

/* Loads path (NULL: the first entry of $KUBECONFIG, else ~/.kube/config) and resolves context
 * (NULL: current-context). Relative file references resolve against the file's directory.
 * Errors: SW_ENOTFOUND (no such file or context), SW_EINVALID (bad YAML, missing or bad fields),
 * SW_ELIMIT (too large), each with a message naming the file. */
int sw_kubeconfig_load(sw_kubeconfig **out, const char *path, const char *context);
/* The same from memory; base_dir resolves relative file references (NULL: the working dir). */
int sw_kubeconfig_parse(sw_kubeconfig **out, const char *yaml, size_t len, const char *base_dir,
                        const char *context);
/* A pod's service account: https://$KUBERNETES_SERVICE_HOST:$KUBERNETES_SERVICE_PORT, with
 * token, ca.crt and namespace from SW_IN_CLUSTER_DIR. The token is re-read by the client as it
 * rotates. SW_ENOTFOUND when not running in a cluster. */
int sw_kubeconfig_in_cluster(sw_kubeconfig **out);
/* in_cluster with another service-account directory (tests, unusual mounts). */
int sw_kubeconfig_in_cluster_dir(sw_kubeconfig **out, const char *dir);
/* A configuration given as parts rather than a file (`slipway builder --server --ca --token-file`):
 * server URL (a trailing '/' is dropped), CA bundle file (PEM; NULL: the system's CAs), token
 * file (read now and re-read by the client as it rotates; NULL: none) and namespace (NULL:
 * "default"). SW_EINVALID for a server that is not an http(s) URL, file errors as above. */
int sw_kubeconfig_from_parts(sw_kubeconfig **out, const char *server, const char *ca_file,
                             const char *token_file, const char *ns);
void sw_kubeconfig_free(sw_kubeconfig *kc);

/* Accessors; strings are borrowed from kc and NULL when absent unless stated. */
const char *sw_kubeconfig_server(const sw_kubeconfig *kc);    /* never NULL, no trailing '/' */
const char *sw_kubeconfig_namespace(const sw_kubeconfig *kc); /* "default" when unset */
const char *sw_kubeconfig_context(const sw_kubeconfig *kc);   /* "" in-cluster */
const char *sw_kubeconfig_token(const sw_kubeconfig *kc);     /* inline or as read at load */
const char *sw_kubeconfig_token_file(const sw_kubeconfig *kc);
const char *sw_kubeconfig_tls_server_name(const sw_kubeconfig *kc);
bool sw_kubeconfig_insecure(const sw_kubeconfig *kc);
/* PEM bytes (decoded certificate-authority-data or the file's contents), or NULL. */
const char *sw_kubeconfig_ca(const sw_kubeconfig *kc, size_t *len);
const char *sw_kubeconfig_client_cert(const sw_kubeconfig *kc, size_t *len);
const char *sw_kubeconfig_client_key(const sw_kubeconfig *kc, size_t *len);

/* Reads a whole small file (at most max bytes) into a NUL-terminated sw_malloc'd buffer.
 * Shared with the client, which re-reads rotating token files. */
int sw_kubeconfig_read_file(const char *path, size_t max, char **out, size_t *len);

#endif
