/* Unit tests for src/apiserver/protobuf: the bodies kubectl 1.32 really sent (captured into
 * fuzz/corpus/protobuf/) decode to the JSON kubectl would have sent; hand-encoded Lease, Event,
 * ServiceAccount and DeleteOptions bodies cover times, maps, repeated messages, managedFields and
 * pointer zeros; unknown fields are skipped; malformed input (magic, truncation, lengths, wire
 * types, UTF-8, ranges) is SW_EBADREQUEST and other kinds SW_EUNSUPPORTED; every prefix and
 * every single-byte corruption of the fixtures (plus the hand-encoded lease.bin, event.bin and
 * deleteoptions.bin seeds) is handled without a crash. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "apiserver/protobuf.h"
#include "util/alloc.h"
#include "util/error.h"
#include "util/str.h"

#include <stdio.h>
#include <string.h>

/* ---- fixtures (read from the source tree, located through __FILE__) ---- */

static unsigned char *read_fixture(const char *name, size_t *len)
{
    char path[1024];
    const char *here = __FILE__;
    const char *cut = strstr(here, "tests/apiserver/test_protobuf.c");
    assert_non_null(cut);
    snprintf(path, sizeof(path), "%.*sfuzz/corpus/protobuf/%s", (int)(cut - here), here, name);
    FILE *f = fopen(path, "rb");
    if (!f)
        fail_msg("cannot open fixture %s", path);
    unsigned char *data = sw_malloc(65536);
    *len = fread(data, 1, 65536, f);
    fclose(f);
    return data;
}

/* Decodes body and compares it with the expected JSON text. */
static void expect_json(const void *body, size_t len, const char *want_text)
{
    json_t *got = NULL;
    int error = sw_protobuf_decode(body, len, &got);
    if (error < 0)
        fail_msg("decode failed (%d): %s", error, sw_error_msg());
    json_t *want = json_loads(want_text, 0, NULL);
    assert_non_null(want);
    if (!json_equal(got, want)) {
        char *s = json_dumps(got, JSON_SORT_KEYS);
        fail_msg("decoded %s\nexpected %s", s, want_text);
    }
    json_decref(got);
    json_decref(want);
}

static void expect_fixture(const char *name, const char *want_text)
{
    size_t len;
    unsigned char *body = read_fixture(name, &len);
    expect_json(body, len, want_text);
    sw_free(body);
}

/* Decoding must fail with code and leave *out alone; the message must contain needle. */
static void expect_error(const void *body, size_t len, int code, const char *needle)
{
    json_t *sentinel = json_null();
    json_t *out = sentinel;
    int error = sw_protobuf_decode(body, len, &out);
    if (error != code)
        fail_msg("expected %d, got %d (%s)", code, error, error < 0 ? sw_error_msg() : "ok");
    assert_ptr_equal(out, sentinel);
    if (needle && !strstr(sw_error_msg(), needle))
        fail_msg("message [%s] lacks [%s]", sw_error_msg(), needle);
}

/* ---- a tiny protobuf encoder for hand-made bodies ---- */

typedef struct enc {
    unsigned char b[4096];
    size_t n;
} enc;

static void e_raw(enc *e, const void *p, size_t n)
{
    assert_true(e->n + n <= sizeof(e->b));
    memcpy(e->b + e->n, p, n);
    e->n += n;
}

static void e_varint(enc *e, uint64_t v)
{
    unsigned char c;
    do {
        c = (unsigned char)(v & 0x7f);
        v >>= 7;
        if (v)
            c |= 0x80;
        e_raw(e, &c, 1);
    } while (v);
}

static void e_uint(enc *e, uint32_t num, uint64_t v)
{
    e_varint(e, (uint64_t)num << 3);
    e_varint(e, v);
}

static void e_bytes(enc *e, uint32_t num, const void *p, size_t n)
{
    e_varint(e, (uint64_t)num << 3 | 2);
    e_varint(e, n);
    e_raw(e, p, n);
}

static void e_str(enc *e, uint32_t num, const char *s)
{
    e_bytes(e, num, s, strlen(s));
}

static void e_msg(enc *e, uint32_t num, const enc *sub)
{
    e_bytes(e, num, sub->b, sub->n);
}

