/* store/etcd: the etcd v3 backend of store.h, over etcd's JSON gateway (grpc-gateway, POST
 * /v3/kv/..., /v3/watch) through libcurl: why the gateway and not gRPC, with the figures, is in
 * docs/internals/store.md. Every key lives under the configured prefix; resourceVersion is the
 * key's mod_revision; creates, updates and deletes are one Txn each, comparing mod_revision
 * (0 for a create), with a Range of the key as the failure branch so a conflict and an absent
 * key are told apart in one round trip. Reads and writes go to the preferred endpoint and move
 * to the next on a transport failure or 503; a write whose outcome is unknown is sent again and
 * its result read through the compare (a create or CAS that had applied fails its compare and
 * shows our value). Each watch is one streamed POST on its own thread, resumed on another
 * endpoint after the last delivered revision; revisions never go backwards (3.4.23's progress
 * responses are not used at all). */
#include "store/store.h"

#include "store/etcdscan.h"
#include "store/recent.h"

#include "util/alloc.h"
#include "util/buf.h"
#include "util/error.h"
#include "util/httpc.h"
#include "util/json.h"
#include "util/log.h"
#include "util/str.h"
#include "util/time.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define ET_MAX_KEY 1024                                     /* as the SQLite backend */
#define ET_MAX_VALUE ((size_t)3 * 1024 * 1024 + 512 * 1024) /* 3 MiB objects plus slack */
#define ET_RESP_MAX ((size_t)512 * 1024 * 1024)             /* one unary response */
#define ET_LINE_MAX ((size_t)512 * 1024 * 1024)             /* one watch response */
#define ET_POOL 64                                          /* handles (connections) */
#define ET_TIMEOUT_MS 20000L /* above etcd's own request timeout (5 s + 2 elections) */
#define ET_LIST_PAGE 500     /* keys per Range of an unlimited list */
#define ET_HEALTH_CACHE_MS 1000
#define ET_HISTORY_WAIT_MS 30000   /* a new watch's history to arrive (8,300 events: 1 s, ASan) */
#define ET_HEALTH_TIMEOUT_MS 2000L /* per endpoint: /readyz answers within a few seconds */
#define ET_COMPACT_KEY "compact_rev_key"     /* kube-apiserver's, outside any prefix */
#define ET_RECENT_SLOTS 16384                /* keys whose latest version updates start from */
#define ET_RECENT_VALUE ((size_t)256 * 1024) /* larger values are read before an update */
#define ET_RECENT_BYTES ((size_t)64 * 1024 * 1024)

typedef struct et_store {
    sw_store base;
    char **eps; /* "http://127.0.0.1:2379" */
    size_t n_eps;
    _Atomic size_t cur; /* preferred endpoint */
    char *prefix;
    size_t prefix_len;
    char *cafile, *certfile, *keyfile;
    sw_httpc_pool *pool;
    sw_recent *recent;         /* latest versions seen: updates start from them, see get_recent */
    _Atomic int64_t max_rev;   /* newest revision seen in any response */
    _Atomic int64_t compacted; /* newest compaction known to this process */
    pthread_mutex_t cmu;       /* compact_version, health cache */
    int64_t compact_version;   /* version of compact_rev_key last seen */
    int64_t health_ms;         /* when health was last checked */
    int health;                /* its result */
} et_store;

struct sw_store_watcher {
    et_store *s;
    char *match; /* the etcd key prefix of the events given to fn */
    size_t match_len;
    sw_store_event_fn fn;
    void *payload;
    pthread_t th;
    pthread_mutex_t mu;
    pthread_cond_t cond;
    bool stop;
    int fd;          /* the stream's socket, shut down to cancel; -1 */
    int64_t covered; /* every event through it was considered (after_rev at first); under mu */
    sw_buf line;     /* a response line being assembled */
    bool lost;       /* the stream said its start is compacted */
    int64_t lost_rev;
};

static void max_rev_see(et_store *s, int64_t rev)
{
    int64_t cur = atomic_load(&s->max_rev);
    while (rev > cur && !atomic_compare_exchange_weak(&s->max_rev, &cur, rev))
        ;
}

static void compacted_see(et_store *s, int64_t rev)
{
    int64_t cur = atomic_load(&s->compacted);
    while (rev > cur && !atomic_compare_exchange_weak(&s->compacted, &cur, rev))
        ;
}

/* ---- JSON shapes of the gateway ---- */

/* An int64 field, written as a string or a number; absent (the gateway omits zero) is 0. */
static int64_t jnum(const json_t *o, const char *k)
{
    json_t *v = json_object_get(o, k);
    int64_t n = 0;
    if (json_is_integer(v))
        return json_integer_value(v);
    if (json_is_string(v) && sw_str_to_i64(json_string_value(v), &n) == 0)
        return n;
    return 0;
}

static json_t *jrev(int64_t n)
{
    char b[24];
    snprintf(b, sizeof(b), "%lld", (long long)n);
    return json_string(b);
}

/* base64 of prefix + key. */
static json_t *jkey(const et_store *s, const char *key)
{
    size_t kl = strlen(key);
    char *full = sw_malloc(s->prefix_len + kl + 1);
    memcpy(full, s->prefix, s->prefix_len);
    memcpy(full + s->prefix_len, key, kl + 1);
    char *b = sw_base64_encode(full, s->prefix_len + kl);
    json_t *j = json_string(b);
    sw_free(b);
    sw_free(full);
    return j;
}

static json_t *jbytes(const void *data, size_t len)
{
    char *b = sw_base64_encode(data, len);
    json_t *j = json_string(b);
    sw_free(b);
    return j;
}

/* The end of the range of every key starting with p (its last byte that is not 0xff, plus
 * one); "\0" (every key) when there is none. */
static json_t *jrange_end(const char *p, size_t n)
{
    unsigned char *e = sw_malloc(n + 1);
    memcpy(e, p, n);
    while (n > 0 && e[n - 1] == 0xff)
        n--;
    json_t *j;
    if (n == 0) {
        j = jbytes("", 1);
    } else {
        e[n - 1]++;
        j = jbytes(e, n);
    }
    sw_free(e);
    return j;
}

