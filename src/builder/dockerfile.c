/* dockerfile: parser for the Dockerfile subset of the daemonless builder (see dockerfile.h and
 * docs/internals/dockerfile.md). Each instruction goes through three steps, as in Docker:
 * physical lines are joined into one logical line (directives, comments, continuations); the line
 * is split into words that keep their quotes and escapes; each word is then expanded (quotes,
 * escapes, $VAR, ${VAR:-x} ...) against the ENV and ARG values in scope. */
#include "builder/dockerfile.h"
#include "builder/dockerfile_int.h"

#include "util/alloc.h"
#include "util/buf.h"
#include "util/error.h"
#include "util/json.h"
#include "util/str.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#define DF_MAX_PORTS 65536u /* EXPOSE entries in all, ranges expanded */

struct sw_dockerfile {
    sw_df_instr *instrs;
    size_t count;
    size_t cap;
    char *base;      /* FROM's image after substitution */
    char **warnings; /* one line each */
    size_t nwarnings;
};

/* ---- parser state and small helpers ---- */

int sw_df__fail(const sw_df_parser *p, int code, const char *fmt, ...)
{
    char msg[900];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    return sw_error_set(code, "Dockerfile:%d: %s", p->start, msg);
}

int sw_df__charge(sw_df_parser *p, size_t n)
{
    if (n > SW_DOCKERFILE_MAX_OUTPUT - p->output)
        return sw_df__fail(p, SW_ELIMIT,
                           "the parsed Dockerfile exceeds %u bytes after substitution",
                           SW_DOCKERFILE_MAX_OUTPUT);
    p->output += n;
    return 0;
}

static char to_lower(char c)
{
    return c >= 'A' && c <= 'Z' ? (char)(c - 'A' + 'a') : c;
}

/* Case-insensitive comparison of a view with a literal. */
static bool ci_eq(sw_str s, const char *lit)
{
    size_t n = strlen(lit);
    if (s.len != n)
        return false;
    for (size_t i = 0; i < n; i++)
        if (to_lower(s.ptr[i]) != to_lower(lit[i]))
            return false;
    return true;
}

static sw_str trim(sw_str s)
{
    while (s.len && sw_df__blank(s.ptr[0])) {
        s.ptr++;
        s.len--;
    }
    while (s.len && sw_df__blank(s.ptr[s.len - 1]))
        s.len--;
    return s;
}

static bool has_blank(const char *s)
{
    for (; *s; s++)
        if (sw_df__blank(*s))
            return true;
    return false;
}

/* Strict UTF-8: no overlong forms, no surrogates, nothing above U+10FFFF. */
static bool utf8_valid(const unsigned char *s, size_t n)
{
    size_t i = 0;
    while (i < n) {
        unsigned char c = s[i];
        size_t more;
        unsigned char lo = 0x80, hi = 0xBF;
        if (c < 0x80) {
            i++;
            continue;
        } else if (c >= 0xC2 && c <= 0xDF) {
            more = 1;
        } else if (c >= 0xE0 && c <= 0xEF) {
            more = 2;
            lo = c == 0xE0 ? 0xA0 : 0x80;
            hi = c == 0xED ? 0x9F : 0xBF;
        } else if (c >= 0xF0 && c <= 0xF4) {
            more = 3;
            lo = c == 0xF0 ? 0x90 : 0x80;
            hi = c == 0xF4 ? 0x8F : 0xBF;
        } else {
            return false;
        }
        if (n - i - 1 < more || s[i + 1] < lo || s[i + 1] > hi)
            return false;
        for (size_t k = 2; k <= more; k++)
            if (s[i + k] < 0x80 || s[i + k] > 0xBF)
                return false;
        i += more + 1;
    }
    return true;
}

/* Appends s (taking ownership) to a growing string array. */
static void push_str(char ***arr, size_t *n, char *s)
{
    if (*n == 0 || (*n >= 4 && (*n & (*n - 1)) == 0)) {
        size_t cap = *n ? *n * 2 : 4;
        *arr = sw_realloc(*arr, cap * sizeof(**arr));
    }
    (*arr)[(*n)++] = s;
}

/* Appends a key and its value (NULL allowed), taking ownership of both. */
static void push_pair(sw_df_instr *ins, char *key, char *value)
{
    size_t n = ins->npairs;
    push_str(&ins->keys, &n, key);
    n = ins->npairs;
    push_str(&ins->values, &n, value);
    ins->npairs = n;
}

/* A copy of [s, s+n) charged to the output budget. */
static int keep(sw_df_parser *p, const char *s, size_t n, char **out)
{
    int error = sw_df__charge(p, n + 1);
    if (error < 0)
        return error;
    *out = sw_strndup(s, n);
    return 0;
}

static sw_df_instr *instr_new(sw_df_parser *p, sw_df_op op)
{
    sw_dockerfile *df = p->df;
    if (df->count == df->cap) {
        df->cap = df->cap ? df->cap * 2 : 16;
        df->instrs = sw_realloc(df->instrs, df->cap * sizeof(*df->instrs));
    }
    sw_df_instr *ins = &df->instrs[df->count++];
    memset(ins, 0, sizeof(*ins));
    ins->op = op;
    ins->line = p->start;
    return ins;
}

static void instr_dispose(sw_df_instr *ins)
{
    for (size_t i = 0; i < ins->nargs; i++)
        sw_free(ins->args[i]);
    for (size_t i = 0; i < ins->npairs; i++) {
        sw_free(ins->keys[i]);
        sw_free(ins->values[i]);
    }
    sw_free(ins->args);
    sw_free(ins->keys);
    sw_free(ins->values);
    sw_free(ins->chown);
    sw_free(ins->chmod);
}

/* ---- lines: directives, comments, continuations ---- */

/* Reads the next physical line (without its newline and one trailing CR) into *line.
 * Returns 1, 0 at the end of the text, or SW_EINVALID for a NUL byte or invalid UTF-8. */
static int read_line(sw_df_parser *p, sw_str *line)
{
    if (p->pos >= p->len)
        return 0;
    const char *s = p->text + p->pos;
    size_t rem = p->len - p->pos;
    const char *nl = memchr(s, '\n', rem);
    size_t n = nl ? (size_t)(nl - s) : rem;
    p->pos += nl ? n + 1 : n;
    p->lineno++;
    if (memchr(s, '\0', n)) {
        p->start = p->lineno;
        return sw_df__fail(p, SW_EINVALID, "NUL byte in the line");
    }
    if (!utf8_valid((const unsigned char *)s, n)) {
        p->start = p->lineno;
        return sw_df__fail(p, SW_EINVALID, "the line is not valid UTF-8");
    }
    if (n && s[n - 1] == '\r')
        n--;
    line->ptr = s;
    line->len = n;
    return 1;
}

