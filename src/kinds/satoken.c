/* satoken: ServiceAccount tokens (serviceaccounts/<n>/token, the TokenRequest API behind
 * `kubectl create token`). A token is a JWT signed with HMAC-SHA256 (HS256) under a key kept in
 * the server's data directory: nothing is stored, and the claims say who (namespace, name and
 * uid of the ServiceAccount), for whom (aud) and until when (exp). kube-apiserver signs with
 * RS256 so that others can verify with its public key; slipway's tokens are verified by slipway
 * only (TokenReview), which a shared secret serves. */
#include "kinds/core.h"

#include "util/alloc.h"
#include "util/error.h"
#include "util/json.h"
#include "util/str.h"
#include "util/time.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <stdio.h>
#include <string.h>

#define MAX_TOKEN 8192
#define MIN_EXPIRATION 600
#define DEFAULT_EXPIRATION 3600
#define MAX_EXPIRATION (48 * 3600)

static char *sign(const unsigned char *key, size_t keylen, const char *signing_input)
{
    unsigned char mac[32];
    unsigned int len = 0;
    HMAC(EVP_sha256(), key, (int)keylen, (const unsigned char *)signing_input,
         strlen(signing_input), mac, &len);
    return sw_base64url_encode(mac, sizeof(mac));
}

int sw_sa_token_make(const unsigned char *key, size_t keylen, const sw_sa_claims *c, char **out)
{
    if (!key || !keylen)
        return sw_error_set(SW_EUNAVAILABLE, "service account tokens are not available here");
    char sub[600], jti[37];
    snprintf(sub, sizeof(sub), "system:serviceaccount:%s:%s", c->ns, c->name);
    sw_uuid_v4(jti);
    json_t *aud = json_array();
    for (size_t i = 0; i < c->naudiences; i++)
        json_array_append_new(aud, json_string(c->audiences[i]));
    json_t *claims =
        json_pack("{s:o, s:I, s:I, s:I, s:s, s:s, s:s, s:{s:s, s:{s:s, s:s}}}", "aud", aud, "exp",
                  (json_int_t)c->exp, "iat", (json_int_t)c->iat, "nbf", (json_int_t)c->iat, "iss",
                  SW_SA_ISSUER, "jti", jti, "sub", sub, "kubernetes.io", "namespace", c->ns,
                  "serviceaccount", "name", c->name, "uid", c->uid);
    static const char header[] = "{\"alg\":\"HS256\",\"kid\":\"slipway\",\"typ\":\"JWT\"}";
    size_t plen = 0;
    char *payload = sw_json_dumps(claims, &plen);
    char *h64 = sw_base64url_encode(header, strlen(header));
    char *p64 = sw_base64url_encode(payload, plen);
    size_t n = strlen(h64) + strlen(p64) + 2;
    char *input = sw_malloc(n);
    snprintf(input, n, "%s.%s", h64, p64);
    char *sig = sign(key, keylen, input);
    size_t tn = n + strlen(sig) + 1;
    *out = sw_malloc(tn);
    snprintf(*out, tn, "%s.%s", input, sig);
    sw_free(sig);
    sw_free(input);
    sw_free(h64);
    sw_free(p64);
    sw_free(payload);
    json_decref(claims);
    return 0;
}

bool sw_sa_token_shape(const char *token)
{
    return sw_str_prefix(token, "eyJ") && strchr(token, '.');
}

