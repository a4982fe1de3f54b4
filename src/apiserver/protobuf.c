/* protobuf: Kubernetes protobuf request bodies to JSON (see protobuf.h).
 * The wire reader is a cursor over [p, end): every length is checked against the bytes left
 * before it is used, and nested messages are only entered where a schema says so, with a depth
 * bound. Field numbers are those of k8s.io/api core/v1 and coordination/v1 generated.proto and
 * k8s.io/apimachinery meta/v1 and runtime generated.proto. */
#include "apiserver/protobuf.h"

#include "util/alloc.h"
#include "util/error.h"
#include "util/json.h"
#include "util/str.h"
#include "util/time.h"

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

enum { WT_VARINT = 0, WT_FIXED64 = 1, WT_LEN = 2, WT_FIXED32 = 5 };

/* 9999-12-31T23:59:59Z: the last second RFC 3339 can write with a four-digit year. */
#define MAX_EPOCH_SECONDS INT64_C(253402300799)

typedef struct pb_reader {
    const unsigned char *p;   /* next unread byte */
    const unsigned char *end; /* one past the last readable byte */
} pb_reader;

/* ---- wire format ---- */

static size_t pb_left(const pb_reader *r)
{
    return (size_t)(r->end - r->p);
}

/* Base-128 varint of at most 10 bytes; the 10th byte may only carry bit 63. */
static int pb_varint(pb_reader *r, uint64_t *out)
{
    uint64_t v = 0;
    const unsigned char *p = r->p;
    for (unsigned shift = 0; shift <= 63; shift += 7) {
        if (p >= r->end)
            return sw_error_set(SW_EBADREQUEST, "protobuf: truncated varint");
        unsigned char b = *p++;
        if (shift == 63 && b > 1)
            break;
        v |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80)) {
            r->p = p;
            *out = v;
            return 0;
        }
    }
    return sw_error_set(SW_EBADREQUEST, "protobuf: varint longer than 64 bits");
}

/* Moves the next n bytes of r into sub. */
static int pb_take(pb_reader *r, uint64_t n, pb_reader *sub)
{
    if (n > pb_left(r))
        return sw_error_set(SW_EBADREQUEST,
                            "protobuf: length %llu runs past the end of the body (%zu bytes left)",
                            (unsigned long long)n, pb_left(r));
    sub->p = r->p;
    sub->end = r->p + n;
    r->p += n;
    return 0;
}

/* A length-delimited payload: varint length, then that many bytes (into sub). */
static int pb_len(pb_reader *r, pb_reader *sub)
{
    uint64_t n = 0;
    int error = pb_varint(r, &n);
    if (error < 0)
        return error;
    return pb_take(r, n, sub);
}

/* A field key: field number and wire type. Groups (3, 4) and the unused types 6, 7 are errors. */
static int pb_key(pb_reader *r, uint32_t *num, unsigned *wt)
{
    uint64_t key = 0;
    int error = pb_varint(r, &key);
    if (error < 0)
        return error;
    *wt = (unsigned)(key & 7);
    if (key >> 3 == 0 || key >> 3 > 0x1fffffff)
        return sw_error_set(SW_EBADREQUEST, "protobuf: invalid field number %llu",
                            (unsigned long long)(key >> 3));
    if (*wt != WT_VARINT && *wt != WT_FIXED64 && *wt != WT_LEN && *wt != WT_FIXED32)
        return sw_error_set(SW_EBADREQUEST, "protobuf: unsupported wire type %u in field %llu", *wt,
                            (unsigned long long)(key >> 3));
    *num = (uint32_t)(key >> 3);
    return 0;
}

/* Skips the value of a field nobody asked for, without looking inside it. */
static int pb_skip(pb_reader *r, unsigned wt)
{
    uint64_t v = 0;
    pb_reader sub;
    switch (wt) {
    case WT_VARINT:
        return pb_varint(r, &v);
    case WT_FIXED64:
        return pb_take(r, 8, &sub);
    case WT_FIXED32:
        return pb_take(r, 4, &sub);
    default:
        return pb_len(r, &sub);
    }
}