static void e_entry(enc *e, uint32_t num, const char *k, const void *v, size_t vn)
{
    enc m = {.n = 0};
    e_str(&m, 1, k);
    e_bytes(&m, 2, v, vn);
    e_msg(e, num, &m);
}

static void e_time(enc *e, uint32_t num, int64_t secs, int32_t nanos)
{
    enc t = {.n = 0};
    e_uint(&t, 1, (uint64_t)secs);
    if (nanos)
        e_uint(&t, 2, (uint64_t)(int64_t)nanos);
    e_msg(e, num, &t);
}

/* The k8s\0 magic and a runtime.Unknown around raw. */
static void e_wrap(enc *out, const char *api_version, const char *kind, const enc *raw)
{
    enc tm = {.n = 0};
    out->n = 0;
    e_raw(out, "k8s\0", 4);
    e_str(&tm, 1, api_version);
    e_str(&tm, 2, kind);
    e_msg(out, 1, &tm);
    e_msg(out, 2, raw);
    e_str(out, 3, "");
    e_str(out, 4, "");
}

/* ---- captured kubectl bodies ---- */

static void test_kubectl_configmap(void **state)
{
    expect_fixture("configmap.bin",
                   "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"c\"},"
                   "\"data\":{\"a\":\"b\"}}");
    expect_fixture("configmap-binary.bin",
                   "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"cb\"},"
                   "\"data\":{\"x\":\"y\"},\"binaryData\":{\"blob\":\"AAH//g==\"}}");
}

static void test_kubectl_secrets(void **state)
{
    expect_fixture("secret-generic.bin",
                   "{\"apiVersion\":\"v1\",\"kind\":\"Secret\",\"metadata\":{\"name\":\"s\"},"
                   "\"data\":{\"p\":\"cQ==\"}}");
    expect_fixture("secret-opaque.bin",
                   "{\"apiVersion\":\"v1\",\"kind\":\"Secret\",\"metadata\":{\"name\":\"s2\"},"
                   "\"data\":{\"k\":\"dg==\"},\"type\":\"Opaque\"}");

    const char *docker = "{\"auths\":{\"reg.local:5000\":{\"username\":\"u\",\"password\":\"p\","
                         "\"auth\":\"dTpw\"}}}";
    char *b64 = sw_base64_encode(docker, strlen(docker));
    char want[512];
    snprintf(want, sizeof(want),
             "{\"apiVersion\":\"v1\",\"kind\":\"Secret\",\"metadata\":{\"name\":\"r\"},"
             "\"data\":{\".dockerconfigjson\":\"%s\"},"
             "\"type\":\"kubernetes.io/dockerconfigjson\"}",
             b64);
    sw_free(b64);
    expect_fixture("secret-docker-registry.bin", want);
}

static void test_kubectl_namespace_and_sa(void **state)
{
    expect_fixture("namespace.bin", "{\"apiVersion\":\"v1\",\"kind\":\"Namespace\","
                                    "\"metadata\":{\"name\":\"n\"},\"spec\":{},\"status\":{}}");
    expect_fixture("serviceaccount.bin", "{\"apiVersion\":\"v1\",\"kind\":\"ServiceAccount\","
                                         "\"metadata\":{\"name\":\"sa\"}}");
}

static void test_kubectl_unsupported_kind(void **state)
{
    size_t len;
    unsigned char *body = read_fixture("priorityclass.bin", &len);
    expect_error(body, len, SW_EUNSUPPORTED, "scheduling.k8s.io/v1 PriorityClass");
    assert_non_null(strstr(sw_error_msg(), "application/json"));
    sw_free(body);
}

/* ---- hand-encoded kinds ---- */

static void object_meta(enc *m, const char *name)
{
    enc owner = {.n = 0}, mf = {.n = 0}, f1 = {.n = 0};
    e_str(m, 1, name);
    e_str(m, 2, "");
    e_str(m, 3, "default");
    e_str(m, 6, "");
    e_uint(m, 7, 0);
    e_time(m, 8, 1700000000, 0);
    e_entry(m, 11, "app", "x", 1);
    e_entry(m, 11, "tier", "web", 3);
    e_entry(m, 12, "note", "", 0);
    e_str(&owner, 5, "v1");
    e_str(&owner, 1, "ConfigMap");
    e_str(&owner, 3, "owner");
    e_str(&owner, 4, "u-1");
    e_uint(&owner, 6, 0); /* *bool set to false: kept */
    e_msg(m, 13, &owner);
    e_str(m, 14, "f/one");
    e_str(m, 14, "f/two");
    e_str(&mf, 1, "kube-controller-manager");
    e_str(&mf, 2, "Update");
    e_str(&mf, 3, "coordination.k8s.io/v1");
    e_time(&mf, 4, 1700000001, 0);
    e_str(&mf, 6, "FieldsV1");
    e_str(&f1, 1, "{\"f:spec\":{\"f:holderIdentity\":{}}}");
    e_msg(&mf, 7, &f1);
    e_msg(m, 17, &mf);
}

