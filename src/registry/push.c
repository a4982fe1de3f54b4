/* push: blob HEAD, cross-repository mount, chunked upload sessions, one-shot pushes and
 * manifest PUT, over the client's request machinery (sw_registry__exec: pools, auth, retries).
 * A session keeps its own reg_call (and so its token) and always uses the Location of the
 * registry's latest answer. PATCH and the committing PUT are sent once; a one-shot push
 * restarts the whole upload after a transient failure. */
#include "registry/push.h"

#include "registry/client_int.h"
#include "registry/manifest.h"
#include "util/alloc.h"
#include "util/error.h"
#include "util/sha256.h"
#include "util/str.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <openssl/crypto.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#define WHAT_MAX 700
#define READ_PIECE (1024 * 1024) /* pread size of sw_registry_push_blob_fd */
#define URL_MAX 4096             /* sw_registry__exec's cap on a whole request URL */
#define COMMIT_QUERY_MAX 80      /* what commit_put appends: "?digest=sha256:<64 hex>" */

struct sw_blob_upload {
    reg_call cx;         /* its own auth state; cx.repository points into repo */
    sw_ref repo;         /* copy of the caller's reference */
    char what[WHAT_MAX]; /* "blob upload to registry/repository" */
    char *location;      /* path and query of the session on cx.host */
    sw_buf chunk;        /* bytes not sent yet, fewer than chunk_size */
    sw_buf inflight;     /* the full chunk a sender thread is PATCHing meanwhile */
    pthread_t sender;
    bool sending;   /* sender runs: it alone touches cx, location and sent */
    int send_error; /* the sender's result, read after the join */
    char send_msg[1024];
    size_t chunk_size;  /* PATCH size */
    size_t chunk_min;   /* the registry's OCI-Chunk-Min-Length, 0 if none */
    uint64_t sent;      /* bytes the registry accepted by PATCH */
    uint64_t written;   /* bytes given to write() */
    int error;          /* 0, or the first failure (sticky) */
    char message[1024]; /* its message */
    /* Streamed mode (sw_registry_upload_set_streamed): one PATCH of unknown length whose body
     * the sender pulls from sv[1] while write() pushes into sv[0]. */
    bool streamed;
    int sv[2];
    uint64_t streamed_bytes; /* read by the sender's PATCH so far */
    bool stream_ended;       /* and it read the end of the body */
};

static void stat_add(uint64_t *counter, uint64_t n)
{
    __atomic_fetch_add(counter, n, __ATOMIC_RELAXED);
}

void sw_registry_push_stats(sw_registry *r, sw_push_stats *out)
{
    out->blob_heads = __atomic_load_n(&r->st_heads, __ATOMIC_RELAXED);
    out->upload_sessions = __atomic_load_n(&r->st_sessions, __ATOMIC_RELAXED);
    out->mounts = __atomic_load_n(&r->st_mounts, __ATOMIC_RELAXED);
    out->bytes = __atomic_load_n(&r->st_bytes, __ATOMIC_RELAXED);
    out->manifests = __atomic_load_n(&r->st_manifests, __ATOMIC_RELAXED);
}

/* ---- calls ---- */

static void wipe_token(reg_call *cx)
{
    if (!cx->token)
        return;
    OPENSSL_cleanse(cx->token, strlen(cx->token));
    sw_free(cx->token);
    cx->token = NULL;
}

/* Switches cx to the push scope (and pull of from_repo for a mount), with any cached token. */
static int push_scope(reg_call *cx, const char *from_repo)
{
    int n = from_repo
                ? snprintf(cx->scope, sizeof(cx->scope),
                           "repository:%s:pull,push repository:%s:pull", cx->repository, from_repo)
                : snprintf(cx->scope, sizeof(cx->scope), "repository:%s:pull,push", cx->repository);
    if (n < 0 || (size_t)n >= sizeof(cx->scope))
        return sw_error_set(SW_EINVALID, "repository names too long for a token scope");
    wipe_token(cx);
    cx->token = sw_registry__token_cached(cx);
    return 0;
}

static int push_call_init(sw_registry *r, const sw_registry_call *c, const sw_ref *ref,
                          const char *from_repo, reg_call *cx)
{
    int error = sw_registry__call_init(r, c, ref, cx);
    return error < 0 ? error : push_scope(cx, from_repo);
}

/* One request of a push. Every request may answer one 401 (a token can expire during a long
 * upload), not only the first of the call. */
static int send_req(reg_call *cx, const char *method, const char *path, const reg_send *send,
                    reg_resp *resp)
{
    /* A HEAD's Content-Length is the blob's size and no body follows: no cap applies. */
    size_t body_max = strcmp(method, "HEAD") == 0 ? SIZE_MAX / 2 : REG_ERROR_BODY_MAX;
    cx->authed = false;
    return sw_registry__exec(cx, method, path, NULL, send, body_max, resp);
}

static bool is_2xx(long s)
{
    return s >= 200 && s < 300;
}

static bool is_3xx(long s)
{
    return s >= 300 && s < 400;
}

static bool transient(int error)
{
    return error == SW_EUNAVAILABLE || error == SW_ETIMEOUT;
}

static int check_digest(const char *digest)
{
    if (!digest || !sw_ref_digest_valid(digest))
        return sw_error_set(SW_EINVALID, "blob digest \"%.80s\" is not a sha256 digest",
                            digest ? digest : "");
    return 0;
}

