/* tls: the server's serving certificate and its clients' certificates. On first start a
 * self-signed ECDSA P-256 certificate for 127.0.0.1, ::1, localhost and the listen host is
 * generated with OpenSSL and kept in DIR/tls.crt and DIR/tls.key (0600); kubeconfigs carry it
 * as certificate-authority-data. Client certificates (--client-ca-file) are verified by GnuTLS,
 * the TLS library under libmicrohttpd. */
#ifndef SW_TLS_H
#define SW_TLS_H

#include <stddef.h>

/* Loads or creates the pair; *cert_pem and *key_pem are sw_malloc'd PEM texts. */
int sw_tls_load_or_create(const char *dir, const char *host, char **cert_pem, char **key_pem);
/* The same for DIR/<base>.crt and DIR/<base>.key (envtest pre-writes apiserver.crt/.key in its
 * --cert-dir). */
int sw_tls_load_or_create_named(const char *dir, const char *base, const char *host,
                                char **cert_pem, char **key_pem);
/* The PEM of a --client-ca-file (sw_malloc'd): SW_EINVALID when it is unreadable or holds no
 * certificate. */
int sw_tls_read_ca(const char *path, char **pem);

/* The identity of a TLS client (session: libmicrohttpd's gnutls_session_t) whose certificate
 * chains to the server's client CA, as kube-apiserver reads it: the subject's CN is the user,
 * its O attributes the groups (comma-separated into groups). 0 with both set; SW_EUNAUTHORIZED
 * without a message when the client sent no certificate, with "Unauthorized" when it does not
 * verify. Nothing of the certificate is logged. */
int sw_tls_peer_identity(void *session, char *user, size_t user_n, char *groups, size_t groups_n);

#endif