#define META_JSON(name)                                                                            \
    "\"metadata\":{\"name\":\"" name "\",\"namespace\":\"default\","                               \
    "\"creationTimestamp\":\"2023-11-14T22:13:20Z\",\"labels\":{\"app\":\"x\",\"tier\":\"web\"},"  \
    "\"annotations\":{\"note\":\"\"},\"ownerReferences\":[{\"apiVersion\":\"v1\","                 \
    "\"kind\":\"ConfigMap\",\"name\":\"owner\",\"uid\":\"u-1\",\"controller\":false}],"            \
    "\"finalizers\":[\"f/one\",\"f/two\"],\"managedFields\":[{\"manager\":"                        \
    "\"kube-controller-manager\",\"operation\":\"Update\",\"apiVersion\":"                         \
    "\"coordination.k8s.io/v1\",\"time\":\"2023-11-14T22:13:21Z\",\"fieldsType\":\"FieldsV1\","    \
    "\"fieldsV1\":{\"f:spec\":{\"f:holderIdentity\":{}}}}]}"

static void test_lease(void **state)
{
    enc meta = {.n = 0}, spec = {.n = 0}, raw = {.n = 0}, body;
    object_meta(&meta, "leader");
    e_str(&spec, 1, "node-a_1234");
    e_uint(&spec, 2, 15);
    e_time(&spec, 3, 1700000000, 123456789);
    e_time(&spec, 4, 1700000010, 999);
    e_uint(&spec, 5, 0); /* *int32 set to 0: kept */
    e_msg(&raw, 1, &meta);
    e_msg(&raw, 2, &spec);
    e_wrap(&body, "coordination.k8s.io/v1", "Lease", &raw);
    expect_json(
        body.b, body.n,
        "{\"apiVersion\":\"coordination.k8s.io/v1\",\"kind\":\"Lease\"," META_JSON(
            "leader") ",\"spec\":{\"holderIdentity\":\"node-a_1234\",\"leaseDurationSeconds\":15,"
                      "\"acquireTime\":\"2023-11-14T22:13:20.123456Z\","
                      "\"renewTime\":\"2023-11-14T22:13:30.000000Z\",\"leaseTransitions\":0}}");

    /* A Lease under another apiVersion is not this schema. */
    e_wrap(&body, "coordination.k8s.io/v1beta1", "Lease", &raw);
    expect_error(body.b, body.n, SW_EUNSUPPORTED, "coordination.k8s.io/v1beta1 Lease");
}

static void test_event(void **state)
{
    enc meta = {.n = 0}, ref = {.n = 0}, src = {.n = 0}, series = {.n = 0}, raw = {.n = 0}, body;
    e_str(&meta, 1, "c.17a");
    e_str(&meta, 3, "default");
    e_time(&meta, 8, 0, 0); /* zero Time: null, left out */
    e_str(&ref, 1, "ConfigMap");
    e_str(&ref, 2, "default");
    e_str(&ref, 3, "c");
    e_str(&ref, 4, "uid-c");
    e_str(&ref, 5, "v1");
    e_str(&src, 1, "slipway");
    e_uint(&series, 1, 2);
    e_time(&series, 2, 1700000020, 5000);
    e_msg(&raw, 1, &meta);
    e_msg(&raw, 2, &ref);
    e_str(&raw, 3, "Created");
    e_str(&raw, 4, "made \xc3\xa9 it");
    e_msg(&raw, 5, &src);
    e_time(&raw, 6, 1700000000, 0);
    e_time(&raw, 7, 1700000005, 0);
    e_uint(&raw, 8, UINT64_MAX); /* int32 -1 is a 10-byte varint */
    e_str(&raw, 9, "Normal");
    e_time(&raw, 10, 1700000000, 1000);
    e_msg(&raw, 11, &series);
    e_str(&raw, 12, "Create");
    e_str(&raw, 14, "slipway-controller");
    e_str(&raw, 15, "");
    e_wrap(&body, "v1", "Event", &raw);
    expect_json(body.b, body.n,
                "{\"apiVersion\":\"v1\",\"kind\":\"Event\",\"metadata\":{\"name\":\"c.17a\","
                "\"namespace\":\"default\"},\"involvedObject\":{\"kind\":\"ConfigMap\","
                "\"namespace\":\"default\",\"name\":\"c\",\"uid\":\"uid-c\",\"apiVersion\":\"v1\"},"
                "\"reason\":\"Created\",\"message\":\"made \xc3\xa9 it\",\"source\":{\"component\":"
                "\"slipway\"},\"firstTimestamp\":\"2023-11-14T22:13:20Z\",\"lastTimestamp\":"
                "\"2023-11-14T22:13:25Z\",\"count\":-1,\"type\":\"Normal\",\"eventTime\":"
                "\"2023-11-14T22:13:20.000001Z\",\"series\":{\"count\":2,\"lastObservedTime\":"
                "\"2023-11-14T22:13:40.000005Z\"},\"action\":\"Create\","
                "\"reportingComponent\":\"slipway-controller\"}");
}