/* ---- blob HEAD ---- */

/* Whether loc has a control character, a space or DEL in its first n bytes. */
static bool bad_url_chars(const char *loc, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)loc[i] <= 0x20 || loc[i] == 0x7f)
            return true;
    return false;
}

/* Follows the 307/308 answered to a blob HEAD once, as curl would: a HEAD of its Location (an
 * absolute http(s) URL, or a path on cx's host) with no credentials, as the target is blob
 * storage; TLS is verified unless it is cx's own host and that is insecure. resp becomes that
 * answer, or a 404 when there is no simple Location or no 2xx there: the blob then counts as
 * absent and is uploaded, which is always safe. */
static void head_redirect(reg_call *cx, reg_resp *resp)
{
    char host[256] = "";
    bool https, found = false;
    sw_buf url = SW_BUF_INIT(URL_MAX);
    const char *loc = resp->location;
    if (bad_url_chars(loc, strlen(loc)))
        loc = "";
    if (loc[0] == '/' && loc[1] != '/') {
        sw_strlcpy(host, cx->host, sizeof(host));
        sw_buf_printf(&url, "%s://%s%s", cx->scheme, cx->host, loc);
    } else if (sw_registry__url_host(loc, host, sizeof(host), &https)) {
        sw_buf_puts(&url, loc);
    }
    reg_req req = {.method = "HEAD",
                   .url = sw_buf_cstr(&url),
                   .host = host,
                   .insecure = cx->insecure && strcasecmp(host, cx->host) == 0,
                   .retry = true,
                   .body_max = SIZE_MAX / 2};
    if (url.len && sw_buf_error(&url) == 0) {
        found = sw_registry__perform(cx, &req, resp) == 0 && is_2xx(resp->status);
        sw_error_clear(); /* a storage failure is no failure of the push */
    }
    if (!found)
        resp->status = 404;
    sw_buf_dispose(&url);
}

int sw_registry_blob_exists(sw_registry *r, const sw_registry_call *c, const sw_ref *repo,
                            const char *digest, bool *exists, int64_t *size)
{
    char what[WHAT_MAX];
    sw_buf path = SW_BUF_INIT(1024);
    reg_call cx;
    reg_resp resp;
    sw_registry__resp_init(&resp);
    int error = push_call_init(r, c, repo, NULL, &cx);
    if (error == 0)
        error = check_digest(digest);
    if (error < 0)
        goto done;
    snprintf(what, sizeof(what), "blob %s of %s", digest, cx.display);
    sw_buf_printf(&path, "/v2/%s/blobs/%s", repo->repository, digest);
    stat_add(&r->st_heads, 1);
    error = send_req(&cx, "HEAD", sw_buf_cstr(&path), NULL, &resp);
    if (error == 0 && (resp.status == 307 || resp.status == 308))
        head_redirect(&cx, &resp);
    if (error < 0)
        goto done;
    /* Only a 2xx proves the blob is there; a redirect not followed proves nothing. */
    if (resp.status != 404 && !is_2xx(resp.status) && !is_3xx(resp.status)) {
        error = sw_registry__status_error(&cx, &resp, what);
        goto done;
    }
    *exists = is_2xx(resp.status);
    if (size)
        *size = is_2xx(resp.status) ? resp.content_length : -1;
done:
    sw_buf_dispose(&path);
    sw_registry__resp_dispose(&resp);
    sw_registry__call_dispose(&cx);
    return error;
}

/* ---- upload sessions ---- */

/* A relative reference (ref, n bytes: no scheme, no authority, no fragment) resolved against
 * base as RFC 3986 5.2 does, without dot-segment removal: an empty one is base, a query-only
 * one keeps base's path and replaces its query, any other replaces base's last segment. */
static char *resolve_relative(const char *ref, size_t n, const char *base)
{
    size_t keep = strcspn(base, "?");
    if (n == 0)
        keep = strlen(base);
    else if (ref[0] != '?')
        while (keep > 0 && base[keep - 1] != '/')
            keep--;
    sw_buf b = SW_BUF_INIT(2 * URL_MAX);
    sw_buf_put(&b, base, keep);
    sw_buf_put(&b, ref, n);
    return sw_buf_detach(&b, NULL);
}

/* The path (and query) on cx's host that the first n bytes of loc name: absolute-path
 * references as they are, absolute URLs only on the same host (credentials never go
 * elsewhere), relative ones resolved against base. *out is sw_malloc'd. */
static int resolve_location(const reg_call *cx, const char *loc, size_t n, const char *base,
                            char **out)
{
    char host[256];
    bool https;
    if (loc[0] == '/' && loc[1] != '/') {
        *out = sw_strndup(loc, n);
        return 0;
    }
    if (sw_registry__url_host(loc, host, sizeof(host), &https)) {
        if (strcasecmp(host, cx->host) != 0)
            return sw_error_set(SW_EUNSUPPORTED,
                                "registry %s sent the upload of %s to another host (%s)", cx->host,
                                cx->display, host);
        const char *rest = loc + (https ? 8 : 7);
        rest += strcspn(rest, "/?#"); /* past the authority; the path is "/" when empty */
        size_t len = (size_t)(loc + n - rest);
        *out = rest[0] == '/' ? sw_strndup(rest, len) : resolve_relative(rest, len, "/");
        return 0;
    }
    if (loc[0] == '/' || memchr(loc, ':', strcspn(loc, "/?#"))) /* "//host" or "scheme:" */
        return sw_error_set(SW_EUNSUPPORTED, "registry %s: unsupported upload Location", cx->host);
    *out = resolve_relative(loc, n, base);
    return 0;
}