/* Recognises "#key=value" with blanks allowed around key, '=' and value. */
static bool match_directive(sw_str line, sw_str *key, sw_str *value)
{
    const char *s = line.ptr, *end = line.ptr + line.len;
    if (s == end || *s++ != '#')
        return false;
    while (s < end && sw_df__blank(*s))
        s++;
    key->ptr = s;
    if (s == end || !sw_df__alpha(*s))
        return false;
    while (s < end && (sw_df__alpha(*s) || sw_df__digit(*s)))
        s++;
    key->len = (size_t)(s - key->ptr);
    while (s < end && sw_df__blank(*s))
        s++;
    if (s == end || *s++ != '=')
        return false;
    *value = trim((sw_str){s, (size_t)(end - s)});
    return value->len > 0;
}

/* Consumes the parser directives at the top of the file (escape; syntax and check are accepted
 * and ignored). The first line that is not a known directive ends them: an unknown directive is
 * an ordinary comment, any other line is left for the instruction loop. */
static int parse_directives(sw_df_parser *p)
{
    bool seen_escape = false, seen_syntax = false, seen_check = false;
    for (;;) {
        size_t pos = p->pos;
        int lineno = p->lineno;
        sw_str line, key, value;
        int r = read_line(p, &line);
        if (r <= 0)
            return r;
        if (!match_directive(line, &key, &value)) {
            p->pos = pos;
            p->lineno = lineno;
            return 0;
        }
        bool *seen = ci_eq(key, "escape")   ? &seen_escape
                     : ci_eq(key, "syntax") ? &seen_syntax
                     : ci_eq(key, "check")  ? &seen_check
                                            : NULL;
        if (!seen)
            return 0;
        p->start = p->lineno;
        if (*seen)
            return sw_df__fail(p, SW_EINVALID, "only one %.*s parser directive can be used",
                               (int)key.len, key.ptr);
        *seen = true;
        if (seen != &seen_escape)
            continue;
        if (value.len != 1 || (value.ptr[0] != '\\' && value.ptr[0] != '`'))
            return sw_df__fail(p, SW_EINVALID, "invalid escape token '%.*s' does not match ` or \\",
                               (int)(value.len > 64 ? 64 : value.len), value.ptr);
        p->escape = value.ptr[0];
    }
}

/* Removes a trailing escape character (followed only by spaces and tabs). True if there was one,
 * which means the instruction continues on the next line. */
static bool strip_continuation(sw_str *l, char esc)
{
    size_t n = l->len;
    while (n && (l->ptr[n - 1] == ' ' || l->ptr[n - 1] == '\t'))
        n--;
    if (!n || l->ptr[n - 1] != esc)
        return false;
    l->len = n - 1;
    return true;
}

/* Joins the physical lines of the next instruction into p->line. Comment lines and blank lines
 * inside a continuation are skipped, as Docker does; a continuation at the end of the text ends
 * the instruction. Returns 1, 0 when no instruction is left, or an error. */
static int read_logical(sw_df_parser *p)
{
    sw_str l;
    for (;;) {
        int r;
        do {
            p->instr_off = p->pos;
            r = read_line(p, &l);
            if (r <= 0)
                return r;
            l = trim(l);
        } while (!l.len || l.ptr[0] == '#');
        p->start = p->lineno;
        sw_buf_clear(&p->line);
        bool more = strip_continuation(&l, p->escape);
        sw_buf_put(&p->line, l.ptr, l.len);
        while (more) {
            r = read_line(p, &l);
            if (r < 0)
                return r;
            if (r == 0)
                break;
            sw_str t = trim(l);
            if (!t.len || t.ptr[0] == '#')
                continue;
            more = strip_continuation(&l, p->escape);
            sw_buf_put(&p->line, l.ptr, l.len);
        }
        if (sw_buf_error(&p->line))
            return sw_df__fail(p, SW_ELIMIT, "the instruction is longer than %u bytes",
                               SW_DOCKERFILE_MAX_LINE);
        p->instr_end = p->pos;
        if (trim((sw_str){p->line.ptr, p->line.len}).len)
            return 1;
    }
}

/* ---- JSON (exec) form ---- */

/* Whether rest, which starts with '[', was meant as JSON: the first thing inside is a quote or
 * ']'. Anything else ("[ -f x ] && y") is shell form, as in Docker. */
static bool json_intended(sw_str rest)
{
    for (size_t i = 1; i < rest.len; i++) {
        if (sw_df__blank(rest.ptr[i]))
            continue;
        return rest.ptr[i] == '"' || rest.ptr[i] == '\'' || rest.ptr[i] == ']';
    }
    return false;
}

/* Returns 1 and *out (a JSON array of strings) when rest is the JSON form, 0 when it is not JSON,
 * or SW_EINVALID when it looks like JSON and is not a valid array of strings. */
static int parse_json_form(sw_df_parser *p, sw_str rest, json_t **out)
{
    json_t *j = NULL;
    if (!rest.len || rest.ptr[0] != '[')
        return 0;
    if (sw_json_parse(rest.ptr, rest.len, SW_JSON_MAX_DEPTH, 0, &j) < 0) {
        if (!json_intended(rest))
            return 0;
        return sw_df__fail(
            p, SW_EINVALID,
            "%s: not a valid JSON array (%s); the exec form needs double-quoted strings, "
            "as in [\"/app\", \"--flag\"]",
            p->cmd, sw_error_msg());
    }
    for (size_t i = 0; i < json_array_size(j); i++) {
        if (!json_is_string(json_array_get(j, i))) {
            json_decref(j);
            return sw_df__fail(
                p, SW_EINVALID,
                "%s: when using JSON array syntax, arrays must be comprised of strings "
                "only",
                p->cmd);
        }
    }
    *out = j;
    return 1;
}

/* The arguments of a list instruction (COPY, ADD, VOLUME): the JSON form's strings or the words
 * of the shell form, each expanded. Heredocs (<<EOF) are refused. */