static json_t *jprefix_end(const et_store *s, const char *prefix)
{
    size_t pl = strlen(prefix);
    char *full = sw_malloc(s->prefix_len + pl + 1);
    memcpy(full, s->prefix, s->prefix_len);
    memcpy(full + s->prefix_len, prefix, pl + 1);
    json_t *j = jrange_end(full, s->prefix_len + pl);
    sw_free(full);
    return j;
}

/* Decodes a base64 field into a NUL-terminated copy; absent is "". */
static int junb64(const json_t *o, const char *k, char **out, size_t *len)
{
    const char *v = json_string_value(json_object_get(o, k));
    unsigned char *d = NULL;
    size_t n = 0;
    if (v && *v && sw_base64_decode(v, strlen(v), &d, &n) < 0)
        return sw_error_set(SW_ERROR, "etcd: %s is not base64", k);
    char *c = sw_malloc(n + 1);
    if (n)
        memcpy(c, d, n);
    c[n] = '\0';
    sw_free(d);
    *out = c;
    if (len)
        *len = n;
    return 0;
}

/* A KeyValue into out, the key without the prefix. */
static int kv_from_json(const et_store *s, const json_t *kv, sw_kv *out)
{
    char *full = NULL;
    size_t flen = 0;
    memset(out, 0, sizeof(*out));
    int error = junb64(kv, "key", &full, &flen);
    if (error == 0 && (flen < s->prefix_len || memcmp(full, s->prefix, s->prefix_len)))
        error = sw_error_set(SW_ERROR, "etcd: a key outside the prefix was returned");
    if (error == 0)
        error = junb64(kv, "value", &out->value, &out->value_len);
    if (error < 0) {
        sw_free(full);
        sw_free(out->value);
        out->value = NULL;
        return error;
    }
    out->key = sw_strdup(full + s->prefix_len);
    sw_free(full);
    out->mod_rev = jnum(kv, "mod_revision");
    out->create_rev = jnum(kv, "create_revision");
    return 0;
}

/* ---- unary calls ---- */

static void tls_opts(const et_store *s, CURL *c)
{
    if (s->cafile)
        curl_easy_setopt(c, CURLOPT_CAINFO, s->cafile);
    if (s->certfile)
        curl_easy_setopt(c, CURLOPT_SSLCERT, s->certfile);
    if (s->keyfile)
        curl_easy_setopt(c, CURLOPT_SSLKEY, s->keyfile);
}

enum { ET_SENT_NOT = 0, ET_SENT_MAYBE = 1 };

/* A reader of a 200 reply's text that skips jansson (0), or declines (then jansson parses). */
typedef struct et_fast {
    int (*read)(const char *text, size_t len, void *ctx);
    void *ctx;
} et_fast;

/* One POST to one endpoint. 0 with *out (HTTP 200; NULL when fast read it), SW_EUNAVAILABLE
 * for a transport failure or a 503 (*sent says whether the request may have reached etcd), or
 * the gateway's error. */
static int post_once(et_store *s, size_t ep, const char *path, const char *body, size_t blen,
                     long timeout_ms, json_t **out, int *sent, const et_fast *fast)
{
    char url[512];
    snprintf(url, sizeof(url), "%s%s", s->eps[ep], path);
    CURL *c = sw_httpc_take(s->pool);
    if (!c)
        return sw_error_set(SW_EUNAVAILABLE, "etcd: the store is closing");
    sw_buf resp = SW_BUF_INIT(ET_RESP_MAX);
    struct curl_slist *hdrs = curl_slist_append(NULL, "Content-Type: application/json");
    hdrs = curl_slist_append(hdrs, "Expect:");
    sw_httpc_defaults(c, timeout_ms);
    tls_opts(s, c);
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, hdrs);
    curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
    curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)blen);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, sw_httpc_buf_write);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &resp);
    CURLcode rc = curl_easy_perform(c);
    long status = 0;
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
    int error = 0;
    json_t *j = NULL;
    if (rc != CURLE_OK) {
        *sent = rc == CURLE_COULDNT_CONNECT || rc == CURLE_COULDNT_RESOLVE_HOST ? ET_SENT_NOT
                                                                                : ET_SENT_MAYBE;
        error =
            sw_buf_error(&resp)
                ? sw_error_set(SW_ELIMIT, "etcd: response over %zu bytes", (size_t)ET_RESP_MAX)
                : sw_error_set(SW_EUNAVAILABLE, "etcd %s: %s", s->eps[ep], curl_easy_strerror(rc));
    } else if (status == 200 && fast && fast->read(sw_buf_cstr(&resp), resp.len, fast->ctx) == 0) {
        j = NULL;
    } else if (sw_json_parse(sw_buf_cstr(&resp), resp.len, SW_JSON_MAX_DEPTH, 0, &j) < 0 ||
               !json_is_object(j)) {
        *sent = ET_SENT_MAYBE;
        error = status == 503 ? sw_error_set(SW_EUNAVAILABLE, "etcd %s: 503", s->eps[ep])
                              : sw_error_set(SW_ERROR, "etcd %s: HTTP %ld with no JSON body",
                                             s->eps[ep], status);
    } else if (status != 200) {
        int64_t code = jnum(j, "code");
        const char *msg = json_string_value(json_object_get(j, "message"));
        msg = msg ? msg : "";
        *sent = ET_SENT_MAYBE;
        /* gRPC codes: 11 OutOfRange (compacted or future: callers rule the future out first),
         * 3 InvalidArgument, 8 ResourceExhausted, 14 Unavailable, 4 DeadlineExceeded */
        if (code == 11)
            error = sw_error_set(SW_EGONE, "etcd: %s", msg);
        else if ((code == 8 || code == 3) && blen > 1024 * 1024)
            error = sw_error_set(SW_ELIMIT, "etcd: %s", msg);
        else if (code == 8) /* a small request: the quota (NOSPACE alarm) or too many requests */
            error = sw_error_set(SW_EUNAVAILABLE, "etcd refuses the request: %s", msg);
        else if (code == 14 || code == 4 || status == 503)
            error = sw_error_set(SW_EUNAVAILABLE, "etcd %s: %s", s->eps[ep], msg);
        else
            error = sw_error_set(SW_ERROR, "etcd: %s (code %lld)", msg, (long long)code);
    }
    curl_slist_free_all(hdrs);
    sw_httpc_give(s->pool, c, rc != CURLE_OK);
    sw_buf_dispose(&resp);
    if (error < 0) {
        json_decref(j);
        return error;
    }
    if (j)
        max_rev_see(s, jnum(json_object_get(j, "header"), "revision"));
    *out = j;
    return 0;
}

