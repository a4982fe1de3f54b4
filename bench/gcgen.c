/* sw-gcgen: the client behind bench/gc.sh. It fills a namespace with owner ConfigMaps and their
 * dependents (each dependent names its owner by uid, with blockOwnerDeletion), deletes objects
 * by name with a propagation policy at a given concurrency, and waits for a namespace to hold
 * no ConfigMap any more. Each mode prints one `key=value ...` line on stdout; diagnostics go
 * to stderr. Built on bench/benchlib (worker pool, keep-alive connections) and src/util. */
#include "benchlib.h"

#include "util/alloc.h"
#include "util/str.h"

#include <curl/curl.h>
#include <jansson.h>

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define GG_URL_MAX 1024
#define GG_BODY_MAX 2048

struct gg_opts {
    const char *mode; /* populate | delete | drain */
    const char *url;
    const char *ns;
    struct bench_conn_opts http;
    uint64_t owners;   /* populate: owners; delete: objects o-000000.. */
    uint64_t per;      /* populate: dependents per owner (0: the owners stand alone) */
    uint64_t inflight; /* worker threads */
    double timeout;    /* drain: give up after this long */
    const char *policy;
};

/* One POST; the uid of the created object into uid (when given). */
static int gg_create(struct bench_conn *c, const struct gg_opts *o, const char *name,
                     const char *owner, const char *owner_uid, char *uid, size_t n)
{
    char url[GG_URL_MAX], body[GG_BODY_MAX];
    int len;
    snprintf(url, sizeof(url), "%s/api/v1/namespaces/%s/configmaps", o->url, o->ns);
    if (owner)
        len = snprintf(body, sizeof(body),
                       "{\"metadata\":{\"name\":\"%s\",\"labels\":{\"role\":\"dependent\"},"
                       "\"ownerReferences\":[{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\","
                       "\"name\":\"%s\",\"uid\":\"%s\",\"blockOwnerDeletion\":true}]},"
                       "\"data\":{\"k\":\"a value of some thirty-two bytes\"}}",
                       name, owner, owner_uid);
    else
        len = snprintf(body, sizeof(body),
                       "{\"metadata\":{\"name\":\"%s\",\"labels\":{\"role\":\"owner\"}},"
                       "\"data\":{\"k\":\"a value of some thirty-two bytes\"}}",
                       name);
    if (len < 0 || (size_t)len >= sizeof(body) ||
        bench_conn_do(c, "POST", url, NULL, body, (size_t)len) < 0)
        return -1;
    if (c->status != 201)
        return bench_conn_unexpected(c, "create");
    if (!uid)
        return 0;
    json_t *root = json_loadb(sw_buf_cstr(&c->resp), c->resp.len, 0, NULL);
    const char *u = json_string_value(json_object_get(json_object_get(root, "metadata"), "uid"));
    int rc = u && sw_strlcpy(uid, u, n) < n ? 0 : -1;
    json_decref(root);
    return rc;
}

/* populate: job n makes owner n, then its dependents. */
static int gg_populate_job(struct bench_worker *w, uint64_t n, void *payload)
{
    const struct gg_opts *o = payload;
    char owner[64], dep[80], uid[64];
    snprintf(owner, sizeof(owner), "o-%06llu", (unsigned long long)n);
    if (gg_create(&w->conn, o, owner, NULL, NULL, uid, sizeof(uid)) < 0)
        return -1;
    w->ok++;
    for (uint64_t j = 0; j < o->per; j++) {
        snprintf(dep, sizeof(dep), "d-%06llu-%llu", (unsigned long long)n, (unsigned long long)j);
        if (gg_create(&w->conn, o, dep, owner, uid, NULL, 0) < 0)
            return -1;
        w->ok++;
    }
    return 0;
}

/* delete: job n deletes o-n with the policy. */
static int gg_delete_job(struct bench_worker *w, uint64_t n, void *payload)
{
    const struct gg_opts *o = payload;
    char url[GG_URL_MAX], body[128];
    snprintf(url, sizeof(url), "%s/api/v1/namespaces/%s/configmaps/o-%06llu", o->url, o->ns,
             (unsigned long long)n);
    int len = snprintf(body, sizeof(body), "{\"propagationPolicy\":\"%s\"}", o->policy);
    if (bench_conn_do(&w->conn, "DELETE", url, NULL, body, (size_t)len) < 0)
        return -1;
    if (w->conn.status != 200 && w->conn.status != 202)
        return bench_conn_unexpected(&w->conn, "delete");
    w->ok++;
    return 0;
}

