/* dockerfile_lex: variable tables, word splitting and substitution for the Dockerfile parser
 * (dockerfile.c; shared state in dockerfile_int.h). Substitution follows Docker's shell lexer:
 * single quotes are literal, double quotes expand variables, the escape character quotes the next
 * character, and $VAR, ${VAR}, ${VAR:-w}, ${VAR-w}, ${VAR:+w}, ${VAR+w}, ${VAR:?w}, ${VAR?w}
 * expand against ENV first, then ARG. See docs/internals/dockerfile.md. */
#include "builder/dockerfile_int.h"

#include "util/alloc.h"
#include "util/error.h"
#include "util/str.h"

#include <string.h>

/* ---- variable tables: open addressing, names hashed with a per-parse random seed ---- */

static uint64_t hash_name(uint64_t seed, const char *s, size_t n)
{
    uint64_t h = sw_fnv1a(SW_FNV1A_OFFSET ^ seed, s, n);
    return h ^ (h >> 29);
}

sw_df_var *sw_df__vars_find(const sw_df_vars *v, const char *name, size_t n)
{
    if (!v->cap)
        return NULL;
    size_t mask = v->cap - 1;
    for (size_t i = hash_name(v->seed, name, n) & mask;; i = (i + 1) & mask) {
        sw_df_var *e = &v->slots[i];
        if (!e->name)
            return NULL;
        if (e->nlen == n && memcmp(e->name, name, n) == 0)
            return e;
    }
}

static void vars_grow(sw_df_vars *v)
{
    size_t cap = v->cap ? v->cap * 2 : 16;
    sw_df_var *slots = sw_calloc(cap, sizeof(*slots));
    for (size_t i = 0; i < v->cap; i++) {
        sw_df_var *e = &v->slots[i];
        if (!e->name)
            continue;
        size_t j = hash_name(v->seed, e->name, e->nlen) & (cap - 1);
        while (slots[j].name)
            j = (j + 1) & (cap - 1);
        slots[j] = *e;
    }
    sw_free(v->slots);
    v->slots = slots;
    v->cap = cap;
}

/* Sets name (n bytes) to a copy of value (NULL: declared, unset). Returns the entry. */
sw_df_var *sw_df__vars_set(sw_df_vars *v, const char *name, size_t n, const char *value)
{
    sw_df_var *e = sw_df__vars_find(v, name, n);
    if (e) {
        sw_free(e->value);
    } else {
        if ((v->count + 1) * 2 > v->cap)
            vars_grow(v);
        size_t mask = v->cap - 1;
        size_t i = hash_name(v->seed, name, n) & mask;
        while (v->slots[i].name)
            i = (i + 1) & mask;
        e = &v->slots[i];
        e->name = sw_strndup(name, n);
        e->nlen = n;
        e->used = false;
        v->count++;
    }
    e->value = value ? sw_strdup(value) : NULL;
    return e;
}

void sw_df__vars_dispose(sw_df_vars *v)
{
    for (size_t i = 0; i < v->cap; i++) {
        sw_free(v->slots[i].name);
        sw_free(v->slots[i].value);
    }
    sw_free(v->slots);
    v->slots = NULL;
    v->cap = v->count = 0;
}

/* ---- words: Docker's parser keeps quotes and escapes, the expansion removes them ---- */

/* Splits the next word off [*cur, end): blanks separate words except inside quotes or after the
 * escape character. The word is a view of the line (a lone escape at the very end is dropped).
 * Returns false when only blanks remain. */
bool sw_df__next_word(const char **cur, const char *end, char esc, sw_str *word)
{
    const char *s = *cur;
    while (s < end && sw_df__blank(*s))
        s++;
    const char *start = s;
    char quote = 0;
    while (s < end) {
        char c = *s;
        if (!quote && sw_df__blank(c))
            break;
        if (c == esc && quote != '\'') {
            if (s + 1 == end)
                break;
            s += 2;
            continue;
        }
        if (quote && c == quote)
            quote = 0;
        else if (!quote && (c == '\'' || c == '"'))
            quote = c;
        s++;
    }
    word->ptr = start;
    word->len = (size_t)(s - start);
    *cur = s < end && *s == esc ? end : s;
    return word->len > 0;
}