/* A call on the preferred endpoint, then each other one, once around. Reads and compared
 * writes (which are safe to send again) move on after any unavailability; *resent says a write
 * went out again after an attempt whose outcome is unknown. Steals req. */
static int call_within(et_store *s, const char *path, json_t *req, long timeout_ms, json_t **out,
                       bool *resent, const et_fast *fast)
{
    size_t blen = 0;
    char *body = sw_json_dumps(req, &blen);
    json_decref(req);
    int error = SW_EUNAVAILABLE;
    bool maybe = false;
    size_t first = atomic_load(&s->cur) % s->n_eps;
    for (size_t i = 0; i < s->n_eps; i++) {
        size_t ep = (first + i) % s->n_eps;
        int sent = ET_SENT_NOT;
        if (resent)
            *resent = maybe;
        error = post_once(s, ep, path, body, blen, timeout_ms, out, &sent, fast);
        if (error != SW_EUNAVAILABLE) {
            if (i)
                atomic_store(&s->cur, ep);
            break;
        }
        maybe = maybe || sent == ET_SENT_MAYBE;
    }
    sw_free(body);
    return error;
}

static int call(et_store *s, const char *path, json_t *req, json_t **out, bool *resent)
{
    return call_within(s, path, req, ET_TIMEOUT_MS, out, resent, NULL);
}

static json_t *op_range(json_t *key)
{
    return json_pack("{s:{s:o}}", "request_range", "key", key);
}

/* Txn: compare on key, success op, and a Range of the key as failure. */
static int txn(et_store *s, const char *key, json_t *cmp, json_t *success, json_t **out,
               bool *resent)
{
    json_object_set_new(cmp, "key", jkey(s, key));
    json_t *req = json_pack("{s:[o],s:[o],s:[o]}", "compare", cmp, "success", success, "failure",
                            op_range(jkey(s, key)));
    return call(s, "/v3/kv/txn", req, out, resent);
}

/* The kv of the failure branch's Range, or NULL for an absent key. */
static json_t *txn_failure_kv(const json_t *resp)
{
    json_t *r = json_array_get(json_object_get(resp, "responses"), 0);
    return json_array_get(json_object_get(json_object_get(r, "response_range"), "kvs"), 0);
}

static bool kv_value_is(const json_t *kv, const char *value, size_t len)
{
    char *v = NULL;
    size_t n = 0;
    bool same = junb64(kv, "value", &v, &n) == 0 && n == len && !memcmp(v, value, len);
    sw_free(v);
    return same;
}

static int check_key(const char *key)
{
    if (!key || !*key)
        return sw_error_set(SW_EINVALID, "store: empty key");
    if (strlen(key) > ET_MAX_KEY)
        return sw_error_set(SW_ELIMIT, "store: key longer than %d bytes", ET_MAX_KEY);
    return 0;
}

static int check_value(size_t len)
{
    if (len > ET_MAX_VALUE)
        return sw_error_set(SW_ELIMIT, "store: value of %zu bytes is over the limit of %zu", len,
                            ET_MAX_VALUE);
    return 0;
}

/* ---- the vtable ---- */

static int et_get(sw_store *base, const char *key, sw_kv *out)
{
    et_store *s = (et_store *)base;
    json_t *resp = NULL;
    int error = check_key(key);
    if (error == 0)
        error = call(s, "/v3/kv/range", json_pack("{s:o}", "key", jkey(s, key)), &resp, NULL);
    if (error < 0)
        return error;
    json_t *kv = json_array_get(json_object_get(resp, "kvs"), 0);
    error = kv ? kv_from_json(s, kv, out) : sw_error_set(SW_ENOTFOUND, "store: %s not found", key);
    json_decref(resp);
    if (error == 0)
        sw_recent_put(s->recent, key, out->value, out->value_len, out->mod_rev, out->create_rev);
    else if (error == SW_ENOTFOUND)
        sw_recent_drop(s->recent, key, 0);
    return error;
}

static int et_get_recent(sw_store *base, const char *key, sw_kv *out)
{
    return sw_recent_get(((et_store *)base)->recent, key, out);
}

/* What a failed compare showed of the key: the newest version, or that it is gone. */
static void recent_see_failure(et_store *s, const char *key, const json_t *kv)
{
    sw_kv cur = {0};
    if (!kv)
        sw_recent_drop(s->recent, key, 0);
    else if (kv_from_json(s, kv, &cur) == 0)
        sw_recent_put(s->recent, key, cur.value, cur.value_len, cur.mod_rev, cur.create_rev);
    sw_kv_dispose(&cur);
}

static int64_t et_current_revision(sw_store *base);

typedef struct page_read {
    const et_store *s;
    sw_kv_list *out;
    int64_t rev;
    bool more;
} page_read;

static int page_scan(const char *text, size_t len, void *ctx)
{
    page_read *p = ctx;
    return sw_etcdscan_range(text, len, p->s->prefix, p->s->prefix_len, p->out, &p->rev, &p->more);
}

/* One Range of at most limit keys from start (base64) to end at rev (0: latest). The reply is
 * read by etcdscan, or by jansson when etcdscan declines it. */
static int range_page(et_store *s, json_t *start, json_t *end, int64_t rev, size_t limit,
                      sw_kv_list *out, int64_t *rev_out, bool *more)
{
    json_t *req = json_pack("{s:o,s:o}", "key", start, "range_end", json_incref(end));
    json_t *resp = NULL;
    if (rev > 0)
        json_object_set_new(req, "revision", jrev(rev));
    if (limit > 0)
        json_object_set_new(req, "limit", jrev((int64_t)limit));
    page_read pr = {.s = s, .out = out};
    et_fast fast = {page_scan, &pr};
    int error = call_within(s, "/v3/kv/range", req, ET_TIMEOUT_MS, &resp, NULL, &fast);
    if (error < 0)
        return error;
    if (!resp) {
        max_rev_see(s, pr.rev);
        *rev_out = pr.rev;
        *more = pr.more;
        return 0;
    }
    json_t *kvs = json_object_get(resp, "kvs");
    size_t n = json_array_size(kvs);
    out->items = sw_realloc(out->items, (out->count + n + 1) * sizeof(*out->items));
    for (size_t i = 0; error == 0 && i < n; i++) {
        error = kv_from_json(s, json_array_get(kvs, i), &out->items[out->count]);
        if (error == 0)
            out->count++;
    }
    *rev_out = jnum(json_object_get(resp, "header"), "revision");
    *more = json_is_true(json_object_get(resp, "more"));
    json_decref(resp);
    return error;
}

