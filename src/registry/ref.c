/* ref: image reference parsing and docker-style normalisation. The grammar is the one of
 * distribution/reference (domain, path components, tag, digest); only sha256 digests are
 * accepted because that is the only algorithm the client verifies. */
#include "registry/ref.h"

#include "util/error.h"
#include "util/str.h"

#include <stdio.h>
#include <string.h>

#define DOCKER_DOMAIN "docker.io"
#define DOCKER_LEGACY_DOMAIN "index.docker.io"
#define DOCKER_ENDPOINT "registry-1.docker.io"

/* Upper bound on a whole reference: name (6 more for "index." folded away), tag, digest. */
#define REF_INPUT_MAX (SW_REF_NAME_MAX + 6 + 1 + SW_REF_TAG_MAX + 1 + SW_REF_DIGEST_MAX)

static bool is_digit(char c)
{
    return c >= '0' && c <= '9';
}

static bool is_lower_alnum(char c)
{
    return (c >= 'a' && c <= 'z') || is_digit(c);
}

static bool is_alnum(char c)
{
    return is_lower_alnum(c) || (c >= 'A' && c <= 'Z');
}

static bool is_word(char c)
{
    return is_alnum(c) || c == '_';
}

static bool is_lower_hex(char c)
{
    return is_digit(c) || (c >= 'a' && c <= 'f');
}

static int bad_ref(const char *s, const char *why)
{
    return sw_error_set(SW_EINVALID, "invalid reference format \"%.100s\": %s", s, why);
}

bool sw_ref_digest_valid(const char *d)
{
    if (!d || strncmp(d, "sha256:", 7) != 0)
        return false;
    const char *hex = d + 7;
    for (size_t i = 0; i < 64; i++)
        if (!is_lower_hex(hex[i]))
            return false;
    return hex[64] == '\0';
}

const char *sw_ref_digest_of(const char *ref)
{
    const char *at = ref ? strrchr(ref, '@') : NULL;
    if (at)
        return at + 1;
    return ref && !strncmp(ref, "sha256:", 7) ? ref : "";
}

bool sw_ref_same_image(const char *a, const char *b)
{
    const char *da = sw_ref_digest_of(a), *db = sw_ref_digest_of(b);
    if (*da && *db)
        return !strcmp(da, db);
    return sw_str_eq(a, b);
}

static bool tag_valid_n(const char *s, size_t n)
{
    if (n == 0 || n > SW_REF_TAG_MAX || !is_word(s[0]))
        return false;
    for (size_t i = 1; i < n; i++)
        if (!is_word(s[i]) && s[i] != '.' && s[i] != '-')
            return false;
    return true;
}

bool sw_ref_tag_valid(const char *s)
{
    return s && tag_valid_n(s, strlen(s));
}

/* One path component: [a-z0-9]+((\.|_|__|-+)[a-z0-9]+)* over s[0..n). */
static bool path_component_valid(const char *s, size_t n)
{
    size_t i = 0;
    while (i < n) {
        if (!is_lower_alnum(s[i]))
            return false;
        while (i < n && is_lower_alnum(s[i]))
            i++;
        if (i == n)
            return true;
        if (s[i] == '.') {
            i++;
        } else if (s[i] == '_') {
            i += (i + 1 < n && s[i + 1] == '_') ? 2 : 1;
        } else if (s[i] == '-') {
            while (i < n && s[i] == '-')
                i++;
        } else {
            return false;
        }
        if (i == n)
            return false; /* a separator must be followed by alphanumerics */
    }
    return n > 0;
}

static bool path_valid(const char *s, size_t n)
{
    size_t start = 0;
    for (size_t i = 0; i <= n; i++) {
        if (i < n && s[i] != '/')
            continue;
        if (!path_component_valid(s + start, i - start))
            return false;
        start = i + 1;
    }
    return true;
}

/* [a-zA-Z0-9]([a-zA-Z0-9-]*[a-zA-Z0-9])? */
static bool domain_label_valid(const char *s, size_t n)
{
    if (n == 0 || !is_alnum(s[0]) || !is_alnum(s[n - 1]))
        return false;
    for (size_t i = 1; i + 1 < n; i++)
        if (!is_alnum(s[i]) && s[i] != '-')
            return false;
    return true;
}

static bool host_valid(const char *s, size_t n)
{
    if (n >= 2 && s[0] == '[') { /* IPv6 literal */
        if (s[n - 1] != ']' || n < 3)
            return false;
        for (size_t i = 1; i + 1 < n; i++)
            if (!is_lower_hex(s[i]) && !(s[i] >= 'A' && s[i] <= 'F') && s[i] != ':')
                return false;
        return true;
    }
    size_t start = 0;
    for (size_t i = 0; i <= n; i++) {
        if (i < n && s[i] != '.')
            continue;
        if (!domain_label_valid(s + start, i - start))
            return false;
        start = i + 1;
    }
    return true;
}

/* host[:port] with a 1-5 digit port no larger than 65535. */
static bool domain_valid(const char *s, size_t n)
{
    size_t host_end = n;
    for (size_t i = n; i > 0; i--) {
        if (s[i - 1] == ']')
            break;
        if (s[i - 1] == ':') {
            host_end = i - 1;
            break;
        }
    }
    if (host_end < n) {
        size_t plen = n - host_end - 1;
        if (plen == 0 || plen > 5)
            return false;
        unsigned port = 0;
        for (size_t i = host_end + 1; i < n; i++) {
            if (!is_digit(s[i]))
                return false;
            port = port * 10 + (unsigned)(s[i] - '0');
        }
        if (port > 65535)
            return false;
    }
    return host_valid(s, host_end);
}

