/* gitref: ls-remote through libgit2 (see gitref.h). */
#include "controllers/gitref.h"

#include "util/alloc.h"
#include "util/error.h"
#include "util/time.h"
#include "util/str.h"

#include <git2.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

static pthread_once_t init_once = PTHREAD_ONCE_INIT;

static void init(void)
{
    git_libgit2_init();
}

static bool is_commit_id(const char *s)
{
    if (!s || strlen(s) != 40)
        return false;
    for (const char *p = s; *p; p++)
        if (!((*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'f')))
            return false;
    return true;
}

static int ls_remote(const char *uri, const char *ref, char commit[41])
{
    git_remote *remote = NULL;
    const git_remote_head **heads = NULL;
    size_t n = 0;
    int error = 0;
    if (is_commit_id(ref)) {
        sw_strlcpy(commit, ref, 41);
        return 0;
    }
    pthread_once(&init_once, init);
    if (git_remote_create_detached(&remote, uri) < 0 ||
        git_remote_connect(remote, GIT_DIRECTION_FETCH, NULL, NULL, NULL) < 0 ||
        git_remote_ls(&heads, &n, remote) < 0) {
        const git_error *e = git_error_last();
        error = sw_error_set(SW_EUNAVAILABLE, "git ls-remote %.200s: %.300s", uri,
                             e && e->message ? e->message : "failed");
        goto done;
    }
    /* candidates in git's order of precedence; a peeled tag (^{}) names the commit itself */
    char want[4][300];
    size_t nwant = 0;
    if (!ref || !*ref) {
        snprintf(want[nwant++], sizeof(want[0]), "HEAD");
    } else if (sw_str_prefix(ref, "refs/")) {
        snprintf(want[nwant++], sizeof(want[0]), "%.280s", ref);
    } else {
        snprintf(want[nwant++], sizeof(want[0]), "refs/heads/%.280s", ref);
        snprintf(want[nwant++], sizeof(want[0]), "refs/tags/%.280s", ref);
    }
    for (size_t w = 0; w < nwant; w++) {
        const git_remote_head *hit = NULL, *peeled = NULL;
        size_t len = strlen(want[w]);
        for (size_t i = 0; i < n; i++) {
            const char *name = heads[i]->name;
            if (!strcmp(name, want[w]))
                hit = heads[i];
            else if (!strncmp(name, want[w], len) && !strcmp(name + len, "^{}"))
                peeled = heads[i];
        }
        if (peeled || hit) {
            git_oid_tostr(commit, 41, &(peeled ? peeled : hit)->oid);
            goto done;
        }
    }
    error = sw_error_set(SW_ENOTFOUND, "git ls-remote %.200s: no ref \"%.200s\"", uri,
                         ref && *ref ? ref : "HEAD");
done:
    if (remote) {
        git_remote_disconnect(remote);
        git_remote_free(remote);
    }
    return error;
}

/* One resolution on its own thread; the caller and the thread each hold a reference. */
typedef struct job {
    pthread_mutex_t mu;
    pthread_cond_t cond;
    int refs;
    bool done, abandoned;
    int error;
    char msg[600];
    char *uri, *ref;
    char commit[41];
} job;

static pthread_mutex_t pending_mu = PTHREAD_MUTEX_INITIALIZER;
static int pending; /* jobs whose caller gave up and that have not ended */

static void job_unref(job *j)
{
    pthread_mutex_lock(&j->mu);
    bool last = --j->refs == 0;
    pthread_mutex_unlock(&j->mu);
    if (!last)
        return;
    pthread_mutex_destroy(&j->mu);
    pthread_cond_destroy(&j->cond);
    sw_free(j->uri);
    sw_free(j->ref);
    sw_free(j);
}

static void *job_main(void *arg)
{
    job *j = arg;
    char commit[41] = "";
    int error = ls_remote(j->uri, j->ref, commit);
    pthread_mutex_lock(&j->mu);
    j->error = error;
    if (error < 0)
        sw_strlcpy(j->msg, sw_error_msg(), sizeof(j->msg));
    sw_strlcpy(j->commit, commit, sizeof(j->commit));
    bool abandoned = j->abandoned;
    j->done = true;
    pthread_cond_signal(&j->cond);
    pthread_mutex_unlock(&j->mu);
    if (abandoned) {
        pthread_mutex_lock(&pending_mu);
        pending--;
        pthread_mutex_unlock(&pending_mu);
    }
    job_unref(j);
    return NULL;
}

int sw_gitref_resolve(const char *uri, const char *ref, char commit[41], int timeout_ms,
                      int max_pending)
{
    if (is_commit_id(ref)) {
        sw_strlcpy(commit, ref, 41);
        return 0;
    }
    pthread_mutex_lock(&pending_mu);
    bool full = pending >= max_pending;
    pthread_mutex_unlock(&pending_mu);
    if (full)
        return sw_error_set(SW_EUNAVAILABLE,
                            "git ls-remote %.200s: not tried: %d git remotes are not answering",
                            uri, max_pending);
    job *j = sw_calloc(1, sizeof(*j));
    pthread_mutex_init(&j->mu, NULL);
    sw_time_cond_init(&j->cond);
    j->refs = 2;
    j->uri = sw_strdup(uri);
    j->ref = ref ? sw_strdup(ref) : NULL;
    pthread_t t;
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    if (pthread_create(&t, &attr, job_main, j) != 0) {
        pthread_attr_destroy(&attr);
        j->refs = 1;
        job_unref(j);
        return sw_error_set(SW_ERROR, "cannot start a git ls-remote");
    }
    pthread_attr_destroy(&attr);
    struct timespec until = sw_time_mono_deadline(timeout_ms);
    int error;
    pthread_mutex_lock(&j->mu);
    while (!j->done && pthread_cond_timedwait(&j->cond, &j->mu, &until) == 0)
        ;
    if (j->done) {
        error = j->error;
        if (error < 0)
            sw_error_set(error, "%s", j->msg);
        else
            sw_strlcpy(commit, j->commit, 41);
    } else {
        error =
            sw_error_set(SW_ETIMEOUT, "git ls-remote %.200s: no answer in %d ms", uri, timeout_ms);
        j->abandoned = true; /* the thread takes itself off pending when it ends */
        pthread_mutex_lock(&pending_mu);
        pending++;
        pthread_mutex_unlock(&pending_mu);
    }
    pthread_mutex_unlock(&j->mu);
    job_unref(j);
    return error;
}