static int pb_want(const char *name, unsigned wt, unsigned want)
{
    if (wt == want)
        return 0;
    return sw_error_set(SW_EBADREQUEST, "protobuf: field %s has wire type %u, expected %u", name,
                        wt, want);
}

/* ---- schemas ---- */

typedef enum pb_type {
    T_STRING,     /* string */
    T_INT32,      /* int32 varint */
    T_INT64,      /* int64 varint */
    T_BOOL,       /* bool varint */
    T_MESSAGE,    /* embedded message -> object (always written, even when empty) */
    T_MESSAGES,   /* repeated message -> array of objects */
    T_STRINGS,    /* repeated string -> array */
    T_MAP_STRING, /* map<string, string> -> object */
    T_MAP_BYTES,  /* map<string, bytes> -> object of base64 strings */
    T_TIME,       /* meta/v1 Time -> "2006-01-02T15:04:05Z" */
    T_MICROTIME,  /* meta/v1 MicroTime -> "2006-01-02T15:04:05.000000Z" */
    T_FIELDSV1,   /* meta/v1 FieldsV1 {1: raw JSON} -> that JSON */
} pb_type;

/* The Go field is a pointer: its presence on the wire means it is set, so a zero value is kept.
 * Other zero scalars are left out, as their omitempty JSON tags would. */
enum { F_KEEP_ZERO = 1 };

struct pb_schema;

typedef struct pb_field {
    uint32_t num;     /* protobuf field number */
    const char *name; /* JSON name */
    pb_type type;
    unsigned flags;              /* F_KEEP_ZERO */
    const struct pb_schema *sub; /* T_MESSAGE / T_MESSAGES */
} pb_field;

typedef struct pb_schema {
    const pb_field *fields;
    size_t count;
} pb_schema;

#define SCHEMA(var, arr) static const pb_schema var = {arr, sizeof(arr) / sizeof((arr)[0])}

/* k8s.io/apimachinery/pkg/apis/meta/v1 */
static const pb_field owner_reference_f[] = {
    {5, "apiVersion", T_STRING, 0, NULL},
    {1, "kind", T_STRING, 0, NULL},
    {3, "name", T_STRING, 0, NULL},
    {4, "uid", T_STRING, 0, NULL},
    {6, "controller", T_BOOL, F_KEEP_ZERO, NULL},
    {7, "blockOwnerDeletion", T_BOOL, F_KEEP_ZERO, NULL},
};
SCHEMA(owner_reference, owner_reference_f);

static const pb_field managed_fields_entry_f[] = {
    {1, "manager", T_STRING, 0, NULL},     {2, "operation", T_STRING, 0, NULL},
    {3, "apiVersion", T_STRING, 0, NULL},  {4, "time", T_TIME, 0, NULL},
    {6, "fieldsType", T_STRING, 0, NULL},  {7, "fieldsV1", T_FIELDSV1, 0, NULL},
    {8, "subresource", T_STRING, 0, NULL},
};
SCHEMA(managed_fields_entry, managed_fields_entry_f);

static const pb_field object_meta_f[] = {
    {1, "name", T_STRING, 0, NULL},
    {2, "generateName", T_STRING, 0, NULL},
    {3, "namespace", T_STRING, 0, NULL},
    {4, "selfLink", T_STRING, 0, NULL},
    {5, "uid", T_STRING, 0, NULL},
    {6, "resourceVersion", T_STRING, 0, NULL},
    {7, "generation", T_INT64, 0, NULL},
    {8, "creationTimestamp", T_TIME, 0, NULL},
    {9, "deletionTimestamp", T_TIME, 0, NULL},
    {10, "deletionGracePeriodSeconds", T_INT64, F_KEEP_ZERO, NULL},
    {11, "labels", T_MAP_STRING, 0, NULL},
    {12, "annotations", T_MAP_STRING, 0, NULL},
    {13, "ownerReferences", T_MESSAGES, 0, &owner_reference},
    {14, "finalizers", T_STRINGS, 0, NULL},
    {17, "managedFields", T_MESSAGES, 0, &managed_fields_entry},
};
SCHEMA(object_meta, object_meta_f);