/* The session path that a Location names (see resolve_location), checked: short enough for
 * the commit's URL, with its #fragment dropped (curl would cut the ?digest= appended after
 * it). *out is sw_malloc'd. */
static int location_path(const reg_call *cx, const char *loc, const char *base, char **out)
{
    size_t n = strlen(loc), frag = strcspn(loc, "#");
    char *path = NULL;
    if (n == 0)
        return sw_error_set(SW_EUNSUPPORTED, "registry %s gave no Location for the upload of %s",
                            cx->host, cx->display);
    if (n >= sizeof(((reg_resp *)0)->location) - 1)
        return sw_error_set(SW_EUNSUPPORTED, "registry %s: upload Location too long", cx->host);
    if (bad_url_chars(loc, n))
        return sw_error_set(SW_EINVALID, "registry %s: bad upload Location", cx->host);
    int error = resolve_location(cx, loc, frag, base, &path);
    size_t url = error < 0 ? 0 : strlen(cx->scheme) + 3 + strlen(cx->host) + strlen(path);
    if (error == 0 && url + COMMIT_QUERY_MAX > URL_MAX)
        error = sw_error_set(SW_EUNSUPPORTED,
                             "registry %s: upload Location too long (a %zu-byte URL; with the "
                             "commit's digest it must fit in %d bytes)",
                             cx->host, url, URL_MAX);
    if (error < 0) {
        sw_free(path);
        return error;
    }
    *out = path;
    return 0;
}

/* Adopts the Location of a session response. */
static int take_location(sw_blob_upload *u, const reg_resp *resp, const char *base)
{
    char *p = NULL;
    int error = location_path(&u->cx, resp->location, base, &p);
    if (error < 0)
        return error;
    sw_free(u->location);
    u->location = p;
    return 0;
}

static sw_blob_upload *upload_alloc(void)
{
    sw_blob_upload *u = sw_calloc(1, sizeof(*u));
    u->chunk_size = SW_UPLOAD_CHUNK_DEFAULT;
    sw_buf_init(&u->chunk, SW_UPLOAD_CHUNK_MAX);
    sw_buf_init(&u->inflight, SW_UPLOAD_CHUNK_MAX);
    u->sv[0] = u->sv[1] = -1;
    return u;
}

/* Streamed mode: ends the body (the PATCH sees its end) so the sender can finish. */
static void end_stream(sw_blob_upload *u)
{
    if (u->sv[0] >= 0) {
        close(u->sv[0]);
        u->sv[0] = -1;
    }
}

static void upload_free(sw_blob_upload *u)
{
    end_stream(u);
    if (u->sending)
        pthread_join(u->sender, NULL);
    if (u->sv[1] >= 0)
        close(u->sv[1]);
    sw_registry__call_dispose(&u->cx);
    sw_buf_dispose(&u->chunk);
    sw_buf_dispose(&u->inflight);
    sw_free(u->location);
    sw_free(u);
}

/* A new upload object with its call set up for repo (push scope, and pull of from_repo). */
static int upload_new(sw_registry *r, const sw_registry_call *c, const sw_ref *repo,
                      const char *from_repo, sw_blob_upload **out)
{
    sw_blob_upload *u = upload_alloc();
    if (repo)
        u->repo = *repo;
    int error = push_call_init(r, c, repo ? &u->repo : NULL, from_repo, &u->cx);
    if (error < 0) {
        upload_free(u);
        return error;
    }
    snprintf(u->what, sizeof(u->what), "blob upload to %s", u->cx.display);
    *out = u;
    return 0;
}

/* A 202 to POST .../uploads/: the session's Location, and the registry's minimum chunk. */
static int session_opened(sw_blob_upload *u, const reg_resp *resp, const char *post_path)
{
    int error = take_location(u, resp, post_path);
    if (error < 0)
        return error;
    stat_add(&u->cx.r->st_sessions, 1);
    if (resp->chunk_min > 0)
        u->chunk_min =
            resp->chunk_min > SW_UPLOAD_CHUNK_MAX ? SW_UPLOAD_CHUNK_MAX : (size_t)resp->chunk_min;
    if (u->chunk_size < u->chunk_min)
        u->chunk_size = u->chunk_min;
    return 0;
}

int sw_registry_upload_start(sw_registry *r, const sw_registry_call *c, const sw_ref *repo,
                             sw_blob_upload **out)
{
    sw_blob_upload *u = NULL;
    sw_buf path = SW_BUF_INIT(1024);
    reg_resp resp;
    sw_registry__resp_init(&resp);
    int error = upload_new(r, c, repo, NULL, &u);
    if (error < 0)
        goto done;
    sw_buf_printf(&path, "/v2/%s/blobs/uploads/", repo->repository);
    error = send_req(&u->cx, "POST", sw_buf_cstr(&path), &(reg_send){0}, &resp);
    if (error == 0 && resp.status != 202)
        error = sw_registry__status_error(&u->cx, &resp, u->what);
    if (error == 0)
        error = session_opened(u, &resp, sw_buf_cstr(&path));
    if (error == 0) {
        *out = u;
        u = NULL;
    }
done:
    if (u)
        upload_free(u);
    sw_buf_dispose(&path);
    sw_registry__resp_dispose(&resp);
    return error;
}

