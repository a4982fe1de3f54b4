/* challenge: a cursor parser for WWW-Authenticate. Commas separate both auth-params and
 * challenges, so after each comma a one-token lookahead decides: "token =" starts a parameter
 * of the current challenge, a bare token starts the next challenge. */
#include "registry/challenge.h"

#include "util/error.h"

#include <stdbool.h>
#include <string.h>
#include <strings.h>

enum item { ITEM_NONE, ITEM_SCHEME, ITEM_PARAM, ITEM_TOKEN68 };

/* Parse state: the cursor, the header start (for offsets in messages) and the challenge being
 * filled (NULL once max challenges are stored). */
typedef struct parser {
    const char *p;
    const char *start;
    sw_challenge *cur;
    unsigned seen; /* bit per known parameter, to refuse duplicates */
} parser;

static bool is_tchar(char c)
{
    if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9'))
        return true;
    return c && strchr("!#$%&'*+-.^_`|~", c) != NULL;
}

static bool is_t68char(char c)
{
    if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9'))
        return true;
    return c && strchr("-._~+/", c) != NULL;
}

static size_t token_len(const char *p)
{
    size_t n = 0;
    while (is_tchar(p[n]))
        n++;
    return n;
}

static bool skip_ows(const char **pp)
{
    const char *p = *pp;
    while (*p == ' ' || *p == '\t')
        p++;
    bool moved = p != *pp;
    *pp = p;
    return moved;
}

static int malformed(const parser *ps, const char *what)
{
    return sw_error_set(SW_EINVALID, "malformed WWW-Authenticate header at offset %zu: %s",
                        (size_t)(ps->p - ps->start), what);
}

/* What starts at p: "token BWS = value" is a parameter, "token68" (ending in '=' padding) is a
 * token68, a token followed by anything else is a scheme. */
static enum item classify(const char *p)
{
    size_t n = token_len(p);
    const char *q = p + n;
    skip_ows(&q);
    if (n > 0 && *q == '=') {
        q++;
        skip_ows(&q);
        if (*q == '\0' || *q == ',' || *q == '=')
            return ITEM_TOKEN68;
        return ITEM_PARAM;
    }
    if (n > 0)
        return ITEM_SCHEME;
    return is_t68char(*p) ? ITEM_TOKEN68 : ITEM_NONE;
}

/* Appends c to field (size n, current length *len); false when it does not fit. */
static bool field_put(char *field, size_t n, size_t *len, char c)
{
    if (*len + 1 >= n)
        return false;
    field[(*len)++] = c;
    field[*len] = '\0';
    return true;
}

/* The field a parameter name fills, or NULL to parse and drop it. */
static char *param_field(parser *ps, const char *name, size_t n, size_t *size, unsigned *bit)
{
    if (!ps->cur)
        return NULL;
    static const char *const names[] = {"realm", "service", "scope"};
    for (unsigned i = 0; i < 3; i++) {
        if (strlen(names[i]) != n || strncasecmp(name, names[i], n) != 0)
            continue;
        *bit = 1u << i;
        if (i == 0)
            return *size = sizeof(ps->cur->realm), ps->cur->realm;
        if (i == 1)
            return *size = sizeof(ps->cur->service), ps->cur->service;
        return *size = sizeof(ps->cur->scope), ps->cur->scope;
    }
    return NULL;
}

/* A quoted-string (cursor on the opening quote) or a token, unescaped into field if not NULL. */
static int parse_value(parser *ps, char *field, size_t size)
{
    size_t len = 0;
    if (*ps->p != '"') {
        size_t n = token_len(ps->p);
        if (n == 0)
            return malformed(ps, "expected a token or quoted string");
        for (size_t i = 0; i < n && field; i++)
            if (!field_put(field, size, &len, ps->p[i]))
                return malformed(ps, "parameter value too long");
        ps->p += n;
        return 0;
    }
    const char *q = ps->p + 1;
    for (;;) {
        char c = *q;
        if (c == '\0')
            return malformed(ps, "unterminated quoted string");
        if (c == '"')
            break;
        if (c == '\\') {
            c = *++q;
            if (c == '\0')
                return malformed(ps, "unterminated quoted string");
        }
        if ((unsigned char)c < 0x20 && c != '\t')
            return malformed(ps, "control character in quoted string");
        if (field && !field_put(field, size, &len, c))
            return malformed(ps, "parameter value too long");
        q++;
    }
    ps->p = q + 1;
    return 0;
}

