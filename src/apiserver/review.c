/* review: the bearer-token authenticator (the admin token and ServiceAccount tokens) and the
 * review kinds that ask it or the authorizer a question: SelfSubjectReview (`kubectl auth
 * whoami`), TokenReview, SelfSubjectAccessReview (`kubectl auth can-i`) and
 * SelfSubjectRulesReview (`kubectl auth can-i --list`). Nothing is stored: each create is
 * answered with the review and its status. */
#include "apiserver/rest.h"

#include "kinds/core.h"
#include "util/alloc.h"
#include "util/error.h"
#include "util/json.h"
#include "util/str.h"
#include "util/time.h"

#include <openssl/crypto.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

/* 0 when the store holds the token's ServiceAccount with its uid; else SW_EUNAUTHORIZED (gone)
 * or SW_EUNAVAILABLE. */
static int sa_in_store(sw_api *api, const sw_sa_claims *c)
{
    char key[SW_API_KEY_MAX];
    sw_kv kv = {0};
    json_t *sa = NULL;
    sw_api_key(&sw_kind_serviceaccount, c->ns, c->name, key, sizeof(key));
    int error = sw_store_get(api->store, key, &kv);

    if (error == 0 && sw_json_parse(kv.value, kv.value_len, SW_JSON_MAX_DEPTH, 0, &sa) < 0)
        error = SW_ERROR;
    if (error == 0 && !sw_str_eq(sw_json_str_at(sa, "metadata.uid"), c->uid))
        error = SW_ENOTFOUND;
    json_decref(sa);
    sw_kv_dispose(&kv);
    if (error == SW_ENOTFOUND)
        return sw_error_set(SW_EUNAUTHORIZED, "service account %s/%s has been deleted", c->ns,
                            c->name);
    if (error < 0)
        return sw_error_set(SW_EUNAVAILABLE, "cannot look up service account %s/%s", c->ns,
                            c->name);
    return 0;
}

/* Tokens verified for the API server's audience, so that a client's every request does not
 * pay a base64 decode, an HMAC and a JSON parse: token -> [ns, name, uid, exp]. The expiry and
 * the ServiceAccount are still checked on every hit; the cache is emptied when it is full. */
#define TOKEN_CACHE_MAX 4096
static pthread_rwlock_t cache_mu = PTHREAD_RWLOCK_INITIALIZER; /* readers look up, one writes */
static json_t *token_cache;

static bool cached_claims(const char *token, sw_sa_claims *c)
{
    bool hit = false;
    pthread_rwlock_rdlock(&cache_mu);
    const json_t *e = token_cache ? json_object_get(token_cache, token) : NULL;
    if (e) {
        sw_strlcpy(c->ns, json_string_value(json_array_get(e, 0)), sizeof(c->ns));
        sw_strlcpy(c->name, json_string_value(json_array_get(e, 1)), sizeof(c->name));
        sw_strlcpy(c->uid, json_string_value(json_array_get(e, 2)), sizeof(c->uid));
        c->exp = json_integer_value(json_array_get(e, 3));
        sw_strlcpy(c->matched_audience, SW_SA_AUDIENCE, sizeof(c->matched_audience));
        hit = true;
    }
    pthread_rwlock_unlock(&cache_mu);
    return hit;
}

static void remember_claims(const char *token, const sw_sa_claims *c)
{
    pthread_rwlock_wrlock(&cache_mu);
    if (!token_cache || json_object_size(token_cache) >= TOKEN_CACHE_MAX) {
        json_decref(token_cache);
        token_cache = json_object();
    }
    json_object_set_new(token_cache, token,
                        json_pack("[s, s, s, I]", c->ns, c->name, c->uid, (json_int_t)c->exp));
    pthread_rwlock_unlock(&cache_mu);
}