void sw_registry_upload_set_chunk_size(sw_blob_upload *u, size_t n)
{
    if (!u || u->written)
        return;
    if (n == 0)
        n = SW_UPLOAD_CHUNK_DEFAULT;
    if (n < u->chunk_min)
        n = u->chunk_min;
    u->chunk_size = n > SW_UPLOAD_CHUNK_MAX ? SW_UPLOAD_CHUNK_MAX : n;
}

uint64_t sw_registry_upload_size(const sw_blob_upload *u)
{
    return u ? u->written : 0;
}

/* Records the first failure of u and returns it. */
static int upload_fail(sw_blob_upload *u, int error)
{
    if (!u->error) {
        u->error = error;
        sw_strlcpy(u->message, sw_error_msg(), sizeof(u->message));
    }
    return error;
}

static int sticky_error(const sw_blob_upload *u)
{
    return sw_error_set(u->error, "%s", u->message);
}

/* PATCHes the session with send; adopts the Location the registry answers with. */
static int patch_session(sw_blob_upload *u, const reg_send *send)
{
    char *path = sw_strdup(u->location);
    reg_resp resp;
    sw_registry__resp_init(&resp);
    int error = send_req(&u->cx, "PATCH", path, send, &resp);
    if (error == 0 && !is_2xx(resp.status))
        error = sw_registry__status_error(&u->cx, &resp, u->what);
    if (error == 0 && resp.location[0])
        error = take_location(u, &resp, path);
    sw_free(path);
    sw_registry__resp_dispose(&resp);
    return error;
}

/* PATCH len bytes at offset u->sent. */
static int send_chunk(sw_blob_upload *u, const void *data, size_t len)
{
    char range[64];
    snprintf(range, sizeof(range), "%" PRIu64 "-%" PRIu64, u->sent, u->sent + len - 1);
    reg_send send = {.content_type = "application/octet-stream",
                     .content_range = range,
                     .data = data,
                     .len = len,
                     .once = true};
    int error = patch_session(u, &send);
    if (error == 0) {
        u->sent += len;
        stat_add(&u->cx.r->st_bytes, len);
    }
    return error;
}

static void *sender_main(void *arg)
{
    sw_blob_upload *u = arg;
    u->send_error = send_chunk(u, u->inflight.ptr, u->inflight.len);
    if (u->send_error < 0)
        sw_strlcpy(u->send_msg, sw_error_msg(), sizeof(u->send_msg));
    return NULL;
}

/* Waits for the PATCH in flight, if any; its failure becomes the upload's. */
static int wait_sender(sw_blob_upload *u)
{
    if (!u->sending)
        return 0;
    pthread_join(u->sender, NULL);
    u->sending = false;
    sw_buf_clear(&u->inflight);
    if (u->send_error < 0)
        return upload_fail(u, sw_error_set(u->send_error, "%s", u->send_msg));
    return 0;
}

/* Hands the full chunk to a sender thread, so the caller goes on producing the next one while
 * the registry takes this one (at most one PATCH in flight, in order). */
static int start_send(sw_blob_upload *u)
{
    int error = wait_sender(u);
    if (error < 0)
        return error;
    sw_buf full = u->chunk;
    u->chunk = u->inflight;
    u->inflight = full;
    if (pthread_create(&u->sender, NULL, sender_main, u) == 0) {
        u->sending = true;
        return 0;
    }
    error = send_chunk(u, u->inflight.ptr, u->inflight.len); /* no thread: send it here */
    sw_buf_clear(&u->inflight);
    return error;
}

/* The streamed PATCH's body: what write() pushed into the socket pair, 0 at its end. */
static size_t stream_read(char *buf, size_t size, size_t nitems, void *payload)
{
    sw_blob_upload *u = payload;
    for (;;) {
        ssize_t n = recv(u->sv[1], buf, size * nitems, 0);
        if (n >= 0) {
            u->streamed_bytes += (uint64_t)n;
            u->stream_ended = n == 0;
            return (size_t)n;
        }
        if (errno != EINTR)
            return CURL_READFUNC_ABORT;
    }
}

/* The sender of a streamed upload: one PATCH that lasts until write() ends the stream. */
static void *stream_main(void *arg)
{
    sw_blob_upload *u = arg;
    reg_send send = {.content_type = "application/octet-stream",
                     .once = true,
                     .stream = stream_read,
                     .stream_payload = u};
    int error = patch_session(u, &send);
    if (error == 0) {
        u->sent = u->streamed_bytes;
        stat_add(&u->cx.r->st_bytes, u->streamed_bytes);
    }
    u->send_error = error;
    if (error < 0)
        sw_strlcpy(u->send_msg, sw_error_msg(), sizeof(u->send_msg));
    shutdown(u->sv[1], SHUT_RDWR); /* a writer still pushing gets EPIPE, not a hang */
    return NULL;
}

int sw_registry_upload_set_streamed(sw_blob_upload *u)
{
    if (!u || u->written || u->streamed)
        return sw_error_set(SW_EINVALID, "upload_set_streamed: only before the first write");
    int buf = SW_UPLOAD_STREAM_BUFFER;
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, u->sv) < 0)
        return sw_error_set(SW_ERROR, "upload: socketpair: %s", sw_strerror(errno));
    setsockopt(u->sv[0], SOL_SOCKET, SO_SNDBUF, &buf, sizeof(buf));
    setsockopt(u->sv[1], SOL_SOCKET, SO_RCVBUF, &buf, sizeof(buf));
    u->streamed = true;
    if (pthread_create(&u->sender, NULL, stream_main, u) != 0) {
        u->streamed = false;
        close(u->sv[0]);
        close(u->sv[1]);
        u->sv[0] = u->sv[1] = -1;
        return sw_error_set(SW_ERROR, "upload: cannot start the streaming thread");
    }
    u->sending = true;
    return 0;
}