static void test_service_account_and_delete_options(void **state)
{
    enc meta = {.n = 0}, s1 = {.n = 0}, ips = {.n = 0}, raw = {.n = 0}, body;
    e_str(&meta, 1, "builder");
    e_str(&s1, 3, "builder-token");
    e_str(&s1, 1, "Secret");
    e_str(&ips, 1, "pull");
    e_msg(&raw, 1, &meta);
    e_msg(&raw, 2, &s1);
    e_msg(&raw, 3, &ips);
    e_uint(&raw, 4, 0);
    e_wrap(&body, "v1", "ServiceAccount", &raw);
    expect_json(body.b, body.n,
                "{\"apiVersion\":\"v1\",\"kind\":\"ServiceAccount\",\"metadata\":{\"name\":"
                "\"builder\"},\"secrets\":[{\"name\":\"builder-token\",\"kind\":\"Secret\"}],"
                "\"imagePullSecrets\":[{\"name\":\"pull\"}],"
                "\"automountServiceAccountToken\":false}");

    enc pre = {.n = 0};
    raw.n = 0;
    e_uint(&raw, 1, 0);
    e_str(&pre, 1, "uid-1");
    e_str(&pre, 2, "42");
    e_msg(&raw, 2, &pre);
    e_str(&raw, 4, "Foreground");
    e_str(&raw, 5, "All");
    e_wrap(&body, "v1", "DeleteOptions", &raw);
    expect_json(body.b, body.n,
                "{\"apiVersion\":\"v1\",\"kind\":\"DeleteOptions\",\"gracePeriodSeconds\":0,"
                "\"preconditions\":{\"uid\":\"uid-1\",\"resourceVersion\":\"42\"},"
                "\"propagationPolicy\":\"Foreground\",\"dryRun\":[\"All\"]}");
    /* DeleteOptions is accepted under any group's apiVersion. */
    e_wrap(&body, "coordination.k8s.io/v1", "DeleteOptions", &raw);
    json_t *o = NULL;
    assert_int_equal(sw_protobuf_decode((const char *)body.b, body.n, &o), 0);
    assert_string_equal(json_string_value(json_object_get(o, "apiVersion")),
                        "coordination.k8s.io/v1");
    json_decref(o);
}

/* Unknown fields of every wire type are skipped; repeated singular fields follow protobuf's
 * rules (last scalar wins, messages merge, a later empty string clears). */
