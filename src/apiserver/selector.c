/* selector: hand-written lexer and recursive-descent parser for label selectors following
 * apimachinery labels/selector.go (tokens, lookahead modes, messages), a term splitter and
 * unescaper for field selectors following fields/selector.go, and the matchers. */
#include "apiserver/selector.h"

#include "meta/names.h"
#include "util/alloc.h"
#include "util/buf.h"
#include "util/error.h"
#include "util/json.h"
#include "util/str.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

enum sel_op { OP_EXISTS, OP_NOT_EXISTS, OP_EQ, OP_NE, OP_IN, OP_NOTIN, OP_GT, OP_LT };

struct sel_req {
    char *key;
    enum sel_op op;
    size_t nvals;
    char **vals; /* nvals strings; for OP_GT/OP_LT one decimal value, parsed into num */
    int64_t num;
};

struct sw_selector {
    size_t n;
    struct sel_req reqs[SW_SELECTOR_MAX_REQS];
};

/* ---- shared helpers ---- */

static sw_selector *selector_new(void)
{
    return sw_calloc(1, sizeof(sw_selector));
}

void sw_selector_free(sw_selector *sel)
{
    if (!sel)
        return;
    for (size_t i = 0; i < sel->n; i++) {
        sw_free(sel->reqs[i].key);
        for (size_t j = 0; j < sel->reqs[i].nvals; j++)
            sw_free(sel->reqs[i].vals[j]);
        sw_free(sel->reqs[i].vals);
    }
    sw_free(sel);
}

/* Adds a requirement; takes ownership of key. Values are added with req_add_value. */
static struct sel_req *req_add(sw_selector *sel, char *key, enum sel_op op)
{
    if (sel->n == SW_SELECTOR_MAX_REQS) {
        sw_free(key);
        sw_error_set(SW_EBADREQUEST, "too many requirements in selector (at most %d)",
                     SW_SELECTOR_MAX_REQS);
        return NULL;
    }
    struct sel_req *r = &sel->reqs[sel->n++];
    r->key = key;
    r->op = op;
    return r;
}

/* Adds a value to a set, ignoring duplicates (Kubernetes keeps a set). Takes ownership of v. */
static int req_add_value(struct sel_req *r, char *v)
{
    for (size_t i = 0; i < r->nvals; i++) {
        if (strcmp(r->vals[i], v) == 0) {
            sw_free(v);
            return 0;
        }
    }
    if (r->nvals == SW_SELECTOR_MAX_VALUES) {
        sw_free(v);
        return sw_error_set(SW_EBADREQUEST, "too many values in set (at most %d)",
                            SW_SELECTOR_MAX_VALUES);
    }
    if (r->nvals % 8 == 0)
        r->vals = sw_realloc(r->vals, (r->nvals + 8) * sizeof(char *));
    r->vals[r->nvals++] = v;
    return 0;
}

static int check_length(const char *s, const char *what)
{
    if (strnlen(s, SW_SELECTOR_MAX_LEN + 1) > SW_SELECTOR_MAX_LEN)
        return sw_error_set(SW_EBADREQUEST, "%s selector is longer than %d bytes", what,
                            SW_SELECTOR_MAX_LEN);
    return 0;
}

/* ---- label selector lexer ---- */

enum tok {
    T_END,
    T_IDENT,
    T_NOT,    /* ! */
    T_NE,     /* != */
    T_LPAREN, /* ( */
    T_RPAREN, /* ) */
    T_COMMA,  /* , */
    T_EQ,     /* = */
    T_DEQ,    /* == */
    T_GT,     /* > */
    T_LT,     /* < */
    T_IN,     /* in (keyword only in operator position) */
    T_NOTIN,  /* notin */
};

/* In MODE_VALUES the keywords in/notin are plain identifiers (as in apimachinery). */
enum lex_mode { MODE_KEY_OP, MODE_VALUES };

struct token {
    enum tok t;
    const char *p; /* literal */
    size_t n;
};

struct lexer {
    const char *s;
    size_t pos;
};

static bool is_ws(char c)
{
    return c == ' ' || c == '\t' || c == '\r' || c == '\n';
}

static bool is_special(char c)
{
    return c == '=' || c == '!' || c == '(' || c == ')' || c == ',' || c == '>' || c == '<';
}

static enum tok special_token(const char *p, size_t *len)
{
    *len = 2;
    if (p[0] == '!' && p[1] == '=')
        return T_NE;
    if (p[0] == '=' && p[1] == '=')
        return T_DEQ;
    *len = 1;
    switch (p[0]) {
    case '!':
        return T_NOT;
    case '(':
        return T_LPAREN;
    case ')':
        return T_RPAREN;
    case ',':
        return T_COMMA;
    case '=':
        return T_EQ;
    case '>':
        return T_GT;
    default:
        return T_LT;
    }
}