static int gg_pool(const struct gg_opts *o, bench_job_fn job)
{
    struct bench_pool_result r;
    struct bench_pool_opts po = {.workers = (unsigned)o->inflight,
                                 .jobs = o->owners,
                                 .duration = 3600,
                                 .max_failing = 5,
                                 .conn = &o->http,
                                 .job = job,
                                 .payload = (void *)o};
    if (bench_pool_run(&po, &r) < 0)
        return -1;
    printf("mode=%s inflight=%u objects=%llu errors=%llu secs=%.3f rate=%.1f\n", o->mode, r.workers,
           (unsigned long long)r.ok, (unsigned long long)r.errors, r.secs,
           r.secs > 0 ? (double)r.ok / r.secs : 0);
    bench_lat_dispose(&r.lat);
    return r.errors ? -1 : 0;
}

/* drain: polls a one-item list of the namespace's ConfigMaps until it is empty. */
static int gg_drain(const struct gg_opts *o)
{
    struct bench_conn c;
    char url[GG_URL_MAX];
    int rc = -1;
    int64_t t0 = bench_now(), end = t0 + (int64_t)(o->timeout * BENCH_NS_PER_SEC);
    snprintf(url, sizeof(url), "%s/api/v1/namespaces/%s/configmaps?limit=1", o->url, o->ns);
    if (bench_conn_init(&c, &o->http) < 0)
        goto done;
    while (bench_now() < end) {
        if (bench_conn_do(&c, "GET", url, NULL, NULL, 0) < 0 || c.status != 200)
            goto done;
        if (strstr(sw_buf_cstr(&c.resp), "\"items\":[]")) {
            printf("mode=drain secs=%.3f\n", (double)(bench_now() - t0) / BENCH_NS_PER_SEC);
            rc = 0;
            goto done;
        }
        bench_sleep_ns(20 * 1000 * 1000);
    }
    bench_complain("drain: %s still holds ConfigMaps after %.0f s", o->ns, o->timeout);
done:
    bench_conn_dispose(&c);
    return rc;
}

static void gg_usage(void)
{
    fprintf(stderr,
            "usage: sw-gcgen MODE --url URL [--token T] [--insecure-tls] --ns NS [options]\n"
            "  populate --owners N --per M --inflight P   N owners with M dependents each\n"
            "  delete --owners N --inflight P --policy Background|Foreground|Orphan\n"
            "                                              deletes o-000000 .. o-(N-1)\n"
            "  drain [--timeout S]                          until NS holds no ConfigMap\n");
}

static int gg_parse(int argc, char **argv, struct gg_opts *o)
{
    memset(o, 0, sizeof(*o));
    o->inflight = 20;
    o->timeout = 600;
    o->policy = "Background";
    o->http = (struct bench_conn_opts){.timeout = 60, .limit = (size_t)64 << 20};
    if (argc < 2)
        return -1;
    o->mode = argv[1];
    const struct bench_numopt nums[] = {{"--owners", &o->owners, NULL},
                                        {"--per", &o->per, NULL},
                                        {"--inflight", &o->inflight, NULL},
                                        {"--timeout", NULL, &o->timeout}};
    for (int i = 2; i < argc; i++) {
        const char *v = NULL;
        if (!strcmp(argv[i], "--insecure-tls")) {
            o->http.insecure_tls = true;
            continue;
        }
        if (bench_opt_value(argc, argv, &i, &v) < 0)
            return -1;
        const char *flag = argv[i - 1];
        int r = bench_numopt_set(nums, sizeof(nums) / sizeof(nums[0]), 1000000, flag, v);
        if (r == 0)
            continue;
        if (r < 0)
            return -1;
        if (!strcmp(flag, "--url"))
            o->url = v;
        else if (!strcmp(flag, "--token"))
            o->http.token = v;
        else if (!strcmp(flag, "--ns"))
            o->ns = v;
        else if (!strcmp(flag, "--policy"))
            o->policy = v;
        else
            return -1;
    }
    if (!o->url || !o->ns || !o->inflight || o->inflight > 256)
        return -1;
    return 0;
}

int main(int argc, char **argv)
{
    struct gg_opts o;
    int rc = -1;
    bench_set_prog("sw-gcgen");
    if (gg_parse(argc, argv, &o) < 0) {
        gg_usage();
        return 2;
    }
    signal(SIGPIPE, SIG_IGN);
    if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK)
        return 1;
    if (!strcmp(o.mode, "populate") && o.owners)
        rc = gg_pool(&o, gg_populate_job);
    else if (!strcmp(o.mode, "delete") && o.owners)
        rc = gg_pool(&o, gg_delete_job);
    else if (!strcmp(o.mode, "drain"))
        rc = gg_drain(&o);
    else
        gg_usage();
    curl_global_cleanup();
    return rc == 0 ? 0 : 1;
}
