/* names: scanners for Kubernetes names, qualified names and label values, metadata label and
 * annotation checks, and generateName suffixes. Messages follow
 * k8s.io/apimachinery/pkg/util/validation word for word (first failure only). */
#include "meta/names.h"

#include "util/alloc.h"
#include "util/buf.h"
#include "util/error.h"
#include "util/str.h"

#include <stdbool.h>
#include <string.h>

#define DNS_LABEL_FMT "[a-z0-9]([-a-z0-9]*[a-z0-9])?"
#define DNS_SUBDOMAIN_FMT DNS_LABEL_FMT "(\\." DNS_LABEL_FMT ")*"
#define QNAME_FMT "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"

#define SUBDOMAIN_MSG                                                                              \
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or "   \
    "'.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used "  \
    "for validation is '" DNS_SUBDOMAIN_FMT "')"
#define DNS_LABEL_MSG                                                                              \
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and "   \
    "must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex "     \
    "used for validation is '" DNS_LABEL_FMT "')"
#define QNAME_MSG                                                                                  \
    "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an "    \
    "alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for "         \
    "validation is '" QNAME_FMT "')"
#define LABEL_VALUE_MSG                                                                            \
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or "    \
    "'.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or "             \
    "'my_value',  or '12345', regex used for validation is '(" QNAME_FMT ")?')"
#define MAXLEN_253 "must be no more than 253 characters"
#define MAXLEN_63 "must be no more than 63 characters"

static const char gen_alphabet[] = "bcdfghjklmnpqrstvwxz2456789";

static bool is_lower_alnum(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
}

static bool is_alnum(char c)
{
    return is_lower_alnum(c) || (c >= 'A' && c <= 'Z');
}

/* [a-z0-9]([-a-z0-9]*[a-z0-9])? over s[0..n); fold accepts upper case as lower case. */
static bool scan_dns_label(const char *s, size_t n, bool fold)
{
    if (n == 0)
        return false;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        bool ok = fold ? is_alnum(c) : is_lower_alnum(c);
        if (!ok && (c != '-' || i == 0 || i == n - 1))
            return false;
    }
    return true;
}

/* Dot-separated DNS labels. */
static bool scan_subdomain(const char *s, size_t n, bool fold)
{
    size_t start = 0;
    for (size_t i = 0; i <= n; i++) {
        if (i < n && s[i] != '.')
            continue;
        if (!scan_dns_label(s + start, i - start, fold))
            return false;
        start = i + 1;
    }
    return true;
}

/* ([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9] over s[0..n). */
static bool scan_qname(const char *s, size_t n)
{
    if (n == 0 || !is_alnum(s[0]) || !is_alnum(s[n - 1]))
        return false;
    for (size_t i = 1; i + 1 < n; i++) {
        char c = s[i];
        if (!is_alnum(c) && c != '-' && c != '_' && c != '.')
            return false;
    }
    return true;
}

static const char *subdomain_error(const char *s, size_t n, bool fold)
{
    if (n > SW_NAMES_SUBDOMAIN_MAX)
        return MAXLEN_253;
    if (!scan_subdomain(s, n, fold))
        return SUBDOMAIN_MSG;
    return NULL;
}

static const char *dns_label_error(const char *s)
{
    size_t n = strlen(s);
    if (n > SW_NAMES_LABEL_MAX)
        return MAXLEN_63;
    if (scan_dns_label(s, n, false))
        return NULL;
    return scan_subdomain(s, n, false) ? "must not contain dots" : DNS_LABEL_MSG;
}

static const char *path_segment_error(const char *s)
{
    if (!*s)
        return "must be non-empty";
    if (strcmp(s, ".") == 0)
        return "may not be '.'";
    if (strcmp(s, "..") == 0)
        return "may not be '..'";
    if (strchr(s, '/'))
        return "may not contain '/'";
    if (strchr(s, '%'))
        return "may not contain '%'";
    if (strlen(s) > SW_NAMES_SUBDOMAIN_MAX)
        return MAXLEN_253;
    return NULL;
}