static int expand_list(sw_df_parser *p, sw_str rest, sw_df_instr *ins)
{
    json_t *j = NULL;
    int error = parse_json_form(p, rest, &j);
    if (error < 0)
        return error;
    ins->json_form = error == 1;
    error = 0;
    size_t n = j ? json_array_size(j) : 0;
    for (size_t i = 0; i < n && error == 0; i++) {
        json_t *s = json_array_get(j, i);
        char *v = NULL;
        error = sw_df__expand(p, (sw_str){json_string_value(s), json_string_length(s)}, &v);
        if (error == 0)
            push_str(&ins->args, &ins->nargs, v);
    }
    json_decref(j);
    const char *cur = rest.ptr, *end = rest.ptr + rest.len;
    sw_str w;
    while (!ins->json_form && error == 0 && sw_df__next_word(&cur, end, p->escape, &w)) {
        char *v = NULL;
        if (w.len >= 2 && w.ptr[0] == '<' && w.ptr[1] == '<')
            return sw_df__fail(p, SW_EUNSUPPORTED, "%s: heredocs (%.*s) are not supported", p->cmd,
                               (int)(w.len > 32 ? 32 : w.len), w.ptr);
        error = sw_df__expand(p, w, &v);
        if (error == 0)
            push_str(&ins->args, &ins->nargs, v);
    }
    return error;
}

/* ---- flags ---- */

typedef struct df_flags {
    char *chown; /* COPY/ADD --chown, expanded */
    char *chmod; /* COPY/ADD --chmod, expanded */
} df_flags;

static int check_chown(sw_df_parser *p, const char *v)
{
    const char *colon = strchr(v, ':');
    bool ok = *v && !has_blank(v) && v[0] != ':';
    if (colon)
        ok = ok && colon[1] && !strchr(colon + 1, ':');
    if (!ok)
        return sw_df__fail(p, SW_EINVALID, "%s: invalid --chown=%.64s: expected user[:group]",
                           p->cmd, v);
    return 0;
}

static int check_chmod(sw_df_parser *p, const char *v)
{
    uint64_t mode = 0;
    size_t n = strlen(v);
    bool ok = n >= 1 && n <= 5;
    for (size_t i = 0; ok && i < n; i++) {
        ok = v[i] >= '0' && v[i] <= '7';
        mode = mode * 8 + (uint64_t)(v[i] - '0');
    }
    if (!ok || mode > 07777)
        return sw_df__fail(p, SW_EINVALID,
                           "%s: invalid --chmod=%.64s: expected an octal mode such as 0755", p->cmd,
                           v);
    return 0;
}

/* --chown / --chmod: expanded and checked, once each. */
static int take_mode_flag(sw_df_parser *p, sw_str name, const char *eq, sw_str word, df_flags *fl)
{
    bool own = ci_eq(name, "chown");
    char **slot = own ? &fl->chown : &fl->chmod;
    if (!eq)
        return sw_df__fail(p, SW_EINVALID, "%s: missing a value on flag --%s", p->cmd,
                           own ? "chown" : "chmod");
    if (*slot)
        return sw_df__fail(p, SW_EINVALID, "%s: duplicate flag --%s", p->cmd,
                           own ? "chown" : "chmod");
    sw_str raw = {eq + 1, (size_t)(word.ptr + word.len - eq - 1)};
    int error = sw_df__expand(p, raw, slot);
    if (error < 0)
        return error;
    return own ? check_chown(p, *slot) : check_chmod(p, *slot);
}

/* One "--name[=value]" flag of the instruction op. */
static int take_flag(sw_df_parser *p, sw_df_op op, sw_str word, df_flags *fl)
{
    const char *eq = memchr(word.ptr, '=', word.len);
    sw_str name = {word.ptr + 2, (size_t)((eq ? eq : word.ptr + word.len) - word.ptr - 2)};
    bool files = op == SW_DF_COPY || op == SW_DF_ADD;
    if (files && (ci_eq(name, "chown") || ci_eq(name, "chmod")))
        return take_mode_flag(p, name, eq, word, fl);
    if (files && ci_eq(name, "link")) /* our layers never depend on the ones below anyway */
        return 0;
    if (op == SW_DF_COPY && ci_eq(name, "from"))
        return sw_df__fail(
            p, SW_EUNSUPPORTED,
            "COPY --from is not supported yet: slipway builds single-stage Dockerfiles "
            "and copies from the build context only");
    if (op == SW_DF_ADD && (ci_eq(name, "checksum") || ci_eq(name, "keep-git-dir")))
        return sw_df__fail(
            p, SW_EINVALID,
            "ADD --%.*s is not supported: ADD takes sources from the build context only",
            (int)name.len, name.ptr);
    if (op == SW_DF_FROM && ci_eq(name, "platform"))
        return sw_df__fail(
            p, SW_EUNSUPPORTED,
            "FROM --platform is not supported: the image is built for the base image's "
            "platform");
    return sw_df__fail(p, SW_EINVALID, "%s: unknown flag --%.*s", p->cmd,
                       (int)(name.len > 64 ? 64 : name.len), name.ptr);
}

/* Consumes the leading --flags of rest, as Docker does for every instruction ("--" ends them). */
static int take_flags(sw_df_parser *p, sw_df_op op, sw_str *rest, df_flags *fl)
{
    const char *cur = rest->ptr, *end = rest->ptr + rest->len;
    for (;;) {
        const char *before = cur;
        sw_str w;
        if (!sw_df__next_word(&cur, end, p->escape, &w) || w.len < 2 || w.ptr[0] != '-' ||
            w.ptr[1] != '-') {
            cur = before;
            break;
        }
        if (w.len == 2)
            break;
        int error = take_flag(p, op, w, fl);
        if (error < 0)
            return error;
    }
    *rest = trim((sw_str){cur, (size_t)(end - cur)});
    return 0;
}

/* ---- instructions ---- */

static char *clean_path(const char *base, const char *path);

/* The stage starts with the base image's environment and working directory. */
static int seed_stage(sw_df_parser *p)
{
    const char *const *env = p->opts->base_env;
    for (size_t i = 0; env && env[i]; i++) {
        const char *eq = strchr(env[i], '=');
        size_t n = eq ? (size_t)(eq - env[i]) : strlen(env[i]);
        int error = sw_df__charge(p, strlen(env[i]) + 1);
        if (error < 0)
            return error;
        if (n)
            sw_df__vars_set(&p->env, env[i], n, eq ? eq + 1 : "");
    }
    const char *wd = p->opts->base_workdir;
    if (wd && wd[0] == '/')
        p->workdir = clean_path("/", wd);
    return 0;
}