/* write() in streamed mode: into the socket pair (blocking while the PATCH catches up). */
static int stream_write(sw_blob_upload *u, const unsigned char *p, size_t len)
{
    while (len > 0) {
        ssize_t n = send(u->sv[0], p, len, MSG_NOSIGNAL);
        if (n < 0 && errno == EINTR && u->cx.r->stop && u->cx.r->stop())
            return upload_fail(u, sw_error_set(SW_ERROR, "%s: stopped", u->what));
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) { /* the PATCH ended early: its error is the reason */
            end_stream(u);
            int error = wait_sender(u);
            return upload_fail(u, error < 0 ? error
                                            : sw_error_set(SW_EUNAVAILABLE,
                                                           "%s: the registry ended the upload "
                                                           "early",
                                                           u->what));
        }
        p += n;
        len -= (size_t)n;
    }
    return 0;
}

int sw_registry_upload_write(sw_blob_upload *u, const void *data, size_t len)
{
    if (!u)
        return sw_error_set(SW_EINVALID, "upload_write: no session");
    if (u->error)
        return sticky_error(u);
    if (len && !data)
        return upload_fail(u, sw_error_set(SW_EINVALID, "upload_write: no data"));
    const unsigned char *p = data;
    u->written += len;
    if (u->streamed)
        return stream_write(u, p, len);
    while (len > 0) {
        size_t room = u->chunk_size - u->chunk.len;
        size_t n = len < room ? len : room;
        sw_buf_put(&u->chunk, p, n);
        p += n;
        len -= n;
        int error = sw_buf_error(&u->chunk);
        if (error == 0 && u->chunk.len == u->chunk_size)
            error = start_send(u);
        if (error < 0)
            return upload_fail(u, error);
    }
    return 0;
}

/* DELETE the session; errors are ignored, and the caller's error message is kept. */
static void cancel_session(sw_blob_upload *u)
{
    end_stream(u);
    if (u->sending) {
        pthread_join(u->sender, NULL); /* its outcome no longer matters */
        u->sending = false;
    }
    if (!u->location)
        return;
    char msg[1024];
    int code = sw_error_code();
    sw_strlcpy(msg, sw_error_msg(), sizeof(msg));
    reg_resp resp;
    sw_registry__resp_init(&resp);
    reg_call *cx = &u->cx;
    int64_t budget = cx->wait_budget_ms;
    cx->wait_budget_ms = 0; /* one attempt, no sleeping */
    send_req(cx, "DELETE", u->location, NULL, &resp);
    cx->wait_budget_ms = budget;
    sw_registry__resp_dispose(&resp);
    if (code < 0)
        sw_error_set(code, "%s", msg);
    else
        sw_error_clear();
}

void sw_registry_upload_abort(sw_blob_upload *u)
{
    if (!u)
        return;
    cancel_session(u);
    upload_free(u);
}

/* PUT <location>&digest=... with the buffered rest; checks the digest the registry reports. */
static int commit_put(sw_blob_upload *u, const char *digest)
{
    char range[64], what[WHAT_MAX];
    sw_buf path = SW_BUF_INIT(8192);
    reg_resp resp;
    sw_registry__resp_init(&resp);
    snprintf(what, sizeof(what), "blob %s upload to %s", digest, u->cx.display);
    sw_buf_printf(&path, "%s%cdigest=%s", u->location, strchr(u->location, '?') ? '&' : '?',
                  digest);
    reg_send send = {.content_type = "application/octet-stream",
                     .data = u->chunk.ptr,
                     .len = u->chunk.len,
                     .once = true};
    if (u->chunk.len && u->sent) {
        snprintf(range, sizeof(range), "%" PRIu64 "-%" PRIu64, u->sent, u->sent + u->chunk.len - 1);
        send.content_range = range;
    }
    int error = sw_buf_error(&path);
    if (error == 0)
        error = send_req(&u->cx, "PUT", sw_buf_cstr(&path), &send, &resp);
    if (error == 0 && !is_2xx(resp.status))
        error = sw_registry__status_error(&u->cx, &resp, what);
    if (error == 0 && resp.digest[0] && strcmp(resp.digest, digest) != 0)
        error = sw_error_set(SW_EINVALID, "registry %s stored %s as %.80s", u->cx.host, what,
                             resp.digest);
    if (error == 0)
        stat_add(&u->cx.r->st_bytes, u->chunk.len);
    sw_buf_dispose(&path);
    sw_registry__resp_dispose(&resp);
    return error;
}

/* Streamed mode: the PATCH must have pulled the whole body. A registry may answer it before
 * reading it; curl then ends the request and what write() left in the socket pair is lost. */
static int check_streamed(const sw_blob_upload *u)
{
    if (!u->streamed || (u->stream_ended && u->sent == u->written))
        return 0;
    return sw_error_set(SW_EUNAVAILABLE,
                        "%s: the registry answered the upload before reading all of it: "
                        "%" PRIu64 " of %" PRIu64 " bytes",
                        u->what, u->sent, u->written);
}