static struct token lex_next(struct lexer *lx, enum lex_mode mode)
{
    struct token tk = {T_END, "", 0};
    const char *s = lx->s;
    while (is_ws(s[lx->pos]))
        lx->pos++;
    if (!s[lx->pos])
        return tk;
    tk.p = s + lx->pos;
    if (is_special(s[lx->pos])) {
        tk.t = special_token(tk.p, &tk.n);
        lx->pos += tk.n;
        return tk;
    }
    while (s[lx->pos] && !is_ws(s[lx->pos]) && !is_special(s[lx->pos]))
        lx->pos++;
    tk.n = (size_t)(s + lx->pos - tk.p);
    tk.t = T_IDENT;
    if (mode == MODE_KEY_OP && tk.n == 2 && memcmp(tk.p, "in", 2) == 0)
        tk.t = T_IN;
    else if (mode == MODE_KEY_OP && tk.n == 5 && memcmp(tk.p, "notin", 5) == 0)
        tk.t = T_NOTIN;
    return tk;
}

static struct token lex_peek(const struct lexer *lx, enum lex_mode mode)
{
    struct lexer copy = *lx;
    return lex_next(&copy, mode);
}

/* Sets a parse error naming the token literal: `<prefix>found '<lit>', expected: <what>`. */
static int found_error(const char *prefix, struct token tk, const char *what)
{
    int n = tk.n > 256 ? 256 : (int)tk.n;
    return sw_error_set(SW_EBADREQUEST, "%sfound '%.*s', expected: %s", prefix, n, tk.p, what);
}

#define REQ_PREFIX "unable to parse requirement: "

/* ---- label selector parser ---- */

static int parse_key(struct lexer *lx, char **key_out, enum sel_op *op_out, bool *unary)
{
    struct token tk = lex_next(lx, MODE_VALUES);
    bool negated = tk.t == T_NOT;
    if (negated)
        tk = lex_next(lx, MODE_VALUES);
    if (tk.t != T_IDENT)
        return found_error(REQ_PREFIX, tk, "identifier");
    char *key = sw_strndup(tk.p, tk.n);
    if (sw_names_check_label_key(key) < 0) {
        sw_names_invalid(SW_EBADREQUEST, REQ_PREFIX "key", key, sw_error_msg());
        sw_free(key);
        return SW_EBADREQUEST;
    }
    enum tok next = lex_peek(lx, MODE_VALUES).t;
    *unary = negated || next == T_END || next == T_COMMA;
    *op_out = negated ? OP_NOT_EXISTS : OP_EXISTS;
    *key_out = key;
    return 0;
}

static int parse_operator(struct lexer *lx, enum sel_op *op)
{
    struct token tk = lex_next(lx, MODE_KEY_OP);
    switch (tk.t) {
    case T_IN:
        *op = OP_IN;
        return 0;
    case T_NOTIN:
        *op = OP_NOTIN;
        return 0;
    case T_EQ:
    case T_DEQ:
        *op = OP_EQ;
        return 0;
    case T_NE:
        *op = OP_NE;
        return 0;
    case T_GT:
        *op = OP_GT;
        return 0;
    case T_LT:
        *op = OP_LT;
        return 0;
    default:
        return found_error(REQ_PREFIX, tk, "in, notin, =, ==, !=, gt, lt");
    }
}

/* The single value after =, ==, !=, >, <; end of string or ',' means the empty value. */
static int parse_exact_value(struct lexer *lx, struct sel_req *r)
{
    struct token tk = lex_peek(lx, MODE_VALUES);
    if (tk.t == T_END || tk.t == T_COMMA)
        return req_add_value(r, sw_strdup(""));
    tk = lex_next(lx, MODE_VALUES);
    if (tk.t != T_IDENT)
        return found_error(REQ_PREFIX, tk, "identifier");
    return req_add_value(r, sw_strndup(tk.p, tk.n));
}