static bool has_upper(const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (s[i] >= 'A' && s[i] <= 'Z')
            return true;
    return false;
}

/* docker's rule: the first component is a registry if it has a '.' or ':', is "localhost",
 * or has upper-case letters (a repository never does). */
static bool first_is_domain(const char *s, size_t n)
{
    if (n == 9 && memcmp(s, "localhost", 9) == 0)
        return true;
    for (size_t i = 0; i < n; i++)
        if (s[i] == '.' || s[i] == ':')
            return true;
    return has_upper(s, n);
}

static bool all_hex64(const char *s)
{
    for (size_t i = 0; i < 64; i++)
        if (!is_lower_hex(s[i]))
            return false;
    return s[64] == '\0';
}

static int parse_digest(const char *s, const char *d, sw_ref *r)
{
    if (!*d)
        return bad_ref(s, "empty digest after '@'");
    if (!sw_ref_digest_valid(d)) {
        if (!strchr(d, ':'))
            return bad_ref(s, "digest must be algorithm:hex");
        if (strncmp(d, "sha256:", 7) != 0)
            return bad_ref(s, "unsupported digest algorithm (only sha256 is accepted)");
        return bad_ref(s, "sha256 digest must be 64 lower-case hex digits");
    }
    sw_strlcpy(r->digest, d, sizeof(r->digest));
    return 0;
}

/* Splits name into registry and repository, validates both and normalises docker.io. */
static int parse_name(const char *s, const char *name, size_t n, sw_ref *r)
{
    if (n == 0)
        return bad_ref(s, "repository name is empty");
    const char *slash = memchr(name, '/', n);
    const char *path = name;
    size_t plen = n;
    if (slash && first_is_domain(name, (size_t)(slash - name))) {
        size_t dlen = (size_t)(slash - name);
        if (dlen >= sizeof(r->registry))
            return bad_ref(s, "repository name must not be more than 255 characters");
        if (!domain_valid(name, dlen))
            return bad_ref(s, "invalid registry host");
        memcpy(r->registry, name, dlen);
        r->registry[dlen] = '\0';
        path = slash + 1;
        plen = n - dlen - 1;
    } else {
        sw_strlcpy(r->registry, DOCKER_DOMAIN, sizeof(r->registry));
    }
    if (strcmp(r->registry, DOCKER_LEGACY_DOMAIN) == 0) {
        memset(r->registry, 0, sizeof(r->registry)); /* equal refs compare equal bytewise */
        sw_strlcpy(r->registry, DOCKER_DOMAIN, sizeof(r->registry));
    }
    if (plen == 0)
        return bad_ref(s, "repository name is empty");
    if (has_upper(path, plen))
        return bad_ref(s, "repository name must be lowercase");
    if (!path_valid(path, plen))
        return bad_ref(s, "repository path components must match [a-z0-9]+([._-][a-z0-9]+)*");
    bool library = strcmp(r->registry, DOCKER_DOMAIN) == 0 && !memchr(path, '/', plen);
    size_t need = plen + (library ? 8 : 0);
    if (need >= sizeof(r->repository))
        return bad_ref(s, "repository name must not be more than 255 characters");
    snprintf(r->repository, sizeof(r->repository), "%s%.*s", library ? "library/" : "", (int)plen,
             path);
    /* Like docker, the limit applies to the normalised name ("docker.io/library/x"), so the
     * canonical form of anything accepted parses again. */
    if (strlen(r->registry) + 1 + strlen(r->repository) > SW_REF_NAME_MAX)
        return bad_ref(s, "repository name must not be more than 255 characters");
    return 0;
}

int sw_ref_parse(const char *s, sw_ref *out)
{
    if (!s || !*s)
        return sw_error_set(SW_EINVALID, "invalid reference format: empty reference");
    size_t len = strnlen(s, REF_INPUT_MAX + 1);
    if (len > REF_INPUT_MAX)
        return sw_error_set(SW_EINVALID,
                            "invalid reference format: reference longer than %d "
                            "characters",
                            REF_INPUT_MAX);
    if (all_hex64(s))
        return bad_ref(s, "cannot specify a 64-byte hexadecimal string as a repository name");
    sw_ref r;
    memset(&r, 0, sizeof(r));
    const char *at = strchr(s, '@');
    size_t name_end = at ? (size_t)(at - s) : len;
    if (at) {
        int error = parse_digest(s, at + 1, &r);
        if (error < 0)
            return error;
    }
    size_t last_slash = 0, colon = name_end;
    for (size_t i = 0; i < name_end; i++) {
        if (s[i] == '/')
            last_slash = i + 1, colon = name_end;
        else if (s[i] == ':' && i >= last_slash)
            colon = i;
    }
    if (colon < name_end) {
        if (!tag_valid_n(s + colon + 1, name_end - colon - 1))
            return bad_ref(s, "tag must match [A-Za-z0-9_][A-Za-z0-9_.-]{0,127}");
        memcpy(r.tag, s + colon + 1, name_end - colon - 1);
    }
    int error = parse_name(s, s, colon, &r);
    if (error < 0)
        return error;
    if (!r.tag[0] && !r.digest[0])
        sw_strlcpy(r.tag, "latest", sizeof(r.tag));
    *out = r;
    return 0;
}

void sw_ref_format(const sw_ref *r, char *out, size_t n)
{
    if (n == 0)
        return;
    snprintf(out, n, "%s/%s%s%s%s%s", r->registry, r->repository, r->tag[0] ? ":" : "", r->tag,
             r->digest[0] ? "@" : "", r->digest);
}

const char *sw_ref_endpoint(const sw_ref *r)
{
    if (strcmp(r->registry, DOCKER_DOMAIN) == 0)
        return DOCKER_ENDPOINT;
    return r->registry;
}
