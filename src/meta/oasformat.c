/* oasformat: the string formats and patterns of CRD schemas (openapischema.h), checked as
 * go-openapi checks them for kube-apiserver: date, date-time, uuid, email, hostname, ipv4, ipv6,
 * cidr, uri, byte, duration, and the int32 range; other format names are not checked, as in
 * Kubernetes. Patterns are RE2 as written in CRDs, translated to POSIX extended expressions:
 * \d \D \s \S \w \W (also inside brackets), (?:...), non-greedy quantifiers (the same language
 * for matching) and escaped punctuation; what has no POSIX spelling (\A, \z, \pL, flags, named
 * groups, back references) is refused, never matched approximately. */
#include "meta/oasformat.h"

#include "meta/openapischema.h"
#include "util/alloc.h"
#include "util/buf.h"
#include "util/error.h"
#include "util/str.h"
#include "util/time.h"

#include <arpa/inet.h>
#include <locale.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

enum {
    F_NONE,
    F_DATE,
    F_DATETIME,
    F_UUID,
    F_EMAIL,
    F_HOSTNAME,
    F_IPV4,
    F_IPV6,
    F_CIDR,
    F_URI,
    F_BYTE,
    F_DURATION,
    F_INT32,
};
static const char *const words[] = {"",         "date",     "date-time", "uuid", "email",
                                    "hostname", "ipv4",     "ipv6",      "cidr", "uri",
                                    "byte",     "duration", "int32"};

/* ---- patterns: RE2 spelling to POSIX extended ---- */

/* Re-emits one bracket expression (after '['; *pp at its first member) with ']' first and '-'
 * last, the way POSIX reads them; RE2's escapes inside become members. */
static int bracket(const char **pp, sw_buf *out)
{
    const char *p = *pp;
    bool neg = false, close = false, dash = false, caret = false;
    sw_buf body = SW_BUF_INIT(8192);
    if (*p == '^') {
        neg = true;
        p++;
    }
    bool first = true;
    while (*p && (first || *p != ']')) {
        first = false;
        if (p[0] == '[' && p[1] == ':') {
            const char *e = strstr(p + 2, ":]");
            if (!e)
                goto bad;
            sw_buf_put(&body, p, (size_t)(e + 2 - p));
            p = e + 2;
            continue;
        }
        char c = *p++;
        if (c == '\\') {
            char e = *p++;
            if (e == 'd') {
                sw_buf_puts(&body, "0-9");
                continue;
            }
            if (e == 'w') {
                sw_buf_puts(&body, "[:alnum:]_");
                continue;
            }
            if (e == 's') {
                sw_buf_puts(&body, "[:space:]");
                continue;
            }
            if (e == 'n')
                c = '\n';
            else if (e == 't')
                c = '\t';
            else if (e &&
                     !((e >= 'a' && e <= 'z') || (e >= 'A' && e <= 'Z') || (e >= '0' && e <= '9')))
                c = e;
            else
                goto bad;
        }
        if (*p == '-' && p[1] && p[1] != ']') {
            /* a range c-x */
            char hi = p[1];
            p += 2;
            if (hi == '\\') {
                hi = *p++;
                if (!hi || (hi >= 'a' && hi <= 'z') || (hi >= 'A' && hi <= 'Z'))
                    goto bad;
            }
            if (c == ']' || c == '^' || c == '-' || hi == ']' || hi == '^' || hi == '-')
                goto bad;
            sw_buf_printf(&body, "%c-%c", c, hi);
            continue;
        }
        if (c == ']')
            close = true;
        else if (c == '-')
            dash = true;
        else if (c == '^')
            caret = true;
        else
            sw_buf_putc(&body, c);
    }
    if (*p != ']')
        goto bad;
    *pp = p + 1;
    if (!neg && caret && !close && !dash && body.len == 0) {
        sw_buf_puts(out, "\\^");
        sw_buf_dispose(&body);
        return 0;
    }
    sw_buf_putc(out, '[');
    if (neg)
        sw_buf_putc(out, '^');
    if (close)
        sw_buf_putc(out, ']');
    sw_buf_puts(out, sw_buf_cstr(&body));
    if (caret)
        sw_buf_putc(out, '^');
    if (dash)
        sw_buf_putc(out, '-');
    sw_buf_putc(out, ']');
    sw_buf_dispose(&body);
    return 0;
bad:
    sw_buf_dispose(&body);
    return SW_EINVALID;
}

