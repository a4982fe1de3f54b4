/* tls: serving certificates (self-signed, generated and kept, or given) and client certificates
 * (see tls.h). */
#include "apiserver/tls.h"

#include "util/alloc.h"
#include "util/error.h"
#include "util/path.h"
#include "util/str.h"

#include <gnutls/gnutls.h>
#include <gnutls/x509.h>
#include <openssl/ec.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <stdio.h>
#include <string.h>

#define MAX_PEM (64 * 1024)

/* A PEM file's text, or NULL when it is missing, empty or over MAX_PEM (then regenerated). */
static char *read_pem(const char *path)
{
    char *buf = NULL;
    size_t n = 0;
    if (sw_path_read(path, MAX_PEM, false, &buf, &n) < 0 || n == 0) {
        sw_free(buf);
        return NULL;
    }
    return buf;
}

static char *bio_text(BIO *b)
{
    char *data = NULL;
    long n = BIO_get_mem_data(b, &data);
    return sw_strndup(data, (size_t)n);
}

static int add_san(X509 *x, const char *host)
{
    char san[512] = "IP:127.0.0.1,IP:::1,DNS:localhost";
    bool is_ip = strspn(host, "0123456789.") == strlen(host);
    if (host[0] && strcmp(host, "127.0.0.1") && strcmp(host, "localhost") &&
        strcmp(host, "0.0.0.0"))
        snprintf(san + strlen(san), sizeof(san) - strlen(san), ",%s:%s", is_ip ? "IP" : "DNS",
                 host);
    X509V3_CTX ctx;
    X509V3_set_ctx_nodb(&ctx);
    X509V3_set_ctx(&ctx, x, x, NULL, NULL, 0);
    X509_EXTENSION *ext = X509V3_EXT_conf_nid(NULL, &ctx, NID_subject_alt_name, san);
    if (!ext)
        return SW_ERROR;
    X509_add_ext(x, ext, -1);
    X509_EXTENSION_free(ext);
    X509_EXTENSION *bc = X509V3_EXT_conf_nid(NULL, &ctx, NID_basic_constraints, "critical,CA:TRUE");
    if (bc) {
        X509_add_ext(x, bc, -1);
        X509_EXTENSION_free(bc);
    }
    return 0;
}

static int generate(const char *host, char **cert_pem, char **key_pem)
{
    EVP_PKEY *key = EVP_EC_gen("P-256");
    X509 *x = X509_new();
    BIO *cb = BIO_new(BIO_s_mem()), *kb = BIO_new(BIO_s_mem());
    int error = SW_ERROR;
    unsigned char serial[16];
    if (!key || !x || !cb || !kb)
        goto done;
    sw_random_bytes(serial, sizeof(serial));
    serial[0] &= 0x7f;
    BIGNUM *bn = BN_bin2bn(serial, sizeof(serial), NULL);
    BN_to_ASN1_INTEGER(bn, X509_get_serialNumber(x));
    BN_free(bn);
    X509_set_version(x, 2);
    X509_gmtime_adj(X509_getm_notBefore(x), -3600);
    X509_gmtime_adj(X509_getm_notAfter(x), 10L * 365 * 24 * 3600);
    X509_set_pubkey(x, key);
    X509_NAME *name = X509_get_subject_name(x);
    X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC, (const unsigned char *)"slipway", -1, -1,
                               0);
    X509_set_issuer_name(x, name);
    if (add_san(x, host) < 0 || !X509_sign(x, key, EVP_sha256()) || !PEM_write_bio_X509(cb, x) ||
        !PEM_write_bio_PrivateKey(kb, key, NULL, NULL, 0, NULL, NULL))
        goto done;
    *cert_pem = bio_text(cb);
    *key_pem = bio_text(kb);
    error = 0;
done:
    BIO_free(cb);
    BIO_free(kb);
    X509_free(x);
    EVP_PKEY_free(key);
    return error < 0 ? sw_error_set(SW_ERROR, "cannot generate the serving certificate") : 0;
}

