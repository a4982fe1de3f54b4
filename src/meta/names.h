/* names: Kubernetes name and metadata validation and generateName suffixes.
 * Checks DNS-1123 labels and subdomains, path-segment names, qualified names (label and annotation
 * keys) and label values with small scanners (no regex), and reports failures in apimachinery's
 * own wording so clients see the messages a real apiserver would give. */
#ifndef SW_META_NAMES_H
#define SW_META_NAMES_H

#include <jansson.h>
#include <stddef.h>

#define SW_NAMES_SUBDOMAIN_MAX 253
#define SW_NAMES_LABEL_MAX 63
#define SW_NAMES_ANNOTATIONS_MAX (256 * 1024)
#define SW_NAMES_GENERATE_BASE_MAX 58 /* 63 minus the 5 random characters */

/* Each checker returns 0, or SW_EINVALID with the Kubernetes message (no field prefix) set in the
 * thread-local error. A NULL argument is checked as "". */

/* DNS-1123 subdomain (<=253, lowercase alnum, '-', '.', starts/ends alnum) -- most object names. */
int sw_names_check_subdomain(const char *name);
/* DNS-1123 label (<=63, lowercase alnum and '-') -- namespaces. */
int sw_names_check_label(const char *name);
/* Path-segment names (ImageStream-style kinds: not "." or "..", no '/' or '%'), 1..253 bytes. */
int sw_names_check_path_segment(const char *name);
/* Qualified name: optional DNS subdomain prefix + '/' + name part (<=63 of [A-Za-z0-9_.-],
 * starting and ending alphanumeric). Used for label keys. */
int sw_names_check_label_key(const char *key);
/* Label value: <=63, empty or [A-Za-z0-9_.-] starting and ending alphanumeric. */
int sw_names_check_label_value(const char *value);
/* Annotation key: a qualified name checked case-insensitively (as Kubernetes does). */
int sw_names_check_annotation_key(const char *key);

/* Validates metadata.labels and metadata.annotations of a metadata object (NULL or null labels
 * are fine). Annotation keys and values together must not exceed 256 KiB. On error returns
 * SW_EINVALID and the message names the field, e.g.
 * `metadata.labels: Invalid value: "a b": name part must consist of ...`. */
int sw_names_check_meta(const json_t *metadata);
/* A list of finalizer names at field (metadata.finalizers, a Namespace's spec.finalizers):
 * each a qualified name. SW_EINVALID naming the entry. */
int sw_names_check_finalizers(const char *field, const json_t *list);

/* generateName: base truncated to 58 bytes + 5 random characters from
 * "bcdfghjklmnpqrstvwxz2456789". out should hold 64 bytes; a smaller n truncates. */
void sw_names_generate(const char *base, char *out, size_t n);

/* Sets the thread-local error to the Kubernetes field error form
 * `<field>: Invalid value: "<value>": <detail>` (value quoted like Go's %q) and returns code.
 * detail may be sw_error_msg() itself. */
int sw_names_invalid(int code, const char *field, const char *value, const char *detail);

#endif
