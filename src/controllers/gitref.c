/* gitref: ls-remote through libgit2 (see gitref.h). */
#include "controllers/gitref.h"

#include "util/error.h"
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

int sw_gitref_resolve(const char *uri, const char *ref, char commit[41])
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