typedef struct df_lex {
    sw_df_parser *p;
    const char *s; /* cursor */
    const char *end;
    int depth; /* ${...} nesting */
} df_lex;

static int lex_until(df_lex *lx, int stop, sw_buf *out);

/* The variable in scope: before FROM the global ARGs, after it ENV first, then the stage ARGs. */
static const sw_df_var *lookup(const sw_df_parser *p, const char *name, size_t n)
{
    if (!p->from_line)
        return sw_df__vars_find(&p->meta, name, n);
    const sw_df_var *v = sw_df__vars_find(&p->env, name, n);
    return v ? v : sw_df__vars_find(&p->args, name, n);
}

static int put_value(df_lex *lx, const char *v, sw_buf *out)
{
    size_t n = strlen(v);
    if (n > SW_DF_MAX_WORK - lx->p->work)
        return sw_df__fail(lx->p, SW_ELIMIT, "%s: variable substitution copies more than %u bytes",
                           lx->p->cmd, SW_DF_MAX_WORK);
    lx->p->work += n;
    sw_buf_put(out, v, n);
    return 0;
}

/* A name after '$': a run of digits, one special parameter character, or [A-Za-z0-9_]+. */
static sw_str lex_name(df_lex *lx)
{
    const char *s = lx->s;
    if (s < lx->end && sw_df__digit(*s)) {
        while (s < lx->end && sw_df__digit(*s))
            s++;
    } else if (s < lx->end && *s && strchr("@*#?-$!", *s)) {
        s++;
    } else {
        while (s < lx->end && (sw_df__alpha(*s) || sw_df__digit(*s) || *s == '_'))
            s++;
    }
    sw_str name = {lx->s, (size_t)(s - lx->s)};
    lx->s = s;
    return name;
}

/* ${name<op>word} for op in - + ? with an optional ':' (empty counts as unset). */
static int lex_modifier(df_lex *lx, sw_str name, bool colon, char op, sw_buf *out)
{
    sw_df_parser *p = lx->p;
    if (lx->depth >= SW_DOCKERFILE_MAX_NESTING)
        return sw_df__fail(p, SW_ELIMIT, "%s: ${...} nested more than %d levels deep", p->cmd,
                           SW_DOCKERFILE_MAX_NESTING);
    sw_buf word = SW_BUF_INIT(SW_DF_MAX_WORD);
    lx->depth++;
    int error = lex_until(lx, '}', &word);
    lx->depth--;
    if (error < 0)
        goto done;
    const sw_df_var *v = lookup(p, name.ptr, name.len);
    const char *val = v && v->value ? v->value : "";
    bool set = v && v->value;
    bool empty = !set || (colon && !*val);
    if (op == '-') {
        error = put_value(lx, empty ? sw_buf_cstr(&word) : val, out);
    } else if (op == '+') {
        error = empty ? 0 : put_value(lx, sw_buf_cstr(&word), out);
    } else if (empty) {
        const char *why = word.len ? sw_buf_cstr(&word)
                          : set    ? "is not allowed to be empty"
                                   : "is not allowed to be unset";
        error =
            sw_df__fail(p, SW_EINVALID, "%s: %.*s: %.200s", p->cmd, (int)name.len, name.ptr, why);
    } else {
        error = put_value(lx, val, out);
    }
done:
    sw_buf_dispose(&word);
    return error;
}