static const pb_field preconditions_f[] = {
    {1, "uid", T_STRING, F_KEEP_ZERO, NULL},
    {2, "resourceVersion", T_STRING, F_KEEP_ZERO, NULL},
};
SCHEMA(preconditions, preconditions_f);

static const pb_field delete_options_f[] = {
    {1, "gracePeriodSeconds", T_INT64, F_KEEP_ZERO, NULL},
    {2, "preconditions", T_MESSAGE, 0, &preconditions},
    {3, "orphanDependents", T_BOOL, F_KEEP_ZERO, NULL},
    {4, "propagationPolicy", T_STRING, F_KEEP_ZERO, NULL},
    {5, "dryRun", T_STRINGS, 0, NULL},
    {6, "ignoreStoreReadErrorWithClusterBreakingPotential", T_BOOL, F_KEEP_ZERO, NULL},
};
SCHEMA(delete_options, delete_options_f);

/* k8s.io/api/core/v1 */
static const pb_field configmap_f[] = {
    {1, "metadata", T_MESSAGE, 0, &object_meta},
    {4, "immutable", T_BOOL, F_KEEP_ZERO, NULL},
    {2, "data", T_MAP_STRING, 0, NULL},
    {3, "binaryData", T_MAP_BYTES, 0, NULL},
};
SCHEMA(configmap, configmap_f);

static const pb_field secret_f[] = {
    {1, "metadata", T_MESSAGE, 0, &object_meta},
    {5, "immutable", T_BOOL, F_KEEP_ZERO, NULL},
    {2, "data", T_MAP_BYTES, 0, NULL},
    {4, "stringData", T_MAP_STRING, 0, NULL},
    {3, "type", T_STRING, 0, NULL},
};
SCHEMA(secret, secret_f);

static const pb_field namespace_spec_f[] = {
    {1, "finalizers", T_STRINGS, 0, NULL},
};
SCHEMA(namespace_spec, namespace_spec_f);

static const pb_field namespace_condition_f[] = {
    {1, "type", T_STRING, 0, NULL},
    {2, "status", T_STRING, 0, NULL},
    {4, "lastTransitionTime", T_TIME, 0, NULL},
    {5, "reason", T_STRING, 0, NULL},
    {6, "message", T_STRING, 0, NULL},
};
SCHEMA(namespace_condition, namespace_condition_f);

static const pb_field namespace_status_f[] = {
    {1, "phase", T_STRING, 0, NULL},
    {2, "conditions", T_MESSAGES, 0, &namespace_condition},
};
SCHEMA(namespace_status, namespace_status_f);

static const pb_field namespace_f[] = {
    {1, "metadata", T_MESSAGE, 0, &object_meta},
    {2, "spec", T_MESSAGE, 0, &namespace_spec},
    {3, "status", T_MESSAGE, 0, &namespace_status},
};
SCHEMA(namespace_, namespace_f);

static const pb_field object_reference_f[] = {
    {1, "kind", T_STRING, 0, NULL},       {2, "namespace", T_STRING, 0, NULL},
    {3, "name", T_STRING, 0, NULL},       {4, "uid", T_STRING, 0, NULL},
    {5, "apiVersion", T_STRING, 0, NULL}, {6, "resourceVersion", T_STRING, 0, NULL},
    {7, "fieldPath", T_STRING, 0, NULL},
};
SCHEMA(object_reference, object_reference_f);

static const pb_field local_object_reference_f[] = {
    {1, "name", T_STRING, 0, NULL},
};
SCHEMA(local_object_reference, local_object_reference_f);

static const pb_field service_account_f[] = {
    {1, "metadata", T_MESSAGE, 0, &object_meta},
    {2, "secrets", T_MESSAGES, 0, &object_reference},
    {3, "imagePullSecrets", T_MESSAGES, 0, &local_object_reference},
    {4, "automountServiceAccountToken", T_BOOL, F_KEEP_ZERO, NULL},
};
SCHEMA(service_account, service_account_f);

