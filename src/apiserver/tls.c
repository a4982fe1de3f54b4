/* tls: self-signed serving certificate generation and persistence (see tls.h). */
#include "apiserver/tls.h"

#include "util/alloc.h"
#include "util/error.h"
#include "util/path.h"
#include "util/str.h"

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
    char cpath[4096], kpath[4096];
    snprintf(cpath, sizeof(cpath), "%s/tls.crt", dir);
    snprintf(kpath, sizeof(kpath), "%s/tls.key", dir);
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