int sw_registry_upload_commit(sw_blob_upload *u, const char *digest)
{
    if (!u)
        return sw_error_set(SW_EINVALID, "upload_commit: no session");
    end_stream(u); /* streamed: the PATCH sees the end of its body and finishes */
    int error = wait_sender(u);
    if (error == 0)
        error = u->error ? sticky_error(u) : check_streamed(u);
    if (error == 0)
        error = check_digest(digest);
    if (error == 0)
        error = commit_put(u, digest);
    if (error < 0)
        cancel_session(u); /* the registry may have cancelled it already: a 404 is ignored */
    upload_free(u);
    return error;
}

/* ---- mount ---- */

/* from_repo must be a repository name of repo's registry, and another one. */
static int check_from(const sw_ref *repo, const char *from_repo)
{
    char s[600];
    sw_ref f;
    snprintf(s, sizeof(s), "%s/%s", repo->registry, from_repo ? from_repo : "");
    if (!from_repo || sw_ref_parse(s, &f) != 0 || strcmp(f.repository, from_repo) != 0 ||
        strcmp(f.registry, repo->registry) != 0)
        return sw_error_set(SW_EINVALID, "mount source \"%.300s\" is not a repository of %s",
                            from_repo ? from_repo : "", repo->registry);
    return 0;
}

/* POST the mount. *mounted: a 201 with the blob's digest; *unsure: a 201 without one. */
static int mount_post(sw_blob_upload *u, const char *digest, const char *from_repo, bool *mounted,
                      bool *unsure)
{
    char what[WHAT_MAX];
    sw_buf path = SW_BUF_INIT(2048);
    reg_resp resp;
    sw_registry__resp_init(&resp);
    snprintf(what, sizeof(what), "mount of blob %s from %s into %s", digest, from_repo,
             u->cx.display);
    sw_buf_printf(&path, "/v2/%s/blobs/uploads/?mount=%s&from=%s", u->repo.repository, digest,
                  from_repo);
    int error = send_req(&u->cx, "POST", sw_buf_cstr(&path), &(reg_send){0}, &resp);
    if (error == 0 && resp.status != 201 && resp.status != 202)
        error = sw_registry__status_error(&u->cx, &resp, what);
    if (error == 0 && resp.status == 201 && resp.digest[0] && strcmp(resp.digest, digest) != 0)
        error = sw_error_set(SW_EINVALID, "registry %s answered the %s with digest %.80s",
                             u->cx.host, what, resp.digest);
    if (error == 0 && resp.status == 202)
        error = session_opened(u, &resp, sw_buf_cstr(&path));
    else if (error == 0 && resp.digest[0])
        *mounted = true;
    else if (error == 0)
        *unsure = true;
    sw_buf_dispose(&path);
    sw_registry__resp_dispose(&resp);
    return error;
}

/* Whether repo has blob digest (by HEAD) of size bytes; size < 0: of any size. */
static int blob_present(sw_registry *r, const sw_registry_call *c, const sw_ref *repo,
                        const char *digest, int64_t size, bool *present)
{
    bool exists = false;
    int64_t have = -1;
    int error = sw_registry_blob_exists(r, c, repo, digest, &exists, &have);
    *present = error == 0 && exists && (size < 0 || have == size);
    return error;
}

int sw_registry_blob_mount(sw_registry *r, const sw_registry_call *c, const sw_ref *repo,
                           const char *digest, int64_t size, const char *from_repo, bool *mounted,
                           sw_blob_upload **session)
{
    sw_blob_upload *u = NULL;
    bool unsure = false;
    int error = check_digest(digest);
    if (error == 0 && (!repo || !mounted))
        error = sw_error_set(SW_EINVALID, "blob_mount: no repository or output");
    if (error == 0)
        error = check_from(repo, from_repo);
    if (error == 0)
        error = upload_new(r, c, repo, from_repo, &u);
    if (error < 0)
        return error;
    *mounted = false;
    if (session)
        *session = NULL;
    error = mount_post(u, digest, from_repo, mounted, &unsure);
    if (error == 0 && unsure) /* a 201 that does not say what it mounted: look */
        error = blob_present(r, c, repo, digest, size, mounted);
    if (error == 0 && *mounted)
        stat_add(&r->st_mounts, 1);
    if (error < 0 || *mounted || unsure || !session) {
        if (error == 0)
            cancel_session(u);
        upload_free(u);
        return error;
    }
    *session = u;
    return 0;
}

/* ---- one-shot pushes ---- */

typedef struct blob_src {
    const unsigned char *mem; /* or */
    int fd;
    uint64_t size;
} blob_src;

static int write_fd(sw_blob_upload *u, const blob_src *src)
{
    unsigned char *buf = sw_malloc(READ_PIECE);
    int error = 0;
    for (uint64_t off = 0; off < src->size && error == 0;) {
        uint64_t want = src->size - off < READ_PIECE ? src->size - off : READ_PIECE;
        ssize_t n = pread(src->fd, buf, (size_t)want, (off_t)off);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            error = sw_error_set(SW_EINVALID, "reading the blob for %s: %s", u->what,
                                 n < 0 ? sw_strerror(errno) : "file shorter than its size");
            break;
        }
        error = sw_registry_upload_write(u, buf, (size_t)n);
        off += (uint64_t)n;
    }
    sw_free(buf);
    return error;
}

