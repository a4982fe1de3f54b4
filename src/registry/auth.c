/* auth: answering a registry's 401. A Bearer challenge sends the client to the token server
 * named by its realm (with basic credentials when the keyring has some, anonymous otherwise);
 * the token is cached per (registry host, scope, credentials) until expires_in runs out, so
 * two namespaces with different pull secrets never share a token. A Basic challenge makes the
 * call send the keyring's credentials. No token or credential reaches a log or a message. */
#include "registry/client_int.h"

#include "util/alloc.h"
#include "util/error.h"
#include "util/json.h"
#include "util/str.h"
#include "util/time.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define TOKEN_BODY_MAX 65536
#define TOKEN_MAX_LEN 16384
#define TOKEN_DEFAULT_TTL_S 60
#define TOKEN_MAX_TTL_S 86400

void sw_registry__credkey(const char *user, const char *pass, char out[33])
{
    out[0] = '\0';
    if (!user)
        return;
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int mdlen = 0;
    EVP_MD_CTX *ctx = EVP_MD_CTX_new();
    if (!ctx) {
        fprintf(stderr, "slipway: fatal: out of memory\n");
        abort();
    }
    EVP_DigestInit_ex(ctx, EVP_sha256(), NULL);
    EVP_DigestUpdate(ctx, user, strlen(user) + 1); /* the NUL separates user and password */
    EVP_DigestUpdate(ctx, pass ? pass : "", pass ? strlen(pass) : 0);
    EVP_DigestFinal_ex(ctx, md, &mdlen);
    EVP_MD_CTX_free(ctx);
    sw_hex(md, 16, out);
}

static void scrub_one(char *s, const char *secret)
{
    size_t n = secret ? strlen(secret) : 0;
    if (n == 0)
        return;
    for (char *p = strstr(s, secret); p; p = strstr(p, secret)) {
        memmove(p + 3, p + n, strlen(p + n) + 1);
        memcpy(p, "***", 3);
        p += 3;
    }
}

void sw_registry__scrub(const reg_call *cx, const char *s, char *out, size_t n)
{
    /* The copy may grow when a secret is shorter than "***": work in a larger buffer. */
    size_t len = strlen(s);
    size_t cap = len * 3 + 1;
    char *tmp = sw_malloc(cap);
    memcpy(tmp, s, len + 1);
    scrub_one(tmp, cx->pass);
    scrub_one(tmp, cx->user);
    scrub_one(tmp, cx->token);
    sw_strlcpy(out, tmp, n);
    OPENSSL_cleanse(tmp, cap);
    sw_free(tmp);
}

/* ---- token cache ---- */

static char *token_key(const reg_call *cx, const char *scope)
{
    sw_buf b = SW_BUF_INIT(4096);
    sw_buf_printf(&b, "%s\n%s\n%s", cx->host, scope, cx->credkey);
    return sw_buf_detach(&b, NULL);
}

static void token_entry_free(reg_token *t)
{
    if (t->token)
        OPENSSL_cleanse(t->token, strlen(t->token));
    sw_free(t->token);
    sw_free(t->key);
}

void sw_registry__tokens_free(sw_registry *r)
{
    for (size_t i = 0; i < r->n_tokens; i++)
        token_entry_free(&r->tokens[i]);
    sw_free(r->tokens);
    r->tokens = NULL;
    r->n_tokens = r->cap_tokens = 0;
}

/* Removes expired entries; if the cache is still full, the one expiring first. Holds mu. */
static void tokens_make_room_locked(sw_registry *r, int64_t now)
{
    size_t j = 0;
    for (size_t i = 0; i < r->n_tokens; i++) {
        if (r->tokens[i].expires <= now)
            token_entry_free(&r->tokens[i]);
        else
            r->tokens[j++] = r->tokens[i];
    }
    r->n_tokens = j;
    if (r->n_tokens < REG_TOKEN_CACHE_MAX)
        return;
    size_t oldest = 0;
    for (size_t i = 1; i < r->n_tokens; i++)
        if (r->tokens[i].expires < r->tokens[oldest].expires)
            oldest = i;
    token_entry_free(&r->tokens[oldest]);
    r->tokens[oldest] = r->tokens[--r->n_tokens];
}

static void token_put(reg_call *cx, const char *scope, const char *token, int64_t ttl_s)
{
    sw_registry *r = cx->r;
    char *key = token_key(cx, scope);
    int64_t now = sw_time_mono_ms();
    /* Renew a little early so a token does not expire in flight. */
    int64_t margin = ttl_s >= 60 ? 10 : ttl_s / 6;
    pthread_mutex_lock(&r->mu);
    for (size_t i = 0; i < r->n_tokens; i++) {
        if (strcmp(r->tokens[i].key, key) == 0) {
            token_entry_free(&r->tokens[i]);
            r->tokens[i] = r->tokens[--r->n_tokens];
            break;
        }
    }
    tokens_make_room_locked(r, now);
    if (r->n_tokens == r->cap_tokens) {
        r->cap_tokens = r->cap_tokens ? r->cap_tokens * 2 : 8;
        r->tokens = sw_realloc(r->tokens, r->cap_tokens * sizeof(reg_token));
    }
    r->tokens[r->n_tokens++] = (reg_token){key, sw_strdup(token), now + (ttl_s - margin) * 1000};
    pthread_mutex_unlock(&r->mu);
}

