/* dockerfile_int: internals shared by dockerfile.c (lines, directives, instructions) and
 * dockerfile_lex.c (variable tables, word splitting, substitution). Only those two files include
 * it. The parser state lives for one sw_dockerfile_parse_opts call. */
#ifndef SW_BUILDER_DOCKERFILE_INT_H
#define SW_BUILDER_DOCKERFILE_INT_H

#include "builder/dockerfile.h"
#include "util/buf.h"
#include "util/str.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SW_DF_MAX_WORD (1024u * 1024u) /* one word after substitution */
#define SW_DF_MAX_WORK                                                                             \
    (64u * 1024u * 1024u) /* variable bytes copied by substitution, used or not */

/* A variable table: open addressing, names hashed with a per-table random seed. */
typedef struct sw_df_var {
    char *name;  /* NULL: free slot */
    size_t nlen; /* strlen(name) */
    char *value; /* NULL: declared but unset (an ARG without a value) */
    bool used;   /* build args: consumed by an ARG (or already warned about) */
} sw_df_var;

typedef struct sw_df_vars {
    sw_df_var *slots;
    size_t cap; /* 0 or a power of two */
    size_t count;
    uint64_t seed;
} sw_df_vars;

typedef struct sw_df_parser {
    const char *text;
    size_t len;
    size_t pos;                     /* next byte to read */
    int lineno;                     /* physical lines read so far */
    int start;                      /* line where the current instruction starts (in errors) */
    char escape;                    /* '\\' or '`' (the escape directive) */
    const char *cmd;                /* the instruction being parsed, upper case, for messages */
    sw_buf line;                    /* the current logical line */
    sw_dockerfile *df;              /* the result being built */
    const sw_dockerfile_opts *opts; /* build args, base image env and workdir */
    sw_df_vars meta;                /* ARGs before FROM: seen by FROM and ARG re-declarations */
    sw_df_vars args;                /* ARGs of the stage */
    sw_df_vars env;                 /* ENV of the stage (base image's first): wins over ARGs */
    sw_df_vars bargs;               /* build args; .used marks the consumed ones */
    size_t ninstr;                  /* instructions seen, ARGs before FROM included */
    int from_line;                  /* line of FROM, 0 before it */
    char *workdir;                  /* the last WORKDIR (absolute), NULL for "/" */
    size_t output;                  /* bytes charged to SW_DOCKERFILE_MAX_OUTPUT */
    size_t work;                    /* bytes charged to SW_DF_MAX_WORK */
    size_t nports;                  /* EXPOSE entries so far */
    size_t instr_off, instr_end;    /* the current instruction's bytes in text */
    bool scan;                      /* sw_dockerfile_stages: FROM and global ARGs only */
    sw_df_stage *stages;            /* scan: the stages so far */
    size_t nstages;
} sw_df_parser;

static inline bool sw_df__blank(char c)
{
    return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f';
}

static inline bool sw_df__digit(char c)
{
    return c >= '0' && c <= '9';
}

static inline bool sw_df__alpha(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

/* Sets the error "Dockerfile:<p->start>: <fmt>" and returns code (dockerfile.c). */
int sw_df__fail(const sw_df_parser *p, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Charges n bytes of parsed output against SW_DOCKERFILE_MAX_OUTPUT (dockerfile.c). */
int sw_df__charge(sw_df_parser *p, size_t n);

/* Variable tables (dockerfile_lex.c). set copies name and value (NULL: declared, unset). */
sw_df_var *sw_df__vars_find(const sw_df_vars *v, const char *name, size_t n);
sw_df_var *sw_df__vars_set(sw_df_vars *v, const char *name, size_t n, const char *value);
void sw_df__vars_dispose(sw_df_vars *v);

/* Splits the next word off [*cur, end) as Docker's parser does: blanks separate words except
 * inside quotes or after the escape character esc; quotes and escapes stay in the word, a view
 * of the line. Returns false when only blanks remain. */
bool sw_df__next_word(const char **cur, const char *end, char esc, sw_str *word);
/* Expands one raw word (quotes, escapes, $VAR, ${VAR:-x} ...) against the variables in scope;
 * *out is sw_malloc'd and charged to the output budget. Errors name the line. */
int sw_df__expand(sw_df_parser *p, sw_str raw, char **out);

#endif
