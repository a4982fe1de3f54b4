/* fuzz_dockerfile: libFuzzer target for src/builder/dockerfile. Parses the input with two build
 * args and a base image environment, walks every instruction checking the invariants the builder
 * relies on (instruction 0 is FROM, strings are valid UTF-8, WORKDIR is absolute, COPY has a
 * source and a destination, only ARG values may be NULL), and that a failure has a message that
 * names the Dockerfile. The same input goes through sw_dockerfile_stages (the buildah backend's
 * scan): at least one stage, each with a non-empty image and a byte range inside the input, in
 * order. Seeds: fuzz/corpus/dockerfile/. */
#include "builder/dockerfile.h"
#include "util/error.h"

#include <jansson.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_str(const char *s)
{
    if (!s)
        abort();
    json_t *j = json_stringn(s, strlen(s)); /* NULL on invalid UTF-8 */
    if (!j)
        abort();
    json_decref(j);
}

static void walk(const sw_dockerfile *df)
{
    size_t n = sw_dockerfile_count(df);
    if (n == 0 || sw_dockerfile_instr(df, 0)->op != SW_DF_FROM || sw_dockerfile_instr(df, n))
        abort();
    check_str(sw_dockerfile_base(df));
    for (size_t i = 0; i < n; i++) {
        const sw_df_instr *ins = sw_dockerfile_instr(df, i);
        if (ins->line < 1 || strcmp(sw_df_op_name(ins->op), "?") == 0)
            abort();
        for (size_t k = 0; k < ins->nargs; k++)
            check_str(ins->args[k]);
        for (size_t k = 0; k < ins->npairs; k++) {
            check_str(ins->keys[k]);
            if (ins->values[k])
                check_str(ins->values[k]);
            else if (ins->op != SW_DF_ARG)
                abort();
        }
        if (ins->op == SW_DF_WORKDIR && (ins->nargs != 1 || ins->args[0][0] != '/'))
            abort();
        if ((ins->op == SW_DF_COPY || ins->op == SW_DF_ADD) && ins->nargs < 2)
            abort();
        if (ins->op == SW_DF_EXPOSE && (!ins->nargs || !strchr(ins->args[0], '/')))
            abort();
        if (ins->chown)
            check_str(ins->chown);
        if (ins->chmod)
            check_str(ins->chmod);
    }
    for (size_t i = 0; i < sw_dockerfile_warning_count(df); i++)
        check_str(sw_dockerfile_warning(df, i));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const char *const build_args[] = {"VERSION=1.2.3", "PORT=8080", NULL};
    static const char *const base_env[] = {"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=/root", NULL};
    sw_dockerfile_opts opts = SW_DOCKERFILE_OPTS_INIT;
    opts.build_args = build_args;
    opts.base_env = base_env;
    opts.base_workdir = "/srv";
    sw_dockerfile *df = NULL;
    int error = sw_dockerfile_parse_opts((const char *)data, size, &opts, &df);
    if (error == 0) {
        walk(df);
        sw_dockerfile_free(df);
    } else if (df || (error != SW_EINVALID && error != SW_ELIMIT && error != SW_EUNSUPPORTED) ||
               strncmp(sw_error_msg(), "Dockerfile", 10) != 0) {
        abort();
    }
    sw_df_stage *st = NULL;
    size_t n = 0;
    error = sw_dockerfile_stages((const char *)data, size, build_args, &st, &n);
    if (error == 0) {
        size_t end = 0;
        if (n == 0)
            abort();
        for (size_t i = 0; i < n; i++) {
            if (!st[i].image || !*st[i].image || st[i].off < end || st[i].off + st[i].len > size ||
                st[i].len == 0)
                abort();
            end = st[i].off + st[i].len;
        }
        sw_df_stages_free(st, n);
    } else if (st || (error != SW_EINVALID && error != SW_ELIMIT) ||
               strncmp(sw_error_msg(), "Dockerfile", 10) != 0) {
        abort();
    }
    return 0;
}