static int et_list(sw_store *base, const sw_store_list_opts *opts, sw_kv_list *out)
{
    et_store *s = (et_store *)base;
    memset(out, 0, sizeof(*out));
    int64_t rev = opts->rev;
    if (rev > 0 && rev > atomic_load(&s->max_rev) && rev > et_current_revision(base))
        return sw_error_set(SW_EINVALID, "store: revision %lld is in the future", (long long)rev);
    const char *prefix = opts->prefix ? opts->prefix : "";
    json_t *end = jprefix_end(s, prefix);
    json_t *start;
    if (opts->start_after && strcmp(opts->start_after, prefix) >= 0) {
        size_t al = strlen(opts->start_after);
        char *k = sw_malloc(s->prefix_len + al + 1);
        memcpy(k, s->prefix, s->prefix_len);
        memcpy(k + s->prefix_len, opts->start_after, al);
        k[s->prefix_len + al] = '\0'; /* the next key after start_after */
        start = jbytes(k, s->prefix_len + al + 1);
        sw_free(k);
    } else {
        start = jkey(s, prefix);
    }
    int error = 0;
    bool more = false;
    for (;;) {
        size_t want = opts->limit ? opts->limit - out->count : ET_LIST_PAGE;
        int64_t got_rev = 0;
        error = range_page(s, start, end, rev, want, out, &got_rev, &more);
        start = NULL;
        if (error < 0)
            break;
        if (rev == 0)
            rev = got_rev; /* the rest at the first page's revision */
        if (!more || (opts->limit && out->count >= opts->limit) || out->count == 0)
            break;
        /* the next page starts right after the last key returned */
        const sw_kv *last = &out->items[out->count - 1];
        size_t kl = strlen(last->key);
        char *k = sw_malloc(s->prefix_len + kl + 1);
        memcpy(k, s->prefix, s->prefix_len);
        memcpy(k + s->prefix_len, last->key, kl);
        k[s->prefix_len + kl] = '\0';
        start = jbytes(k, s->prefix_len + kl + 1);
        sw_free(k);
    }
    json_decref(start);
    json_decref(end);
    if (error < 0) {
        sw_kv_list_dispose(out);
        return error;
    }
    out->rev = rev;
    out->more = more;
    return 0;
}

/* The Txn of a create or update: cmp (stolen), then Put of value. */
static int put_txn(et_store *s, const char *key, const char *value, size_t len, json_t *cmp,
                   json_t **resp, bool *resent)
{
    int error = check_key(key);
    if (error == 0)
        error = check_value(len);
    if (error < 0) {
        json_decref(cmp);
        return error;
    }
    json_t *put =
        json_pack("{s:{s:o,s:o}}", "request_put", "key", jkey(s, key), "value", jbytes(value, len));
    return txn(s, key, cmp, put, resp, resent);
}

static int et_create(sw_store *base, const char *key, const char *value, size_t len,
                     int64_t *rev_out)
{
    et_store *s = (et_store *)base;
    json_t *resp = NULL;
    bool resent = false;
    json_t *cmp =
        json_pack("{s:s,s:s,s:s}", "target", "MOD", "result", "EQUAL", "mod_revision", "0");
    int error = put_txn(s, key, value, len, cmp, &resp, &resent);
    if (error < 0)
        return error;
    int64_t rev = jnum(json_object_get(resp, "header"), "revision");
    if (!json_is_true(json_object_get(resp, "succeeded"))) {
        json_t *kv = txn_failure_kv(resp);
        if (resent && kv && jnum(kv, "create_revision") == jnum(kv, "mod_revision") &&
            kv_value_is(kv, value, len))
            rev = jnum(kv, "mod_revision"); /* our first attempt had applied */
        else
            error = sw_error_set(SW_EEXISTS, "store: %s exists", key);
    }
    json_decref(resp);
    if (error == 0)
        sw_recent_put(s->recent, key, value, len, rev, rev);
    if (error == 0 && rev_out)
        *rev_out = rev;
    return error;
}

/* The compare of an update or delete: mod_revision == expected, or the key exists. */
static json_t *cas_compare(int64_t expected)
{
    if (expected > 0)
        return json_pack("{s:s,s:s,s:o}", "target", "MOD", "result", "EQUAL", "mod_revision",
                         jrev(expected));
    return json_pack("{s:s,s:s,s:s}", "target", "CREATE", "result", "GREATER", "create_revision",
                     "0");
}

static int et_update(sw_store *base, const char *key, const char *value, size_t len,
                     int64_t expected_rev, int64_t *rev_out)
{
    et_store *s = (et_store *)base;
    json_t *resp = NULL;
    bool resent = false;
    int error = put_txn(s, key, value, len, cas_compare(expected_rev), &resp, &resent);
    if (error < 0)
        return error;
    int64_t rev = jnum(json_object_get(resp, "header"), "revision");
    if (!json_is_true(json_object_get(resp, "succeeded"))) {
        json_t *kv = txn_failure_kv(resp);
        recent_see_failure(s, key, kv);
        if (!kv)
            error = sw_error_set(SW_ENOTFOUND, "store: %s not found", key);
        else if (resent && jnum(kv, "mod_revision") > expected_rev && kv_value_is(kv, value, len))
            rev = jnum(kv, "mod_revision");
        else
            error = sw_error_set(SW_ECONFLICT, "store: %s was modified (revision %lld, not %lld)",
                                 key, (long long)jnum(kv, "mod_revision"), (long long)expected_rev);
    }
    json_decref(resp);
    if (error == 0)
        sw_recent_put(s->recent, key, value, len, rev, 0);
    if (error == 0 && rev_out)
        *rev_out = rev;
    return error;
}