int sw_tls_load_or_create(const char *dir, const char *host, char **cert_pem, char **key_pem)
{
    return sw_tls_load_or_create_named(dir, "tls", host, cert_pem, key_pem);
}

int sw_tls_load_or_create_named(const char *dir, const char *base, const char *host,
                                char **cert_pem, char **key_pem)
{
    char cpath[4096], kpath[4096];
    snprintf(cpath, sizeof(cpath), "%s/%s.crt", dir, base);
    snprintf(kpath, sizeof(kpath), "%s/%s.key", dir, base);
    *cert_pem = read_pem(cpath);
    *key_pem = read_pem(kpath);
    if (*cert_pem && *key_pem)
        return 0;
    sw_free(*cert_pem);
    sw_free(*key_pem);
    *cert_pem = *key_pem = NULL;
    int error = generate(host, cert_pem, key_pem);
    if (error == 0)
        error = sw_path_write(kpath, *key_pem, strlen(*key_pem), 0600);
    if (error == 0)
        error = sw_path_write(cpath, *cert_pem, strlen(*cert_pem), 0600);
    return error;
}

int sw_tls_read_ca(const char *path, char **pem)
{
    *pem = read_pem(path);
    if (!*pem)
        return sw_error_set(SW_EINVALID,
                            "--client-ca-file %s: cannot read a PEM file (at most %d "
                            "bytes)",
                            path, MAX_PEM);
    if (!strstr(*pem, "-----BEGIN CERTIFICATE-----")) {
        sw_free(*pem);
        *pem = NULL;
        return sw_error_set(SW_EINVALID, "--client-ca-file %s: no PEM certificate in it", path);
    }
    return 0;
}

/* A DN attribute of crt (index idx) into out; false when it has none. */
static bool dn_attr(gnutls_x509_crt_t crt, const char *oid, unsigned idx, char *out, size_t n)
{
    size_t size = n;
    if (gnutls_x509_crt_get_dn_by_oid(crt, oid, idx, 0, out, &size) < 0 || size == 0)
        return false;
    out[size < n ? size : n - 1] = '\0';
    return true;
}

int sw_tls_peer_identity(void *session, char *user, size_t user_n, char *groups, size_t groups_n)
{
    gnutls_session_t sess = session;
    unsigned status = 0, count = 0;
    user[0] = groups[0] = '\0';
    if (!sess || gnutls_certificate_type_get(sess) != GNUTLS_CRT_X509)
        return SW_EUNAUTHORIZED;
    const gnutls_datum_t *peers = gnutls_certificate_get_peers(sess, &count);
    if (!peers || count == 0)
        return SW_EUNAUTHORIZED; /* no client certificate: the caller tries a token */
    if (gnutls_certificate_verify_peers2(sess, &status) < 0 || status != 0)
        return sw_error_set(SW_EUNAUTHORIZED, "Unauthorized");
    gnutls_x509_crt_t crt;
    if (gnutls_x509_crt_init(&crt) < 0)
        return sw_error_set(SW_EUNAUTHORIZED, "Unauthorized");
    int error = 0;
    if (gnutls_x509_crt_import(crt, &peers[0], GNUTLS_X509_FMT_DER) < 0 ||
        !dn_attr(crt, GNUTLS_OID_X520_COMMON_NAME, 0, user, user_n))
        error = sw_error_set(SW_EUNAUTHORIZED, "Unauthorized");
    /* O attributes are the groups, comma-separated */
    char o[256];
    size_t used = 0;
    for (unsigned i = 0;
         error == 0 && i < 16 && dn_attr(crt, GNUTLS_OID_X520_ORGANIZATION_NAME, i, o, sizeof(o));
         i++) {
        int w = snprintf(groups + used, groups_n - used, "%s%s", used ? "," : "", o);
        if (w < 0 || (size_t)w >= groups_n - used)
            break;
        used += (size_t)w;
    }
    gnutls_x509_crt_deinit(crt);
    return error;
}