/* The claims of a token whose signature is right (not yet checked for time or audience). */
static json_t *verified_claims(const unsigned char *key, size_t keylen, const char *token)
{
    size_t n = strlen(token);
    const char *d1 = strchr(token, '.'), *d2 = strrchr(token, '.');
    if (!key || !keylen || n > MAX_TOKEN || !d1 || d1 == d2)
        return NULL;
    char input[MAX_TOKEN + 1];
    memcpy(input, token, (size_t)(d2 - token));
    input[d2 - token] = '\0';
    char *sig = sign(key, keylen, input);
    bool good = strlen(sig) == strlen(d2 + 1) && CRYPTO_memcmp(sig, d2 + 1, strlen(sig)) == 0;
    sw_free(sig);
    if (!good)
        return NULL;
    /* the header we sign is always ours; the payload is the middle part */
    char p64[MAX_TOKEN + 1];
    memcpy(p64, d1 + 1, (size_t)(d2 - d1 - 1));
    p64[d2 - d1 - 1] = '\0';
    unsigned char *raw = NULL;
    size_t rlen = 0;
    json_t *claims = NULL;
    if (sw_base64url_decode(p64, &raw, &rlen) == 0 &&
        sw_json_parse((const char *)raw, rlen, 8, 0, &claims) < 0)
        claims = NULL;
    sw_free(raw);
    return claims;
}

static bool has_audience(const json_t *aud, const char *want)
{
    size_t i;
    json_t *a;
    if (json_is_string(aud))
        return !strcmp(json_string_value(aud), want);
    json_array_foreach(aud, i,
                       a) if (json_is_string(a) && !strcmp(json_string_value(a), want)) return true;
    return false;
}

int sw_sa_token_verify(const unsigned char *key, size_t keylen, const char *token,
                       const char *const *audiences, size_t naudiences, int64_t now,
                       sw_sa_claims *out)
{
    memset(out, 0, sizeof(*out));
    json_t *claims = verified_claims(key, keylen, token);
    if (!claims)
        return sw_error_set(SW_EUNAUTHORIZED, "invalid bearer token");
    int error = 0;
    int64_t exp = 0, nbf = 0;
    const json_t *k8s = json_object_get(claims, "kubernetes.io");
    const char *ns = sw_json_str_at(k8s, "namespace");
    const char *name = sw_json_str_at(k8s, "serviceaccount.name");
    const char *uid = sw_json_str_at(k8s, "serviceaccount.uid");
    if (!sw_json_int_at(claims, "exp", &exp) || exp <= now)
        error = sw_error_set(SW_EUNAUTHORIZED, "service account token has expired");
    else if (sw_json_int_at(claims, "nbf", &nbf) && nbf > now + 60)
        error = sw_error_set(SW_EUNAUTHORIZED, "service account token is not valid yet");
    else if (!ns || !name || !uid || strlen(ns) >= sizeof(out->ns) ||
             strlen(name) >= sizeof(out->name) || strlen(uid) >= sizeof(out->uid))
        error = sw_error_set(SW_EUNAUTHORIZED, "invalid bearer token");
    for (size_t i = 0; error == 0 && i < naudiences && !out->naudiences; i++)
        if (has_audience(json_object_get(claims, "aud"), audiences[i])) {
            sw_strlcpy(out->matched_audience, audiences[i], sizeof(out->matched_audience));
            out->naudiences = 1;
        }
    if (error == 0 && !out->naudiences)
        error = sw_error_set(SW_EUNAUTHORIZED,
                             "token audiences %s is invalid for the target "
                             "audiences",
                             "(not this server)");
    if (error == 0) {
        sw_strlcpy(out->ns, ns, sizeof(out->ns));
        sw_strlcpy(out->name, name, sizeof(out->name));
        sw_strlcpy(out->uid, uid, sizeof(out->uid));
        out->exp = exp;
    }
    json_decref(claims);
    return error;
}