static int et_del(sw_store *base, const char *key, int64_t expected_rev, int64_t *rev_out)
{
    et_store *s = (et_store *)base;
    json_t *resp = NULL;
    bool resent = false;
    int error = check_key(key);
    if (error < 0)
        return error;
    json_t *del = json_pack("{s:{s:o}}", "request_delete_range", "key", jkey(s, key));
    if ((error = txn(s, key, cas_compare(expected_rev), del, &resp, &resent)) < 0)
        return error;
    int64_t rev = jnum(json_object_get(resp, "header"), "revision");
    if (!json_is_true(json_object_get(resp, "succeeded"))) {
        json_t *kv = txn_failure_kv(resp);
        recent_see_failure(s, key, kv);
        if (!kv && !resent)
            error = sw_error_set(SW_ENOTFOUND, "store: %s not found", key);
        else if (kv)
            error = sw_error_set(SW_ECONFLICT, "store: %s was modified (revision %lld, not %lld)",
                                 key, (long long)jnum(kv, "mod_revision"), (long long)expected_rev);
        /* absent after an attempt of unknown outcome: that attempt deleted it */
    } else {
        sw_recent_drop(s->recent, key, 0);
    }
    json_decref(resp);
    if (error == 0 && rev_out)
        *rev_out = rev;
    return error;
}

/* ---- watch ---- */

static void covered_set(sw_store_watcher *w, int64_t rev)
{
    pthread_mutex_lock(&w->mu);
    w->covered = rev;
    pthread_cond_broadcast(&w->cond); /* a watch() waiting for its history */
    pthread_mutex_unlock(&w->mu);
}

static bool key_matches(const sw_store_watcher *w, const json_t *kv)
{
    char *k = NULL;
    size_t n = 0;
    bool m =
        junb64(kv, "key", &k, &n) == 0 && n >= w->match_len && !memcmp(k, w->match, w->match_len);
    sw_free(k);
    return m;
}

/* One event of a watch response: to fn when its key is under the watcher's prefix. The stream
 * carries every key, so that each revision reaches the watcher and `covered` is exact. */
static void deliver(sw_store_watcher *w, const json_t *ev)
{
    const json_t *kv = json_object_get(ev, "kv"), *prev = json_object_get(ev, "prev_kv");
    bool is_delete = sw_str_eq(json_string_value(json_object_get(ev, "type")), "DELETE");
    int64_t rev = jnum(kv, "mod_revision");
    if (rev < w->covered)
        return; /* never backwards (a resume starts after covered, so this is only a guard) */
    if (!key_matches(w, kv)) {
        covered_set(w, rev);
        return;
    }
    sw_kv cur = {0}, old = {0};
    bool have_old = prev && kv_from_json(w->s, prev, &old) == 0;
    if (kv_from_json(w->s, kv, &cur) < 0) {
        sw_log(SW_LOG_ERROR, "etcd watch: an event does not decode: %s", sw_error_msg());
        sw_kv_dispose(&old);
        return;
    }
    sw_store_event e = {.rev = rev, .key = cur.key};
    if (is_delete) {
        e.type = SW_STORE_DELETE;
        e.create_rev = have_old ? old.create_rev : 0;
        e.prev_rev = have_old ? old.mod_rev : 0;
        e.value = have_old ? old.value : "";
        e.value_len = have_old ? old.value_len : 0;
        e.prev_value = e.value;
        e.prev_value_len = e.value_len;
    } else {
        e.type = cur.create_rev == cur.mod_rev ? SW_STORE_CREATE : SW_STORE_UPDATE;
        e.create_rev = cur.create_rev;
        e.value = cur.value;
        e.value_len = cur.value_len;
        if (e.type == SW_STORE_UPDATE && have_old) {
            e.prev_rev = old.mod_rev;
            e.prev_value = old.value;
            e.prev_value_len = old.value_len;
        }
    }
    if (is_delete)
        sw_recent_drop(w->s->recent, cur.key, rev);
    else
        sw_recent_refresh(w->s->recent, cur.key, cur.value, cur.value_len, rev, cur.create_rev);
    w->fn(&e, w->payload);
    covered_set(w, rev);
    sw_kv_dispose(&cur);
    sw_kv_dispose(&old);
}

/* One complete response line of the stream. Returns false to end the stream. */
static bool on_line(sw_store_watcher *w, const char *line, size_t len)
{
    json_t *j = NULL;
    if (len == 0)
        return true;
    if (sw_json_parse(line, len, SW_JSON_MAX_DEPTH, 0, &j) < 0) {
        sw_log(SW_LOG_WARN, "etcd watch: a response does not parse: %s", sw_error_msg());
        return false;
    }
    json_t *r = json_object_get(j, "result");
    bool go_on = r != NULL;
    if (!r) {
        const char *msg = sw_json_str_at(j, "error.message");
        sw_log(SW_LOG_INFO, "etcd watch ended: %s", msg ? msg : "(no message)");
    } else if (json_is_true(json_object_get(r, "canceled"))) {
        int64_t crev = jnum(r, "compact_revision");
        if (crev > 0) {
            compacted_see(w->s, crev);
            w->lost = true;
            w->lost_rev = crev;
        }
        go_on = false;
    } else {
        max_rev_see(w->s, jnum(json_object_get(r, "header"), "revision"));
        json_t *evs = json_object_get(r, "events");
        for (size_t i = 0; i < json_array_size(evs); i++)
            deliver(w, json_array_get(evs, i));
    }
    json_decref(j);
    return go_on;
}

static size_t stream_write(char *data, size_t size, size_t n, void *p)
{
    sw_store_watcher *w = p;
    size_t total = size * n;
    pthread_mutex_lock(&w->mu);
    bool stop = w->stop;
    pthread_mutex_unlock(&w->mu);
    if (stop)
        return 0;
    for (size_t i = 0; i < total;) {
        const char *nl = memchr(data + i, '\n', total - i);
        size_t take = nl ? (size_t)(nl - (data + i)) : total - i;
        if (sw_buf_put(&w->line, data + i, take) < 0) {
            sw_log(SW_LOG_ERROR, "etcd watch: a response over %zu bytes", (size_t)ET_LINE_MAX);
            return 0;
        }
        i += take;
        if (nl) {
            i++;
            bool go_on = on_line(w, w->line.ptr ? w->line.ptr : "", w->line.len);
            sw_buf_clear(&w->line);
            if (!go_on)
                return 0;
        }
    }
    return total;
}