static void test_unknown_fields_and_merging(void **state)
{
    enc meta1 = {.n = 0}, meta2 = {.n = 0}, deep = {.n = 0}, raw = {.n = 0}, body;
    e_str(&meta1, 1, "first");
    e_str(&meta1, 2, "gen-");
    e_uint(&meta1, 99, 7);
    e_varint(&meta1, 98 << 3 | 1);
    e_raw(&meta1, "12345678", 8);
    e_varint(&meta1, 97 << 3 | 5);
    e_raw(&meta1, "1234", 4);
    e_str(&meta2, 1, "second");
    e_str(&meta2, 2, "");
    e_entry(&meta2, 11, "k", "v", 1);
    /* 1,000 levels of nesting inside an unknown field: skipped without being entered. */
    for (int i = 0; i < 1000; i++) {
        enc tmp = deep;
        deep.n = 0;
        e_msg(&deep, 1, &tmp);
    }
    e_msg(&raw, 1, &meta1);
    e_msg(&raw, 50, &deep);
    e_msg(&raw, 1, &meta2);
    e_str(&raw, 3, "Opaque");
    e_str(&raw, 3, "kubernetes.io/basic-auth");
    e_entry(&raw, 2, "a", "1", 1);
    e_entry(&raw, 2, "a", "2", 1);
    e_wrap(&body, "v1", "Secret", &raw);
    e_uint(&body, 200, 1); /* unknown field of runtime.Unknown */
    expect_json(body.b, body.n,
                "{\"apiVersion\":\"v1\",\"kind\":\"Secret\",\"metadata\":{\"name\":\"second\","
                "\"labels\":{\"k\":\"v\"}},\"type\":\"kubernetes.io/basic-auth\","
                "\"data\":{\"a\":\"Mg==\"}}");
}

/* ---- malformed input ---- */

static void test_bad_envelope(void **state)
{
    enc raw = {.n = 0}, body;
    expect_error("", 0, SW_EBADREQUEST, "magic");
    expect_error("k8s", 3, SW_EBADREQUEST, "magic");
    expect_error("k8s\1\n\0", 6, SW_EBADREQUEST, "magic");
    expect_error("{\"kind\":\"Secret\"}", 17, SW_EBADREQUEST, "magic");
    expect_error("k8s\0", 4, SW_EBADREQUEST, "no kind");

    e_str(&raw, 1, "x");
    e_wrap(&body, "v1", "Pod", &raw);
    expect_error(body.b, body.n, SW_EUNSUPPORTED, "v1 Pod");

    /* contentEncoding is not supported. */
    enc tm = {.n = 0};
    body.n = 0;
    e_raw(&body, "k8s\0", 4);
    e_str(&tm, 1, "v1");
    e_str(&tm, 2, "ConfigMap");
    e_msg(&body, 1, &tm);
    e_msg(&body, 2, &raw);
    e_str(&body, 3, "gzip");
    expect_error(body.b, body.n, SW_EUNSUPPORTED, "gzip");

    /* typeMeta with the wrong wire type. */
    body.n = 0;
    e_raw(&body, "k8s\0", 4);
    e_uint(&body, 1, 5);
    expect_error(body.b, body.n, SW_EBADREQUEST, "wire type");
}

/* ConfigMap wrapping around raw bytes written by hand. */
static void expect_bad_raw(const void *raw_bytes, size_t n, const char *needle)
{
    enc raw = {.n = 0}, body;
    e_raw(&raw, raw_bytes, n);
    e_wrap(&body, "v1", "ConfigMap", &raw);
    expect_error(body.b, body.n, SW_EBADREQUEST, needle);
}

static void test_bad_wire(void **state)
{
    expect_bad_raw("\x0a\x80", 2, "truncated varint");             /* length cut short */
    expect_bad_raw("\x0a\x05\x0a\x01", 4, "past the end");         /* length > left */
    expect_bad_raw("\x0a\xff\xff\xff\xff\x0f", 6, "past the end"); /* 4 GiB length */
    expect_bad_raw("\x0a\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01", 11, "past the end");
    expect_bad_raw("\x0a\xff\xff\xff\xff\xff\xff\xff\xff\xff\x7f", 11, "64 bits");
    expect_bad_raw("\x0a\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01", 12, "64 bits");
    expect_bad_raw("\x0b", 1, "wire type 3"); /* group start */
    expect_bad_raw("\x0c", 1, "wire type 4"); /* group end */
    expect_bad_raw("\x0e\x00", 2, "wire type 6");
    expect_bad_raw("\x02\x00", 2, "field number 0");
    expect_bad_raw("\x08\x01", 2, "field metadata has wire type 0");  /* message as varint */
    expect_bad_raw("\x22\x00", 2, "field immutable has wire type 2"); /* bool as bytes */
    expect_bad_raw("\x79"
                   "1234567",
                   8, "past the end");                              /* fixed64 cut short */
    expect_bad_raw("\x0a\x02\x7d\x01", 4, "past the end");          /* fixed32 cut short */
    expect_bad_raw("\x12\x03\x0a\x01\xff", 5, "UTF-8");             /* bad key */
    expect_bad_raw("\x12\x05\x0a\x01k\x12\x03", 7, "past the end"); /* value > entry */
    expect_bad_raw("\x12\x06\x0a\x01k\x12\x01\xc3", 8, "UTF-8");    /* bad value */
    expect_bad_raw("\x12\x05\x0a\x01k\x10\x01", 7, "wire type 0");  /* value as varint */
    expect_bad_raw("\x12\x05\x0a\x01\x00\x12\x00", 7, "NUL");       /* NUL in key */
    expect_bad_raw("\x0a\x03\x0a\x01\xfe", 5, "UTF-8");             /* bad name */
    expect_bad_raw("\x0a\x03\x72\x05\x0a", 5, "past the end");      /* string > metadata */
}

