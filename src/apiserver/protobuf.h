/* protobuf: decodes Kubernetes protobuf request bodies ("k8s\0" + runtime.Unknown) into the JSON
 * object a client would have sent, for the few built-in kinds that typed clients post that way:
 * v1 Secret, ConfigMap, Namespace, ServiceAccount, Event, coordination.k8s.io/v1 Lease, apps/v1
 * Deployment, batch/v1 Job and CronJob (the fields simple workloads set: a field the tables do
 * not list is refused with SW_EUNSUPPORTED rather than dropped) and meta/v1 DeleteOptions. A
 * bounded wire-format reader walks per-kind schema tables (field number to JSON name and type);
 * elsewhere unknown fields are skipped as protobuf requires. Responses stay JSON. */
#ifndef SW_PROTOBUF_H
#define SW_PROTOBUF_H

#include <jansson.h>
#include <stddef.h>

#define SW_PROTOBUF_MEDIA_TYPE "application/vnd.kubernetes.protobuf"
#define SW_PROTOBUF_MAX_DEPTH 32

/* Decodes a k8s protobuf body (with the k8s\0 magic) into a new JSON object (*out, the caller
 * owns it). Zero-valued optional scalars are left out, as Go's omitempty would; empty Time values
 * are left out (JSON null). Returns 0, SW_EUNSUPPORTED for a kind not listed above (the message
 * names the kind and says to send JSON), or SW_EBADREQUEST for malformed input (wrong magic,
 * truncated varint, length past the end, wrong wire type, invalid UTF-8, nesting deeper than
 * SW_PROTOBUF_MAX_DEPTH). Never reads past len; *out is untouched on failure. */
int sw_protobuf_decode(const char *body, size_t len, json_t **out);

#endif