int sw_api_token_user(sw_api *api, const char *token, const char *const *audiences,
                      size_t naudiences, sw_user *u, char *audience, size_t audn)
{
    static const char *const api_audience[] = {SW_SA_AUDIENCE};
    size_t n = api->admin_token ? strlen(api->admin_token) : 0;
    if (audience)
        audience[0] = '\0';
    if (n && strlen(token) == n && CRYPTO_memcmp(token, api->admin_token, n) == 0) {
        sw_user_init(u, "slipway-admin");
        sw_user_add_group(u, "system:masters");
        sw_user_add_group(u, "system:authenticated");
        if (audience)
            sw_strlcpy(audience, naudiences ? audiences[0] : SW_SA_AUDIENCE, audn);
        return 0;
    }
    if (!sw_sa_token_shape(token))
        return sw_error_set(SW_EUNAUTHORIZED, "Unauthorized");
    sw_sa_claims c;
    int error = 0;
    bool for_api = !naudiences;
    if (for_api && cached_claims(token, &c)) {
        if (c.exp <= sw_time_now())
            return sw_error_set(SW_EUNAUTHORIZED, "service account token has expired");
    } else {
        if (for_api) {
            audiences = api_audience;
            naudiences = 1;
        }
        error = sw_sa_token_verify(api->kctx.sa_token_key, api->kctx.sa_token_key_len, token,
                                   audiences, naudiences, sw_time_now(), &c);
        if (error < 0)
            return error;
        if (for_api)
            remember_claims(token, &c);
    }
    /* a token dies with its ServiceAccount: one of the same name made later has another uid.
     * The authorizer's view of the ServiceAccounts answers without a read; what it does not
     * know (just created through another server, or deleted) the store decides. */
    if (!api->authz || !sw_authz_sa_known(api->authz, c.ns, c.name, c.uid))
        error = sa_in_store(api, &c);
    if (error < 0)
        return error;
    char name[400];
    snprintf(name, sizeof(name), "system:serviceaccount:%s:%s", c.ns, c.name);
    sw_user_init(u, name);
    sw_strlcpy(u->uid, c.uid, sizeof(u->uid));
    snprintf(name, sizeof(name), "system:serviceaccounts:%s", c.ns);
    sw_user_add_group(u, "system:serviceaccounts");
    sw_user_add_group(u, name);
    sw_user_add_group(u, "system:authenticated");
    if (audience)
        sw_strlcpy(audience, c.matched_audience, audn);
    return 0;
}

bool sw_review_kind(const sw_kind *k)
{
    return !strcmp(k->group, "authentication.k8s.io") || !strcmp(k->group, "authorization.k8s.io");
}

static void self_subject(const sw_request *req, json_t *review)
{
    json_object_set_new(review, "status", json_pack("{s:o}", "userInfo", sw_user_info(req->user)));
}

static int token_review(sw_api *api, json_t *review)
{
    const char *token = sw_json_str_at(review, "spec.token");
    const json_t *aud = sw_json_at(review, "spec.audiences");
    const char *audiences[8];
    size_t n = 0, i;
    json_t *a;
    if (!token || !*token)
        return sw_error_set(SW_EINVALID, "spec.token: Required value");
    json_array_foreach(aud, i, a) if (n < 8 && json_is_string(a)) audiences[n++] =
        json_string_value(a);
    sw_user u;
    char matched[256];
    json_t *status;
    if (sw_api_token_user(api, token, audiences, n, &u, matched, sizeof(matched)) == 0)
        status = json_pack("{s:b, s:o, s:[s]}", "authenticated", 1, "user", sw_user_info(&u),
                           "audiences", matched);
    else
        status = json_pack("{s:b, s:s, s:{}}", "authenticated", 0, "error", sw_error_msg(), "user");
    json_object_set_new(review, "status", status);
    return 0;
}