static void test_bad_values(void **state)
{
    enc meta = {.n = 0}, mf = {.n = 0}, f1 = {.n = 0}, raw = {.n = 0}, body;
    e_time(&meta, 8, -1, 0);
    e_msg(&raw, 1, &meta);
    e_wrap(&body, "v1", "ConfigMap", &raw);
    expect_error(body.b, body.n, SW_EBADREQUEST, "creationTimestamp is out of range");

    meta.n = raw.n = 0;
    e_time(&meta, 8, 253402300800, 0);
    e_msg(&raw, 1, &meta);
    e_wrap(&body, "v1", "ConfigMap", &raw);
    expect_error(body.b, body.n, SW_EBADREQUEST, "out of range");

    meta.n = raw.n = 0;
    e_time(&meta, 8, 1, 1000000000);
    e_msg(&raw, 1, &meta);
    e_wrap(&body, "v1", "ConfigMap", &raw);
    expect_error(body.b, body.n, SW_EBADREQUEST, "out of range");

    /* fieldsV1 must hold JSON, nested no deeper than the JSON bound. */
    meta.n = raw.n = 0;
    e_str(&f1, 1, "{not json");
    e_msg(&mf, 7, &f1);
    e_msg(&meta, 17, &mf);
    e_msg(&raw, 1, &meta);
    e_wrap(&body, "v1", "ConfigMap", &raw);
    expect_error(body.b, body.n, SW_EBADREQUEST, NULL);

    char deep[401];
    memset(deep, '[', 200);
    memset(deep + 200, ']', 200);
    deep[400] = '\0';
    meta.n = raw.n = mf.n = f1.n = 0;
    e_str(&f1, 1, deep);
    e_msg(&mf, 7, &f1);
    e_msg(&meta, 17, &mf);
    e_msg(&raw, 1, &meta);
    e_wrap(&body, "v1", "ConfigMap", &raw);
    expect_error(body.b, body.n, SW_EBADREQUEST, NULL);
}

/* Every prefix and every single-byte change of every fixture: no crash, no leak, and the
 * result is success or a 400/415. */
static void test_fixture_mutations(void **state)
{
    static const char *const names[] = {
        "configmap.bin",      "configmap-binary.bin",       "secret-generic.bin",
        "secret-opaque.bin",  "secret-docker-registry.bin", "namespace.bin",
        "serviceaccount.bin", "priorityclass.bin",          "lease.bin",
        "event.bin",          "deleteoptions.bin"};
    static const unsigned char subst[] = {0x00, 0x01, 0x02, 0x7f, 0x80, 0xff};
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        size_t len;
        unsigned char *body = read_fixture(names[i], &len);
        for (size_t n = 0; n <= len; n++) {
            char *copy = sw_malloc(n ? n : 1); /* exact size so ASan catches over-reads */
            memcpy(copy, body, n);
            json_t *out = NULL;
            int error = sw_protobuf_decode(copy, n, &out);
            assert_true(error == 0 || error == SW_EBADREQUEST || error == SW_EUNSUPPORTED);
            if (n < 4)
                assert_int_equal(error, SW_EBADREQUEST);
            json_decref(out);
            sw_free(copy);
        }
        for (size_t at = 4; at < len; at++) {
            for (size_t s = 0; s < sizeof(subst); s++) {
                unsigned char *copy = sw_malloc(len);
                memcpy(copy, body, len);
                copy[at] = subst[s];
                json_t *out = NULL;
                int error = sw_protobuf_decode((const char *)copy, len, &out);
                assert_true(error == 0 || error == SW_EBADREQUEST || error == SW_EUNSUPPORTED);
                json_decref(out);
                sw_free(copy);
            }
        }
        sw_free(body);
    }
}

