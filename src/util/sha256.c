/* sha256: streaming and one-shot SHA-256 over OpenSSL's EVP interface (which picks the SHA-NI
 * or AVX code path at run time). A failure inside OpenSSL here can only mean memory
 * exhaustion or a broken library, so it is fatal, as allocation failure is project-wide. */
#include "util/sha256.h"

#include "util/log.h"
#include "util/str.h"

#include <openssl/evp.h>
#include <stdlib.h>
#include <string.h>

static void fatal(const char *what)
{
    sw_log(SW_LOG_ERROR, "sha256: %s failed", what);
    abort();
}

void sw_sha256_init(sw_sha256 *h)
{
    EVP_MD_CTX *ctx = EVP_MD_CTX_new();
    if (!ctx)
        fatal("EVP_MD_CTX_new");
    if (EVP_DigestInit_ex(ctx, EVP_sha256(), NULL) != 1)
        fatal("EVP_DigestInit_ex");
    h->ctx = ctx;
}

void sw_sha256_update(sw_sha256 *h, const void *data, size_t len)
{
    if (len == 0)
        return;
    if (EVP_DigestUpdate((EVP_MD_CTX *)h->ctx, data, len) != 1)
        fatal("EVP_DigestUpdate");
}

void sw_sha256_final(sw_sha256 *h, unsigned char out[SW_SHA256_LEN])
{
    unsigned int n = 0;
    if (EVP_DigestFinal_ex((EVP_MD_CTX *)h->ctx, out, &n) != 1 || n != SW_SHA256_LEN)
        fatal("EVP_DigestFinal_ex");
    sw_sha256_dispose(h);
}

void sw_sha256_final_digest(sw_sha256 *h, char out[SW_SHA256_DIGEST_BUF])
{
    unsigned char md[SW_SHA256_LEN];
    sw_sha256_final(h, md);
    memcpy(out, "sha256:", 7);
    sw_hex(md, sizeof(md), out + 7);
}

void sw_sha256_dispose(sw_sha256 *h)
{
    EVP_MD_CTX_free((EVP_MD_CTX *)h->ctx);
    h->ctx = NULL;
}

void sw_sha256_digest(const void *data, size_t len, char out[SW_SHA256_DIGEST_BUF])
{
    sw_sha256 h;
    sw_sha256_init(&h);
    sw_sha256_update(&h, data, len);
    sw_sha256_final_digest(&h, out);
}

bool sw_sha256_digest_valid(const char *s)
{
    if (!s || strncmp(s, "sha256:", 7) != 0 || strlen(s) != SW_SHA256_DIGEST_LEN)
        return false;
    for (const char *p = s + 7; *p; p++)
        if (!((*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'f')))
            return false;
    return true;
}