/* IsQualifiedName; fold makes the prefix check case-insensitive (annotation keys). */
static const char *qname_error(const char *s, bool fold)
{
    const char *slash = strchr(s, '/');
    const char *name = s;
    if (slash && strchr(slash + 1, '/'))
        return "a qualified name " QNAME_MSG " with an optional DNS subdomain prefix and '/' "
               "(e.g. 'example.com/MyName')";
    if (slash) {
        size_t plen = (size_t)(slash - s);
        if (plen == 0)
            return "prefix part must be non-empty";
        if (plen > SW_NAMES_SUBDOMAIN_MAX)
            return "prefix part " MAXLEN_253;
        if (!scan_subdomain(s, plen, fold))
            return "prefix part " SUBDOMAIN_MSG;
        name = slash + 1;
    }
    size_t n = strlen(name);
    if (n == 0)
        return "name part must be non-empty";
    if (n > SW_NAMES_LABEL_MAX)
        return "name part " MAXLEN_63;
    if (!scan_qname(name, n))
        return "name part " QNAME_MSG;
    return NULL;
}

static const char *label_value_error(const char *s)
{
    size_t n = strlen(s);
    if (n > SW_NAMES_LABEL_MAX)
        return MAXLEN_63;
    if (n > 0 && !scan_qname(s, n))
        return LABEL_VALUE_MSG;
    return NULL;
}

static int report(const char *msg)
{
    return msg ? sw_error_set(SW_EINVALID, "%s", msg) : 0;
}

int sw_names_check_subdomain(const char *name)
{
    const char *s = name ? name : "";
    return report(subdomain_error(s, strlen(s), false));
}

int sw_names_check_label(const char *name)
{
    return report(dns_label_error(name ? name : ""));
}

int sw_names_check_path_segment(const char *name)
{
    return report(path_segment_error(name ? name : ""));
}

int sw_names_check_label_key(const char *key)
{
    return report(qname_error(key ? key : "", false));
}

int sw_names_check_label_value(const char *value)
{
    return report(label_value_error(value ? value : ""));
}

int sw_names_check_annotation_key(const char *key)
{
    return report(qname_error(key ? key : "", true));
}

/* Appends s quoted like Go's %q for ASCII: escapes quotes, backslashes and control bytes.
 * Values longer than QUOTE_MAX bytes are cut and marked with "...". */
#define QUOTE_MAX 256
static void quote(sw_buf *b, const char *s)
{
    size_t i = 0;
    sw_buf_putc(b, '"');
    for (const unsigned char *p = (const unsigned char *)s; *p; p++, i++) {
        if (i == QUOTE_MAX) {
            sw_buf_puts(b, "...");
            break;
        }
        if (*p == '"' || *p == '\\')
            sw_buf_printf(b, "\\%c", *p);
        else if (*p == '\n')
            sw_buf_puts(b, "\\n");
        else if (*p == '\t')
            sw_buf_puts(b, "\\t");
        else if (*p == '\r')
            sw_buf_puts(b, "\\r");
        else if (*p < 0x20 || *p == 0x7f)
            sw_buf_printf(b, "\\x%02x", *p);
        else
            sw_buf_putc(b, (char)*p);
    }
    sw_buf_putc(b, '"');
}

int sw_names_invalid(int code, const char *field, const char *value, const char *detail)
{
    sw_buf b = SW_BUF_INIT(4096);
    sw_buf_printf(&b, "%s: Invalid value: ", field);
    quote(&b, value ? value : "");
    sw_buf_printf(&b, ": %s", detail);
    sw_error_set(code, "%s", sw_buf_cstr(&b));
    sw_buf_dispose(&b);
    return code;
}

