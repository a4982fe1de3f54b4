/* core: the core-group (v1) kinds slipway stores: Namespace, Secret, ConfigMap, Event,
 * ServiceAccount. */
#ifndef SW_KINDS_CORE_H
#define SW_KINDS_CORE_H

#include "kinds/kind.h"

extern const sw_kind sw_kind_namespace;
extern const sw_kind sw_kind_secret;
extern const sw_kind sw_kind_configmap;
extern const sw_kind sw_kind_event;
extern const sw_kind sw_kind_serviceaccount;

/* ServiceAccount tokens (satoken.c). The issuer, and the audience a token gets when its
 * TokenRequest names none: the one the API server accepts. */
#define SW_SA_ISSUER "https://kubernetes.default.svc.cluster.local"
#define SW_SA_AUDIENCE SW_SA_ISSUER
#define SW_SA_MAX_AUDIENCES 8

typedef struct sw_sa_claims {
    char ns[64], name[256], uid[64];
    char audiences[SW_SA_MAX_AUDIENCES][256];
    size_t naudiences;
    char matched_audience[256]; /* verify: the accepted audience the token carries */
    int64_t iat, exp;
} sw_sa_claims;

/* A signed token for c (ns, name, uid, audiences, iat, exp) into *out (sw_malloc'd).
 * SW_EUNAVAILABLE without a key. */
int sw_sa_token_make(const unsigned char *key, size_t keylen, const sw_sa_claims *c, char **out);
/* Whether token looks like one of these (a JWT), so the caller tries no other scheme. */
bool sw_sa_token_shape(const char *token);
/* 0 and out filled (ns, name, uid, exp, matched_audience) when token's signature is right, it
 * has not expired and it carries one of audiences; else SW_EUNAUTHORIZED with the reason set.
 * Whether the ServiceAccount still exists with that uid is the caller's check. */
int sw_sa_token_verify(const unsigned char *key, size_t keylen, const char *token,
                       const char *const *audiences, size_t naudiences, int64_t now,
                       sw_sa_claims *out);
/* The serviceaccounts/<n>/token subresource. */
int sw_sa_token_request(const sw_kind_ctx *ctx, sw_objects *o, const sw_subreq *r, sw_subresp *out);

#endif