/* RE2's bound on repetition: no count over 1000, nested counts included (so glibc's compile
 * cost, which grows with the product, stays small). */
#define MAX_REPEAT 1000
#define MAX_GROUPS 100

typedef struct {
    long level[MAX_GROUPS + 1]; /* the heaviest atom of each open group */
    int depth;
    long last; /* the weight of the atom a quantifier would repeat */
} repeats;

/* A counted repetition at *pp (after '{'): checks it and moves past it; copied to out. */
static int counted(const char **pp, repeats *r, sw_buf *out)
{
    const char *p = *pp;
    uint64_t lo, hi;
    if (sw_parse_u64(&p, UINT64_MAX, &lo) < 0)
        return SW_EINVALID;
    hi = lo;
    if (*p == ',') {
        p++;
        if (*p != '}' && sw_parse_u64(&p, UINT64_MAX, &hi) < 0)
            return SW_EINVALID;
    }
    if (*p != '}' || lo > MAX_REPEAT || hi > MAX_REPEAT || hi < lo)
        return SW_EINVALID;
    long w = r->last * (long)(hi > lo ? hi : (lo ? lo : 1));
    if (w > MAX_REPEAT)
        return SW_EINVALID;
    r->last = w;
    if (w > r->level[r->depth])
        r->level[r->depth] = w;
    sw_buf_putc(out, '{');
    sw_buf_put(out, *pp, (size_t)(p + 1 - *pp));
    *pp = p + 1;
    return 0;
}

static int translate(const char *re, sw_buf *out)
{
    const char *p = re;
    repeats r = {.level = {1}, .depth = 0, .last = 1};
    while (*p) {
        char c = *p++;
        if (c == '{') {
            if (counted(&p, &r, out) < 0)
                return SW_EINVALID;
            if (*p == '?')
                p++; /* non-greedy */
            continue;
        }
        if (c == '(' || c == ')') {
            if (c == '(' && r.depth >= MAX_GROUPS)
                return SW_EINVALID;
            if (c == ')' && r.depth == 0)
                return SW_EINVALID;
            if (c == '(')
                r.level[++r.depth] = 1;
            else {
                r.last = r.level[r.depth--];
                if (r.last > r.level[r.depth])
                    r.level[r.depth] = r.last;
            }
        } else if (c != '*' && c != '+' && c != '?' && c != '|')
            r.last = 1;
        if (c == '.') {
            sw_buf_puts(out, "[^\n]"); /* RE2's . stops at a newline */
            continue;
        }
        if (c == '[') {
            if (bracket(&p, out) < 0)
                return SW_EINVALID;
            continue;
        }
        if (c == '(' && p[0] == '?') {
            if (p[1] != ':')
                return SW_EINVALID; /* flags and named groups */
            p += 2;
            sw_buf_putc(out, '(');
            continue;
        }
        if ((c == '*' || c == '+' || c == '?') && *p == '?') {
            p++; /* non-greedy: the same language */
            sw_buf_putc(out, c);
            continue;
        }
        if (c != '\\') {
            sw_buf_putc(out, c);
            continue;
        }
        char e = *p++;
        const char *with = NULL;
        switch (e) {
        case 'd':
            with = "[0-9]";
            break;
        case 'D':
            with = "[^0-9]";
            break;
        case 's':
            with = "[[:space:]]";
            break;
        case 'S':
            with = "[^[:space:]]";
            break;
        case 'w':
            with = "[[:alnum:]_]";
            break;
        case 'W':
            with = "[^[:alnum:]_]";
            break;
        case 'b':
            with = "\\b";
            break;
        case 'B':
            with = "\\B";
            break;
        case 'n':
            with = "\n";
            break;
        case 't':
            with = "\t";
            break;
        default:
            break;
        }
        if (with) {
            sw_buf_puts(out, with);
            continue;
        }
        if (!e || (e >= 'a' && e <= 'z') || (e >= 'A' && e <= 'Z') || (e >= '0' && e <= '9'))
            return SW_EINVALID; /* \A, \z, \pL, back references ... */
        if (strchr(".[]()*+?{}|^$\\", e))
            sw_buf_putc(out, '\\');
        sw_buf_putc(out, e);
    }
    return sw_buf_error(out);
}