/* serviceaccounts/<n>/token: a TokenRequest in, the same with status.token out (201). */
int sw_sa_token_request(const sw_kind_ctx *ctx, sw_objects *o, const sw_subreq *r, sw_subresp *out)
{
    json_t *sa = NULL, *req = NULL;
    if (strcmp(r->method, "POST"))
        return sw_error_set(SW_EMETHOD, "serviceaccounts/token takes a POST");
    if (r->body_len && sw_json_parse(r->body, r->body_len, SW_JSON_MAX_DEPTH, 0, &req) < 0)
        return sw_error_set(SW_EBADREQUEST, "the TokenRequest is not valid JSON: %s",
                            sw_error_msg());
    if (!req)
        req = json_object();
    int error = 0;
    const json_t *spec = json_object_get(req, "spec");
    const json_t *aud = json_object_get(spec, "audiences");
    int64_t secs = DEFAULT_EXPIRATION;
    sw_sa_claims c = {0};
    if (!json_is_object(req) || (spec && !json_is_object(spec)))
        error = sw_error_set(SW_EBADREQUEST, "a TokenRequest must be an object with a spec");
    else if (json_object_get(spec, "boundObjectRef") &&
             !json_is_null(json_object_get(spec, "boundObjectRef")))
        error = sw_error_set(SW_EINVALID, "spec.boundObjectRef: Unsupported value: slipway "
                                          "does not bind tokens to objects");
    else if (json_object_get(spec, "expirationSeconds") &&
             (!sw_json_int_at(spec, "expirationSeconds", &secs) || secs < MIN_EXPIRATION))
        error = sw_error_set(SW_EINVALID, "spec.expirationSeconds: Invalid value: may not "
                                          "specify a duration less than 10 minutes");
    else if (aud && (!json_is_array(aud) || json_array_size(aud) > SW_SA_MAX_AUDIENCES))
        error = sw_error_set(SW_EINVALID, "spec.audiences: Invalid value: at most %d strings",
                             SW_SA_MAX_AUDIENCES);
    size_t i;
    json_t *a;
    json_array_foreach(aud, i, a)
    {
        if (error == 0 && (!json_is_string(a) || !json_string_length(a) ||
                           json_string_length(a) >= sizeof(c.audiences[0])))
            error = sw_error_set(SW_EINVALID,
                                 "spec.audiences[%zu]: Invalid value: a non-empty "
                                 "string of at most 255 bytes",
                                 i);
        else if (error == 0)
            sw_strlcpy(c.audiences[c.naudiences++], json_string_value(a), sizeof(c.audiences[0]));
    }
    if (error == 0 && !c.naudiences)
        sw_strlcpy(c.audiences[c.naudiences++], SW_SA_AUDIENCE, sizeof(c.audiences[0]));
    if (error == 0)
        error = o->get(o, &sw_kind_serviceaccount, r->ns, r->name, &sa);
    char *tok = NULL;
    if (error == 0) {
        if (secs > MAX_EXPIRATION)
            secs = MAX_EXPIRATION; /* as --service-account-max-token-expiration caps it */
        sw_strlcpy(c.ns, r->ns, sizeof(c.ns));
        sw_strlcpy(c.name, r->name, sizeof(c.name));
        sw_strlcpy(c.uid, sw_json_str_at(sa, "metadata.uid") ?: "", sizeof(c.uid));
        c.iat = sw_time_now();
        c.exp = c.iat + secs;
        error = sw_sa_token_make(ctx->sa_token_key, ctx->sa_token_key_len, &c, &tok);
    }
    if (error == 0) {
        char ts[40], created[40];
        sw_time_format(c.exp, ts, sizeof(ts));
        sw_time_format(c.iat, created, sizeof(created));
        json_t *audiences = json_array();
        for (i = 0; i < c.naudiences; i++)
            json_array_append_new(audiences, json_string(c.audiences[i]));
        out->obj = json_pack("{s:s, s:s, s:{s:s, s:s, s:s}, s:{s:o, s:I}, s:{s:s, s:s}}", "kind",
                             "TokenRequest", "apiVersion", "authentication.k8s.io/v1", "metadata",
                             "name", r->name, "namespace", r->ns, "creationTimestamp", created,
                             "spec", "audiences", audiences, "expirationSeconds", (json_int_t)secs,
                             "status", "token", tok, "expirationTimestamp", ts);
        out->status = 201;
    }
    sw_free(tok);
    json_decref(sa);
    json_decref(req);
    return error;
}