static int check_labels(const json_t *labels)
{
    const char *key;
    json_t *val;
    if (!labels || json_is_null(labels))
        return 0;
    if (!json_is_object(labels))
        return sw_error_set(SW_EINVALID, "metadata.labels: Invalid value: must be an object");
    json_object_foreach((json_t *)labels, key, val)
    {
        const char *msg = qname_error(key, false);
        if (msg)
            return sw_names_invalid(SW_EINVALID, "metadata.labels", key, msg);
        if (!json_is_string(val))
            return sw_names_invalid(SW_EINVALID, "metadata.labels", key,
                                    "label value must be a string");
        msg = label_value_error(json_string_value(val));
        if (msg)
            return sw_names_invalid(SW_EINVALID, "metadata.labels", json_string_value(val), msg);
    }
    return 0;
}

static int check_annotations(const json_t *annotations)
{
    const char *key;
    json_t *val;
    size_t total = 0;
    if (!annotations || json_is_null(annotations))
        return 0;
    if (!json_is_object(annotations))
        return sw_error_set(SW_EINVALID, "metadata.annotations: Invalid value: must be an object");
    json_object_foreach((json_t *)annotations, key, val)
    {
        const char *msg = qname_error(key, true);
        if (msg)
            return sw_names_invalid(SW_EINVALID, "metadata.annotations", key, msg);
        if (!json_is_string(val))
            return sw_names_invalid(SW_EINVALID, "metadata.annotations", key,
                                    "annotation value must be a string");
        total += strlen(key) + json_string_length(val);
    }
    if (total > SW_NAMES_ANNOTATIONS_MAX)
        return sw_error_set(SW_EINVALID,
                            "metadata.annotations: Too long: must have at most %d bytes",
                            SW_NAMES_ANNOTATIONS_MAX);
    return 0;
}

int sw_names_check_finalizers(const char *field, const json_t *list)
{
    size_t i;
    json_t *f;
    if (!list || json_is_null(list))
        return 0;
    if (!json_is_array(list))
        return sw_error_set(SW_EINVALID, "%s: Invalid value: must be a list of names", field);
    json_array_foreach(list, i, f)
    {
        const char *name = json_string_value(f);
        if (!name || sw_names_check_label_key(name) < 0)
            return sw_error_set(SW_EINVALID,
                                "%s[%zu]: Invalid value: \"%.64s\": a finalizer must be a "
                                "qualified name ([prefix/]name)",
                                field, i, name ? name : "");
    }
    return 0;
}

int sw_names_check_meta(const json_t *metadata)
{
    if (!metadata || json_is_null(metadata))
        return 0;
    if (!json_is_object(metadata))
        return sw_error_set(SW_EINVALID, "metadata: Invalid value: must be an object");
    int error = check_labels(json_object_get(metadata, "labels"));
    if (error == 0)
        error = check_annotations(json_object_get(metadata, "annotations"));
    if (error == 0)
        error = sw_names_check_finalizers("metadata.finalizers",
                                          json_object_get(metadata, "finalizers"));
    return error;
}

/* One unbiased random index into gen_alphabet (rejection sampling over a random byte). */
static char random_gen_char(void)
{
    const unsigned n = sizeof(gen_alphabet) - 1; /* 27 */
    const unsigned limit = 256 - 256 % n;
    unsigned char byte;
    do {
        sw_random_bytes(&byte, 1);
    } while (byte >= limit);
    return gen_alphabet[byte % n];
}

void sw_names_generate(const char *base, char *out, size_t n)
{
    char tmp[SW_NAMES_GENERATE_BASE_MAX + 6];
    size_t blen = base ? strnlen(base, SW_NAMES_GENERATE_BASE_MAX) : 0;
    if (n == 0)
        return;
    if (blen)
        memcpy(tmp, base, blen);
    for (size_t i = 0; i < 5; i++)
        tmp[blen + i] = random_gen_char();
    tmp[blen + 5] = '\0';
    sw_strlcpy(out, tmp, n);
}