/* Patterns compile and match in C.UTF-8, so that '.' and brackets take a character, as in RE2
 * (byte-wise when the locale is missing). */
static locale_t utf8;
static pthread_once_t utf8_once = PTHREAD_ONCE_INIT;

static void utf8_init(void)
{
    utf8 = newlocale(LC_CTYPE_MASK | LC_COLLATE_MASK, "C.UTF-8", (locale_t)0);
}

static locale_t enter_utf8(void)
{
    pthread_once(&utf8_once, utf8_init);
    return utf8 ? uselocale(utf8) : (locale_t)0;
}

static void leave_utf8(locale_t old)
{
    if (old)
        uselocale(old);
}

int sw_oas_regcomp(const char *re, regex_t *out)
{
    if (strlen(re) > SW_OAS_MAX_PATTERN)
        return SW_ELIMIT;
    sw_buf posix = SW_BUF_INIT(8 * SW_OAS_MAX_PATTERN + 64);
    int error = translate(re, &posix);
    if (error == 0) {
        locale_t old = enter_utf8();
        if (regcomp(out, sw_buf_cstr(&posix), REG_EXTENDED | REG_NOSUB) != 0)
            error = SW_EINVALID;
        leave_utf8(old);
    }
    sw_buf_dispose(&posix);
    return error;
}

bool sw_oas_regmatch(const regex_t *re, const char *s)
{
    locale_t old = enter_utf8();
    bool match = regexec(re, s, 0, NULL, 0) == 0;
    leave_utf8(old);
    return match;
}

/* ---- formats ---- */

static bool digits(const char *s, int n)
{
    for (int i = 0; i < n; i++)
        if (s[i] < '0' || s[i] > '9')
            return false;
    return true;
}

static bool is_date(const char *s)
{
    if (strlen(s) < 10 || !digits(s, 4) || s[4] != '-' || !digits(s + 5, 2) || s[7] != '-' ||
        !digits(s + 8, 2))
        return false;
    static const int days[] = {31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    int y = (s[0] - '0') * 1000 + (s[1] - '0') * 100 + (s[2] - '0') * 10 + (s[3] - '0');
    int m = (s[5] - '0') * 10 + (s[6] - '0'), d = (s[8] - '0') * 10 + (s[9] - '0');
    if (m < 1 || m > 12 || d < 1 || d > days[m - 1])
        return false;
    bool leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
    return !(m == 2 && d == 29 && !leap);
}

static bool is_datetime(const char *s)
{
    int64_t secs;
    if (!is_date(s) || (s[10] != 'T' && s[10] != 't' && s[10] != ' '))
        return false;
    char copy[64];
    if (sw_strlcpy(copy, s, sizeof(copy)) >= sizeof(copy))
        return false;
    copy[10] = 'T';
    for (char *c = copy; *c; c++)
        if (*c == 'z')
            *c = 'Z';
    return sw_time_parse(copy, &secs) == 0;
}

static bool is_hex(const char *s, int n)
{
    for (int i = 0; i < n; i++)
        if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f') ||
              (s[i] >= 'A' && s[i] <= 'F')))
            return false;
    return true;
}

/* 8-4-4-4-12 hex digits, the hyphens optional (kube-openapi's pattern). */
static bool is_uuid(const char *s)
{
    static const int groups[] = {8, 4, 4, 4, 12};
    for (int g = 0; g < 5; g++) {
        if (!is_hex(s, groups[g]))
            return false;
        s += groups[g];
        if (g < 4 && *s == '-')
            s++;
    }
    return *s == '\0';
}