/* Identifiers and commas inside ( ... ); empty slots such as "(a,)" or "(,a)" add "". */
static int parse_identifier_list(struct lexer *lx, struct sel_req *r)
{
    int error;
    for (;;) {
        struct token tk = lex_next(lx, MODE_VALUES);
        if (tk.t == T_IDENT) {
            error = req_add_value(r, sw_strndup(tk.p, tk.n));
            if (error < 0)
                return error;
            struct token next = lex_peek(lx, MODE_VALUES);
            if (next.t == T_RPAREN)
                return 0;
            if (next.t != T_COMMA)
                return found_error(REQ_PREFIX, next, "',' or ')'");
            continue;
        }
        if (tk.t != T_COMMA)
            return found_error(REQ_PREFIX, tk, "',', or identifier");
        if (r->nvals == 0 && (error = req_add_value(r, sw_strdup(""))) < 0)
            return error;
        enum tok next = lex_peek(lx, MODE_VALUES).t;
        if (next == T_RPAREN)
            return req_add_value(r, sw_strdup(""));
        if (next == T_COMMA) {
            lex_next(lx, MODE_VALUES);
            if ((error = req_add_value(r, sw_strdup(""))) < 0)
                return error;
        }
    }
}

static int parse_value_set(struct lexer *lx, struct sel_req *r)
{
    struct token tk = lex_next(lx, MODE_VALUES);
    if (tk.t != T_LPAREN)
        return found_error(REQ_PREFIX, tk, "'('");
    tk = lex_peek(lx, MODE_VALUES);
    if (tk.t == T_RPAREN) {
        lex_next(lx, MODE_VALUES);
        return req_add_value(r, sw_strdup(""));
    }
    if (tk.t != T_IDENT && tk.t != T_COMMA)
        return found_error(REQ_PREFIX, tk, "',', ')' or identifier");
    int error = parse_identifier_list(lx, r);
    if (error < 0)
        return error;
    tk = lex_next(lx, MODE_VALUES);
    if (tk.t != T_RPAREN)
        return found_error(REQ_PREFIX, tk, "')'");
    return 0;
}

/* NewRequirement's checks: values are label values; gt/lt take one integer. */
static int validate_values(struct sel_req *r)
{
    for (size_t i = 0; i < r->nvals; i++) {
        if (sw_names_check_label_value(r->vals[i]) < 0) {
            char field[320];
            snprintf(field, sizeof(field), REQ_PREFIX "values[%zu][%s]", i, r->key);
            return sw_names_invalid(SW_EBADREQUEST, field, r->vals[i], sw_error_msg());
        }
    }
    if ((r->op == OP_GT || r->op == OP_LT) && sw_str_to_i64(r->vals[0], &r->num) < 0)
        return sw_error_set(SW_EBADREQUEST,
                            REQ_PREFIX "for 'Gt', 'Lt' operators, the value must be an integer");
    return 0;
}

static int parse_requirement(struct lexer *lx, sw_selector *sel)
{
    char *key = NULL;
    enum sel_op op = OP_EXISTS;
    bool unary = false;
    int error = parse_key(lx, &key, &op, &unary);
    if (error < 0)
        return error;
    if (!unary && (error = parse_operator(lx, &op)) < 0) {
        sw_free(key);
        return error;
    }
    struct sel_req *r = req_add(sel, key, op);
    if (!r)
        return SW_EBADREQUEST;
    if (unary)
        return 0;
    if (op == OP_IN || op == OP_NOTIN)
        error = parse_value_set(lx, r);
    else
        error = parse_exact_value(lx, r);
    if (error < 0)
        return error;
    return validate_values(r);
}

/* What may follow a requirement: end, or ',' and another requirement. Sets *done at the end. */
static int parse_separator(struct lexer *lx, bool *done)
{
    struct token tk = lex_next(lx, MODE_VALUES);
    if (tk.t == T_END) {
        *done = true;
        return 0;
    }
    if (tk.t != T_COMMA)
        return found_error("", tk, "',' or 'end of string'");
    tk = lex_peek(lx, MODE_VALUES);
    if (tk.t != T_IDENT && tk.t != T_NOT)
        return found_error("", tk, "identifier after ','");
    return 0;
}

static int parse_label_terms(struct lexer *lx, sw_selector *sel)
{
    bool done = false;
    while (!done) {
        struct token tk = lex_peek(lx, MODE_VALUES);
        if (tk.t == T_END)
            return 0;
        if (tk.t != T_IDENT && tk.t != T_NOT)
            return found_error("", tk, "!, identifier, or 'end of string'");
        int error = parse_requirement(lx, sel);
        if (error < 0)
            return error;
        error = parse_separator(lx, &done);
        if (error < 0)
            return error;
    }
    return 0;
}

int sw_selector_parse_labels(const char *s, sw_selector **out)
{
    sw_selector *sel = selector_new();
    int error = 0;
    if (s) {
        struct lexer lx = {s, 0};
        error = check_length(s, "label");
        if (error < 0)
            goto done;
        error = parse_label_terms(&lx, sel);
    }
done:
    if (error < 0) {
        sw_selector_free(sel);
        return error;
    }
    *out = sel;
    return 0;
}