/* $name, ${name} or ${name<modifier>word} at the cursor. */
static int lex_dollar(df_lex *lx, sw_buf *out)
{
    sw_df_parser *p = lx->p;
    lx->s++;
    if (lx->s == lx->end || *lx->s != '{') {
        sw_str name = lex_name(lx);
        if (!name.len)
            return put_value(lx, "$", out);
        const sw_df_var *v = lookup(p, name.ptr, name.len);
        return v && v->value ? put_value(lx, v->value, out) : 0;
    }
    lx->s++;
    if (lx->s == lx->end)
        return sw_df__fail(p, SW_EINVALID, "%s: syntax error: missing '}'", p->cmd);
    if (*lx->s == '{' || *lx->s == '}' || *lx->s == ':')
        return sw_df__fail(p, SW_EINVALID, "%s: syntax error: bad substitution", p->cmd);
    sw_str name = lex_name(lx);
    if (lx->s == lx->end)
        return sw_df__fail(p, SW_EINVALID, "%s: syntax error: missing '}'", p->cmd);
    if (!name.len)
        return sw_df__fail(p, SW_EINVALID, "%s: syntax error: bad substitution", p->cmd);
    char c = *lx->s++;
    if (c == '}') {
        const sw_df_var *v = lookup(p, name.ptr, name.len);
        return v && v->value ? put_value(lx, v->value, out) : 0;
    }
    bool colon = c == ':';
    if (colon) {
        if (lx->s == lx->end)
            return sw_df__fail(p, SW_EINVALID, "%s: syntax error: missing '}'", p->cmd);
        c = *lx->s++;
    }
    if (c == '-' || c == '+' || c == '?')
        return lex_modifier(lx, name, colon, c, out);
    return sw_df__fail(
        p, SW_EINVALID,
        "%s: unsupported modifier (%s%c) in substitution; slipway supports :- - :+ + :? ?", p->cmd,
        colon ? ":" : "", c);
}

/* '...': everything literal up to the next single quote. */
static int lex_single(df_lex *lx, sw_buf *out)
{
    const char *s = lx->s + 1;
    const char *q = memchr(s, '\'', (size_t)(lx->end - s));
    if (!q)
        return sw_df__fail(
            lx->p, SW_EINVALID,
            "%s: unexpected end of statement while looking for matching single-quote", lx->p->cmd);
    sw_buf_put(out, s, (size_t)(q - s));
    lx->s = q + 1;
    return 0;
}

/* "...": variables are expanded; the escape character only escapes '"', '$' and itself. */
static int lex_double(df_lex *lx, sw_buf *out)
{
    char esc = lx->p->escape;
    lx->s++;
    for (;;) {
        if (lx->s == lx->end)
            return sw_df__fail(
                lx->p, SW_EINVALID,
                "%s: unexpected end of statement while looking for matching double-quote",
                lx->p->cmd);
        char c = *lx->s;
        if (c == '"') {
            lx->s++;
            return 0;
        }
        if (c == '$') {
            int error = lex_dollar(lx, out);
            if (error < 0)
                return error;
            continue;
        }
        lx->s++;
        if (c == esc) {
            if (lx->s == lx->end)
                continue;
            if (*lx->s == '"' || *lx->s == '$' || *lx->s == esc)
                c = *lx->s++;
        }
        sw_buf_putc(out, c);
    }
}

/* Expands from the cursor up to the stop character (consumed), or to the end when stop < 0. */
static int lex_until(df_lex *lx, int stop, sw_buf *out)
{
    sw_df_parser *p = lx->p;
    while (lx->s < lx->end) {
        char c = *lx->s;
        int error = 0;
        if (stop >= 0 && c == stop) {
            lx->s++;
            return 0;
        }
        if (c == '$') {
            error = lex_dollar(lx, out);
        } else if (c == '\'') {
            error = lex_single(lx, out);
        } else if (c == '"') {
            error = lex_double(lx, out);
        } else if (c == p->escape) {
            lx->s++;
            if (lx->s < lx->end)
                sw_buf_putc(out, *lx->s++);
        } else {
            sw_buf_putc(out, c);
            lx->s++;
        }
        if (error < 0)
            return error;
        if (sw_buf_error(out))
            return sw_df__fail(p, SW_ELIMIT,
                               "%s: a word is longer than %u bytes after substitution", p->cmd,
                               SW_DF_MAX_WORD);
    }
    if (stop >= 0)
        return sw_df__fail(p, SW_EINVALID, "%s: syntax error: missing '}'", p->cmd);
    return 0;
}

/* Expands one raw word (quotes, escapes, variables) into a new string charged to the output. */
int sw_df__expand(sw_df_parser *p, sw_str raw, char **out)
{
    sw_buf b = SW_BUF_INIT(SW_DF_MAX_WORD);
    df_lex lx = {p, raw.ptr, raw.ptr + raw.len, 0};
    int error = lex_until(&lx, -1, &b);
    if (error < 0)
        goto done;
    error = sw_df__charge(p, b.len + 1);
    if (error < 0)
        goto done;
    *out = sw_buf_detach(&b, NULL);
done:
    sw_buf_dispose(&b);
    return error;
}
