/* str: cursor parsers, lenient booleans, base64 (OpenSSL EVP), random bytes and UUIDs. */
#include "util/str.h"

#include "util/alloc.h"
#include "util/error.h"

#include <openssl/evp.h>
#include <openssl/rand.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int sw_parse_u64(const char **pp, uint64_t max, uint64_t *out)
{
    const char *p = *pp;
    uint64_t v = 0;
    if (*p < '0' || *p > '9')
        return SW_EINVALID;
    while (*p >= '0' && *p <= '9') {
        uint64_t d = (uint64_t)(*p - '0');
        if (v > (max - d) / 10)
            return SW_EINVALID;
        v = v * 10 + d;
        p++;
    }
    *pp = p;
    *out = v;
    return 0;
}

int sw_parse_i64(const char **pp, int64_t *out)
{
    const char *p = *pp;
    bool neg = false;
    uint64_t v;
    if (*p == '-' || *p == '+')
        neg = *p++ == '-';
    if (sw_parse_u64(&p, neg ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX, &v) < 0)
        return SW_EINVALID;
    *pp = p;
    *out = neg ? (int64_t)(0 - v) : (int64_t)v;
    return 0;
}

int sw_str_to_i64(const char *s, int64_t *out)
{
    const char *p = s;
    if (!s || sw_parse_i64(&p, out) < 0 || *p)
        return SW_EINVALID;
    return 0;
}

int sw_str_to_u64(const char *s, uint64_t *out)
{
    const char *p = s;
    if (!s || sw_parse_u64(&p, UINT64_MAX, out) < 0 || *p)
        return SW_EINVALID;
    return 0;
}

int sw_str_to_bool(const char *s, bool *out)
{
    static const char *const yes[] = {"1", "t", "T", "TRUE", "true", "True"};
    static const char *const no[] = {"0", "f", "F", "FALSE", "false", "False"};
    if (!s)
        return SW_EINVALID;
    for (size_t i = 0; i < 6; i++) {
        if (!strcmp(s, yes[i])) {
            *out = true;
            return 0;
        }
        if (!strcmp(s, no[i])) {
            *out = false;
            return 0;
        }
    }
    return SW_EINVALID;
}

bool sw_str_prefix(const char *s, const char *prefix)
{
    return strncmp(s, prefix, strlen(prefix)) == 0;
}

bool sw_str_suffix(const char *s, const char *suffix)
{
    size_t a = strlen(s), b = strlen(suffix);
    return a >= b && memcmp(s + a - b, suffix, b) == 0;
}

bool sw_str_eq(const char *a, const char *b)
{
    if (!a || !b)
        return a == b;
    return strcmp(a, b) == 0;
}

bool sw_str_one_of(const char *s, const char *const *set)
{
    for (size_t i = 0; s && set[i]; i++)
        if (!strcmp(s, set[i]))
            return true;
    return false;
}

size_t sw_strlcpy(char *dst, const char *src, size_t n)
{
    size_t len = strlen(src);
    if (n) {
        size_t c = len < n - 1 ? len : n - 1;
        memcpy(dst, src, c);
        dst[c] = '\0';
    }
    return len;
}

size_t sw_strlcat(char *dst, const char *src, size_t n)
{
    size_t have = strnlen(dst, n);
    if (have == n)
        return n + strlen(src);
    return have + sw_strlcpy(dst + have, src, n - have);
}

uint64_t sw_fnv1a(uint64_t h, const void *data, size_t n)
{
    const unsigned char *p = data;
    for (size_t i = 0; i < n; i++)
        h = (h ^ p[i]) * 1099511628211ULL;
    return h;
}

size_t sw_utf8_seq(const char *str)
{
    const unsigned char *s = (const unsigned char *)str;
    size_t n;
    uint32_t cp;
    if (s[0] < 0x80)
        return 1;
    if (s[0] >= 0xC2 && s[0] <= 0xDF) {
        n = 2;
        cp = s[0] & 0x1Fu;
    } else if (s[0] >= 0xE0 && s[0] <= 0xEF) {
        n = 3;
        cp = s[0] & 0x0Fu;
    } else if (s[0] >= 0xF0 && s[0] <= 0xF4) {
        n = 4;
        cp = s[0] & 0x07u;
    } else {
        return 0;
    }
    for (size_t i = 1; i < n; i++) {
        if ((s[i] & 0xC0) != 0x80)
            return 0; /* also stops at the terminating NUL */
        cp = (cp << 6) | (s[i] & 0x3Fu);
    }
    bool overlong = (n == 3 && cp < 0x800) || (n == 4 && cp < 0x10000);
    if (overlong || (cp >= 0xD800 && cp <= 0xDFFF) || cp > 0x10FFFF)
        return 0;
    return n;
}