static curl_socket_t open_socket(void *p, curlsocktype purpose, struct curl_sockaddr *a)
{
    sw_store_watcher *w = p;
    (void)purpose;
    pthread_mutex_lock(&w->mu);
    curl_socket_t fd = w->stop ? CURL_SOCKET_BAD : socket(a->family, a->socktype, a->protocol);
    w->fd = fd;
    pthread_mutex_unlock(&w->mu);
    return fd;
}

static int close_socket(void *p, curl_socket_t fd)
{
    sw_store_watcher *w = p;
    pthread_mutex_lock(&w->mu);
    if (w->fd == fd)
        w->fd = -1;
    pthread_mutex_unlock(&w->mu);
    return close(fd);
}

/* One streamed POST to endpoint ep, until it ends. */
static void stream_once(sw_store_watcher *w, size_t ep)
{
    et_store *s = w->s;
    char url[512];
    snprintf(url, sizeof(url), "%s/v3/watch", s->eps[ep]);
    json_t *req =
        json_pack("{s:{s:o,s:o,s:o,s:b}}", "create_request", "key", jbytes("", 1), "range_end",
                  jbytes("", 1), "start_revision", jrev(w->covered + 1), "prev_kv", 1);
    char *body = sw_json_dumps(req, NULL);
    json_decref(req);
    CURL *c = curl_easy_init();
    if (!c) {
        sw_free(body);
        return;
    }
    struct curl_slist *hdrs = curl_slist_append(NULL, "Content-Type: application/json");
    hdrs = curl_slist_append(hdrs, "Expect:");
    hdrs = curl_slist_append(hdrs, "Grpc-Metadata-hasleader: true"); /* no leader: end it */
    sw_httpc_defaults(c, 0);
    tls_opts(s, c);
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, hdrs);
    curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, stream_write);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, w);
    curl_easy_setopt(c, CURLOPT_OPENSOCKETFUNCTION, open_socket);
    curl_easy_setopt(c, CURLOPT_OPENSOCKETDATA, w);
    curl_easy_setopt(c, CURLOPT_CLOSESOCKETFUNCTION, close_socket);
    curl_easy_setopt(c, CURLOPT_CLOSESOCKETDATA, w);
    curl_easy_setopt(c, CURLOPT_FORBID_REUSE, 1L);
    CURLcode rc = curl_easy_perform(c);
    pthread_mutex_lock(&w->mu);
    bool stop = w->stop;
    pthread_mutex_unlock(&w->mu);
    if (!stop && rc != CURLE_OK && rc != CURLE_WRITE_ERROR)
        sw_log(SW_LOG_INFO, "etcd watch on %s: %s; resuming after revision %lld", s->eps[ep],
               curl_easy_strerror(rc), (long long)w->covered);
    sw_buf_clear(&w->line);
    curl_easy_cleanup(c);
    curl_slist_free_all(hdrs);
    sw_free(body);
}

static void *watch_main(void *arg)
{
    sw_store_watcher *w = arg;
    et_store *s = w->s;
    int64_t backoff = 0;
    size_t ep = atomic_load(&s->cur) % s->n_eps;
    for (;;) {
        pthread_mutex_lock(&w->mu);
        struct timespec until = sw_time_mono_deadline(backoff);
        while (!w->stop && backoff > 0 && pthread_cond_timedwait(&w->cond, &w->mu, &until) == 0)
            ;
        bool stop = w->stop;
        pthread_mutex_unlock(&w->mu);
        if (stop)
            break;
        int64_t before = w->covered;
        stream_once(w, ep);
        if (w->lost) {
            /* Events after `delivered` were compacted away: say so, then go on live from the
             * compaction (the consumer starts over from a list). */
            sw_store_event e = {.type = SW_STORE_GONE, .rev = w->lost_rev, .key = ""};
            sw_log(SW_LOG_WARN, "etcd watch: revisions after %lld were compacted (at %lld)",
                   (long long)w->covered, (long long)w->lost_rev);
            w->fn(&e, w->payload);
            covered_set(w, w->lost_rev);
            w->lost = false;
        }
        /* a stream that delivered something resumes at once on the same endpoint */
        backoff = w->covered > before ? 0
                  : backoff           ? (backoff * 2 > 1000 ? 1000 : backoff * 2)
                                      : 100;
        if (backoff)
            ep = (ep + 1) % s->n_eps;
    }
    return NULL;
}

static int64_t et_watch_cancel(sw_store *base, sw_store_watcher *w);

static int et_watch(sw_store *base, const char *prefix, int64_t after_rev, sw_store_event_fn fn,
                    void *payload, sw_store_watcher **out)
{
    et_store *s = (et_store *)base;
    *out = NULL;
    if (after_rev < atomic_load(&s->compacted))
        return sw_error_set(SW_EGONE, "store: revision %lld is compacted (oldest %lld)",
                            (long long)after_rev, (long long)atomic_load(&s->compacted));
    json_t *key = jkey(s, prefix), *end = jprefix_end(s, prefix);
    if (after_rev > 0 && after_rev <= atomic_load(&s->max_rev)) {
        /* A Range at after_rev fails exactly when the watch would miss compacted events. */
        json_t *probe = json_pack("{s:O,s:O,s:o,s:s,s:b}", "key", key, "range_end", end, "revision",
                                  jrev(after_rev), "limit", "1", "keys_only", 1);
        json_t *resp = NULL;
        int error = call(s, "/v3/kv/range", probe, &resp, NULL);
        json_decref(resp);
        if (error < 0) {
            json_decref(key);
            json_decref(end);
            return error == SW_EGONE ? sw_error_set(SW_EGONE, "store: revision %lld is compacted",
                                                    (long long)after_rev)
                                     : error;
        }
    }
    json_decref(key);
    json_decref(end);
    int64_t head = et_current_revision(base);
    sw_store_watcher *w = sw_calloc(1, sizeof(*w));
    size_t pl = strlen(prefix);
    w->s = s;
    w->match = sw_malloc(s->prefix_len + pl + 1);
    memcpy(w->match, s->prefix, s->prefix_len);
    memcpy(w->match + s->prefix_len, prefix, pl + 1);
    w->match_len = s->prefix_len + pl;
    w->fn = fn;
    w->payload = payload;
    w->fd = -1;
    w->covered = after_rev;
    sw_buf_init(&w->line, ET_LINE_MAX);
    pthread_mutex_init(&w->mu, NULL);
    sw_time_cond_init(&w->cond);
    if (pthread_create(&w->th, NULL, watch_main, w) != 0) {
        sw_free(w->match);
        sw_free(w);
        return sw_error_set(SW_ERROR, "store: cannot start a watch thread");
    }
    /* The history through the head is delivered before watch returns, as SQLite does: callers
     * (a catch-up replay) read what fn collected once this returns. Revision 1 of an empty
     * etcd has no event. */
    struct timespec until = sw_time_mono_deadline(ET_HISTORY_WAIT_MS);
    pthread_mutex_lock(&w->mu);
    while (head > 1 && w->covered < head &&
           pthread_cond_timedwait(&w->cond, &w->mu, &until) != ETIMEDOUT)
        ;
    bool done = head <= 1 || w->covered >= head;
    pthread_mutex_unlock(&w->mu);
    if (!done) {
        et_watch_cancel(base, w);
        return sw_error_set(SW_EUNAVAILABLE, "etcd: the watch history did not arrive within %d s",
                            ET_HISTORY_WAIT_MS / 1000);
    }
    *out = w;
    return 0;
}

