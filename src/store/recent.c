/* store/recent: the latest seen version per key, direct-mapped (see recent.h). */
#include "store/recent.h"

#include "util/alloc.h"
#include "util/error.h"
#include "util/str.h"

#include <pthread.h>
#include <string.h>

typedef struct slot {
    char *key; /* NULL: empty */
    char *value;
    size_t len;
    int64_t mod_rev, create_rev;
} slot;

struct sw_recent {
    pthread_mutex_t mu;
    slot *slots;
    size_t n, max_value, max_bytes, bytes;
};

sw_recent *sw_recent_new(size_t slots, size_t max_value, size_t max_bytes)
{
    sw_recent *r = sw_calloc(1, sizeof(*r));
    pthread_mutex_init(&r->mu, NULL);
    r->n = slots ? slots : 1;
    r->slots = sw_calloc(r->n, sizeof(*r->slots));
    r->max_value = max_value;
    r->max_bytes = max_bytes;
    return r;
}

static void slot_clear(sw_recent *r, slot *sl)
{
    if (sl->key)
        r->bytes -= strlen(sl->key) + sl->len;
    sw_free(sl->key);
    sw_free(sl->value);
    memset(sl, 0, sizeof(*sl));
}

void sw_recent_free(sw_recent *r)
{
    if (!r)
        return;
    for (size_t i = 0; i < r->n; i++)
        slot_clear(r, &r->slots[i]);
    sw_free(r->slots);
    pthread_mutex_destroy(&r->mu);
    sw_free(r);
}

static slot *slot_of(sw_recent *r, const char *key)
{
    return &r->slots[sw_fnv1a(SW_FNV1A_OFFSET, key, strlen(key)) % r->n];
}

static void store(sw_recent *r, const char *key, const char *value, size_t len, int64_t mod_rev,
                  int64_t create_rev, bool fill)
{
    size_t kl = strlen(key);
    pthread_mutex_lock(&r->mu);
    slot *sl = slot_of(r, key);
    bool same = sl->key && !strcmp(sl->key, key);
    if ((!same && !fill) || (same && sl->mod_rev >= mod_rev))
        goto done;
    if (same && create_rev == 0)
        create_rev = sl->create_rev; /* an update's reply does not say; the key's did not move */
    slot_clear(r, sl);
    if (len > r->max_value || r->bytes + kl + len > r->max_bytes)
        goto done; /* too large to keep: the next update reads the store */
    sl->key = sw_strndup(key, kl);
    sl->value = sw_malloc(len + 1);
    memcpy(sl->value, value, len);
    sl->value[len] = '\0';
    sl->len = len;
    sl->mod_rev = mod_rev;
    sl->create_rev = create_rev;
    r->bytes += kl + len;
done:
    pthread_mutex_unlock(&r->mu);
}

void sw_recent_put(sw_recent *r, const char *key, const char *value, size_t len, int64_t mod_rev,
                   int64_t create_rev)
{
    store(r, key, value, len, mod_rev, create_rev, true);
}

void sw_recent_refresh(sw_recent *r, const char *key, const char *value, size_t len,
                       int64_t mod_rev, int64_t create_rev)
{
    store(r, key, value, len, mod_rev, create_rev, false);
}

void sw_recent_drop(sw_recent *r, const char *key, int64_t mod_rev)
{
    pthread_mutex_lock(&r->mu);
    slot *sl = slot_of(r, key);
    if (sl->key && !strcmp(sl->key, key) && (mod_rev == 0 || sl->mod_rev <= mod_rev))
        slot_clear(r, sl);
    pthread_mutex_unlock(&r->mu);
}

int sw_recent_get(sw_recent *r, const char *key, sw_kv *out)
{
    int error = SW_ENOTFOUND;
    memset(out, 0, sizeof(*out));
    pthread_mutex_lock(&r->mu);
    slot *sl = slot_of(r, key);
    if (sl->key && !strcmp(sl->key, key)) {
        out->key = sw_strdup(sl->key);
        out->value = sw_malloc(sl->len + 1);
        memcpy(out->value, sl->value, sl->len + 1);
        out->value_len = sl->len;
        out->mod_rev = sl->mod_rev;
        out->create_rev = sl->create_rev;
        error = 0;
    }
    pthread_mutex_unlock(&r->mu);
    return error;
}
