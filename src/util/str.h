/* str: borrowed string views, cursor parsers and small string helpers.
 * Cursor parsers take `const char **pp`, advance it only on success and return 0 or SW_EINVALID. */
#ifndef SW_STR_H
#define SW_STR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct sw_str {
    const char *ptr;
    size_t len;
} sw_str;

#define SW_STR(s) ((sw_str){(s), sizeof(s) - 1})

/* Unsigned decimal, at least one digit, value <= max. */
int sw_parse_u64(const char **pp, uint64_t max, uint64_t *out);
/* Optional sign then digits, |value| bounded by INT64 range. */
int sw_parse_i64(const char **pp, int64_t *out);
/* A whole string as an integer (no trailing junk). */
int sw_str_to_i64(const char *s, int64_t *out);
int sw_str_to_u64(const char *s, uint64_t *out);
/* Go strconv.ParseBool: 1 t T TRUE true True / 0 f F FALSE false False. */
int sw_str_to_bool(const char *s, bool *out);

bool sw_str_prefix(const char *s, const char *prefix);
bool sw_str_suffix(const char *s, const char *suffix);
bool sw_str_eq(const char *a, const char *b); /* NULL-safe */
/* Whether s (may be NULL) is one of the strings of the NULL-terminated set. */
bool sw_str_one_of(const char *s, const char *const *set);
/* Copies at most n-1 bytes and always terminates; returns strlen(src) like strlcpy. */
size_t sw_strlcpy(char *dst, const char *src, size_t n);
/* Appends src to the string in dst (n bytes in all), always terminating; returns the length
 * the whole string would have, like strlcat. */
size_t sw_strlcat(char *dst, const char *src, size_t n);
/* FNV-1a over n bytes, continuing from h (start with SW_FNV1A_OFFSET): for in-memory tables
 * (not a defence against chosen collisions unless h is seeded randomly). */
#define SW_FNV1A_OFFSET 14695981039346656037ULL
uint64_t sw_fnv1a(uint64_t h, const void *data, size_t n);
/* The length of the valid UTF-8 sequence at s (1-4), or 0 when s does not start one (a stray
 * continuation byte, an overlong form, a surrogate, past U+10FFFF, or cut short). */
size_t sw_utf8_seq(const char *s);
/* s with every byte that does not start a valid UTF-8 sequence replaced by U+FFFD (what Go's
 * encoding/json does), sw_malloc'd; NULL for NULL. */
char *sw_utf8_clean(const char *s);

/* Standard base64 (RFC 4648 with padding). The result is sw_malloc'd. decode returns SW_EINVALID.
 */
char *sw_base64_encode(const void *data, size_t len);
int sw_base64_decode(const char *s, size_t slen, unsigned char **out, size_t *out_len);
/* URL-safe base64 without padding (continue tokens). */
char *sw_base64url_encode(const void *data, size_t len);
int sw_base64url_decode(const char *s, unsigned char **out, size_t *out_len);

/* Cryptographically random bytes (OpenSSL RAND_bytes). */
void sw_random_bytes(void *out, size_t n);
/* RFC 4122 version 4 UUID; out holds 37 bytes. */
void sw_uuid_v4(char out[37]);
/* Lower-case hex of data; out holds 2*len+1 bytes. */
void sw_hex(const unsigned char *data, size_t len, char *out);

#endif