static char *token_lookup(reg_call *cx, const char *scope)
{
    sw_registry *r = cx->r;
    char *key = token_key(cx, scope);
    char *found = NULL;
    int64_t now = sw_time_mono_ms();
    pthread_mutex_lock(&r->mu);
    for (size_t i = 0; i < r->n_tokens; i++) {
        if (r->tokens[i].expires > now && strcmp(r->tokens[i].key, key) == 0) {
            found = sw_strdup(r->tokens[i].token);
            break;
        }
    }
    pthread_mutex_unlock(&r->mu);
    sw_free(key);
    return found;
}

char *sw_registry__token_cached(reg_call *cx)
{
    return token_lookup(cx, cx->scope);
}

/* ---- token fetch ---- */

static void put_escaped(sw_buf *b, const char *s, size_t n)
{
    static const char hex[] = "0123456789ABCDEF";
    for (const char *end = s + n; s < end; s++) {
        unsigned char c = (unsigned char)*s;
        if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
            c == '-' || c == '.' || c == '_' || c == '~') {
            sw_buf_putc(b, (char)c);
        } else {
            sw_buf_putc(b, '%');
            sw_buf_putc(b, hex[c >> 4]);
            sw_buf_putc(b, hex[c & 15]);
        }
    }
}

static char *token_url(const sw_challenge *ch, const char *scope)
{
    sw_buf b = SW_BUF_INIT(8192);
    sw_buf_puts(&b, ch->realm);
    char sep = strchr(ch->realm, '?') ? '&' : '?';
    if (ch->service[0]) {
        sw_buf_putc(&b, sep);
        sw_buf_puts(&b, "service=");
        put_escaped(&b, ch->service, strlen(ch->service));
        sep = '&';
    }
    /* A space-separated scope ("repository:a:pull,push repository:b:pull" for a mount) is
     * one scope= parameter per entry, as docker sends it. */
    for (const char *p = scope; *p;) {
        size_t n = strcspn(p, " ");
        if (n) {
            sw_buf_putc(&b, sep);
            sw_buf_puts(&b, "scope=");
            put_escaped(&b, p, n);
            sep = '&';
        }
        p += n;
        while (*p == ' ')
            p++;
    }
    return sw_buf_detach(&b, NULL);
}

static bool token_chars_ok(const char *t)
{
    size_t n = strlen(t);
    if (n == 0 || n > TOKEN_MAX_LEN)
        return false;
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)t[i] <= 0x20 || (unsigned char)t[i] >= 0x7f)
            return false;
    return true;
}

/* The token and its lifetime from a token server's 200 body. */
static int parse_token_body(const char *host, const reg_resp *resp, char **token, int64_t *ttl_s)
{
    json_t *root = NULL;
    int error = 0;
    if (sw_json_parse(resp->body.ptr ? resp->body.ptr : "", resp->body.len, 8, 0, &root) < 0 ||
        !json_is_object(root)) {
        error = sw_error_set(SW_EUNAVAILABLE, "token server %s sent an invalid JSON body", host);
        goto done;
    }
    const char *t = json_string_value(json_object_get(root, "token"));
    if (!t || !*t)
        t = json_string_value(json_object_get(root, "access_token"));
    if (!t || !token_chars_ok(t)) {
        error = sw_error_set(SW_EUNAVAILABLE, "token server %s sent no usable token", host);
        goto done;
    }
    json_t *exp = json_object_get(root, "expires_in");
    int64_t ttl = json_is_integer(exp) ? json_integer_value(exp) : TOKEN_DEFAULT_TTL_S;
    /* Like docker: lifetimes below 60 s are taken as 60 s. */
    *ttl_s = ttl < TOKEN_DEFAULT_TTL_S ? TOKEN_DEFAULT_TTL_S
                                       : (ttl > TOKEN_MAX_TTL_S ? TOKEN_MAX_TTL_S : ttl);
    *token = sw_strdup(t);
done:
    json_decref(root);
    return error;
}

static int token_status_error(const reg_call *cx, const char *host, long status)
{
    if (status == 401)
        return cx->user ? sw_error_set(SW_EUNAUTHORIZED,
                                       "token server %s rejected the "
                                       "credentials for %s (401 Unauthorized)",
                                       host, cx->display)
                        : sw_error_set(SW_EUNAUTHORIZED,
                                       "token server %s requires credentials "
                                       "for %s but no credentials were found",
                                       host, cx->display);
    if (status == 403)
        return sw_error_set(SW_EFORBIDDEN, "token server %s denied access to %s (403 Forbidden)",
                            host, cx->display);
    return sw_error_set(SW_EUNAVAILABLE, "token server %s answered %ld", host, status);
}

/* host[:port] with the port made explicit (the scheme's default when absent; a bracketed IPv6
 * literal's colons are not a port). */
