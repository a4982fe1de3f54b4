/* dockerfile: the Dockerfile subset that slipway's daemonless builder understands.
 * Parses one single-stage Dockerfile (FROM, COPY, ADD, ENV, ARG, LABEL, WORKDIR, USER, EXPOSE,
 * VOLUME, ENTRYPOINT, CMD, STOPSIGNAL, MAINTAINER) into instructions whose arguments are already
 * substituted as Docker substitutes them. RUN (no container runtime here), HEALTHCHECK, ONBUILD,
 * SHELL and multi-stage builds are refused with an error naming the line.
 * Semantics and every deviation from Docker: docs/internals/dockerfile.md. */
#ifndef SW_BUILDER_DOCKERFILE_H
#define SW_BUILDER_DOCKERFILE_H

#include <stdbool.h>
#include <stddef.h>

/* Limits; exceeding one is SW_ELIMIT. */
#define SW_DOCKERFILE_MAX_BYTES (1024u * 1024u)        /* the whole file */
#define SW_DOCKERFILE_MAX_INSTRUCTIONS 10000u          /* including ARGs before FROM */
#define SW_DOCKERFILE_MAX_LINE (64u * 1024u)           /* one instruction, continuations joined */
#define SW_DOCKERFILE_MAX_NESTING 32                   /* ${a:-${b:-...}} levels */
#define SW_DOCKERFILE_MAX_OUTPUT (16u * 1024u * 1024u) /* all parsed strings */

typedef enum {
    SW_DF_FROM,       /* args: {image} or {image, stage name}; image substituted with global ARGs */
    SW_DF_COPY,       /* args: sources..., destination (at least 2); chown/chmod */
    SW_DF_ADD,        /* as COPY; local sources only (tar archives are for the builder to unpack) */
    SW_DF_ENV,        /* keys/values, all set (values may be "") */
    SW_DF_ARG,        /* keys/values; a value is NULL when the ARG has no value */
    SW_DF_LABEL,      /* keys/values */
    SW_DF_WORKDIR,    /* args: {absolute, cleaned path} */
    SW_DF_USER,       /* args: {user[:group]} */
    SW_DF_EXPOSE,     /* args: normalised "port/proto" (tcp, udp, sctp), ranges expanded */
    SW_DF_VOLUME,     /* args: paths */
    SW_DF_ENTRYPOINT, /* args: the exec vector; shell form is {"/bin/sh", "-c", text} */
    SW_DF_CMD,        /* as ENTRYPOINT */
    SW_DF_STOPSIGNAL, /* args: {signal as written, after substitution}; validated */
    SW_DF_MAINTAINER, /* args: {author}; Docker sets the image config's author from it */
} sw_df_op;

typedef struct sw_df_instr {
    sw_df_op op;
    int line;    /* 1-based line where the instruction starts */
    char **args; /* after parsing and (where Docker does it) substitution */
    size_t nargs;
    bool json_form; /* written in JSON (exec) form: ENTRYPOINT/CMD/VOLUME/COPY/ADD */
    char *chown;    /* COPY/ADD --chown value or NULL */
    char *chmod;    /* COPY/ADD --chmod value (octal digits) or NULL */
    char **keys;    /* ENV/LABEL/ARG names */
    char **values;  /* ENV/LABEL/ARG values (ARG: NULL when unset) */
    size_t npairs;
} sw_df_instr;

typedef struct sw_dockerfile sw_dockerfile; /* opaque: the parsed instructions */

typedef struct sw_dockerfile_opts {
    const char *const *build_args; /* NULL or NULL-terminated "NAME=VALUE" list */
    const char *const *base_env;   /* NULL or the base image config's Env ("NAME=VALUE" list) */
    const char *base_workdir;      /* NULL or the base image config's WorkingDir */
} sw_dockerfile_opts;

/* clang-format off */
#define SW_DOCKERFILE_OPTS_INIT {NULL, NULL, NULL}
/* clang-format on */

/* Parses len bytes of text (at most SW_DOCKERFILE_MAX_BYTES; NUL bytes and invalid UTF-8 are
 * refused). A build arg overrides the default of the ARG of that name; one that no ARG declares
 * only adds a warning (sw_dockerfile_warning). base_env is the environment the base image starts
 * with: after FROM, substitution sees it as Docker does (ENV PATH=/app:$PATH), and base_workdir is
 * where a relative first WORKDIR starts ("/" when NULL). The builder learns the base image from a
 * first parse (sw_dockerfile_base), fetches its config, then parses again with both set.
 * Instruction 0 is always FROM: ARGs before FROM only feed FROM and are not listed.
 * Returns 0 and a new *out, or SW_EINVALID (bad input) / SW_ELIMIT (a limit above) with a
 * one-line message that names the line. What is valid Docker but beyond this subset (RUN,
 * HEALTHCHECK, ONBUILD, SHELL, heredocs, a second FROM, COPY --from, FROM --platform) is
 * SW_EUNSUPPORTED: "Dockerfile:7: RUN is not supported: ..." (another backend may build it). */
int sw_dockerfile_parse_opts(const char *text, size_t len, const sw_dockerfile_opts *opts,
                             sw_dockerfile **out);
/* One stage of a Dockerfile, as sw_dockerfile_stages finds it. */
typedef struct sw_df_stage {
    char *image;     /* FROM's image after substitution with the global ARGs */
    char *name;      /* the AS name (lower case), or NULL */
    char *flags;     /* the FROM's flags as written ("--platform=$P"), or NULL */
    bool from_stage; /* image names an earlier stage (not a registry image) */
    int line;        /* the FROM's line */
    size_t off, len; /* the FROM instruction's bytes in text, continuations included */
} sw_df_stage;

/* The stages of a Dockerfile for a backend that builds the whole grammar (buildah): every FROM
 * (its --platform flag allowed) with its image substituted as Docker does (global ARGs, build
 * args overriding their defaults). Other instructions are not checked here: the backend judges
 * them. "scratch" is an image like any other. Returns 0 with *out (sw_malloc'd, *n >= 1) or the
 * parser's SW_EINVALID / SW_ELIMIT naming the line (no FROM, a FROM without an image, an
 * instruction before the first FROM other than ARG). */
int sw_dockerfile_stages(const char *text, size_t len, const char *const *build_args,
                         sw_df_stage **out, size_t *n);
void sw_df_stages_free(sw_df_stage *s, size_t n);

/* The same with only build args (NULL or a NULL-terminated "NAME=VALUE" list). */
int sw_dockerfile_parse(const char *text, size_t len, const char *const *build_args,
                        sw_dockerfile **out);
size_t sw_dockerfile_count(const sw_dockerfile *df);
/* Borrowed; NULL when i is out of range. */
const sw_df_instr *sw_dockerfile_instr(const sw_dockerfile *df, size_t i);
/* The base image name after ARG substitution ("scratch" allowed). Borrowed. */
const char *sw_dockerfile_base(const sw_dockerfile *df);
/* Warnings that Docker prints but that do not fail the build (unconsumed build args). */
size_t sw_dockerfile_warning_count(const sw_dockerfile *df);
const char *sw_dockerfile_warning(const sw_dockerfile *df, size_t i);
/* "FROM", "COPY", ... for logs and build history. */
const char *sw_df_op_name(sw_df_op op);
void sw_dockerfile_free(sw_dockerfile *df);

#endif
