/* tls: the server's serving certificate. On first start a self-signed ECDSA P-256 certificate
 * for 127.0.0.1, ::1, localhost and the listen host is generated with OpenSSL and kept in
 * DIR/tls.crt and DIR/tls.key (0600); kubeconfigs carry it as certificate-authority-data. */
#ifndef SW_TLS_H
#define SW_TLS_H

#include <stddef.h>

/* Loads or creates the pair; *cert_pem and *key_pem are sw_malloc'd PEM texts. */
int sw_tls_load_or_create(const char *dir, const char *host, char **cert_pem, char **key_pem);

#endif