static const pb_field event_source_f[] = {
    {1, "component", T_STRING, 0, NULL},
    {2, "host", T_STRING, 0, NULL},
};
SCHEMA(event_source, event_source_f);

static const pb_field event_series_f[] = {
    {1, "count", T_INT32, 0, NULL},
    {2, "lastObservedTime", T_MICROTIME, 0, NULL},
};
SCHEMA(event_series, event_series_f);

static const pb_field event_f[] = {
    {1, "metadata", T_MESSAGE, 0, &object_meta},
    {2, "involvedObject", T_MESSAGE, 0, &object_reference},
    {3, "reason", T_STRING, 0, NULL},
    {4, "message", T_STRING, 0, NULL},
    {5, "source", T_MESSAGE, 0, &event_source},
    {6, "firstTimestamp", T_TIME, 0, NULL},
    {7, "lastTimestamp", T_TIME, 0, NULL},
    {8, "count", T_INT32, 0, NULL},
    {9, "type", T_STRING, 0, NULL},
    {10, "eventTime", T_MICROTIME, 0, NULL},
    {11, "series", T_MESSAGE, 0, &event_series},
    {12, "action", T_STRING, 0, NULL},
    {13, "related", T_MESSAGE, 0, &object_reference},
    {14, "reportingComponent", T_STRING, 0, NULL},
    {15, "reportingInstance", T_STRING, 0, NULL},
};
SCHEMA(event, event_f);

/* k8s.io/api/coordination/v1 */
static const pb_field lease_spec_f[] = {
    {1, "holderIdentity", T_STRING, F_KEEP_ZERO, NULL},
    {2, "leaseDurationSeconds", T_INT32, F_KEEP_ZERO, NULL},
    {3, "acquireTime", T_MICROTIME, 0, NULL},
    {4, "renewTime", T_MICROTIME, 0, NULL},
    {5, "leaseTransitions", T_INT32, F_KEEP_ZERO, NULL},
    {6, "strategy", T_STRING, F_KEEP_ZERO, NULL},
    {7, "preferredHolder", T_STRING, F_KEEP_ZERO, NULL},
};
SCHEMA(lease_spec, lease_spec_f);

static const pb_field lease_f[] = {
    {1, "metadata", T_MESSAGE, 0, &object_meta},
    {2, "spec", T_MESSAGE, 0, &lease_spec},
};
SCHEMA(lease, lease_f);

typedef struct pb_kind {
    const char *api_version; /* NULL: any (DeleteOptions is registered in every group) */
    const char *kind;
    const pb_schema *schema;
} pb_kind;

static const pb_kind kinds[] = {
    {"v1", "ConfigMap", &configmap},
    {"v1", "Secret", &secret},
    {"v1", "Namespace", &namespace_},
    {"v1", "ServiceAccount", &service_account},
    {"v1", "Event", &event},
    {"coordination.k8s.io/v1", "Lease", &lease},
    {NULL, "DeleteOptions", &delete_options},
};

/* ---- decoding ---- */

static int decode_message(pb_reader *r, const pb_schema *s, int depth, json_t *obj);

static bool view_eq(const pb_reader *v, const char *s)
{
    size_t n = strlen(s);
    return pb_left(v) == n && !memcmp(v->p, s, n);
}

/* A JSON string of the bytes in v; NULL (with the error set) when they are not UTF-8. */
static json_t *view_string(const pb_reader *v, const char *name)
{
    json_t *j = json_stringn((const char *)v->p, pb_left(v));
    if (!j)
        sw_error_set(SW_EBADREQUEST, "protobuf: field %s is not valid UTF-8", name);
    return j;
}

/* Sets obj[name] = value (stolen), or removes the key when the value is zero and the field
 * is not a pointer in Go. */
static void set_value(json_t *obj, const pb_field *f, json_t *value, bool zero)
{
    if (zero && !(f->flags & F_KEEP_ZERO)) {
        json_decref(value);
        json_object_del(obj, f->name);
        return;
    }
    json_object_set_new(obj, f->name, value);
}