/* FROM's words once its flags are taken: "image" or "image AS name" (*n is 1 or 3). */
static int from_words(sw_df_parser *p, sw_str rest, sw_str w[4], size_t *n)
{
    const char *cur = rest.ptr, *end = rest.ptr + rest.len;
    *n = 0;
    while (*n < 4 && sw_df__next_word(&cur, end, p->escape, &w[*n]))
        (*n)++;
    if (*n != 1 && !(*n == 3 && ci_eq(w[1], "as")))
        return sw_df__fail(p, SW_EINVALID,
                           "FROM requires either one or three arguments: FROM image "
                           "[AS name]");
    return 0;
}

static int do_from(sw_df_parser *p, sw_str rest, df_flags *fl, sw_df_op op)
{
    if (p->from_line)
        return sw_df__fail(
            p, SW_EUNSUPPORTED,
            "multi-stage builds are not supported yet: this is a second FROM (the first "
            "is on line %d)",
            p->from_line);
    sw_str w[4];
    size_t n = 0;
    int error = from_words(p, rest, w, &n);
    if (error < 0)
        return error;
    char *image = NULL;
    error = sw_df__expand(p, w[0], &image);
    if (error < 0)
        return error;
    sw_df_instr *ins = instr_new(p, op);
    push_str(&ins->args, &ins->nargs, image);
    if (!*image)
        return sw_df__fail(p, SW_EINVALID, "FROM: base name (%.*s) should not be blank",
                           (int)(w[0].len > 64 ? 64 : w[0].len), w[0].ptr);
    if (has_blank(image))
        return sw_df__fail(p, SW_EINVALID, "FROM: invalid base image name \"%.64s\"", image);
    if (n == 3) {
        char *stage = NULL;
        error = keep(p, w[2].ptr, w[2].len, &stage);
        if (error < 0)
            return error;
        push_str(&ins->args, &ins->nargs, stage);
        bool ok = sw_df__alpha(stage[0]);
        for (char *s = stage; *s; s++) {
            *s = to_lower(*s);
            ok = ok && (sw_df__alpha(*s) || sw_df__digit(*s) || strchr("-_.", *s));
        }
        if (!ok)
            return sw_df__fail(
                p, SW_EINVALID,
                "invalid name for build stage: \"%.64s\", name can't start with a number "
                "or contain symbols",
                stage);
    }
    p->from_line = p->start;
    p->df->base = sw_strdup(image);
    return seed_stage(p);
}

static int check_arg_name(sw_df_parser *p, sw_str name)
{
    bool ok = name.len > 0;
    for (size_t i = 0; ok && i < name.len; i++)
        ok = !strchr("'\"$=", name.ptr[i]) && name.ptr[i] != p->escape;
    if (!ok)
        return sw_df__fail(p, SW_EINVALID, "ARG: invalid name \"%.*s\"",
                           (int)(name.len > 64 ? 64 : name.len), name.ptr);
    return 0;
}

/* The value an ARG gets: a build arg wins; then the default; then (re-declared in the stage
 * without a default) the global ARG's value. *value is replaced; NULL means unset. */
static int arg_value(sw_df_parser *p, sw_str name, bool has_default, char **value)
{
    sw_df_var *b = sw_df__vars_find(&p->bargs, name.ptr, name.len);
    const char *v = NULL;
    if (b) {
        b->used = true;
        v = b->value;
    } else if (!has_default && p->from_line) {
        const sw_df_var *m = sw_df__vars_find(&p->meta, name.ptr, name.len);
        v = m ? m->value : NULL;
    } else {
        return 0;
    }
    sw_free(*value);
    *value = NULL;
    return v ? keep(p, v, strlen(v), value) : 0;
}

/* ARG name[=default] ...: before FROM each one is visible to the next (as Docker does for global
 * ARGs); in the stage, all defaults are expanded first and then declared (as for ENV). */
static int do_arg(sw_df_parser *p, sw_str rest, df_flags *fl, sw_df_op op)
{
    bool global = !p->from_line;
    sw_df_instr *ins = global ? NULL : instr_new(p, op);
    const char *cur = rest.ptr, *end = rest.ptr + rest.len;
    sw_str w;
    int error = 0;
    if (!sw_df__next_word(&cur, end, p->escape, &w))
        return sw_df__fail(p, SW_EINVALID, "ARG requires at least one argument");
    cur = rest.ptr;
    while (error == 0 && sw_df__next_word(&cur, end, p->escape, &w)) {
        const char *eq = memchr(w.ptr, '=', w.len);
        sw_str name = {w.ptr, eq ? (size_t)(eq - w.ptr) : w.len};
        char *value = NULL;
        error = check_arg_name(p, name);
        if (error == 0 && eq)
            error = sw_df__expand(p, (sw_str){eq + 1, (size_t)(w.ptr + w.len - eq - 1)}, &value);
        if (error == 0)
            error = arg_value(p, name, eq != NULL, &value);
        if (error == 0)
            error = sw_df__charge(p, name.len + 1);
        if (error == 0 && global)
            sw_df__vars_set(&p->meta, name.ptr, name.len, value);
        if (error == 0 && !global) {
            push_pair(ins, sw_strndup(name.ptr, name.len), value);
            value = NULL;
        }
        sw_free(value);
    }
    for (size_t i = 0; error == 0 && ins && i < ins->npairs; i++) {
        error =
            sw_df__charge(p, strlen(ins->keys[i]) + (ins->values[i] ? strlen(ins->values[i]) : 0));
        if (error == 0)
            sw_df__vars_set(&p->args, ins->keys[i], strlen(ins->keys[i]), ins->values[i]);
    }
    return error;
}

/* Adds one expanded key/value pair to ins (ENV, LABEL). */
static int add_pair(sw_df_parser *p, sw_df_instr *ins, sw_str rkey, sw_str rvalue)
{
    char *key = NULL, *value = NULL;
    int error = sw_df__expand(p, rkey, &key);
    if (error == 0)
        error = sw_df__expand(p, rvalue, &value);
    if (error == 0 && !*key)
        error = sw_df__fail(p, SW_EINVALID, "%s names can not be blank", p->cmd);
    if (error == 0 && ins->op == SW_DF_ENV && strchr(key, '='))
        error = sw_df__fail(p, SW_EINVALID, "ENV: the name \"%.64s\" contains '='", key);
    if (error < 0) {
        sw_free(key);
        sw_free(value);
        return error;
    }
    push_pair(ins, key, value);
    return 0;
}