static int parse_param(parser *ps)
{
    size_t n = token_len(ps->p);
    const char *name = ps->p;
    size_t size = 0;
    unsigned bit = 0;
    char *field = param_field(ps, name, n, &size, &bit);
    if (bit && (ps->seen & bit))
        return malformed(ps, "duplicate parameter");
    ps->seen |= bit;
    ps->p += n;
    skip_ows(&ps->p);
    ps->p++; /* '=', checked by classify() */
    skip_ows(&ps->p);
    return parse_value(ps, field, size);
}

static void skip_token68(parser *ps)
{
    while (is_t68char(*ps->p))
        ps->p++;
    while (*ps->p == '=')
        ps->p++;
}

/* Skips commas and whitespace between list elements; true if any comma was seen. */
static bool skip_list_sep(parser *ps)
{
    bool comma = false;
    for (;;) {
        skip_ows(&ps->p);
        if (*ps->p != ',')
            return comma;
        comma = true;
        ps->p++;
    }
}

/* The parameters (or token68) after a scheme, up to the next scheme or the end. */
static int parse_challenge_body(parser *ps)
{
    bool space = skip_ows(&ps->p);
    bool token68 = false;
    int error = 0;
    if (*ps->p && *ps->p != ',') {
        enum item it = classify(ps->p);
        if (!space || it == ITEM_NONE)
            return malformed(ps, "expected auth-params or a token68 after the scheme");
        if (it == ITEM_PARAM) {
            error = parse_param(ps);
        } else {
            skip_token68(ps);
            token68 = true;
        }
    }
    while (error == 0) {
        bool comma = skip_list_sep(ps);
        if (!*ps->p)
            break;
        if (!comma)
            return malformed(ps, "expected ',' between parameters");
        enum item it = classify(ps->p);
        if (it == ITEM_SCHEME)
            break;
        if (it != ITEM_PARAM || token68)
            return malformed(ps, "expected a parameter or a new challenge");
        error = parse_param(ps);
    }
    return error;
}

static int parse_scheme(parser *ps, sw_challenge *slot)
{
    size_t n = token_len(ps->p);
    if (n == 0)
        return malformed(ps, "expected an auth-scheme");
    if (slot) {
        memset(slot, 0, sizeof(*slot));
        if (n >= sizeof(slot->scheme))
            return malformed(ps, "auth-scheme too long");
        for (size_t i = 0; i < n; i++) {
            char c = ps->p[i];
            slot->scheme[i] = (c >= 'A' && c <= 'Z') ? (char)(c - 'A' + 'a') : c;
        }
    }
    ps->p += n;
    return 0;
}

int sw_challenge_parse(const char *header, sw_challenge *out, size_t max, size_t *count)
{
    if (!header || !count)
        return sw_error_set(SW_EINVALID, "missing WWW-Authenticate header");
    *count = 0;
    if (strnlen(header, SW_CHALLENGE_HEADER_MAX + 1) > SW_CHALLENGE_HEADER_MAX)
        return sw_error_set(SW_EINVALID, "WWW-Authenticate header longer than %d bytes",
                            SW_CHALLENGE_HEADER_MAX);
    parser ps = {.p = header, .start = header};
    size_t stored = 0, seen = 0;
    skip_list_sep(&ps);
    while (*ps.p) {
        ps.cur = (out && stored < max) ? &out[stored] : NULL;
        ps.seen = 0;
        int error = parse_scheme(&ps, ps.cur);
        if (error == 0)
            error = parse_challenge_body(&ps);
        if (error < 0)
            return error;
        seen++;
        if (ps.cur)
            stored++;
        skip_list_sep(&ps);
    }
    if (seen == 0)
        return sw_error_set(SW_EINVALID, "empty WWW-Authenticate header");
    *count = stored;
    return 0;
}

const sw_challenge *sw_challenge_select(const sw_challenge *v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(v[i].scheme, "bearer") == 0 && v[i].realm[0])
            return &v[i];
    for (size_t i = 0; i < n; i++)
        if (strcmp(v[i].scheme, "basic") == 0)
            return &v[i];
    return NULL;
}