static int64_t et_watch_cancel(sw_store *base, sw_store_watcher *w)
{
    (void)base;
    pthread_mutex_lock(&w->mu);
    w->stop = true;
    if (w->fd >= 0)
        shutdown(w->fd, SHUT_RDWR); /* the blocked transfer ends now */
    pthread_cond_broadcast(&w->cond);
    pthread_mutex_unlock(&w->mu);
    pthread_join(w->th, NULL);
    int64_t covered = w->covered;
    sw_buf_dispose(&w->line);
    pthread_mutex_destroy(&w->mu);
    pthread_cond_destroy(&w->cond);
    sw_free(w->match);
    sw_free(w);
    return covered;
}

/* ---- revisions and compaction ---- */

static int64_t et_current_revision(sw_store *base)
{
    et_store *s = (et_store *)base;
    json_t *resp = NULL;
    json_t *req = json_pack("{s:o,s:b}", "key", jbytes(ET_COMPACT_KEY, strlen(ET_COMPACT_KEY)),
                            "count_only", 1);
    if (call(s, "/v3/kv/range", req, &resp, NULL) == 0)
        json_decref(resp); /* max_rev took its header */
    return atomic_load(&s->max_rev);
}

static int64_t et_compacted_revision(sw_store *base)
{
    return atomic_load(&((et_store *)base)->compacted);
}

/* Whether a Range at rev answers (false: compacted, or an error). */
static int range_at(et_store *s, int64_t rev)
{
    json_t *resp = NULL;
    json_t *req = json_pack("{s:o,s:o,s:b}", "key", jbytes(ET_COMPACT_KEY, strlen(ET_COMPACT_KEY)),
                            "revision", jrev(rev), "count_only", 1);
    int error = call(s, "/v3/kv/range", req, &resp, NULL);
    json_decref(resp);
    return error;
}

/* etcd does not say where it compacted: the oldest revision a Range still answers is it. */
static int find_compacted(et_store *s)
{
    int64_t lo = atomic_load(&s->compacted), hi = et_current_revision(&s->base);
    if (lo < 1)
        lo = 1;
    if (hi < lo)
        return 0;
    int error = range_at(s, lo);
    if (error == 0) {
        compacted_see(s, lo == 1 ? 0 : lo);
        return 0;
    }
    if (error != SW_EGONE)
        return error;
    while (lo < hi) { /* range_at(lo) is compacted, range_at(hi) answers */
        int64_t mid = lo + (hi - lo) / 2;
        if (mid == lo)
            break;
        error = range_at(s, mid);
        if (error == SW_EGONE)
            lo = mid;
        else if (error == 0)
            hi = mid;
        else
            return error;
    }
    compacted_see(s, hi);
    return 0;
}

static int et_compact(sw_store *base, int64_t target)
{
    et_store *s = (et_store *)base;
    if (target <= atomic_load(&s->compacted))
        return 0;
    if (target > atomic_load(&s->max_rev) && target > et_current_revision(base))
        return sw_error_set(SW_EINVALID, "store: cannot compact to %lld beyond the current %lld",
                            (long long)target, (long long)atomic_load(&s->max_rev));
    json_t *resp = NULL;
    int error =
        call(s, "/v3/kv/compaction", json_pack("{s:o}", "revision", jrev(target)), &resp, NULL);
    json_decref(resp);
    if (error == SW_EGONE) /* another server compacted as far or further */
        return find_compacted(s);
    if (error == 0)
        compacted_see(s, target);
    return error;
}

/* kube-apiserver's round: whoever moves compact_rev_key's version from the one it saw last
 * compacts; the others adopt the new version and wait for the next interval. */
static int et_compact_round(sw_store *base, int64_t target)
{
    et_store *s = (et_store *)base;
    json_t *key = jbytes(ET_COMPACT_KEY, strlen(ET_COMPACT_KEY));
    char val[24];
    int len = snprintf(val, sizeof(val), "%lld", (long long)target);
    pthread_mutex_lock(&s->cmu);
    int64_t version = s->compact_version;
    pthread_mutex_unlock(&s->cmu);
    json_t *req = json_pack("{s:[{s:O,s:s,s:s,s:o}],s:[{s:{s:O,s:o}}],s:[{s:{s:o}}]}", "compare",
                            "key", key, "target", "VERSION", "result", "EQUAL", "version",
                            jrev(version), "success", "request_put", "key", key, "value",
                            jbytes(val, (size_t)len), "failure", "request_range", "key", key);
    json_t *resp = NULL;
    int error = call(s, "/v3/kv/txn", req, &resp, NULL);
    if (error < 0)
        return error;
    bool won = json_is_true(json_object_get(resp, "succeeded"));
    json_t *kv = won ? NULL : txn_failure_kv(resp);
    pthread_mutex_lock(&s->cmu);
    s->compact_version = won ? version + 1 : jnum(kv, "version");
    pthread_mutex_unlock(&s->cmu);
    json_decref(resp);
    if (!won)
        return 0;
    error = et_compact(base, target);
    return error < 0 ? error : 1;
}