/* ENV and LABEL: name=value ... or the legacy "name value with spaces". All values are expanded
 * with the variables as they were before the instruction. */
static int do_keyvals(sw_df_parser *p, sw_str rest, df_flags *fl, sw_df_op op)
{
    sw_df_instr *ins = instr_new(p, op);
    const char *cur = rest.ptr, *end = rest.ptr + rest.len;
    sw_str w;
    int error = 0;
    if (!sw_df__next_word(&cur, end, p->escape, &w))
        return sw_df__fail(p, SW_EINVALID, "%s requires at least one argument", p->cmd);
    bool legacy = !memchr(w.ptr, '=', w.len);
    if (legacy) {
        size_t k = 0;
        while (k < rest.len && !sw_df__blank(rest.ptr[k]))
            k++;
        sw_str value = trim((sw_str){rest.ptr + k, rest.len - k});
        if (!value.len)
            return sw_df__fail(p, SW_EINVALID, "%s must have two arguments", p->cmd);
        error = add_pair(p, ins, (sw_str){rest.ptr, k}, value);
    } else {
        cur = rest.ptr;
    }
    while (error == 0 && !legacy && sw_df__next_word(&cur, end, p->escape, &w)) {
        const char *eq = memchr(w.ptr, '=', w.len);
        if (!eq)
            return sw_df__fail(p, SW_EINVALID,
                               "%s: syntax error - can't find = in \"%.*s\". Must be of the form: "
                               "name=value",
                               p->cmd, (int)(w.len > 64 ? 64 : w.len), w.ptr);
        error = add_pair(p, ins, (sw_str){w.ptr, (size_t)(eq - w.ptr)},
                         (sw_str){eq + 1, (size_t)(w.ptr + w.len - eq - 1)});
    }
    for (size_t i = 0; error == 0 && op == SW_DF_ENV && i < ins->npairs; i++) {
        error = sw_df__charge(p, strlen(ins->keys[i]) + strlen(ins->values[i]) + 2);
        if (error == 0)
            sw_df__vars_set(&p->env, ins->keys[i], strlen(ins->keys[i]), ins->values[i]);
    }
    return error;
}

/* Joins path to base (unless absolute) and cleans it like Go's path.Clean: no ".", "..", empty
 * components or trailing slash; never above "/". */
static char *clean_path(const char *base, const char *path)
{
    size_t blen = path[0] == '/' ? 0 : strlen(base);
    size_t plen = strlen(path);
    char *joined = sw_malloc(blen + plen + 2);
    memcpy(joined, base, blen);
    joined[blen] = '/';
    memcpy(joined + blen + 1, path, plen + 1);
    char *out = sw_malloc(blen + plen + 3);
    size_t o = 0;
    for (const char *s = joined; *s;) {
        while (*s == '/')
            s++;
        const char *e = s;
        while (*e && *e != '/')
            e++;
        size_t n = (size_t)(e - s);
        if (n == 2 && s[0] == '.' && s[1] == '.') {
            while (o > 0 && out[o - 1] != '/')
                o--;
            if (o > 0)
                o--;
        } else if (n && !(n == 1 && s[0] == '.')) {
            out[o++] = '/';
            memcpy(out + o, s, n);
            o += n;
        }
        s = e;
    }
    if (o == 0)
        out[o++] = '/';
    out[o] = '\0';
    sw_free(joined);
    return out;
}

static bool valid_signal(const char *s)
{
    static const char *const names[] = {
        "HUP",  "INT",   "QUIT", "ILL",  "TRAP", "ABRT", "IOT",   "BUS",    "FPE",
        "KILL", "USR1",  "SEGV", "USR2", "PIPE", "ALRM", "TERM",  "STKFLT", "CHLD",
        "CONT", "STOP",  "TSTP", "TTIN", "TTOU", "URG",  "XCPU",  "XFSZ",   "VTALRM",
        "PROF", "WINCH", "IO",   "POLL", "PWR",  "SYS",  "RTMIN", "RTMAX"};
    uint64_t n;
    if (sw_str_to_u64(s, &n) == 0)
        return n >= 1 && n <= 64;
    sw_str name = {s, strlen(s)};
    if (name.len > 3 && ci_eq((sw_str){s, 3}, "SIG")) {
        name.ptr += 3;
        name.len -= 3;
    }
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
        if (ci_eq(name, names[i]))
            return true;
    if (name.len > 6 &&
        (ci_eq((sw_str){name.ptr, 6}, "RTMIN+") || ci_eq((sw_str){name.ptr, 6}, "RTMAX-"))) {
        const char *d = name.ptr + 6;
        return sw_str_to_u64(d, &n) == 0 && n >= 1 && n <= 14;
    }
    return false;
}

/* WORKDIR, USER, STOPSIGNAL, MAINTAINER: the whole rest of the line is one value. */
static int do_string(sw_df_parser *p, sw_str rest, df_flags *fl, sw_df_op op)
{
    if (!rest.len)
        return sw_df__fail(p, SW_EINVALID, "%s requires exactly one argument", p->cmd);
    char *v = NULL;
    int error =
        op == SW_DF_MAINTAINER ? keep(p, rest.ptr, rest.len, &v) : sw_df__expand(p, rest, &v);
    if (error < 0)
        return error;
    sw_df_instr *ins = instr_new(p, op);
    push_str(&ins->args, &ins->nargs, v);
    if (!*v)
        return sw_df__fail(p, SW_EINVALID, "%s: the value is empty after variable substitution",
                           p->cmd);
    if (op == SW_DF_USER && has_blank(v))
        return sw_df__fail(p, SW_EINVALID, "USER: invalid user \"%.64s\": expected user[:group]",
                           v);
    if (op == SW_DF_STOPSIGNAL && !valid_signal(v))
        return sw_df__fail(p, SW_EINVALID, "STOPSIGNAL: invalid signal \"%.64s\"", v);
    if (op != SW_DF_WORKDIR)
        return 0;
    char *path = clean_path(p->workdir ? p->workdir : "/", v);
    error = sw_df__charge(p, strlen(path) + 1);
    sw_free(ins->args[0]);
    ins->args[0] = path;
    sw_free(p->workdir);
    p->workdir = sw_strdup(path);
    return error;
}