/* One upload of src through session u (consumed). */
static int upload_once(sw_blob_upload *u, const char *digest, const blob_src *src)
{
    int error =
        src->mem ? sw_registry_upload_write(u, src->mem, (size_t)src->size) : write_fd(u, src);
    if (error < 0) {
        sw_registry_upload_abort(u);
        return error;
    }
    return sw_registry_upload_commit(u, digest);
}

/* The pause before restart number attempt + 1; true when a stop request ended it. */
static bool restart_pause(const sw_registry *r, int attempt)
{
    int64_t ms = (int64_t)REG_BACKOFF_BASE_MS << (attempt < 4 ? attempt : 4);
    if (ms > REG_BACKOFF_MAX_MS)
        ms = REG_BACKOFF_MAX_MS;
    return sw_registry__wait_or_stop(r, ms);
}

/* Upload with restarts; the first session may come from a failed mount. */
static int upload_with_restarts(sw_registry *r, const sw_registry_call *c, const sw_ref *repo,
                                const char *digest, const blob_src *src, sw_blob_upload *first)
{
    int error = 0;
    for (int attempt = 0; attempt <= r->retries; attempt++) {
        sw_blob_upload *u = first;
        first = NULL;
        if (attempt > 0 && restart_pause(r, attempt - 1))
            break; /* stopped: the last failure is the answer */
        if (!u)
            error = sw_registry_upload_start(r, c, repo, &u);
        if (!u)
            break; /* the POST had its own retries */
        error = upload_once(u, digest, src);
        if (error == 0 || !transient(error))
            break;
    }
    return error;
}

static int push_src(sw_registry *r, const sw_registry_call *c, const sw_ref *repo,
                    const char *digest, const blob_src *src, const char *from_repo,
                    sw_blob_pushed *how)
{
    bool exists = false, mounted = false;
    sw_blob_upload *session = NULL;
    int64_t size = (int64_t)src->size;
    if (src->size > INT64_MAX)
        return sw_error_set(SW_EINVALID, "blob %.80s: size out of range", digest);
    int error = blob_present(r, c, repo, digest, size, &exists);
    if (error == 0 && exists) {
        if (how)
            *how = SW_BLOB_EXISTED;
        return 0;
    }
    if (error == 0 && from_repo && strcmp(from_repo, repo->repository) != 0)
        error = sw_registry_blob_mount(r, c, repo, digest, size, from_repo, &mounted, &session);
    if (error == 0 && mounted) {
        if (how)
            *how = SW_BLOB_MOUNTED;
        return 0;
    }
    if (error == 0)
        error = upload_with_restarts(r, c, repo, digest, src, session);
    if (error == 0 && how)
        *how = SW_BLOB_UPLOADED;
    return error;
}

int sw_registry_push_blob(sw_registry *r, const sw_registry_call *c, const sw_ref *repo,
                          const char *digest, const void *data, size_t len, const char *from_repo,
                          sw_blob_pushed *how)
{
    static const unsigned char empty[1];
    if (len && !data)
        return sw_error_set(SW_EINVALID, "push_blob: no data");
    blob_src src = {.mem = data ? data : empty, .fd = -1, .size = len};
    return push_src(r, c, repo, digest, &src, from_repo, how);
}

int sw_registry_push_blob_fd(sw_registry *r, const sw_registry_call *c, const sw_ref *repo,
                             const char *digest, int fd, uint64_t size, const char *from_repo,
                             sw_blob_pushed *how)
{
    if (fd < 0)
        return sw_error_set(SW_EINVALID, "push_blob_fd: no file");
    blob_src src = {.mem = NULL, .fd = fd, .size = size};
    return push_src(r, c, repo, digest, &src, from_repo, how);
}

/* ---- copy between repositories ---- */

typedef struct copy_sink {
    sw_blob_upload *u;
    sw_sha256 hash;
    uint64_t got, want;
    const char *digest;
} copy_sink;

static int copy_chunk(void *payload, const void *data, size_t len)
{
    copy_sink *cs = payload;
    if (len > cs->want - cs->got)
        return sw_error_set(SW_EINVALID, "blob %s is longer than its %llu bytes", cs->digest,
                            (unsigned long long)cs->want);
    cs->got += len;
    sw_sha256_update(&cs->hash, data, len);
    return sw_registry_upload_write(cs->u, data, len);
}

/* GET from's blob into cs (cx is from's call). */
static int copy_get(reg_call *cx, const sw_ref *from, copy_sink *cs)
{
    char what[WHAT_MAX];
    sw_buf path = SW_BUF_INIT(1024);
    reg_resp resp;
    sw_registry__resp_init(&resp);
    resp.sink = copy_chunk;
    resp.sink_payload = cs;
    snprintf(what, sizeof(what), "blob %s of %s", cs->digest, cx->display);
    sw_buf_printf(&path, "/v2/%s/blobs/%s", from->repository, cs->digest);
    int error = sw_buf_error(&path);
    if (error == 0)
        error = sw_registry__exec(cx, "GET", sw_buf_cstr(&path), NULL, NULL,
                                  (size_t)-1 / 2 /* copy_chunk holds it to want */, &resp);
    if (error == 0 && !is_2xx(resp.status))
        error = sw_registry__status_error(cx, &resp, what);
    sw_buf_dispose(&path);
    sw_registry__resp_dispose(&resp);
    return error;
}