/* obj[name] as an object or array, created (or replacing another type) when missing. */
static json_t *child(json_t *obj, const char *name, bool array)
{
    json_t *c = json_object_get(obj, name);
    if (array ? json_is_array(c) : json_is_object(c))
        return c;
    c = array ? json_array() : json_object();
    json_object_set_new(obj, name, c);
    return c;
}

static int decode_scalar(pb_reader *r, const pb_field *f, json_t *obj)
{
    uint64_t v = 0;
    int error = pb_varint(r, &v);
    if (error < 0)
        return error;
    if (f->type == T_INT32) {
        int32_t x = (int32_t)(uint32_t)v; /* Go truncates int32 varints the same way */
        set_value(obj, f, json_integer(x), x == 0);
    } else if (f->type == T_INT64) {
        int64_t x = (int64_t)v;
        set_value(obj, f, json_integer(x), x == 0);
    } else {
        set_value(obj, f, json_boolean(v != 0), v == 0);
    }
    return 0;
}

/* One map<string, string|bytes> entry {1: key, 2: value}; later keys replace earlier ones. */
static int decode_map_entry(pb_reader *r, const pb_field *f, json_t *map)
{
    pb_reader key = {r->p, r->p}, val = {r->p, r->p};
    char *k = NULL;
    int error = 0;
    while (error == 0 && r->p < r->end) {
        uint32_t num = 0;
        unsigned wt;
        error = pb_key(r, &num, &wt);
        if (error == 0 && (num == 1 || num == 2))
            error = pb_want(f->name, wt, WT_LEN);
        if (error == 0)
            error = num == 1 ? pb_len(r, &key) : num == 2 ? pb_len(r, &val) : pb_skip(r, wt);
    }
    if (error < 0)
        return error;
    if (memchr(key.p, '\0', pb_left(&key)))
        return sw_error_set(SW_EBADREQUEST, "protobuf: a key of %s contains a NUL byte", f->name);
    json_t *value;
    if (f->type == T_MAP_BYTES) {
        char *b64 = sw_base64_encode(val.p, pb_left(&val));
        value = json_string(b64);
        sw_free(b64);
    } else {
        value = view_string(&val, f->name);
        if (!value)
            return SW_EBADREQUEST;
    }
    k = sw_strndup((const char *)key.p, pb_left(&key));
    if (json_object_set_new(map, k, value) < 0)
        error = sw_error_set(SW_EBADREQUEST, "protobuf: a key of %s is not valid UTF-8", f->name);
    sw_free(k);
    return error;
}

/* meta/v1 Time or MicroTime {1: seconds, 2: nanos}; the zero time is JSON null (left out). */
static int decode_time(pb_reader *r, const pb_field *f, json_t *obj)
{
    int64_t secs = 0;
    int32_t nanos = 0;
    int error = 0;
    while (error == 0 && r->p < r->end) {
        uint32_t num = 0;
        unsigned wt;
        uint64_t v = 0;
        error = pb_key(r, &num, &wt);
        if (error == 0 && (num == 1 || num == 2))
            error = pb_want(f->name, wt, WT_VARINT);
        if (error == 0)
            error = num == 1 || num == 2 ? pb_varint(r, &v) : pb_skip(r, wt);
        if (num == 1)
            secs = (int64_t)v;
        else if (num == 2)
            nanos = (int32_t)(uint32_t)v;
    }
    if (error < 0)
        return error;
    if (secs == 0 && nanos == 0) {
        json_object_del(obj, f->name);
        return 0;
    }
    if (secs < 0 || secs > MAX_EPOCH_SECONDS || nanos < 0 || nanos > 999999999)
        return sw_error_set(SW_EBADREQUEST, "protobuf: field %s is out of range (%lld s, %d ns)",
                            f->name, (long long)secs, (int)nanos);
    char buf[40];
    if (f->type == T_TIME)
        sw_time_format(secs, buf, sizeof(buf));
    else
        sw_time_format_micro(secs * 1000000 + nanos / 1000, buf, sizeof(buf));
    json_object_set_new(obj, f->name, json_string(buf));
    return 0;
}