/* One EXPOSE token: port[-port][/tcp|udp|sctp], normalised to "port/proto" entries. */
static int add_ports(sw_df_parser *p, sw_df_instr *ins, const char *tok)
{
    const char *c = tok;
    uint64_t lo, hi;
    const char *proto = "tcp";
    bool ok = sw_parse_u64(&c, 65535, &lo) == 0 && lo >= 1;
    hi = lo;
    if (ok && *c == '-') {
        c++;
        ok = sw_parse_u64(&c, 65535, &hi) == 0 && hi >= lo;
    }
    if (ok && *c == '/') {
        sw_str pr = {c + 1, strlen(c + 1)};
        proto = ci_eq(pr, "tcp")    ? "tcp"
                : ci_eq(pr, "udp")  ? "udp"
                : ci_eq(pr, "sctp") ? "sctp"
                                    : NULL;
        ok = proto != NULL;
        c += pr.len + 1;
    }
    if (!ok || *c)
        return sw_df__fail(p, SW_EINVALID,
                           "EXPOSE: invalid port \"%.64s\": expected port[-port][/tcp|udp|sctp]",
                           tok);
    for (uint64_t port = lo; port <= hi; port++) {
        if (++p->nports > DF_MAX_PORTS)
            return sw_df__fail(p, SW_ELIMIT, "EXPOSE: more than %u ports in all", DF_MAX_PORTS);
        char buf[16];
        int n = snprintf(buf, sizeof(buf), "%u/%s", (unsigned)port, proto);
        char *s = NULL;
        int error = keep(p, buf, (size_t)n, &s);
        if (error < 0)
            return error;
        push_str(&ins->args, &ins->nargs, s);
    }
    return 0;
}

/* EXPOSE: each word is expanded, then split at blanks (so ENV PORTS="80 443" works, as in
 * Docker). */
static int do_expose(sw_df_parser *p, sw_str rest, df_flags *fl, sw_df_op op)
{
    sw_df_instr *ins = instr_new(p, op);
    const char *cur = rest.ptr, *end = rest.ptr + rest.len;
    sw_str w;
    int error = 0;
    while (error == 0 && sw_df__next_word(&cur, end, p->escape, &w)) {
        char *v = NULL;
        error = sw_df__expand(p, w, &v);
        const char *tcur = v, *tend = v ? v + strlen(v) : NULL;
        sw_str t;
        while (error == 0 && sw_df__next_word(&tcur, tend, 0, &t)) {
            char *tok = sw_strndup(t.ptr, t.len);
            error = add_ports(p, ins, tok);
            sw_free(tok);
        }
        sw_free(v);
    }
    if (error == 0 && !ins->nargs)
        error = sw_df__fail(p, SW_EINVALID, "EXPOSE requires at least one argument");
    return error;
}

static int do_volume(sw_df_parser *p, sw_str rest, df_flags *fl, sw_df_op op)
{
    sw_df_instr *ins = instr_new(p, op);
    int error = expand_list(p, rest, ins);
    if (error < 0)
        return error;
    if (!ins->nargs)
        return sw_df__fail(p, SW_EINVALID, "VOLUME requires at least one argument");
    for (size_t i = 0; i < ins->nargs; i++)
        if (!*ins->args[i])
            return sw_df__fail(p, SW_EINVALID, "VOLUME specified can not be an empty string");
    return 0;
}

static bool is_remote(const char *src)
{
    return strstr(src, "://") || sw_str_prefix(src, "git@");
}

static int do_copy(sw_df_parser *p, sw_str rest, df_flags *fl, sw_df_op op)
{
    sw_df_instr *ins = instr_new(p, op);
    ins->chown = fl->chown;
    ins->chmod = fl->chmod;
    fl->chown = fl->chmod = NULL;
    int error = expand_list(p, rest, ins);
    if (error < 0)
        return error;
    if (ins->nargs < 2)
        return sw_df__fail(
            p, SW_EINVALID,
            "%s requires at least two arguments (sources and a destination), got %zu", p->cmd,
            ins->nargs);
    for (size_t i = 0; i < ins->nargs; i++) {
        if (!*ins->args[i])
            return sw_df__fail(p, SW_EINVALID, "%s: %s %zu is empty after variable substitution",
                               p->cmd, i + 1 == ins->nargs ? "the destination" : "source", i + 1);
        if (op == SW_DF_ADD && i + 1 < ins->nargs && is_remote(ins->args[i]))
            return sw_df__fail(
                p, SW_EINVALID,
                "ADD %.64s: remote sources are not supported; put the file in the build "
                "context",
                ins->args[i]);
    }
    return 0;
}

/* ENTRYPOINT and CMD: the JSON form is kept as written (no substitution, as in Docker); the
 * shell form is recorded as Docker records it, {"/bin/sh", "-c", text}. */
static int do_exec(sw_df_parser *p, sw_str rest, df_flags *fl, sw_df_op op)
{
    json_t *j = NULL;
    int error = parse_json_form(p, rest, &j);
    if (error < 0)
        return error;
    if (error == 0 && !rest.len)
        return sw_df__fail(p, SW_EINVALID, "%s requires at least one argument", p->cmd);
    sw_df_instr *ins = instr_new(p, op);
    ins->json_form = j != NULL;
    error = 0;
    for (size_t i = 0; j && error == 0 && i < json_array_size(j); i++) {
        json_t *s = json_array_get(j, i);
        char *v = NULL;
        error = keep(p, json_string_value(s), json_string_length(s), &v);
        if (error == 0)
            push_str(&ins->args, &ins->nargs, v);
    }
    json_decref(j);
    if (ins->json_form || error < 0)
        return error;
    char *text = NULL;
    error = keep(p, rest.ptr, rest.len, &text);
    if (error < 0)
        return error;
    push_str(&ins->args, &ins->nargs, sw_strdup("/bin/sh"));
    push_str(&ins->args, &ins->nargs, sw_strdup("-c"));
    push_str(&ins->args, &ins->nargs, text);
    return 0;
}

typedef int (*df_handler)(sw_df_parser *p, sw_str rest, df_flags *fl, sw_df_op op);