/* One copy attempt: a new session, the GET streamed into it, checked, committed. */
static int copy_once(sw_registry *r, reg_call *cx, const sw_ref *from,
                     const sw_registry_call *to_call, const sw_ref *to, const char *digest,
                     uint64_t size)
{
    copy_sink cs = {.want = size, .digest = digest};
    char got[SW_SHA256_DIGEST_BUF];
    int error = sw_registry_upload_start(r, to_call, to, &cs.u);
    if (error == 0 && (error = sw_registry_upload_set_streamed(cs.u)) < 0)
        sw_registry_upload_abort(cs.u);
    if (error < 0)
        return error;
    sw_sha256_init(&cs.hash);
    error = copy_get(cx, from, &cs);
    sw_sha256_final_digest(&cs.hash, got);
    if (error == 0 && cs.got != cs.want)
        error = sw_error_set(SW_EINVALID, "blob %s of %s: %llu bytes arrived, not %llu", digest,
                             cx->display, (unsigned long long)cs.got, (unsigned long long)cs.want);
    if (error == 0 && strcmp(got, digest) != 0)
        error = sw_error_set(SW_EINVALID, "blob digest mismatch: expected %s got %s (%s)", digest,
                             got, cx->display);
    if (error < 0) {
        sw_registry_upload_abort(cs.u);
        return error;
    }
    return sw_registry_upload_commit(cs.u, digest);
}

int sw_registry_copy_blob(sw_registry *r, const sw_registry_call *from_call, const sw_ref *from,
                          const sw_registry_call *to_call, const sw_ref *to, const char *digest,
                          uint64_t size)
{
    reg_call cx;
    int error = check_digest(digest);
    if (error == 0 && (!from || !to))
        error = sw_error_set(SW_EINVALID, "copy_blob: no source or destination");
    if (error == 0 && r->max_per_host < 2 && !strcmp(sw_ref_endpoint(from), sw_ref_endpoint(to)))
        error = sw_error_set(SW_EINVALID, "copy_blob within %s needs two connections to it",
                             sw_ref_endpoint(to));
    if (error == 0)
        error = sw_registry__call_init(r, from_call, from, &cx);
    if (error < 0)
        return error;
    /* A transport failure or 5xx anywhere (GET, a PATCH, the PUT) restarts from byte 0 in a
     * new session, as upload_with_restarts does; a wrong length or digest is final. */
    for (int attempt = 0; attempt <= r->retries; attempt++) {
        if (attempt > 0 && restart_pause(r, attempt - 1))
            break; /* stopped: the last failure is the answer */
        error = copy_once(r, &cx, from, to_call, to, digest, size);
        if (error == 0 || !transient(error))
            break;
    }
    sw_registry__call_dispose(&cx);
    return error;
}

/* ---- manifests ---- */

static int manifest_args(const sw_ref *ref, const char *media_type, const char *body, size_t len,
                         char ours[80])
{
    if (!ref || (!ref->tag[0] && !ref->digest[0]))
        return sw_error_set(SW_EINVALID, "put_manifest: the reference has no tag or digest");
    if (!media_type || !*media_type || strcspn(media_type, "\r\n") != strlen(media_type))
        return sw_error_set(SW_EINVALID, "put_manifest: no media type");
    if (!body || len == 0 || len > SW_MANIFEST_MAX_BYTES)
        return sw_error_set(SW_EINVALID, "put_manifest: manifest empty or larger than %d bytes",
                            SW_MANIFEST_MAX_BYTES);
    sw_registry__sha256(body, len, ours);
    if (ref->digest[0] && strcmp(ref->digest, ours) != 0)
        return sw_error_set(SW_EINVALID, "manifest pushed as %s hashes to %s", ref->digest, ours);
    return 0;
}

int sw_registry_put_manifest(sw_registry *r, const sw_registry_call *c, const sw_ref *ref,
                             const char *media_type, const char *body, size_t len,
                             char digest_out[80])
{
    char ours[80], what[WHAT_MAX];
    sw_buf path = SW_BUF_INIT(1024);
    reg_call cx;
    reg_resp resp;
    memset(&cx, 0, sizeof(cx));
    sw_registry__resp_init(&resp);
    int error = manifest_args(ref, media_type, body, len, ours);
    if (error == 0)
        error = push_call_init(r, c, ref, NULL, &cx);
    if (error < 0)
        goto done;
    const char *reference = ref->tag[0] ? ref->tag : ref->digest;
    snprintf(what, sizeof(what), "manifest %s%s%s", cx.display, ref->tag[0] ? ":" : "@", reference);
    sw_buf_printf(&path, "/v2/%s/manifests/%s", ref->repository, reference);
    reg_send send = {.content_type = media_type, .data = body, .len = len};
    error = send_req(&cx, "PUT", sw_buf_cstr(&path), &send, &resp);
    if (error == 0 && !is_2xx(resp.status))
        error = sw_registry__status_error(&cx, &resp, what);
    if (error == 0 && resp.digest[0] && strcmp(resp.digest, ours) != 0)
        error = sw_error_set(SW_EINVALID, "registry %s stored %s as %.80s, expected %s", cx.host,
                             what, resp.digest, ours);
    if (error < 0)
        goto done;
    stat_add(&r->st_manifests, 1);
    if (digest_out)
        memcpy(digest_out, ours, sizeof(ours));
done:
    sw_buf_dispose(&path);
    sw_registry__resp_dispose(&resp);
    sw_registry__call_dispose(&cx);
    return error;
}