/* meta/v1 FieldsV1 {1: raw}: raw is JSON, and the JSON form of FieldsV1 is that JSON itself. */
static int decode_fields_v1(pb_reader *r, const pb_field *f, json_t *obj)
{
    pb_reader raw = {r->p, r->p};
    int error = 0;
    while (error == 0 && r->p < r->end) {
        uint32_t num = 0;
        unsigned wt;
        error = pb_key(r, &num, &wt);
        if (error == 0 && num == 1)
            error = pb_want(f->name, wt, WT_LEN);
        if (error == 0)
            error = num == 1 ? pb_len(r, &raw) : pb_skip(r, wt);
    }
    if (error < 0)
        return error;
    if (raw.p == raw.end) {
        json_object_del(obj, f->name);
        return 0;
    }
    json_t *j = NULL;
    error = sw_json_parse((const char *)raw.p, pb_left(&raw), SW_JSON_MAX_DEPTH, 0, &j);
    if (error < 0)
        return error;
    json_object_set_new(obj, f->name, j);
    return 0;
}

static int decode_nested(pb_reader *sub, const pb_field *f, int depth, json_t *obj)
{
    json_t *item;
    switch (f->type) {
    case T_MESSAGE:
        return decode_message(sub, f->sub, depth + 1, child(obj, f->name, false));
    case T_MESSAGES:
        item = json_object();
        json_array_append_new(child(obj, f->name, true), item);
        return decode_message(sub, f->sub, depth + 1, item);
    case T_STRINGS:
        item = view_string(sub, f->name);
        if (!item)
            return SW_EBADREQUEST;
        json_array_append_new(child(obj, f->name, true), item);
        return 0;
    case T_MAP_STRING:
    case T_MAP_BYTES:
        return decode_map_entry(sub, f, child(obj, f->name, false));
    case T_TIME:
    case T_MICROTIME:
        return decode_time(sub, f, obj);
    case T_FIELDSV1:
        return decode_fields_v1(sub, f, obj);
    default: /* T_STRING */
        item = view_string(sub, f->name);
        if (!item)
            return SW_EBADREQUEST;
        set_value(obj, f, item, sub->p == sub->end);
        return 0;
    }
}

static int decode_field(pb_reader *r, const pb_field *f, unsigned wt, int depth, json_t *obj)
{
    bool scalar = f->type == T_INT32 || f->type == T_INT64 || f->type == T_BOOL;
    int error = pb_want(f->name, wt, scalar ? WT_VARINT : WT_LEN);
    if (error < 0)
        return error;
    if (scalar)
        return decode_scalar(r, f, obj);
    pb_reader sub;
    error = pb_len(r, &sub);
    if (error < 0)
        return error;
    return decode_nested(&sub, f, depth, obj);
}

static const pb_field *find_field(const pb_schema *s, uint32_t num)
{
    for (size_t i = 0; i < s->count; i++)
        if (s->fields[i].num == num)
            return &s->fields[i];
    return NULL;
}

/* Decodes the message in r into obj by schema s. Unknown fields are skipped; a repeated scalar
 * or message field overwrites or merges, as protobuf's "last one wins" rule says. */
static int decode_message(pb_reader *r, const pb_schema *s, int depth, json_t *obj)
{
    if (depth > SW_PROTOBUF_MAX_DEPTH)
        return sw_error_set(SW_EBADREQUEST, "protobuf: messages nested deeper than %d",
                            SW_PROTOBUF_MAX_DEPTH);
    while (r->p < r->end) {
        uint32_t num = 0;
        unsigned wt;
        int error = pb_key(r, &num, &wt);
        if (error < 0)
            return error;
        const pb_field *f = find_field(s, num);
        error = f ? decode_field(r, f, wt, depth, obj) : pb_skip(r, wt);
        if (error < 0)
            return error;
    }
    return 0;
}

/* ---- runtime.Unknown envelope ---- */

typedef struct pb_unknown {
    pb_reader api_version; /* typeMeta.apiVersion */
    pb_reader kind;        /* typeMeta.kind */
    pb_reader raw;         /* the kind's message */
    pb_reader encoding;    /* contentEncoding ("" or absent) */
} pb_unknown;

