/* envtest: `slipway envtest-assets DIR` writes a directory KUBEBUILDER_ASSETS can name, so an
 * operator's controller-runtime envtest starts slipway where it would start kube-apiserver:
 * DIR/kube-apiserver (a script running this slipway's `server` with envtest's flags),
 * DIR/etcd and DIR/kubectl (links to the ones on PATH; envtest starts an etcd, which slipway
 * does not use). docs/envtest.md. */
#include "cmd/cmd.h"

#include "util/buf.h"
#include "util/error.h"
#include "util/path.h"
#include "util/str.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static void usage(FILE *f)
{
    fprintf(
        f, "Usage: slipway envtest-assets DIR\n\n"
           "Writes DIR/kube-apiserver (runs `slipway server` with the kube-apiserver flags\n"
           "envtest passes), and links DIR/etcd and DIR/kubectl to the ones on PATH, so that\n"
           "KUBEBUILDER_ASSETS=DIR makes controller-runtime's envtest start slipway:\n\n"
           "  slipway envtest-assets ./bin/k8s && KUBEBUILDER_ASSETS=$PWD/bin/k8s go test ./...\n");
}

static int link_tool(const char *dir, const char *name)
{
    char target[PATH_MAX], link[PATH_MAX + 64];
    if (!sw_path_find_exec(name, target, sizeof(target)))
        return sw_error_set(SW_ENOTFOUND, "%s is not on PATH (scripts/install-deps installs it)",
                            name);
    snprintf(link, sizeof(link), "%s/%s", dir, name);
    if (unlink(link) < 0 && errno != ENOENT)
        return sw_error_set(SW_ERROR, "cannot replace %s: %s", link, sw_strerror(errno));
    if (symlink(target, link) < 0)
        return sw_error_set(SW_ERROR, "cannot link %s: %s", link, sw_strerror(errno));
    return 0;
}

int sw_cmd_envtest_assets(int argc, char **argv)
{
    if (argc > 1 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
        usage(stdout);
        return 0;
    }
    if (argc != 2 || argv[1][0] == '-') {
        usage(stderr);
        return 2;
    }
    const char *dir = argv[1];
    char self[PATH_MAX], script[PATH_MAX + 64];
    ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
    if (n <= 0) {
        fprintf(stderr, "error: cannot find this slipway binary: %s\n", sw_strerror(errno));
        return 1;
    }
    self[n] = '\0';
    if (mkdir(dir, 0755) < 0 && errno != EEXIST) {
        fprintf(stderr, "error: cannot create %s: %s\n", dir, sw_strerror(errno));
        return 1;
    }
    /* the path single-quoted for sh: ' becomes '\'' */
    sw_buf body = SW_BUF_INIT(2 * PATH_MAX + 256);
    sw_buf_puts(&body, "#!/bin/sh\n# written by `slipway envtest-assets`: slipway serves as "
                       "kube-apiserver\nexec '");
    for (const char *p = self; *p; p++)
        sw_buf_puts(&body, *p == '\'' ? "'\\''" : (char[]){*p, '\0'});
    sw_buf_puts(&body, "' server \"$@\"\n");
    snprintf(script, sizeof(script), "%s/kube-apiserver", dir);
    int error = sw_buf_error(&body);
    if (error == 0)
        error = sw_path_write(script, sw_buf_cstr(&body), body.len, 0755);
    sw_buf_dispose(&body);
    if (error == 0)
        error = link_tool(dir, "etcd");
    if (error == 0)
        error = link_tool(dir, "kubectl");
    if (error < 0) {
        fprintf(stderr, "error: %s\n", sw_error_msg());
        return 1;
    }
    printf("%s: kube-apiserver (slipway), etcd, kubectl\n", dir);
    return 0;
}
