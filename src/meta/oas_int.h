/* oas_int: what meta/openapischema.c (the passes: prune, default, validate) and
 * meta/oascompile.c (compiling and the structural checks) share: the compiled tree, field
 * paths and causes. Not for use outside those two files. */
#ifndef SW_META_OAS_INT_H
#define SW_META_OAS_INT_H

#include "meta/openapischema.h"

#include <jansson.h>
#include <regex.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum { T_OBJECT = 1, T_ARRAY, T_STRING, T_INTEGER, T_NUMBER, T_BOOLEAN };
enum { LT_ATOMIC, LT_SET, LT_MAP };
enum { RE_NONE, RE_READY, RE_LAZY, RE_BAD };
typedef struct node node;
typedef struct {
    char *name;
    node *schema;
} prop;

struct node {
    int type; /* T_* or 0 */
    bool nullable, preserve, embedded, int_or_string;
    int fmt;
    json_t *def;                                /* default, or NULL */
    json_t *enumv;                              /* array, or NULL */
    const json_t *maximum, *minimum, *multiple; /* numbers in the source, or NULL */
    bool excl_max, excl_min;
    int64_t max_len, min_len, max_items, min_items, max_props, min_props; /* -1: none */
    regex_t re;
    _Atomic int re_state; /* RE_NONE, RE_READY (re compiled), RE_LAZY (on first use), RE_BAD */
    const char *pattern;  /* in the source */
    node *items;
    int list_type;
    const json_t *map_keys; /* array of strings in the source */
    prop *props;
    size_t nprops;
    const json_t *required; /* array of strings in the source */
    node *additional;       /* additionalProperties schema */
    bool additional_any;    /* additionalProperties: true */
    node **all, **any, **one, *not ;
    size_t nall, nany, none;
};

struct sw_oas {
    json_t *source;
    node *root;
    bool defaults; /* some node has a default */
};

extern const char *const sw_oasi_type_words[]; /* indexed by T_* */

#define MAX_PATH 65536 /* bytes of one field path; longer ones are cut */
#define MAX_MESSAGE 65536

typedef struct {
    char *s;
    size_t n, cap;
} fpath;

/* Field paths: push a key ("a.b") or an index ("[3]"), then pop back to the mark returned. */
void sw_oasi_fp_init(fpath *p);
void sw_oasi_fp_free(fpath *p);
size_t sw_oasi_fp_key(fpath *p, const char *key);
size_t sw_oasi_fp_index(fpath *p, size_t i);
void sw_oasi_fp_pop(fpath *p, size_t mark);

/* Appends a cause {reason, field, message} (at most SW_OAS_MAX_CAUSES; never lost). */
void sw_oasi_add_cause_v(json_t *causes, const char *reason, const char *field, const char *fmt,
                         va_list ap);
void sw_oasi_add_cause(json_t *causes, const char *reason, const char *field, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* A value as a message shows it: JSON, numbers shortest, cut on a character boundary. */
void sw_oasi_render(const json_t *v, char *out, size_t n);
bool sw_oasi_is_integral(const json_t *v);

void sw_oasi_node_free(node *n);
/* The passes, used by the compiler to check defaults. */
bool sw_oasi_prune_node(const node *n, json_t *v, fpath *p, json_t *unknown, bool root);
void sw_oasi_validate_node(const node *n, const json_t *v, const json_t *old, fpath *p,
                           json_t *causes);

#endif