static int access_review(sw_api *api, const sw_request *req, json_t *review)
{
    const json_t *ra = sw_json_at(review, "spec.resourceAttributes");
    const json_t *nra = sw_json_at(review, "spec.nonResourceAttributes");
    sw_authz_attrs at = {0};
    if ((ra != NULL) == (nra != NULL))
        return sw_error_set(SW_EINVALID, "spec: Invalid value: exactly one of "
                                         "nonResourceAttributes or resourceAttributes must be "
                                         "specified");
    if (ra) {
        at.resource = true;
        sw_strlcpy(at.verb, sw_json_str_at(ra, "verb") ?: "", sizeof(at.verb));
        sw_strlcpy(at.group, sw_json_str_at(ra, "group") ?: "", sizeof(at.group));
        sw_strlcpy(at.resource_name, sw_json_str_at(ra, "resource") ?: "",
                   sizeof(at.resource_name));
        sw_strlcpy(at.subresource, sw_json_str_at(ra, "subresource") ?: "", sizeof(at.subresource));
        sw_strlcpy(at.ns, sw_json_str_at(ra, "namespace") ?: "", sizeof(at.ns));
        sw_strlcpy(at.name, sw_json_str_at(ra, "name") ?: "", sizeof(at.name));
    } else {
        sw_strlcpy(at.verb, sw_json_str_at(nra, "verb") ?: "", sizeof(at.verb));
        sw_strlcpy(at.path, sw_json_str_at(nra, "path") ?: "", sizeof(at.path));
    }
    if (!at.verb[0])
        return sw_error_set(SW_EINVALID, "spec.%s.verb: Required value",
                            ra ? "resourceAttributes" : "nonResourceAttributes");
    char reason[600] = "";
    bool ok = !api->authz || sw_authz_allowed(api->authz, req->user, &at, reason, sizeof(reason));
    json_t *status = json_pack("{s:b}", "allowed", ok);
    if (reason[0])
        json_object_set_new(status, "reason", json_string(reason));
    json_object_set_new(review, "status", status);
    return 0;
}

static int rules_review(sw_api *api, const sw_request *req, json_t *review)
{
    json_t *res = NULL, *nonres = NULL;
    const char *ns = sw_json_str_at(review, "spec.namespace");
    if (api->authz)
        sw_authz_rules(api->authz, req->user, ns, &res, &nonres);
    else {
        res =
            json_pack("[{s:[s], s:[s], s:[s]}]", "verbs", "*", "apiGroups", "*", "resources", "*");
        nonres = json_pack("[{s:[s], s:[s]}]", "verbs", "*", "nonResourceURLs", "*");
    }
    json_object_set_new(review, "status",
                        json_pack("{s:o, s:o, s:b}", "resourceRules", res, "nonResourceRules",
                                  nonres, "incomplete", 0));
    return 0;
}

void sw_review_handle(sw_api *api, const sw_request *req, const sw_route *rt, sw_response *resp)
{
    json_t *review = NULL;
    if (strcmp(req->method, "POST") || rt->has_name) {
        sw_response_error(resp, SW_EMETHOD,
                          "the server does not allow this method on the requested resource",
                          rt->kind, NULL);
        return;
    }
    int error = sw_rest_read_body(req, rt, resp, &review);
    if (error < 0) {
        sw_rest_fail(resp, error, rt);
        return;
    }
    const char *kind = rt->kind->kind;
    if (!req->user)
        error = sw_error_set(SW_EUNAUTHORIZED, "Unauthorized");
    else if (!strcmp(kind, "SelfSubjectReview"))
        self_subject(req, review);
    else if (!strcmp(kind, "TokenReview"))
        error = token_review(api, review);
    else if (!strcmp(kind, "SelfSubjectAccessReview"))
        error = access_review(api, req, review);
    else
        error = rules_review(api, req, review);
    if (error == 0) {
        char av[128];
        json_object_set_new(review, "apiVersion",
                            json_string(sw_kind_api_version(rt->kind, av, sizeof(av))));
        json_object_set_new(review, "kind", json_string(kind));
        if (!json_is_object(json_object_get(review, "metadata")))
            json_object_set_new(review, "metadata", json_object());
        json_object_set_new(json_object_get(review, "metadata"), "creationTimestamp", json_null());
        sw_response_json(resp, 201, review);
    } else
        sw_rest_fail(resp, error, rt);
    json_decref(review);
}