/* apps/v1 Deployment: the pod template, IntOrString, Quantity maps; a field the strict tables
 * do not list (a probe) is refused, not dropped. */
static void deployment_body(enc *out, bool with_probe)
{
    enc meta = {.n = 0}, labels = {.n = 0}, sel = {.n = 0}, port = {.n = 0}, res = {.n = 0},
        q = {.n = 0}, c = {.n = 0}, ps = {.n = 0}, tmpl = {.n = 0}, ru = {.n = 0}, pct = {.n = 0},
        one = {.n = 0}, st = {.n = 0}, spec = {.n = 0}, raw = {.n = 0};
    e_str(&meta, 1, "web");
    e_entry(&sel, 1, "app", "web", 3);
    e_entry(&labels, 11, "app", "web", 3);
    e_uint(&port, 3, 80);
    e_str(&q, 1, "100m");
    enc qe = {.n = 0};
    e_str(&qe, 1, "cpu");
    e_msg(&qe, 2, &q);
    e_msg(&res, 1, &qe);
    e_str(&c, 1, "nginx");
    e_str(&c, 2, "nginx:1.25");
    e_msg(&c, 6, &port);
    e_msg(&c, 8, &res);
    if (with_probe) {
        enc probe = {.n = 0};
        e_uint(&probe, 2, 5);
        e_msg(&c, 10, &probe);
    }
    e_msg(&ps, 2, &c);
    e_msg(&tmpl, 1, &labels);
    e_msg(&tmpl, 2, &ps);
    e_uint(&pct, 1, 1);
    e_str(&pct, 3, "25%");
    e_uint(&one, 2, 1);
    e_msg(&ru, 1, &one);
    e_msg(&ru, 2, &pct);
    e_str(&st, 1, "RollingUpdate");
    e_msg(&st, 2, &ru);
    e_uint(&spec, 1, 0); /* replicas: 0 is kept (a pointer in Go) */
    e_msg(&spec, 2, &sel);
    e_msg(&spec, 3, &tmpl);
    e_msg(&spec, 4, &st);
    e_msg(&raw, 1, &meta);
    e_msg(&raw, 2, &spec);
    e_msg(&raw, 3, &(enc){.n = 0});
    e_wrap(out, "apps/v1", "Deployment", &raw);
}

static void test_deployment(void **state)
{
    enc body = {.n = 0};
    deployment_body(&body, false);
    expect_json(
        body.b, body.n,
        "{\"apiVersion\":\"apps/v1\",\"kind\":\"Deployment\",\"metadata\":{\"name\":\"web\"},"
        "\"spec\":{\"replicas\":0,\"selector\":{\"matchLabels\":{\"app\":\"web\"}},"
        "\"template\":{\"metadata\":{\"labels\":{\"app\":\"web\"}},\"spec\":{"
        "\"containers\":[{\"name\":\"nginx\",\"image\":\"nginx:1.25\",\"ports\":"
        "[{\"containerPort\":80}],\"resources\":{\"limits\":{\"cpu\":\"100m\"}}}]}},"
        "\"strategy\":{\"type\":\"RollingUpdate\",\"rollingUpdate\":{\"maxUnavailable\":1,"
        "\"maxSurge\":\"25%\"}}},\"status\":{}}");
    deployment_body(&body, true);
    expect_error(body.b, body.n, SW_EUNSUPPORTED, "field 10 of Container");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_kubectl_configmap),
        cmocka_unit_test(test_kubectl_secrets),
        cmocka_unit_test(test_kubectl_namespace_and_sa),
        cmocka_unit_test(test_kubectl_unsupported_kind),
        cmocka_unit_test(test_lease),
        cmocka_unit_test(test_event),
        cmocka_unit_test(test_service_account_and_delete_options),
        cmocka_unit_test(test_unknown_fields_and_merging),
        cmocka_unit_test(test_bad_envelope),
        cmocka_unit_test(test_bad_wire),
        cmocka_unit_test(test_bad_values),
        cmocka_unit_test(test_fixture_mutations),
        cmocka_unit_test(test_deployment),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