/* ---- field selectors ---- */

/* UnescapeValue: `\\`, `\,` and `\=` are the only escapes; bare ',' or '=' is an error. */
static int unescape_value(const char *s, size_t n, char **out)
{
    char *v = sw_malloc(n + 1);
    size_t len = 0;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (c == '\\') {
            if (i + 1 == n || (s[i + 1] != '\\' && s[i + 1] != ',' && s[i + 1] != '=')) {
                sw_error_set(SW_EBADREQUEST,
                             "invalid field selector: invalid escape sequence: \\%.1s",
                             i + 1 == n ? "" : s + i + 1);
                sw_free(v);
                return SW_EBADREQUEST;
            }
            c = s[++i];
        } else if (c == ',' || c == '=') {
            sw_error_set(SW_EBADREQUEST,
                         "invalid field selector: unescaped character in value: '%c'", c);
            sw_free(v);
            return SW_EBADREQUEST;
        }
        v[len++] = c;
    }
    v[len] = '\0';
    *out = v;
    return 0;
}

/* The length of a field operator starting at t[i] ("!=", "==", "="), or 0. */
static size_t field_op_at(const char *t, size_t n, size_t i, enum sel_op *op)
{
    if (i + 1 < n && t[i] == '!' && t[i + 1] == '=') {
        *op = OP_NE;
        return 2;
    }
    if (t[i] != '=')
        return 0;
    *op = OP_EQ;
    return i + 1 < n && t[i + 1] == '=' ? 2 : 1;
}

/* splitTerm: the first position where "!=", "==" or "=" starts splits lhs from rhs. */
static bool split_term(const char *t, size_t n, size_t *lhs_len, enum sel_op *op, size_t *rhs_at)
{
    for (size_t i = 0; i < n; i++) {
        size_t oplen = field_op_at(t, n, i, op);
        if (oplen) {
            *lhs_len = i;
            *rhs_at = i + oplen;
            return true;
        }
    }
    return false;
}

static bool field_allowed(const char *const *allowed, const char *f)
{
    if (!allowed)
        return true;
    for (size_t i = 0; allowed[i]; i++)
        if (strcmp(allowed[i], f) == 0)
            return true;
    return false;
}

static int parse_field_term(const char *all, const char *t, size_t n, const char *const *allowed,
                            sw_selector *sel)
{
    size_t lhs_len, rhs_at;
    enum sel_op op;
    char *value = NULL;
    if (!split_term(t, n, &lhs_len, &op, &rhs_at))
        return sw_error_set(SW_EBADREQUEST, "invalid selector: '%s'; can't understand '%.*s'", all,
                            (int)n, t);
    int error = unescape_value(t + rhs_at, n - rhs_at, &value);
    if (error < 0)
        return error;
    char *field = sw_strndup(t, lhs_len);
    if (!field_allowed(allowed, field)) {
        sw_error_set(SW_EBADREQUEST, "field label not supported: %s", field);
        sw_free(field);
        sw_free(value);
        return SW_EBADREQUEST;
    }
    struct sel_req *r = req_add(sel, field, op);
    if (!r) {
        sw_free(value);
        return SW_EBADREQUEST;
    }
    return req_add_value(r, value);
}

/* splitTerms: split at commas not preceded by an escaping backslash; empty terms are skipped. */
static int parse_field_terms(const char *s, const char *const *allowed, sw_selector *sel)
{
    size_t start = 0;
    bool in_slash = false;
    for (size_t i = 0;; i++) {
        char c = s[i];
        if (in_slash && c) {
            in_slash = false;
            continue;
        }
        if (c == '\\') {
            in_slash = true;
            continue;
        }
        if (c != ',' && c != '\0')
            continue;
        if (i > start) {
            int error = parse_field_term(s, s + start, i - start, allowed, sel);
            if (error < 0)
                return error;
        }
        if (!c)
            return 0;
        start = i + 1;
    }
}

int sw_selector_parse_fields(const char *s, const char *const *allowed, sw_selector **out)
{
    sw_selector *sel = selector_new();
    int error = 0;
    if (s) {
        error = check_length(s, "field");
        if (error < 0)
            goto done;
        error = parse_field_terms(s, allowed, sel);
    }
done:
    if (error < 0) {
        sw_selector_free(sel);
        return error;
    }
    *out = sel;
    return 0;
}

/* ---- matching ---- */