char *sw_utf8_clean(const char *s)
{
    if (!s)
        return NULL;
    size_t len = strlen(s);
    char *out = sw_malloc(len * 3 + 1), *o = out;
    while (*s) {
        size_t n = sw_utf8_seq(s);
        if (n) {
            memcpy(o, s, n);
            o += n;
            s += n;
        } else {
            memcpy(o, "\xEF\xBF\xBD", 3);
            o += 3;
            s++;
        }
    }
    *o = '\0';
    return out;
}

char *sw_base64_encode(const void *data, size_t len)
{
    size_t outlen = 4 * ((len + 2) / 3) + 1;
    char *out = sw_malloc(outlen);
    EVP_EncodeBlock((unsigned char *)out, data, (int)len);
    return out;
}

int sw_base64_decode(const char *s, size_t slen, unsigned char **out, size_t *out_len)
{
    if (slen % 4 != 0 || slen > (size_t)INT32_MAX)
        return sw_error_set(SW_EINVALID, "illegal base64 data: length %zu", slen);
    unsigned char *buf = sw_malloc(slen / 4 * 3 + 1);
    int n = slen ? EVP_DecodeBlock(buf, (const unsigned char *)s, (int)slen) : 0;
    if (n < 0) {
        sw_free(buf);
        return sw_error_set(SW_EINVALID, "illegal base64 data");
    }
    /* EVP_DecodeBlock counts padding as zero bytes; remove them. */
    if (slen >= 1 && s[slen - 1] == '=')
        n--;
    if (slen >= 2 && s[slen - 2] == '=')
        n--;
    buf[n] = '\0';
    *out = buf;
    *out_len = (size_t)n;
    return 0;
}

char *sw_base64url_encode(const void *data, size_t len)
{
    char *s = sw_base64_encode(data, len);
    size_t n = strlen(s);
    while (n && s[n - 1] == '=')
        s[--n] = '\0';
    for (char *p = s; *p; p++)
        *p = *p == '+' ? '-' : *p == '/' ? '_' : *p;
    return s;
}

int sw_base64url_decode(const char *s, unsigned char **out, size_t *out_len)
{
    size_t n = strlen(s);
    if (n > 1 << 20)
        return sw_error_set(SW_EINVALID, "base64 data too long");
    char *tmp = sw_malloc(n + 4);
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (c == '+' || c == '/' || c == '=')
            return sw_free(tmp), sw_error_set(SW_EINVALID, "illegal base64url data");
        tmp[i] = c == '-' ? '+' : c == '_' ? '/' : c;
    }
    while (n % 4)
        tmp[n++] = '=';
    int error = sw_base64_decode(tmp, n, out, out_len);
    sw_free(tmp);
    return error;
}

void sw_random_bytes(void *out, size_t n)
{
    if (RAND_bytes(out, (int)n) != 1) {
        fprintf(stderr, "slipway: fatal: RAND_bytes failed\n");
        abort();
    }
}

void sw_hex(const unsigned char *data, size_t len, char *out)
{
    static const char digits[] = "0123456789abcdef";
    for (size_t i = 0; i < len; i++) {
        out[2 * i] = digits[data[i] >> 4];
        out[2 * i + 1] = digits[data[i] & 15];
    }
    out[2 * len] = '\0';
}

void sw_uuid_v4(char out[37])
{
    unsigned char b[16];
    char hex[33];
    sw_random_bytes(b, sizeof(b));
    b[6] = (unsigned char)((b[6] & 0x0f) | 0x40);
    b[8] = (unsigned char)((b[8] & 0x3f) | 0x80);
    sw_hex(b, 16, hex);
    snprintf(out, 37, "%.8s-%.4s-%.4s-%.4s-%.12s", hex, hex + 8, hex + 12, hex + 16, hex + 20);
}
