/* rollouthook: the rollout notification sender (see rollouthook.h). */
#include "controllers/rollouthook.h"

#include "util/alloc.h"
#include "util/error.h"
#include "util/json.h"
#include "util/log.h"
#include "util/str.h"
#include "util/time.h"

#include <curl/curl.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SECRET_TTL_MS 30000
#define BACKOFF_FIRST_MS 1000
#define BACKOFF_MAX_MS 60000
#define REQUEST_TIMEOUT_MS 10000
#define URL_MAX 2048
#define KEY_MAX 4096

struct sw_rollout_hook {
    sw_client *client;
    char ns[254], name[254];
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cond;
    char *queue[SW_ROLLOUT_HOOK_QUEUE]; /* JSON bodies, oldest at head */
    size_t head, count;
    char *inflight; /* the head being posted (the sender frees it if it was dropped) */
    bool stopping;
    /* the Secret as last read (sender thread only) */
    char url[URL_MAX], host[256];
    unsigned char key[KEY_MAX];
    size_t keylen;
    int64_t read_ms;
};

void sw_rollout_hook_sign(const char *key, size_t keylen, const char *body, size_t len, char *out,
                          size_t n)
{
    unsigned char mac[EVP_MAX_MD_SIZE];
    unsigned int maclen = 0;
    HMAC(EVP_sha256(), key, (int)keylen, (const unsigned char *)body, len, mac, &maclen);
    size_t off = (size_t)snprintf(out, n, "sha256=");
    for (unsigned int i = 0; i < maclen && off + 2 < n; i++)
        off += (size_t)snprintf(out + off, n - off, "%02x", mac[i]);
}

/* The Secret's url and secret, refreshed when older than SECRET_TTL_MS. */
static int read_secret(sw_rollout_hook *h)
{
    int64_t now = sw_time_mono_ms();
    if (h->read_ms && now - h->read_ms < SECRET_TTL_MS && h->url[0])
        return 0;
    json_t *s = NULL;
    unsigned char *url = NULL, *key = NULL;
    size_t ul = 0, kl = 0;
    int error = sw_client_get(h->client, &sw_res_secrets, h->ns, h->name, &s);
    const char *u64 = json_string_value(json_object_get(json_object_get(s, "data"), "url"));
    const char *k64 = json_string_value(json_object_get(json_object_get(s, "data"), "secret"));
    if (error == 0 && (!u64 || !k64 || sw_base64_decode(u64, strlen(u64), &url, &ul) < 0 ||
                       sw_base64_decode(k64, strlen(k64), &key, &kl) < 0))
        error =
            sw_error_set(SW_EINVALID, "secret %s/%s needs the keys url and secret", h->ns, h->name);
    if (error == 0 && (ul == 0 || ul >= URL_MAX || memchr(url, '\0', ul) ||
                       (strncmp((char *)url, "http://", 7) && strncmp((char *)url, "https://", 8))))
        error = sw_error_set(SW_EINVALID, "secret %s/%s: url must be an http or https URL", h->ns,
                             h->name);
    if (error == 0 && (kl == 0 || kl > KEY_MAX))
        error = sw_error_set(SW_EINVALID, "secret %s/%s: secret must be 1 to %d bytes", h->ns,
                             h->name, KEY_MAX);
    if (error == 0) {
        memcpy(h->url, url, ul);
        h->url[ul] = '\0';
        const char *p = strstr(h->url, "://") + 3;
        size_t hl = strcspn(p, "/?#");
        snprintf(h->host, sizeof(h->host), "%.*s", (int)(hl < 200 ? hl : 200), p);
        memcpy(h->key, key, kl);
        h->keylen = kl;
        h->read_ms = now;
    }
    if (key)
        OPENSSL_cleanse(key, kl);
    sw_free(url);
    sw_free(key);
    json_decref(s);
    return error;
}

static size_t discard(char *p, size_t size, size_t n, void *u)
{
    (void)p;
    (void)u;
    return size * n;
}

/* One POST of body: 0 on a 2xx answer. */
static int post(sw_rollout_hook *h, CURL *curl, const char *body)
{
    char sig[80], id[40], hdr_sig[128], hdr_id[80];
    unsigned char rnd[16];
    int error = read_secret(h);
    if (error < 0)
        return error;
    sw_rollout_hook_sign((const char *)h->key, h->keylen, body, strlen(body), sig, sizeof(sig));
    if (RAND_bytes(rnd, sizeof(rnd)) != 1)
        return sw_error_set(SW_ERROR, "no random bytes for a delivery id");
    for (size_t i = 0; i < sizeof(rnd); i++)
        snprintf(id + 2 * i, 3, "%02x", rnd[i]);
    snprintf(hdr_sig, sizeof(hdr_sig), "X-Slipway-Signature-256: %s", sig);
    snprintf(hdr_id, sizeof(hdr_id), "X-Slipway-Delivery: %s", id);
    struct curl_slist *hdrs = curl_slist_append(NULL, "Content-Type: application/json");
    hdrs = curl_slist_append(hdrs, hdr_sig);
    hdrs = curl_slist_append(hdrs, hdr_id);
    curl_easy_reset(curl);
    curl_easy_setopt(curl, CURLOPT_URL, h->url);
    curl_easy_setopt(curl, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(curl, CURLOPT_HTTPHEADER, hdrs);
    curl_easy_setopt(curl, CURLOPT_POSTFIELDS, body);
    curl_easy_setopt(curl, CURLOPT_POSTFIELDSIZE, (long)strlen(body));
    curl_easy_setopt(curl, CURLOPT_TIMEOUT_MS, (long)REQUEST_TIMEOUT_MS);
    curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, discard);
    curl_easy_setopt(curl, CURLOPT_USERAGENT, "slipway-rollout-hook");
    CURLcode rc = curl_easy_perform(curl);
    long status = 0;
    curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &status);
    curl_slist_free_all(hdrs);
    if (rc != CURLE_OK)
        return sw_error_set(SW_EUNAVAILABLE, "rollout webhook at %s unreachable: %s", h->host,
                            curl_easy_strerror(rc));
    if (status < 200 || status > 299)
        return sw_error_set(SW_EUNAVAILABLE, "rollout webhook at %s answered %ld", h->host, status);
    return 0;
}

