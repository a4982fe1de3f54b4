/* fuzz_request: libFuzzer target for the whole REST path (routing, query parsing, body
 * decoding, strict validation, kind strategies, patches, continue tokens) against a real SQLite
 * store in a temporary directory. Input: "METHOD PATH?QUERY\nCONTENT-TYPE\nBODY".
 * Seeds: fuzz/corpus/request/. */
#include "apiserver/api.h"
#include "apiserver/watchcache.h"
#include "util/alloc.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static sw_api api;

typedef struct query {
    char *keys[16];
    char *vals[16];
    size_t n;
} query;

static const char *lookup(void *conn, const char *key)
{
    query *q = conn;
    for (size_t i = 0; i < q->n; i++)
        if (!strcmp(q->keys[i], key))
            return q->vals[i];
    return NULL;
}

static void setup(void)
{
    char tmpl[] = "/tmp/sw-fuzz-XXXXXX", path[64];
    if (!mkdtemp(tmpl))
        abort();
    snprintf(path, sizeof(path), "%s/state.db", tmpl);
    sw_sqlite_opts o = {.sync_full = false};
    if (sw_store_sqlite_open(&api.store, path, &o) < 0 || sw_api_bootstrap(&api) < 0 ||
        sw_watchcache_new(&api.cache, &api, 64, 1u << 20, 0) < 0)
        abort();
    api.kctx.image_registry = "registry.local:5000";
}

static void split_query(char *path, query *q)
{
    char *qs = strchr(path, '?');
    q->n = 0;
    if (!qs)
        return;
    *qs++ = '\0';
    while (qs && *qs && q->n < 16) {
        char *amp = strchr(qs, '&');
        if (amp)
            *amp++ = '\0';
        char *eq = strchr(qs, '=');
        if (eq)
            *eq++ = '\0';
        q->keys[q->n] = qs;
        q->vals[q->n++] = eq ? eq : (char *)"";
        qs = amp;
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!api.store)
        setup();
    char *text = sw_strndup((const char *)data, size);
    char *nl1 = strchr(text, '\n');
    char *nl2 = nl1 ? strchr(nl1 + 1, '\n') : NULL;
    char *space = strchr(text, ' ');
    if (!nl1 || !nl2 || !space || space > nl1) {
        sw_free(text);
        return 0;
    }
    *space = *nl1 = *nl2 = '\0';
    query q;
    split_query(space + 1, &q);
    /* Watches block for their timeout; the watch path is covered by the e2e tests. */
    if (lookup(&q, "watch")) {
        sw_free(text);
        return 0;
    }
    sw_request req = {.method = text,
                      .path = space + 1,
                      .content_type = nl1 + 1,
                      .accept = "application/json",
                      .body = nl2 + 1,
                      .body_len = size - (size_t)(nl2 + 1 - text),
                      .query = lookup,
                      .conn = &q};
    sw_response resp;
    sw_response_init(&resp);
    if (sw_discovery_matches(req.path))
        sw_discovery_handle(&api, &req, &resp);
    else if (sw_openapi_matches(req.path))
        sw_openapi_handle(&api, &req, &resp);
    else
        sw_rest_handle(&api, &req, &resp);
    if (resp.status < 200 || resp.status > 599)
        abort();
    sw_response_dispose(&resp);
    sw_free(text);
    return 0;
}