static const struct df_command {
    const char *name; /* upper case */
    sw_df_op op;
    df_handler fn;       /* NULL: refused */
    const char *refusal; /* why, for refused instructions */
} commands[] = {
    {"FROM", SW_DF_FROM, do_from, NULL},
    {"COPY", SW_DF_COPY, do_copy, NULL},
    {"ADD", SW_DF_ADD, do_copy, NULL},
    {"ENV", SW_DF_ENV, do_keyvals, NULL},
    {"ARG", SW_DF_ARG, do_arg, NULL},
    {"LABEL", SW_DF_LABEL, do_keyvals, NULL},
    {"WORKDIR", SW_DF_WORKDIR, do_string, NULL},
    {"USER", SW_DF_USER, do_string, NULL},
    {"EXPOSE", SW_DF_EXPOSE, do_expose, NULL},
    {"VOLUME", SW_DF_VOLUME, do_volume, NULL},
    {"ENTRYPOINT", SW_DF_ENTRYPOINT, do_exec, NULL},
    {"CMD", SW_DF_CMD, do_exec, NULL},
    {"STOPSIGNAL", SW_DF_STOPSIGNAL, do_string, NULL},
    {"MAINTAINER", SW_DF_MAINTAINER, do_string, NULL},
    {"RUN", SW_DF_FROM, NULL,
     "slipway builds without a container runtime; move the step into an earlier image or the "
     "build context"},
    {"HEALTHCHECK", SW_DF_FROM, NULL,
     "OCI image configs have no health check; give the workload a probe instead"},
    {"ONBUILD", SW_DF_FROM, NULL,
     "slipway neither records nor runs build triggers (they need a container runtime)"},
    {"SHELL", SW_DF_FROM, NULL,
     "there is no shell at build time; write ENTRYPOINT and CMD in JSON (exec) form instead"},
};

/* Scan mode: FROM of any stage (image expanded with the global ARGs). */
static int scan_from(sw_df_parser *p, sw_str rest)
{
    /* the leading --flags are kept as written, for the backend (--platform=$P) */
    const char *cur = rest.ptr, *end = rest.ptr + rest.len, *before = cur;
    sw_str w[4];
    size_t n = 0;
    while (sw_df__next_word(&cur, end, p->escape, &w[0]) && w[0].len > 2 && w[0].ptr[0] == '-' &&
           w[0].ptr[1] == '-')
        before = cur;
    sw_str flags = trim((sw_str){rest.ptr, (size_t)(before - rest.ptr)});
    int error = from_words(p, (sw_str){before, (size_t)(end - before)}, w, &n);
    if (error < 0)
        return error;
    char *flag_text = flags.len ? sw_strndup(flags.ptr, flags.len) : NULL;
    int saved = p->from_line;
    p->from_line = 0; /* FROM sees the global ARGs only */
    char *image = NULL, *name = NULL;
    error = sw_df__expand(p, w[0], &image);
    p->from_line = saved;
    if (error == 0 && (!*image || has_blank(image)))
        error = sw_df__fail(p, SW_EINVALID, "FROM: invalid base image name \"%.64s\"", image);
    if (error == 0 && n == 3) {
        error = keep(p, w[2].ptr, w[2].len, &name);
        for (char *c = name; error == 0 && *c; c++)
            *c = to_lower(*c);
    }
    if (error < 0) {
        sw_free(image);
        sw_free(name);
        sw_free(flag_text);
        return error;
    }
    sw_df_stage st = {.image = image,
                      .name = name,
                      .flags = flag_text,
                      .line = p->start,
                      .off = p->instr_off,
                      .len = p->instr_end - p->instr_off};
    for (size_t i = 0; i < p->nstages; i++)
        if (p->stages[i].name && ci_eq((sw_str){image, strlen(image)}, p->stages[i].name))
            st.from_stage = true;
    p->stages = sw_realloc(p->stages, (p->nstages + 1) * sizeof(*p->stages)); /* bounded above */
    p->stages[p->nstages++] = st;
    p->from_line = p->start;
    return 0;
}

/* Scan mode: global ARGs feed FROM; every other instruction is the backend's to judge. */
static int scan_dispatch(sw_df_parser *p, sw_str name, sw_str rest)
{
    p->cmd = "FROM";
    if (++p->ninstr > SW_DOCKERFILE_MAX_INSTRUCTIONS)
        return sw_df__fail(p, SW_ELIMIT, "more than %u instructions",
                           SW_DOCKERFILE_MAX_INSTRUCTIONS);
    if (ci_eq(name, "FROM"))
        return scan_from(p, rest);
    if (p->from_line)
        return 0;
    if (!ci_eq(name, "ARG"))
        return sw_df__fail(p, SW_EINVALID, "the first instruction must be FROM (or ARG), not %.*s",
                           (int)(name.len > 64 ? 64 : name.len), name.ptr);
    p->cmd = "ARG";
    return do_arg(p, rest, NULL, SW_DF_ARG);
}

/* Parses and records the instruction in p->line. */
static int dispatch(sw_df_parser *p)
{
    sw_str line = trim((sw_str){sw_buf_cstr(&p->line), p->line.len});
    size_t k = 0;
    while (k < line.len && !sw_df__blank(line.ptr[k]))
        k++;
    sw_str name = {line.ptr, k};
    sw_str rest = trim((sw_str){line.ptr + k, line.len - k});
    if (p->scan)
        return scan_dispatch(p, name, rest);
    const struct df_command *c = NULL;
    for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]) && !c; i++)
        if (ci_eq(name, commands[i].name))
            c = &commands[i];
    if (!c)
        return sw_df__fail(p, SW_EINVALID, "unknown instruction: %.*s",
                           (int)(name.len > 64 ? 64 : name.len), name.ptr);
    p->cmd = c->name;
    if (!c->fn)
        return sw_df__fail(p, SW_EUNSUPPORTED, "%s is not supported: %s", c->name, c->refusal);
    if (++p->ninstr > SW_DOCKERFILE_MAX_INSTRUCTIONS)
        return sw_df__fail(p, SW_ELIMIT, "more than %u instructions",
                           SW_DOCKERFILE_MAX_INSTRUCTIONS);
    if (!p->from_line && c->op != SW_DF_FROM && c->op != SW_DF_ARG)
        return sw_df__fail(p, SW_EINVALID, "the first instruction must be FROM (or ARG), not %s",
                           c->name);
    df_flags fl = {NULL, NULL};
    int error = take_flags(p, c->op, &rest, &fl);
    if (error == 0)
        error = c->fn(p, rest, &fl, c->op);
    sw_free(fl.chown);
    sw_free(fl.chmod);
    return error;
}

