/* gitref: what commit a git remote's ref names now (git ls-remote), for controllers that
 * rebuild when a source's revision moves. libgit2, no clone, nothing written to disk. */
#ifndef SW_CONTROLLERS_GITREF_H
#define SW_CONTROLLERS_GITREF_H

/* The commit (40 hex digits) that ref names at uri: ref may be a branch, a tag (peeled to its
 * commit), a full ref name, a commit id (returned as is) or empty/NULL for the remote's HEAD.
 * SW_ENOTFOUND when the remote has no such ref; SW_EUNAVAILABLE when it cannot be reached
 * (libgit2's message, which names the remote but never credentials: none are used).
 *
 * libgit2 1.5 has no network timeouts, so the ls-remote runs on a thread of its own and the
 * caller waits at most timeout_ms (SW_ETIMEOUT after that; the thread finishes, or hangs, on
 * its own and frees what it holds). At most max_pending may hang at once: past that the call
 * answers SW_EUNAVAILABLE without trying, so a remote that never answers cannot take every
 * thread. */
int sw_gitref_resolve(const char *uri, const char *ref, char commit[41], int timeout_ms,
                      int max_pending);

#endif