/* Waits up to ms unless stopping; false when stopping. Under mu. */
static bool wait_ms(sw_rollout_hook *h, int64_t ms)
{
    struct timespec ts = sw_time_mono_deadline(ms);
    while (!h->stopping && pthread_cond_timedwait(&h->cond, &h->mu, &ts) == 0)
        ;
    return !h->stopping;
}

static void *sender_main(void *arg)
{
    sw_rollout_hook *h = arg;
    CURL *curl = curl_easy_init();
    int64_t backoff = BACKOFF_FIRST_MS;
    pthread_mutex_lock(&h->mu);
    while (!h->stopping) {
        if (h->count == 0) {
            pthread_cond_wait(&h->cond, &h->mu);
            continue;
        }
        char *body = h->queue[h->head];
        h->inflight = body;
        pthread_mutex_unlock(&h->mu);
        int error = curl ? post(h, curl, body) : sw_error_set(SW_ERROR, "no curl handle");
        pthread_mutex_lock(&h->mu);
        h->inflight = NULL;
        bool still = h->count && h->queue[h->head] == body; /* not dropped meanwhile */
        if (still && error == 0) {
            h->queue[h->head] = NULL;
            h->head = (h->head + 1) % SW_ROLLOUT_HOOK_QUEUE;
            h->count--;
        }
        if (!still || error == 0)
            sw_free(body);
        if (error == 0 || !still) {
            backoff = BACKOFF_FIRST_MS;
            continue;
        }
        sw_log(SW_LOG_WARN,
               "rollout notification not delivered (%zu waiting): %s; again in %lld ms", h->count,
               sw_error_msg(), (long long)backoff);
        if (!wait_ms(h, backoff))
            break;
        backoff = backoff * 2 > BACKOFF_MAX_MS ? BACKOFF_MAX_MS : backoff * 2;
    }
    pthread_mutex_unlock(&h->mu);
    if (curl)
        curl_easy_cleanup(curl);
    return NULL;
}

int sw_rollout_hook_new(sw_rollout_hook **out, sw_client *c, const char *secret_ref)
{
    const char *slash = secret_ref ? strchr(secret_ref, '/') : NULL;
    if (!slash || slash == secret_ref || !slash[1] || strchr(slash + 1, '/') ||
        (size_t)(slash - secret_ref) >= 254 || strlen(slash + 1) >= 254)
        return sw_error_set(SW_EINVALID,
                            "--rollout-webhook-secret: expected NAMESPACE/NAME of a Secret with "
                            "the keys url and secret, not \"%.100s\"",
                            secret_ref ? secret_ref : "");
    sw_rollout_hook *h = sw_calloc(1, sizeof(*h));
    h->client = c;
    memcpy(h->ns, secret_ref, (size_t)(slash - secret_ref));
    sw_strlcpy(h->name, slash + 1, sizeof(h->name));
    pthread_mutex_init(&h->mu, NULL);
    sw_time_cond_init(&h->cond);
    if (pthread_create(&h->thread, NULL, sender_main, h) != 0) {
        pthread_mutex_destroy(&h->mu);
        pthread_cond_destroy(&h->cond);
        sw_free(h);
        return sw_error_set(SW_ERROR, "cannot start the rollout notification sender");
    }
    *out = h;
    return 0;
}

void sw_rollout_hook_send(sw_rollout_hook *h, const json_t *record)
{
    if (!h)
        return;
    char *body = sw_json_dumps(record, NULL);
    pthread_mutex_lock(&h->mu);
    if (h->count == SW_ROLLOUT_HOOK_QUEUE) { /* full: the oldest goes */
        char *old = h->queue[h->head];
        h->queue[h->head] = NULL;
        h->head = (h->head + 1) % SW_ROLLOUT_HOOK_QUEUE;
        h->count--;
        if (old != h->inflight) /* one being posted is freed by the sender */
            sw_free(old);
        sw_log(SW_LOG_WARN, "rollout notification queue full: the oldest record was dropped");
    }
    h->queue[(h->head + h->count) % SW_ROLLOUT_HOOK_QUEUE] = body;
    h->count++;
    pthread_cond_signal(&h->cond);
    pthread_mutex_unlock(&h->mu);
}

void sw_rollout_hook_free(sw_rollout_hook *h)
{
    if (!h)
        return;
    pthread_mutex_lock(&h->mu);
    h->stopping = true;
    pthread_cond_broadcast(&h->cond);
    pthread_mutex_unlock(&h->mu);
    pthread_join(h->thread, NULL);
    if (h->count)
        sw_log(SW_LOG_WARN, "%zu rollout notification(s) not delivered at shutdown", h->count);
    for (size_t i = 0; i < h->count; i++)
        sw_free(h->queue[(h->head + i) % SW_ROLLOUT_HOOK_QUEUE]);
    OPENSSL_cleanse(h->key, sizeof(h->key));
    pthread_mutex_destroy(&h->mu);
    pthread_cond_destroy(&h->cond);
    sw_free(h);
}
