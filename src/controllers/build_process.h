/* build_process: the process build strategy (docs/internals/builds.md): every build runs as a
 * child process, `slipway builder --server ... --ca ... --token-file ... --namespace ...
 * --build ...`, in its own process group, with stdout and stderr in one pipe. The token, CA
 * and registry credentials go to 0600 files in a private temporary directory that is removed
 * when the run is forgotten. */
#ifndef SW_CONTROLLERS_BUILD_PROCESS_H
#define SW_CONTROLLERS_BUILD_PROCESS_H

#include "controllers/build.h"

typedef struct sw_build_process_opts {
    const char *builder_bin; /* the executable; NULL: the running binary (/proc/self/exe) */
    const char *tmp_dir;     /* parent of the per-build directories; NULL: $TMPDIR or /tmp */
} sw_build_process_opts;

/* A new strategy; release it with its own free member. */
int sw_build_process_strategy_new(sw_build_strategy **out, const sw_build_process_opts *opts);

#endif
