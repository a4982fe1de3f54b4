/* challenge: WWW-Authenticate header parsing (RFC 7235): one or more challenges, each an
 * auth-scheme followed by auth-params (token or quoted-string values with backslash escapes) or
 * a token68. Keeps the parameters a registry client needs: realm, service, scope.
 * Design note: docs/internals/registry.md. */
#ifndef SW_REGISTRY_CHALLENGE_H
#define SW_REGISTRY_CHALLENGE_H

#include <stddef.h>

#define SW_CHALLENGE_HEADER_MAX 16384 /* longer headers are refused */

typedef struct sw_challenge {
    char scheme[16];  /* lower-cased: "bearer", "basic", ... */
    char realm[1024]; /* "" when absent */
    char service[256];
    char scope[512];
} sw_challenge;

/* Parses header into out[0..max) and sets *count to the number stored; challenges beyond max
 * are checked for syntax and dropped. Returns 0, or SW_EINVALID for an empty or malformed
 * header, a duplicate parameter, or a value longer than its field. */
int sw_challenge_parse(const char *header, sw_challenge *out, size_t max, size_t *count);

/* The challenge a registry client should answer: the first Bearer challenge that has a realm,
 * else the first Basic challenge, else NULL. */
const sw_challenge *sw_challenge_select(const sw_challenge *v, size_t n);

#endif