static bool in_set(const struct sel_req *r, const char *v)
{
    for (size_t i = 0; i < r->nvals; i++)
        if (strcmp(r->vals[i], v) == 0)
            return true;
    return false;
}

/* v is the key's value, or NULL when the key is absent. */
static bool req_match(const struct sel_req *r, const char *v)
{
    int64_t num;
    switch (r->op) {
    case OP_EXISTS:
        return v != NULL;
    case OP_NOT_EXISTS:
        return v == NULL;
    case OP_EQ:
    case OP_IN:
        return v && in_set(r, v);
    case OP_NE:
    case OP_NOTIN:
        return !v || !in_set(r, v);
    case OP_GT:
        return v && sw_str_to_i64(v, &num) == 0 && num > r->num;
    case OP_LT:
        return v && sw_str_to_i64(v, &num) == 0 && num < r->num;
    }
    return false;
}

bool sw_selector_match_labels(const sw_selector *sel, const json_t *labels)
{
    if (!sel)
        return true;
    for (size_t i = 0; i < sel->n; i++) {
        const json_t *v = json_is_object(labels) ? json_object_get(labels, sel->reqs[i].key) : NULL;
        if (!req_match(&sel->reqs[i], json_string_value(v)))
            return false;
    }
    return true;
}

static bool in_values(const json_t *values, const char *v)
{
    size_t i;
    const json_t *x;
    json_array_foreach(values, i,
                       x) if (json_is_string(x) && !strcmp(json_string_value(x), v)) return true;
    return false;
}

bool sw_label_selector_match(const json_t *selector, const json_t *labels)
{
    const char *k;
    const json_t *v;
    if (!json_is_object(selector))
        return false;
    json_object_foreach((json_t *)json_object_get(selector, "matchLabels"), k, v)
    {
        const json_t *have = json_is_object(labels) ? json_object_get(labels, k) : NULL;
        if (!json_is_string(v) || !sw_json_same(have, v))
            return false;
    }
    size_t i;
    json_array_foreach(json_object_get(selector, "matchExpressions"), i, v)
    {
        const char *key = json_string_value(json_object_get(v, "key"));
        const char *op = json_string_value(json_object_get(v, "operator"));
        const json_t *values = json_object_get(v, "values");
        const json_t *have = key && json_is_object(labels) ? json_object_get(labels, key) : NULL;
        const char *hv = json_string_value(have);
        if (!key || !op)
            return false;
        bool ok = !strcmp(op, "In")             ? hv && in_values(values, hv)
                  : !strcmp(op, "NotIn")        ? !hv || !in_values(values, hv)
                  : !strcmp(op, "Exists")       ? hv != NULL
                  : !strcmp(op, "DoesNotExist") ? hv == NULL
                                                : false;
        if (!ok)
            return false;
    }
    return true;
}

/* Walks a dotted path through objects; NULL when a step is missing or not an object. */
static const json_t *resolve_path(const json_t *obj, const char *path)
{
    const char *p = path;
    while (obj) {
        const char *dot = strchr(p, '.');
        if (!json_is_object(obj))
            return NULL;
        if (!dot)
            return json_object_get(obj, p);
        obj = json_object_getn(obj, p, (size_t)(dot - p));
        p = dot + 1;
    }
    return NULL;
}

/* The field's text: strings as-is, integers and booleans rendered, everything else "". */
static const char *field_text(const json_t *v, char *tmp, size_t n)
{
    if (json_is_string(v))
        return json_string_value(v);
    if (json_is_integer(v)) {
        snprintf(tmp, n, "%" JSON_INTEGER_FORMAT, json_integer_value(v));
        return tmp;
    }
    if (json_is_boolean(v))
        return json_is_true(v) ? "true" : "false";
    return "";
}

bool sw_selector_match_fields(const sw_selector *sel, const json_t *obj)
{
    char tmp[32];
    if (!sel)
        return true;
    for (size_t i = 0; i < sel->n; i++) {
        const char *v = field_text(resolve_path(obj, sel->reqs[i].key), tmp, sizeof(tmp));
        if (!req_match(&sel->reqs[i], v))
            return false;
    }
    return true;
}

const char *sw_selector_field_equals(const sw_selector *sel, const char *field)
{
    if (!sel || !field)
        return NULL;
    for (size_t i = 0; i < sel->n; i++) {
        const struct sel_req *r = &sel->reqs[i];
        if (r->op == OP_EQ && r->nvals == 1 && strcmp(r->key, field) == 0)
            return r->vals[0];
    }
    return NULL;
}

bool sw_selector_empty(const sw_selector *sel)
{
    return !sel || sel->n == 0;
}