/* ---- entry points ---- */

static int load_build_args(sw_df_parser *p, const char *const *build_args)
{
    for (size_t i = 0; build_args && build_args[i]; i++) {
        const char *s = build_args[i];
        const char *eq = strchr(s, '=');
        if (!eq || eq == s || !utf8_valid((const unsigned char *)s, strlen(s)))
            return sw_error_set(SW_EINVALID, "build-arg \"%.64s\": expected NAME=VALUE", s);
        sw_df__vars_set(&p->bargs, s, (size_t)(eq - s), eq + 1);
    }
    return 0;
}

/* One warning per build arg that no ARG consumed, in the order given. */
static void warn_unused(sw_df_parser *p, const char *const *build_args)
{
    sw_dockerfile *df = p->df;
    for (size_t i = 0; build_args && build_args[i]; i++) {
        const char *eq = strchr(build_args[i], '=');
        sw_df_var *b = sw_df__vars_find(&p->bargs, build_args[i], (size_t)(eq - build_args[i]));
        if (!b || b->used)
            continue;
        b->used = true;
        sw_buf w = SW_BUF_INIT(1024);
        sw_buf_printf(&w, "build-arg %.200s was not consumed by any ARG", b->name);
        push_str(&df->warnings, &df->nwarnings, sw_buf_detach(&w, NULL));
    }
}

static int parse_all(sw_df_parser *p, const char *const *build_args)
{
    int error = load_build_args(p, build_args);
    if (error < 0)
        return error;
    if (p->len >= 3 && memcmp(p->text, "\xEF\xBB\xBF", 3) == 0)
        p->pos = 3;
    error = parse_directives(p);
    while (error == 0) {
        int r = read_logical(p);
        if (r <= 0) {
            error = r;
            break;
        }
        error = dispatch(p);
    }
    if (error < 0)
        return error;
    if (!p->from_line)
        return sw_error_set(SW_EINVALID, p->ninstr ? "Dockerfile: no FROM instruction"
                                                   : "Dockerfile: file with no instructions");
    warn_unused(p, build_args);
    return 0;
}

int sw_dockerfile_parse(const char *text, size_t len, const char *const *build_args,
                        sw_dockerfile **out)
{
    sw_dockerfile_opts opts = SW_DOCKERFILE_OPTS_INIT;
    opts.build_args = build_args;
    return sw_dockerfile_parse_opts(text, len, &opts, out);
}

static void parser_init(sw_df_parser *p, const char *text, size_t len,
                        const sw_dockerfile_opts *opts)
{
    memset(p, 0, sizeof(*p));
    p->text = text;
    p->len = len;
    p->escape = '\\';
    p->opts = opts;
    sw_buf_init(&p->line, SW_DOCKERFILE_MAX_LINE);
    uint64_t seeds[4];
    sw_random_bytes(seeds, sizeof(seeds));
    p->meta.seed = seeds[0];
    p->args.seed = seeds[1];
    p->env.seed = seeds[2];
    p->bargs.seed = seeds[3];
    p->df = sw_calloc(1, sizeof(*p->df));
}

static int parser_run(sw_df_parser *p)
{
    if (p->len > SW_DOCKERFILE_MAX_BYTES)
        return sw_error_set(SW_ELIMIT, "Dockerfile: %zu bytes is over the limit of %u bytes",
                            p->len, SW_DOCKERFILE_MAX_BYTES);
    return parse_all(p, p->opts->build_args);
}

static void parser_dispose(sw_df_parser *p)
{
    sw_dockerfile_free(p->df);
    sw_buf_dispose(&p->line);
    sw_df__vars_dispose(&p->meta);
    sw_df__vars_dispose(&p->args);
    sw_df__vars_dispose(&p->env);
    sw_df__vars_dispose(&p->bargs);
    sw_free(p->workdir);
    sw_df_stages_free(p->stages, p->nstages);
}

int sw_dockerfile_stages(const char *text, size_t len, const char *const *build_args,
                         sw_df_stage **out, size_t *n)
{
    sw_dockerfile_opts opts = SW_DOCKERFILE_OPTS_INIT;
    opts.build_args = build_args;
    sw_df_parser p;
    parser_init(&p, text, len, &opts);
    p.scan = true;
    int error = parser_run(&p);
    if (error == 0) {
        *out = p.stages;
        *n = p.nstages;
        p.stages = NULL;
        p.nstages = 0;
    }
    parser_dispose(&p);
    return error;
}

void sw_df_stages_free(sw_df_stage *s, size_t n)
{
    for (size_t i = 0; s && i < n; i++) {
        sw_free(s[i].image);
        sw_free(s[i].name);
        sw_free(s[i].flags);
    }
    sw_free(s);
}

int sw_dockerfile_parse_opts(const char *text, size_t len, const sw_dockerfile_opts *opts,
                             sw_dockerfile **out)
{
    sw_df_parser p;
    parser_init(&p, text, len, opts);
    int error = parser_run(&p);
    if (error == 0) {
        *out = p.df;
        p.df = NULL;
    }
    parser_dispose(&p);
    return error;
}

size_t sw_dockerfile_count(const sw_dockerfile *df)
{
    return df ? df->count : 0;
}

const sw_df_instr *sw_dockerfile_instr(const sw_dockerfile *df, size_t i)
{
    return df && i < df->count ? &df->instrs[i] : NULL;
}

const char *sw_dockerfile_base(const sw_dockerfile *df)
{
    return df ? df->base : NULL;
}

size_t sw_dockerfile_warning_count(const sw_dockerfile *df)
{
    return df ? df->nwarnings : 0;
}

const char *sw_dockerfile_warning(const sw_dockerfile *df, size_t i)
{
    return df && i < df->nwarnings ? df->warnings[i] : NULL;
}

const char *sw_df_op_name(sw_df_op op)
{
    for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
        if (commands[i].fn && commands[i].op == op)
            return commands[i].name;
    return "?";
}

void sw_dockerfile_free(sw_dockerfile *df)
{
    if (!df)
        return;
    for (size_t i = 0; i < df->count; i++)
        instr_dispose(&df->instrs[i]);
    for (size_t i = 0; i < df->nwarnings; i++)
        sw_free(df->warnings[i]);
    sw_free(df->instrs);
    sw_free(df->warnings);
    sw_free(df->base);
    sw_free(df);
}