static bool is_hostname(const char *s)
{
    size_t len = strlen(s);
    if (len == 0 || len > 253)
        return false;
    size_t label = 0;
    for (size_t i = 0; i <= len; i++) {
        char c = s[i];
        if (c == '.' || c == '\0') {
            if (label == 0 || label > 63 || s[i - 1] == '-')
                return false;
            label = 0;
            continue;
        }
        bool alnum = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
        if (!alnum && !(c == '-' && label > 0))
            return false;
        label++;
    }
    return true;
}

static bool is_email(const char *s)
{
    const char *at = strrchr(s, '@');
    if (!at || at == s || strchr(s, ' '))
        return false;
    return is_hostname(at + 1);
}

static bool is_ip(const char *s, int family)
{
    unsigned char buf[16];
    return inet_pton(family, s, buf) == 1;
}

static bool is_cidr(const char *s)
{
    const char *slash = strchr(s, '/');
    char addr[64];
    if (!slash || (size_t)(slash - s) >= sizeof(addr))
        return false;
    memcpy(addr, s, (size_t)(slash - s));
    addr[slash - s] = '\0';
    int family = strchr(addr, ':') ? AF_INET6 : AF_INET;
    uint64_t bits;
    const char *p = slash + 1;
    if (!*p || sw_parse_u64(&p, family == AF_INET ? 32 : 128, &bits) < 0 || *p)
        return false;
    return is_ip(addr, family);
}

static bool is_uri(const char *s)
{
    if (!*s || strpbrk(s, " \t\n"))
        return false;
    if (s[0] == '/')
        return true;
    const char *p = s;
    if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z')))
        return false;
    while ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
           *p == '+' || *p == '-' || *p == '.')
        p++;
    return *p == ':';
}

static bool is_byte(const char *s)
{
    unsigned char *data = NULL;
    size_t len;
    size_t n = strlen(s);
    if (n % 4 != 0 || sw_base64_decode(s, n, &data, &len) < 0)
        return false;
    sw_free(data);
    return true;
}

/* Go's time.ParseDuration plus d and w, as go-openapi's duration format. */
static bool is_duration(const char *s)
{
    static const char *const units[] = {"ns", "us", "\xc2\xb5s", "ms", "s", "m", "h", "d", "w"};
    const char *p = s;
    if (*p == '+' || *p == '-')
        p++;
    if (!*p)
        return false;
    if (sw_str_eq(p, "0"))
        return true;
    while (*p) {
        const char *start = p;
        while ((*p >= '0' && *p <= '9') || *p == '.')
            p++;
        if (p == start)
            return false;
        while (*p == ' ')
            p++;
        size_t best = 0;
        for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
            size_t ul = strlen(units[i]);
            if (ul > best && strncmp(p, units[i], ul) == 0)
                best = ul;
        }
        if (!best)
            return false;
        p += best;
        while (*p == ' ')
            p++;
    }
    return true;
}

bool sw_oas_format_ok(int fmt, const json_t *v)
{
    if (fmt == F_INT32)
        return !json_is_number(v) ||
               (json_number_value(v) >= INT32_MIN && json_number_value(v) <= INT32_MAX);
    if (!json_is_string(v))
        return true;
    const char *s = json_string_value(v);
    switch (fmt) {
    case F_DATE:
        return is_date(s) && strlen(s) == 10;
    case F_DATETIME:
        return is_datetime(s);
    case F_UUID:
        return is_uuid(s);
    case F_EMAIL:
        return is_email(s);
    case F_HOSTNAME:
        return is_hostname(s);
    case F_IPV4:
        return is_ip(s, AF_INET);
    case F_IPV6:
        return is_ip(s, AF_INET6);
    case F_CIDR:
        return is_cidr(s);
    case F_URI:
        return is_uri(s);
    case F_BYTE:
        return is_byte(s);
    case F_DURATION:
        return is_duration(s);
    default:
        return true;
    }
}

int sw_oas_format_find(const char *name)
{
    for (size_t f = 1; name && f < sizeof(words) / sizeof(words[0]); f++)
        if (sw_str_eq(name, words[f]))
            return (int)f;
    return 0;
}

const char *sw_oas_format_name(int fmt)
{
    return fmt > 0 && (size_t)fmt < sizeof(words) / sizeof(words[0]) ? words[fmt] : "";
}