static void endpoint_of(const char *host, bool https, char *out, size_t n)
{
    const char *bracket = strrchr(host, ']');
    if (strchr(bracket ? bracket : host, ':'))
        snprintf(out, n, "%s", host);
    else
        snprintf(out, n, "%s:%s", host, https ? "443" : "80");
}

/* Whether a token realm on host is the registry's own endpoint (same host and port): the
 * registry's insecure flag skips TLS verification there and nowhere else. */
static bool realm_is_registry(const reg_call *cx, const char *host, bool https)
{
    char ours[300], theirs[300];
    endpoint_of(cx->host, strcmp(cx->scheme, "https") == 0, ours, sizeof(ours));
    endpoint_of(host, https, theirs, sizeof(theirs));
    return strcasecmp(ours, theirs) == 0;
}

/* Whether host ("name[:port]", "[v6][:port]") names the same machine as the registry's
 * endpoint, whatever the ports. */
static bool realm_on_registry_host(const reg_call *cx, const char *host)
{
    char ours[300], theirs[300];
    endpoint_of(cx->host, true, ours, sizeof(ours));
    endpoint_of(host, true, theirs, sizeof(theirs));
    *strrchr(ours, ':') = '\0'; /* endpoint_of always ends in ":port" */
    *strrchr(theirs, ':') = '\0';
    return strcasecmp(ours, theirs) == 0;
}

/* GET realm?service=..&scope=.. and cache the token. */
static int fetch_token(reg_call *cx, const sw_challenge *ch, const char *scope)
{
    char host[256];
    bool https;
    char *url = NULL, *token = NULL;
    int64_t ttl = 0;
    reg_resp resp;
    sw_registry__resp_init(&resp);
    int error = 0;
    if (!sw_registry__url_host(ch->realm, host, sizeof(host), &https)) {
        error = sw_error_set(SW_EUNAUTHORIZED,
                             "registry %s sent a Bearer challenge whose realm "
                             "is not an http(s) URL",
                             cx->host);
        goto done;
    }
    /* Credentials go over plain http only to an insecure registry's own host: one marked
     * insecure must not be able to send them in clear text anywhere else. */
    if (!https && cx->user && !(cx->insecure && realm_on_registry_host(cx, host))) {
        error = sw_error_set(
            SW_EUNAUTHORIZED,
            "token server %s uses plain http; refusing to "
            "send credentials to it (%s)",
            host, cx->insecure ? "not the registry's own host" : "registry not insecure");
        goto done;
    }
    url = token_url(ch, scope);
    reg_req req = {.method = "GET",
                   .url = url,
                   .host = host,
                   .accept = "application/json",
                   .user = cx->user,
                   .pass = cx->pass,
                   .insecure = cx->insecure && realm_is_registry(cx, host, https),
                   .retry = true,
                   .body_max = TOKEN_BODY_MAX};
    error = sw_registry__perform(cx, &req, &resp);
    if (error < 0)
        goto done;
    if (resp.status != 200) {
        error = token_status_error(cx, host, resp.status);
        goto done;
    }
    error = parse_token_body(host, &resp, &token, &ttl);
    if (error < 0)
        goto done;
    token_put(cx, scope, token, ttl);
    if (cx->token) {
        OPENSSL_cleanse(cx->token, strlen(cx->token));
        sw_free(cx->token);
    }
    cx->token = token;
    token = NULL;
done:
    if (resp.body.ptr)
        OPENSSL_cleanse(resp.body.ptr, resp.body.len);
    sw_registry__resp_dispose(&resp);
    sw_free(url);
    sw_free(token);
    return error;
}

int sw_registry__authenticate(reg_call *cx, const reg_resp *resp)
{
    sw_challenge v[8];
    size_t n = 0;
    const char *hdr = sw_buf_cstr(&resp->www_auth);
    if (!*hdr)
        return sw_error_set(SW_EUNAUTHORIZED,
                            "registry %s answered 401 for %s without a "
                            "WWW-Authenticate challenge",
                            cx->host, cx->display);
    if (sw_challenge_parse(hdr, v, 8, &n) < 0)
        return sw_error_set(SW_EUNAUTHORIZED, "registry %s answered 401 for %s with a %s", cx->host,
                            cx->display, sw_error_msg());
    const sw_challenge *ch = sw_challenge_select(v, n);
    if (!ch)
        return sw_error_set(SW_EUNAUTHORIZED,
                            "registry %s answered 401 for %s with no usable "
                            "challenge (Bearer with a realm, or Basic)",
                            cx->host, cx->display);
    if (strcmp(ch->scheme, "basic") == 0) {
        if (!cx->user)
            return sw_error_set(SW_EUNAUTHORIZED,
                                "registry %s requires credentials for %s but no "
                                "credentials were found",
                                cx->host, cx->display);
        sw_registry__set_host_basic(cx->r, cx->host);
        cx->basic = true;
        return 0;
    }
    const char *scope = ch->scope[0] ? ch->scope : cx->scope;
    char *cached = cx->token ? NULL : token_lookup(cx, scope);
    if (cached) {
        cx->token = cached;
        return 0;
    }
    return fetch_token(cx, ch, scope);
}
