/* buildtoken: tokens scoped to one build. "swb1.<base64url ns/name>.<hex HMAC-SHA256>", the MAC
 * over "ns/name/uid" with a key kept in the server's data directory: nothing is stored, and a
 * token dies with its build (a new build of the same name has a new uid). */
#include "kinds/build.h"

#include "util/alloc.h"
#include "util/error.h"
#include "util/json.h"
#include "util/str.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <stdio.h>
#include <string.h>

#define PREFIX "swb1."

static void mac_hex(const unsigned char *key, size_t keylen, const char *ns, const char *name,
                    const char *uid, char out[65])
{
    char msg[1024];
    unsigned char mac[32];
    unsigned int len = 0;
    snprintf(msg, sizeof(msg), "%s/%s/%s", ns, name, uid);
    HMAC(EVP_sha256(), key, (int)keylen, (const unsigned char *)msg, strlen(msg), mac, &len);
    sw_hex(mac, 32, out);
}

int sw_build_token_make(const unsigned char *key, size_t keylen, const char *ns, const char *name,
                        const char *uid, char *out, size_t n)
{
    char id[600], mac[65];
    if (!key || !keylen)
        return sw_error_set(SW_EUNAVAILABLE, "build tokens are not available on this server");
    snprintf(id, sizeof(id), "%s/%s", ns, name);
    char *b64 = sw_base64url_encode(id, strlen(id));
    mac_hex(key, keylen, ns, name, uid, mac);
    int w = snprintf(out, n, PREFIX "%s.%s", b64, mac);
    sw_free(b64);
    return w > 0 && (size_t)w < n ? 0 : sw_error_set(SW_ELIMIT, "build token too long");
}

int sw_build_token_subject(const char *token, char *ns, size_t nn, char *name, size_t nname)
{
    unsigned char *raw = NULL;
    size_t len = 0;
    char b64[700];
    if (!sw_str_prefix(token, PREFIX))
        return SW_EUNAUTHORIZED;
    const char *p = token + strlen(PREFIX), *dot = strchr(p, '.');
    if (!dot || (size_t)(dot - p) >= sizeof(b64) || strlen(dot + 1) != 64)
        return SW_EUNAUTHORIZED;
    memcpy(b64, p, (size_t)(dot - p));
    b64[dot - p] = '\0';
    if (sw_base64url_decode(b64, &raw, &len) < 0)
        return SW_EUNAUTHORIZED;
    char *slash = memchr(raw, '/', len);
    int error = SW_EUNAUTHORIZED;
    if (slash && (size_t)(slash - (char *)raw) < nn &&
        len - (size_t)(slash - (char *)raw) <= nname && !memchr(raw, '\0', len)) {
        memcpy(ns, raw, (size_t)(slash - (char *)raw));
        ns[slash - (char *)raw] = '\0';
        sw_strlcpy(name, slash + 1, nname);
        error = 0;
    }
    sw_free(raw);
    return error;
}

bool sw_build_token_valid(const unsigned char *key, size_t keylen, const char *token,
                          const char *ns, const char *name, const char *uid)
{
    char mac[65];
    const char *dot = strrchr(token, '.');
    if (!key || !keylen || !dot || strlen(dot + 1) != 64)
        return false;
    mac_hex(key, keylen, ns, name, uid, mac);
    return CRYPTO_memcmp(mac, dot + 1, 64) == 0;
}

/* builds/<n>/token: minted for the build controller (build tokens cannot reach this). */
int sw_build_build_token(const sw_kind_ctx *ctx, sw_objects *o, const sw_subreq *r, sw_subresp *out)
{
    json_t *b = NULL;
    char tok[1024];
    if (strcmp(r->method, "POST"))
        return sw_error_set(SW_EMETHOD, "builds/token takes a POST");
    int error = o->get(o, &sw_kind_build, r->ns, r->name, &b);
    if (error == 0)
        error = sw_build_token_make(ctx->build_token_key, ctx->build_token_key_len, r->ns, r->name,
                                    sw_json_str_at(b, "metadata.uid") ?: "", tok, sizeof(tok));
    if (error == 0)
        out->obj = json_pack("{s:s, s:s, s:s}", "kind", "BuildToken", "apiVersion",
                             "build.openshift.io/v1", "token", tok);
    out->status = 201;
    json_decref(b);
    return error;
}