/* Reads a message whose fields 1..n (all length-delimited) land in outs[0..n-1]. */
static int decode_views(pb_reader *r, const char *what, pb_reader *outs, uint32_t n)
{
    while (r->p < r->end) {
        uint32_t num = 0;
        unsigned wt;
        int error = pb_key(r, &num, &wt);
        if (error == 0 && num >= 1 && num <= n)
            error = pb_want(what, wt, WT_LEN);
        if (error == 0)
            error = num >= 1 && num <= n ? pb_len(r, &outs[num - 1]) : pb_skip(r, wt);
        if (error < 0)
            return error;
    }
    return 0;
}

static int decode_unknown(pb_reader *r, pb_unknown *u)
{
    pb_reader env[4] = {{r->p, r->p}, {r->p, r->p}, {r->p, r->p}, {r->p, r->p}};
    int error = decode_views(r, "runtime.Unknown", env, 4);
    if (error < 0)
        return error;
    pb_reader tm[2] = {{r->p, r->p}, {r->p, r->p}};
    error = decode_views(&env[0], "runtime.TypeMeta", tm, 2);
    if (error < 0)
        return error;
    u->api_version = tm[0];
    u->kind = tm[1];
    u->raw = env[1];
    u->encoding = env[2];
    return 0;
}

static const pb_kind *find_kind(const pb_unknown *u)
{
    for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++)
        if (view_eq(&u->kind, kinds[i].kind) &&
            (!kinds[i].api_version || view_eq(&u->api_version, kinds[i].api_version)))
            return &kinds[i];
    return NULL;
}

/* The printable prefix of a view, for messages. */
static int view_printable(const pb_reader *v)
{
    size_t n = 0;
    while (n < pb_left(v) && n < 100 && v->p[n] >= 0x20 && v->p[n] < 0x7f)
        n++;
    return (int)n;
}

static int unsupported_kind(const pb_unknown *u)
{
    return sw_error_set(SW_EUNSUPPORTED,
                        "protobuf request bodies are not supported for %.*s %.*s (supported: v1 "
                        "Secret, ConfigMap, Namespace, ServiceAccount, Event, "
                        "coordination.k8s.io/v1 Lease, DeleteOptions); send application/json",
                        view_printable(&u->api_version), (const char *)u->api_version.p,
                        view_printable(&u->kind), (const char *)u->kind.p);
}

int sw_protobuf_decode(const char *body, size_t len, json_t **out)
{
    json_t *obj = NULL, *av = NULL;
    pb_unknown u;
    int error;
    if (len < 4 || memcmp(body, "k8s\0", 4) != 0)
        return sw_error_set(SW_EBADREQUEST,
                            "protobuf: the body does not start with the k8s\\0 magic bytes");
    pb_reader r = {(const unsigned char *)body + 4, (const unsigned char *)body + len};
    error = decode_unknown(&r, &u);
    if (error < 0)
        return error;
    if (u.kind.p == u.kind.end)
        return sw_error_set(SW_EBADREQUEST, "protobuf: the body names no kind (typeMeta.kind)");
    const pb_kind *k = find_kind(&u);
    if (!k)
        return unsupported_kind(&u);
    if (u.encoding.p != u.encoding.end)
        return sw_error_set(
            SW_EUNSUPPORTED,
            "protobuf: contentEncoding %.*s is not supported; send application/json",
            view_printable(&u.encoding), (const char *)u.encoding.p);
    av = view_string(&u.api_version, "typeMeta.apiVersion");
    if (!av)
        return SW_EBADREQUEST;
    obj = json_object();
    if (json_string_length(av))
        json_object_set_new(obj, "apiVersion", av);
    else
        json_decref(av);
    json_object_set_new(obj, "kind", json_string(k->kind));
    error = decode_message(&u.raw, k->schema, 1, obj);
    if (error < 0)
        goto done;
    *out = obj;
    obj = NULL;
done:
    json_decref(obj);
    return error;
}