static int et_health(sw_store *base)
{
    et_store *s = (et_store *)base;
    int64_t now = sw_time_mono_ms();
    pthread_mutex_lock(&s->cmu);
    if (s->health_ms && now - s->health_ms < ET_HEALTH_CACHE_MS) {
        int h = s->health;
        pthread_mutex_unlock(&s->cmu);
        return h < 0 ? sw_error_set(h, "etcd: not reachable, or it refuses writes (alarm)") : 0;
    }
    pthread_mutex_unlock(&s->cmu);
    /* a linearizable read needs a quorum and a leader */
    json_t *resp = NULL;
    json_t *req = json_pack("{s:o,s:b}", "key", jbytes(ET_COMPACT_KEY, strlen(ET_COMPACT_KEY)),
                            "count_only", 1);
    int error = call_within(s, "/v3/kv/range", req, ET_HEALTH_TIMEOUT_MS, &resp, NULL, NULL);
    json_decref(resp);
    resp = NULL;
    /* reads go on under an alarm (NOSPACE after the quota, CORRUPT), writes do not: a store
     * that takes no writes is not ready */
    if (error == 0)
        error = call_within(s, "/v3/maintenance/alarm", json_pack("{s:s}", "action", "GET"),
                            ET_HEALTH_TIMEOUT_MS, &resp, NULL, NULL);
    json_t *alarms = json_object_get(resp, "alarms");
    if (error == 0 && json_array_size(alarms) > 0)
        error = sw_error_set(SW_EUNAVAILABLE, "etcd: alarm %.20s is raised: writes are refused",
                             sw_json_str_at(json_array_get(alarms, 0), "alarm") ?: "?");
    json_decref(resp);
    pthread_mutex_lock(&s->cmu);
    s->health_ms = sw_time_mono_ms();
    s->health = error;
    pthread_mutex_unlock(&s->cmu);
    return error;
}

static void et_close(sw_store *base)
{
    et_store *s = (et_store *)base;
    sw_httpc_pool_shutdown(s->pool);
    sw_httpc_pool_free(s->pool);
    for (size_t i = 0; i < s->n_eps; i++)
        sw_free(s->eps[i]);
    sw_free(s->eps);
    sw_free(s->prefix);
    sw_free(s->cafile);
    sw_free(s->certfile);
    sw_free(s->keyfile);
    sw_recent_free(s->recent);
    pthread_mutex_destroy(&s->cmu);
    sw_free(s);
}

static const struct sw_store_ops et_ops = {
    .version = SW_STORE_OPS_VERSION,
    .get = et_get,
    .list = et_list,
    .create = et_create,
    .update = et_update,
    .del = et_del,
    .watch = et_watch,
    .watch_cancel = et_watch_cancel,
    .compact = et_compact,
    .compact_round = et_compact_round,
    .current_revision = et_current_revision,
    .compacted_revision = et_compacted_revision,
    .health = et_health,
    .close = et_close,
    .get_recent = et_get_recent,
};

/* "h:p,h:p" or URLs into endpoint base URLs. */
static int parse_endpoints(et_store *s, const char *list, bool tls)
{
    const char *p = list;
    while (*p) {
        size_t n = strcspn(p, ",");
        if (n == 0 || n > 255)
            return sw_error_set(SW_EINVALID, "--store etcd: an empty or overlong endpoint");
        char ep[300];
        memcpy(ep, p, n);
        ep[n] = '\0';
        while (n > 0 && ep[n - 1] == '/')
            ep[--n] = '\0';
        char url[320];
        if (sw_str_prefix(ep, "http://") || sw_str_prefix(ep, "https://"))
            snprintf(url, sizeof(url), "%s", ep);
        else
            snprintf(url, sizeof(url), "%s://%s", tls ? "https" : "http", ep);
        if (strpbrk(url + 8, "/?#@ ") || !strchr(strchr(url, ':') + 3, ':'))
            return sw_error_set(SW_EINVALID, "--store etcd: endpoint %s is not HOST:PORT", ep);
        s->eps = sw_realloc(s->eps, (s->n_eps + 1) * sizeof(*s->eps));
        s->eps[s->n_eps++] = sw_strdup(url);
        p += n;
        if (*p == ',')
            p++;
    }
    return s->n_eps ? 0 : sw_error_set(SW_EINVALID, "--store etcd: no endpoint");
}

int sw_store_etcd_open(sw_store **out, const sw_etcd_opts *o)
{
    et_store *s = sw_calloc(1, sizeof(*s));
    s->base.ops = &et_ops;
    pthread_mutex_init(&s->cmu, NULL);
    s->prefix = sw_strdup(o->prefix ? o->prefix : "/registry");
    s->prefix_len = strlen(s->prefix);
    s->cafile = o->cafile ? sw_strdup(o->cafile) : NULL;
    s->certfile = o->certfile ? sw_strdup(o->certfile) : NULL;
    s->keyfile = o->keyfile ? sw_strdup(o->keyfile) : NULL;
    s->pool = sw_httpc_pool_new(ET_POOL, ET_POOL);
    s->recent = sw_recent_new(ET_RECENT_SLOTS, ET_RECENT_VALUE, ET_RECENT_BYTES);
    int error = parse_endpoints(s, o->endpoints ? o->endpoints : "",
                                o->cafile || o->certfile || o->keyfile);
    json_t *resp = NULL;
    if (error == 0) {
        /* the first call: etcd is there, and compact_rev_key's version for compaction rounds */
        json_t *req = json_pack("{s:o}", "key", jbytes(ET_COMPACT_KEY, strlen(ET_COMPACT_KEY)));
        error = call(s, "/v3/kv/range", req, &resp, NULL);
    }
    if (error == 0) {
        s->compact_version = jnum(json_array_get(json_object_get(resp, "kvs"), 0), "version");
        error = find_compacted(s);
    }
    json_decref(resp);
    if (error < 0) {
        et_close(&s->base);
        return error;
    }
    *out = &s->base;
    return 0;
}
