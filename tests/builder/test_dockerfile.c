/* Unit tests for src/builder/dockerfile: every instruction in shell and JSON form, continuations
 * (with comment and blank lines inside), the escape directive, substitution (:- - :+ + :? and
 * undefined variables), ARG scope and build args, ENV/LABEL pairs, EXPOSE, COPY/ADD flags,
 * WORKDIR resolution, every refusal with its line number, limits, CRLF and BOM. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "builder/dockerfile.h"
#include "util/alloc.h"
#include "util/buf.h"
#include "util/error.h"

#include <stdio.h>
#include <string.h>

static sw_dockerfile *parse_args(const char *text, const char *const *bargs)
{
    sw_dockerfile *df = NULL;
    int error = sw_dockerfile_parse(text, strlen(text), bargs, &df);
    if (error < 0)
        fail_msg("parse failed: %s\n--- input ---\n%s", sw_error_msg(), text);
    return df;
}

static sw_dockerfile *parse(const char *text)
{
    return parse_args(text, NULL);
}

/* Expects parsing to fail with code; returns the message. */
static const char *parse_fail_n(const char *text, size_t len, int code)
{
    sw_dockerfile *df = NULL;
    sw_error_clear();
    int error = sw_dockerfile_parse(text, len, NULL, &df);
    if (error != code)
        fail_msg("expected %d, got %d (%s) for:\n%s", code, error, sw_error_msg(), text);
    assert_null(df);
    return sw_error_msg();
}

static const char *parse_fail(const char *text)
{
    return parse_fail_n(text, strlen(text), SW_EINVALID);
}

/* Valid Docker beyond the native subset: SW_EUNSUPPORTED (another backend builds it). */
static const char *parse_unsupported(const char *text)
{
    return parse_fail_n(text, strlen(text), SW_EUNSUPPORTED);
}

/* Asserts that message starts with prefix. */
static void assert_prefix(const char *msg, const char *prefix)
{
    if (strncmp(msg, prefix, strlen(prefix)) != 0)
        fail_msg("message \"%s\" does not start with \"%s\"", msg, prefix);
}

static void assert_contains(const char *msg, const char *part)
{
    if (!strstr(msg, part))
        fail_msg("message \"%s\" does not contain \"%s\"", msg, part);
}

/* Asserts the instruction's args equal the NULL-terminated list. */
static void assert_args(const sw_df_instr *ins, ...)
{
    va_list ap;
    va_start(ap, ins);
    size_t i = 0;
    for (const char *want = va_arg(ap, const char *); want; want = va_arg(ap, const char *), i++) {
        if (i >= ins->nargs)
            fail_msg("line %d: only %zu args, wanted \"%s\" next", ins->line, ins->nargs, want);
        assert_string_equal(ins->args[i], want);
    }
    va_end(ap);
    assert_int_equal(ins->nargs, i);
}

/* Asserts pair i of ins is key=value (value NULL for an unset ARG). */
static void assert_pair(const sw_df_instr *ins, size_t i, const char *key, const char *value)
{
    assert_true(i < ins->npairs);
    assert_string_equal(ins->keys[i], key);
    if (value)
        assert_string_equal(ins->values[i], value);
    else
        assert_null(ins->values[i]);
}

static const sw_df_instr *at(const sw_dockerfile *df, size_t i)
{
    const sw_df_instr *ins = sw_dockerfile_instr(df, i);
    assert_non_null(ins);
    return ins;
}

/* The value of the last ENV pair in df named key (for checking substitution results). */
static const char *env_of(const sw_dockerfile *df, const char *key)
{
    const char *v = NULL;
    for (size_t i = 0; i < sw_dockerfile_count(df); i++) {
        const sw_df_instr *ins = at(df, i);
        for (size_t k = 0; ins->op == SW_DF_ENV && k < ins->npairs; k++)
            if (!strcmp(ins->keys[k], key))
                v = ins->values[k];
    }
    if (!v)
        fail_msg("no ENV %s", key);
    return v;
}

static void test_minimal(void **state)
{
    sw_dockerfile *df = parse("FROM scratch\nCOPY app /app\n");
    assert_int_equal(sw_dockerfile_count(df), 2);
    assert_string_equal(sw_dockerfile_base(df), "scratch");
    assert_int_equal(at(df, 0)->op, SW_DF_FROM);
    assert_int_equal(at(df, 0)->line, 1);
    assert_args(at(df, 0), "scratch", NULL);
    assert_int_equal(at(df, 1)->op, SW_DF_COPY);
    assert_int_equal(at(df, 1)->line, 2);
    assert_false(at(df, 1)->json_form);
    assert_args(at(df, 1), "app", "/app", NULL);
    assert_null(sw_dockerfile_instr(df, 2));
    assert_int_equal(sw_dockerfile_warning_count(df), 0);
    assert_string_equal(sw_df_op_name(SW_DF_STOPSIGNAL), "STOPSIGNAL");
    sw_dockerfile_free(df);
    sw_dockerfile_free(NULL);
}

static void test_shell_forms(void **state)
{
    sw_dockerfile *df = parse("# a comment\n"
                              "from registry.example.com/base:1.2 AS Build\n"
                              "COPY a b /dst/\n"
                              "ADD site.tar.gz /srv\n"
                              "ENV A=1\n"
                              "ARG B=2\n"
                              "LABEL c=3\n"
                              "WORKDIR /w\n"
                              "USER 1000:1000\n"
                              "EXPOSE 8080\n"
                              "VOLUME /data /cache\n"
                              "ENTRYPOINT exec /app --port $PORT\n"
                              "CMD echo \"hi there\"\n"
                              "STOPSIGNAL SIGTERM\n"
                              "MAINTAINER Jane Doe <jane@example.com>\n");
    assert_int_equal(sw_dockerfile_count(df), 14);
    assert_string_equal(sw_dockerfile_base(df), "registry.example.com/base:1.2");
    assert_args(at(df, 0), "registry.example.com/base:1.2", "build", NULL);
    assert_int_equal(at(df, 0)->line, 2);
    assert_args(at(df, 1), "a", "b", "/dst/", NULL);
    assert_int_equal(at(df, 2)->op, SW_DF_ADD);
    assert_args(at(df, 2), "site.tar.gz", "/srv", NULL);
    assert_pair(at(df, 3), 0, "A", "1");
    assert_int_equal(at(df, 4)->op, SW_DF_ARG);
    assert_pair(at(df, 4), 0, "B", "2");
    assert_int_equal(at(df, 5)->op, SW_DF_LABEL);
    assert_pair(at(df, 5), 0, "c", "3");
    assert_args(at(df, 6), "/w", NULL);
    assert_args(at(df, 7), "1000:1000", NULL);
    assert_args(at(df, 8), "8080/tcp", NULL);
    assert_args(at(df, 9), "/data", "/cache", NULL);
    assert_int_equal(at(df, 10)->op, SW_DF_ENTRYPOINT);
    assert_false(at(df, 10)->json_form);
    assert_args(at(df, 10), "/bin/sh", "-c", "exec /app --port $PORT", NULL);
    assert_args(at(df, 11), "/bin/sh", "-c", "echo \"hi there\"", NULL);
    assert_args(at(df, 12), "SIGTERM", NULL);
    assert_int_equal(at(df, 13)->op, SW_DF_MAINTAINER);
    assert_args(at(df, 13), "Jane Doe <jane@example.com>", NULL);
    assert_int_equal(at(df, 13)->line, 15);
    sw_dockerfile_free(df);
}

static void test_json_forms(void **state)
{
    sw_dockerfile *df = parse("FROM scratch\n"
                              "ENV D=/opt\n"
                              "COPY [\"my file\", \"$D/x y/\"]\n"
                              "ADD [\"a.tar\", \"/\"]\n"
                              "VOLUME [\"/v 1\", \"$D\"]\n"
                              "ENTRYPOINT [\"/app\", \"--dir=$D\"]\n"
                              "CMD  [ \"--verbose\" ,\"x\\\"y\" ]  \n"
                              "ENTRYPOINT []\n"
                              "CMD [ -f /ok ] && run\n");
    const sw_df_instr *ins = at(df, 2);
    assert_true(ins->json_form);
    assert_args(ins, "my file", "/opt/x y/", NULL); /* COPY JSON strings are substituted */
    assert_true(at(df, 3)->json_form);
    assert_args(at(df, 3), "a.tar", "/", NULL);
    assert_true(at(df, 4)->json_form);
    assert_args(at(df, 4), "/v 1", "/opt", NULL);
    assert_true(at(df, 5)->json_form);
    assert_args(at(df, 5), "/app", "--dir=$D", NULL); /* exec form: no substitution */
    assert_true(at(df, 6)->json_form);
    assert_args(at(df, 6), "--verbose", "x\"y", NULL);
    assert_true(at(df, 7)->json_form);
    assert_int_equal(at(df, 7)->nargs, 0);
    assert_false(at(df, 8)->json_form); /* a test expression, not JSON */
    assert_args(at(df, 8), "/bin/sh", "-c", "[ -f /ok ] && run", NULL);
    sw_dockerfile_free(df);
}

static void test_json_errors(void **state)
{
    const char *msg = parse_fail("FROM x\n\nCMD [\"/app\", \"--flag\"\n");
    assert_prefix(msg, "Dockerfile:3: CMD: not a valid JSON array");
    msg = parse_fail("FROM x\nENTRYPOINT ['/app']\n");
    assert_prefix(msg, "Dockerfile:2: ENTRYPOINT: not a valid JSON array");
    assert_contains(msg, "double-quoted");
    msg = parse_fail("FROM x\nCMD [\"a\", 1]\n");
    assert_prefix(msg, "Dockerfile:2: CMD: when using JSON array syntax, arrays must be");
    msg = parse_fail("FROM x\nCOPY [\"a\", \"b\"] extra\n");
    assert_prefix(msg, "Dockerfile:2: COPY: not a valid JSON array");
    msg = parse_fail("FROM x\nVOLUME [\"\\u0000\"]\n");
    assert_prefix(msg, "Dockerfile:2: VOLUME: not a valid JSON array");
    msg = parse_fail("FROM x\nVOLUME []\n");
    assert_string_equal(msg, "Dockerfile:2: VOLUME requires at least one argument");
    msg = parse_fail("FROM x\nVOLUME [\"\"]\n");
    assert_string_equal(msg, "Dockerfile:2: VOLUME specified can not be an empty string");
    msg = parse_fail("FROM x\nCOPY [\"only\"]\n");
    assert_prefix(msg, "Dockerfile:2: COPY requires at least two arguments");
}

static void test_continuations(void **state)
{
    sw_dockerfile *df = parse("FROM scratch\n"
                              "COPY a \\\n"
                              "# a comment inside\n"
                              "   # an indented one\n"
                              "\n"
                              "     b \\   \n"
                              "  /dst\n"
                              "LABEL x=\"one\\\n"
                              "   two\"\n"
                              "ENV J=a\\\n"
                              "b\n"
                              "  # leading blanks before a comment\n"
                              "  USER  nobody  \n"
                              "EXPOSE 1 \\");
    assert_int_equal(sw_dockerfile_count(df), 6);
    assert_int_equal(at(df, 1)->line, 2);
    assert_args(at(df, 1), "a", "b", "/dst", NULL);
    assert_int_equal(at(df, 2)->line, 8);
    assert_pair(at(df, 2), 0, "x", "one   two"); /* blanks of continuation lines are kept */
    assert_pair(at(df, 3), 0, "J", "ab");
    assert_int_equal(at(df, 4)->line, 13);
    assert_args(at(df, 4), "nobody", NULL);
    assert_int_equal(at(df, 5)->line, 14);
    assert_args(at(df, 5), "1/tcp", NULL); /* a continuation at the end ends the instruction */
    sw_dockerfile_free(df);

    /* A line that is only an escape joins nothing; line numbers keep counting. */
    df = parse("\\\nFROM x\n\n\n\nCOPY a b\n");
    assert_int_equal(at(df, 0)->line, 1);
    assert_int_equal(at(df, 1)->line, 6);
    sw_dockerfile_free(df);
}

static void test_escape_directive(void **state)
{
    sw_dockerfile *df = parse("# escape=`\n"
                              "\n"
                              "FROM mcr.example.com/nanoserver\n"
                              "COPY testfile.txt c:\\\n"
                              "COPY a `\n"
                              "     b c:\\dir\\\n"
                              "ENV P=with` space Q=\"say `\"hi`\"\" R=back\\slash\n");
    assert_int_equal(sw_dockerfile_count(df), 4);
    assert_args(at(df, 1), "testfile.txt", "c:\\", NULL);
    assert_int_equal(at(df, 2)->line, 5);
    assert_args(at(df, 2), "a", "b", "c:\\dir\\", NULL);
    assert_pair(at(df, 3), 0, "P", "with space");
    assert_pair(at(df, 3), 1, "Q", "say \"hi\"");
    assert_pair(at(df, 3), 2, "R", "back\\slash");
    sw_dockerfile_free(df);

    /* Key case, blanks and the other directives. */
    df = parse("#  ESCAPE = `\n# syntax=docker/dockerfile:1\n#check=error=true\nFROM x\n"
               "COPY a b`\nc\n");
    assert_args(at(df, 1), "a", "bc", NULL);
    sw_dockerfile_free(df);

    /* After a comment, a blank line or an instruction, a directive is only a comment. */
    df = parse("# hello\n# escape=`\nFROM x\nCOPY a \\\n b\n");
    assert_args(at(df, 1), "a", "b", NULL);
    sw_dockerfile_free(df);
    df = parse("\n# escape=`\nFROM x\nCOPY a \\\n b\n");
    assert_args(at(df, 1), "a", "b", NULL);
    sw_dockerfile_free(df);
    df = parse("# unknown=1\n# escape=`\nFROM x\nCOPY a \\\n b\n");
    assert_args(at(df, 1), "a", "b", NULL);
    sw_dockerfile_free(df);

    const char *msg = parse_fail("# escape=`\n# escape=\\\nFROM x\n");
    assert_string_equal(msg, "Dockerfile:2: only one escape parser directive can be used");
    msg = parse_fail("# escape=x\nFROM x\n");
    assert_string_equal(msg, "Dockerfile:1: invalid escape token 'x' does not match ` or \\");
}

static void test_substitution(void **state)
{
    sw_dockerfile *df = parse("FROM scratch\n"
                              "ENV A=abc E= S=\"two words\"\n"
                              "ENV R1=$A R2=${A}_x R3=${A:-d} R4=${U:-d} R5=${E:-d} R6=${E-d} "
                              "R7=${U-d} R8=${A:+alt} R9=${E:+alt} R10=${E+alt} R11=${U+alt} "
                              "R12=[$U] R13=\\$A R14='$A' R15=\"$A\" R16=a$ R17=${U:-${A:-z}} "
                              "R18=\"${S}\" R19=${A:?} R20=\\${A} R21=\"\\$A \\a\" "
                              "R22=${U:-'$A'} R23=$1$@x R24=${A:-}\n");
    assert_string_equal(env_of(df, "R1"), "abc");
    assert_string_equal(env_of(df, "R2"), "abc_x");
    assert_string_equal(env_of(df, "R3"), "abc");
    assert_string_equal(env_of(df, "R4"), "d");
    assert_string_equal(env_of(df, "R5"), "d");
    assert_string_equal(env_of(df, "R6"), "");
    assert_string_equal(env_of(df, "R7"), "d");
    assert_string_equal(env_of(df, "R8"), "alt");
    assert_string_equal(env_of(df, "R9"), "");
    assert_string_equal(env_of(df, "R10"), "alt");
    assert_string_equal(env_of(df, "R11"), "");
    assert_string_equal(env_of(df, "R12"), "[]");
    assert_string_equal(env_of(df, "R13"), "$A");
    assert_string_equal(env_of(df, "R14"), "$A");
    assert_string_equal(env_of(df, "R15"), "abc");
    assert_string_equal(env_of(df, "R16"), "a$");
    assert_string_equal(env_of(df, "R17"), "abc");
    assert_string_equal(env_of(df, "R18"), "two words");
    assert_string_equal(env_of(df, "R19"), "abc");
    assert_string_equal(env_of(df, "R20"), "${A}");
    assert_string_equal(env_of(df, "R21"), "$A \\a");
    assert_string_equal(env_of(df, "R22"), "$A");
    assert_string_equal(env_of(df, "R23"), "x");
    assert_string_equal(env_of(df, "R24"), "abc");
    sw_dockerfile_free(df);

    const char *msg = parse_fail("FROM x\nENV A=\"${U:?must be set}\"\n");
    assert_string_equal(msg, "Dockerfile:2: ENV: U: must be set");
    msg = parse_fail("FROM x\nENV E=\nENV A=${E:?}\n");
    assert_string_equal(msg, "Dockerfile:3: ENV: E: is not allowed to be empty");
    msg = parse_fail("FROM x\nENV A=${U?}\n");
    assert_string_equal(msg, "Dockerfile:2: ENV: U: is not allowed to be unset");
    msg = parse_fail("FROM x\nWORKDIR ${A#pre}\n");
    assert_prefix(msg, "Dockerfile:2: WORKDIR: unsupported modifier (#) in substitution");
    msg = parse_fail("FROM x\nUSER ${}\n");
    assert_string_equal(msg, "Dockerfile:2: USER: syntax error: bad substitution");
    msg = parse_fail("FROM x\nUSER ${A:-x\n");
    assert_string_equal(msg, "Dockerfile:2: USER: syntax error: missing '}'");
    msg = parse_fail("FROM x\nUSER ${A\n");
    assert_string_equal(msg, "Dockerfile:2: USER: syntax error: missing '}'");
    msg = parse_fail("FROM x\nLABEL a=\"open\n");
    assert_string_equal(msg, "Dockerfile:2: LABEL: unexpected end of statement while looking for "
                             "matching double-quote");
    msg = parse_fail("FROM x\nLABEL a='open\n");
    assert_string_equal(msg, "Dockerfile:2: LABEL: unexpected end of statement while looking for "
                             "matching single-quote");
}

static void test_env_semantics(void **state)
{
    /* One instruction sees the values from before it; the next sees the new ones. */
    sw_dockerfile *df = parse("FROM x\nENV abc=hello\nENV abc=bye def=$abc\nENV ghi=$abc\n"
                              "COPY $abc ${def}/ \nUSER $ghi\nVOLUME /v/$abc\nLABEL l=$def\n"
                              "STOPSIGNAL ${SIG:-SIGINT}\nEXPOSE ${P:-9090}\n");
    assert_pair(at(df, 2), 1, "def", "hello");
    assert_pair(at(df, 3), 0, "ghi", "bye");
    assert_args(at(df, 4), "bye", "hello/", NULL);
    assert_args(at(df, 5), "bye", NULL);
    assert_args(at(df, 6), "/v/bye", NULL);
    assert_pair(at(df, 7), 0, "l", "hello");
    assert_args(at(df, 8), "SIGINT", NULL);
    assert_args(at(df, 9), "9090/tcp", NULL);
    sw_dockerfile_free(df);

    const char *msg = parse_fail("FROM x\nENV X=a=b\nENV ${X}=1\n");
    assert_string_equal(msg, "Dockerfile:3: ENV: the name \"a=b\" contains '='");
    msg = parse_fail("FROM x\nENV ${U}=1\n");
    assert_string_equal(msg, "Dockerfile:2: ENV names can not be blank");
}

static void test_arg_scope(void **state)
{
    sw_dockerfile *df = parse("ARG VERSION=1.0\n"
                              "ARG REPO=library/base\n"
                              "ARG IMG=${REPO}:${VERSION}\n"
                              "FROM $IMG\n"
                              "ENV A=[$VERSION]\n"
                              "ARG VERSION\n"
                              "ENV B=[$VERSION]\n"
                              "ARG NOVAL\n"
                              "ENV C=${NOVAL-unset} D=${NOVAL:-empty}\n"
                              "ARG E=default F\n"
                              "ENV E=env\n"
                              "ARG E=again\n"
                              "ENV G=$E\n"
                              "ARG H=1 I=$H\n");
    assert_string_equal(sw_dockerfile_base(df), "library/base:1.0");
    assert_int_equal(at(df, 0)->op, SW_DF_FROM); /* global ARGs are not listed */
    assert_int_equal(at(df, 0)->line, 4);
    assert_string_equal(env_of(df, "A"), "[]"); /* global ARGs are only visible in FROM */
    assert_pair(at(df, 2), 0, "VERSION", "1.0");
    assert_string_equal(env_of(df, "B"), "[1.0]");
    assert_pair(at(df, 4), 0, "NOVAL", NULL);
    assert_string_equal(env_of(df, "C"), "unset");
    assert_string_equal(env_of(df, "D"), "empty");
    assert_pair(at(df, 6), 0, "E", "default");
    assert_pair(at(df, 6), 1, "F", NULL);
    assert_string_equal(env_of(df, "G"), "env"); /* ENV wins over ARG */
    assert_pair(at(df, 10), 0, "H", "1");
    assert_pair(at(df, 10), 1, "I", ""); /* like ENV: the values from before the instruction */
    sw_dockerfile_free(df);

    const char *msg = parse_fail("FROM x\nARG\n");
    assert_string_equal(msg, "Dockerfile:2: ARG requires at least one argument");
    msg = parse_fail("FROM x\nARG \"a\"=1\n");
    assert_string_equal(msg, "Dockerfile:2: ARG: invalid name \"\"a\"\"");
}

static void test_build_args(void **state)
{
    const char *const bargs[] = {"VERSION=2.0", "STAGE=from-cli", "UNUSED=1",
                                 "EMPTY=",      "UNUSED=2",       NULL};
    sw_dockerfile *df = parse_args("ARG VERSION=1.0\n"
                                   "FROM base:$VERSION\n"
                                   "ARG VERSION\n"
                                   "ARG STAGE=default EMPTY=x OTHER=o\n"
                                   "LABEL v=$VERSION s=$STAGE e=[$EMPTY] o=$OTHER\n",
                                   bargs);
    assert_string_equal(sw_dockerfile_base(df), "base:2.0");
    assert_pair(at(df, 1), 0, "VERSION", "2.0");
    assert_pair(at(df, 2), 0, "STAGE", "from-cli");
    assert_pair(at(df, 2), 1, "EMPTY", "");
    assert_pair(at(df, 3), 0, "v", "2.0");
    assert_pair(at(df, 3), 1, "s", "from-cli");
    assert_pair(at(df, 3), 2, "e", "[]");
    assert_pair(at(df, 3), 3, "o", "o");
    assert_int_equal(sw_dockerfile_warning_count(df), 1);
    assert_string_equal(sw_dockerfile_warning(df, 0),
                        "build-arg UNUSED was not consumed by any ARG");
    assert_null(sw_dockerfile_warning(df, 1));
    sw_dockerfile_free(df);

    /* A build arg that no ARG declares is not visible. */
    const char *const only[] = {"X=1", NULL};
    df = parse_args("FROM x\nENV A=[$X]\n", only);
    assert_string_equal(env_of(df, "A"), "[]");
    assert_int_equal(sw_dockerfile_warning_count(df), 1);
    sw_dockerfile_free(df);

    const char *const bad[] = {"NOEQUALS", NULL};
    sw_dockerfile *out = NULL;
    assert_int_equal(sw_dockerfile_parse("FROM x\n", 7, bad, &out), SW_EINVALID);
    assert_string_equal(sw_error_msg(), "build-arg \"NOEQUALS\": expected NAME=VALUE");
    assert_null(out);
}

static void test_base_config(void **state)
{
    const char *const env[] = {"PATH=/usr/local/bin:/usr/bin", "HOME=/root", "NOEQ", NULL};
    const char *const bargs[] = {"HOME=/from-build-arg", NULL};
    sw_dockerfile_opts o = SW_DOCKERFILE_OPTS_INIT;
    o.base_env = env;
    o.base_workdir = "/srv/./base/";
    o.build_args = bargs;
    const char *text = "FROM ${HOME:-img}\n"
                       "ARG HOME\n"
                       "ENV PATH=/app/bin:$PATH H=$HOME N=[${NOEQ-unset}]\n"
                       "WORKDIR sub\n";
    sw_dockerfile *df = NULL;
    assert_int_equal(sw_dockerfile_parse_opts(text, strlen(text), &o, &df), 0);
    assert_string_equal(sw_dockerfile_base(df), "img"); /* FROM sees global ARGs only */
    assert_string_equal(env_of(df, "PATH"), "/app/bin:/usr/local/bin:/usr/bin");
    assert_string_equal(env_of(df, "H"), "/root"); /* the image's ENV wins over ARG */
    assert_string_equal(env_of(df, "N"), "[]");
    assert_args(at(df, 3), "/srv/base/sub", NULL);
    assert_int_equal(sw_dockerfile_warning_count(df), 0);
    sw_dockerfile_free(df);

    /* Without the base config, $PATH is unset (the builder parses again once it has it). */
    df = parse("FROM x\nENV PATH=/app/bin:$PATH\nWORKDIR sub\n");
    assert_string_equal(env_of(df, "PATH"), "/app/bin:");
    assert_args(at(df, 2), "/sub", NULL);
    sw_dockerfile_free(df);
}

static void test_label_env_pairs(void **state)
{
    sw_dockerfile *df = parse("FROM x\n"
                              "LABEL \"com.example.vendor\"=\"ACME Inc\" version=1.0 "
                              "desc=two\\ words empty= q='single $x'\n"
                              "ENV   LEGACY    value with   spaces  \n"
                              "LABEL legacy \"quoted value\"\n"
                              "ENV MULTI=1 \\\n    OTHER=2\n");
    const sw_df_instr *l = at(df, 1);
    assert_int_equal(l->npairs, 5);
    assert_pair(l, 0, "com.example.vendor", "ACME Inc");
    assert_pair(l, 1, "version", "1.0");
    assert_pair(l, 2, "desc", "two words");
    assert_pair(l, 3, "empty", "");
    assert_pair(l, 4, "q", "single $x");
    assert_int_equal(at(df, 2)->npairs, 1);
    assert_pair(at(df, 2), 0, "LEGACY", "value with   spaces");
    assert_pair(at(df, 3), 0, "legacy", "quoted value");
    assert_pair(at(df, 4), 0, "MULTI", "1");
    assert_pair(at(df, 4), 1, "OTHER", "2");
    sw_dockerfile_free(df);

    const char *msg = parse_fail("FROM x\nENV a=1 b\n");
    assert_prefix(msg, "Dockerfile:2: ENV: syntax error - can't find = in \"b\"");
    msg = parse_fail("FROM x\nENV onlykey\n");
    assert_string_equal(msg, "Dockerfile:2: ENV must have two arguments");
    msg = parse_fail("FROM x\nLABEL\n");
    assert_string_equal(msg, "Dockerfile:2: LABEL requires at least one argument");
}

static void test_expose(void **state)
{
    sw_dockerfile *df = parse("FROM x\nENV PORTS=\"9000 9001/udp\"\n"
                              "EXPOSE 80 8080/tcp 53/udp 132/SCTP 7000-7002/udp $PORTS\n");
    assert_args(at(df, 2), "80/tcp", "8080/tcp", "53/udp", "132/sctp", "7000/udp", "7001/udp",
                "7002/udp", "9000/tcp", "9001/udp", NULL);
    sw_dockerfile_free(df);

    const char *bad[] = {"0", "70000", "80/foo", "127.0.0.1:80:80", "10-5", "80/", "abc", "-1"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        char text[128];
        snprintf(text, sizeof(text), "FROM x\nEXPOSE 1 %s\n", bad[i]);
        const char *msg = parse_fail(text);
        assert_prefix(msg, "Dockerfile:2: EXPOSE: invalid port \"");
    }
    assert_string_equal(parse_fail("FROM x\nEXPOSE $NONE\n"),
                        "Dockerfile:2: EXPOSE requires at least one argument");
    const char *many = "FROM x\nEXPOSE 1-65535\nEXPOSE 1-2\n";
    assert_prefix(parse_fail_n(many, strlen(many), SW_ELIMIT),
                  "Dockerfile:3: EXPOSE: more than 65536 ports");
}

static void test_copy_flags(void **state)
{
    sw_dockerfile *df = parse("FROM x\n"
                              "ARG UID=1000\n"
                              "COPY --chown=1000:1000 --chmod=0755 a b dest/\n"
                              "ADD --chown=${UID} --link src.tar /opt/\n"
                              "COPY --link=false -- --weird-name /\n"
                              "COPY --chown=app:staff [\"x\", \"/y\"]\n");
    const sw_df_instr *c = at(df, 2);
    assert_string_equal(c->chown, "1000:1000");
    assert_string_equal(c->chmod, "0755");
    assert_args(c, "a", "b", "dest/", NULL);
    assert_string_equal(at(df, 3)->chown, "1000");
    assert_null(at(df, 3)->chmod);
    assert_args(at(df, 3), "src.tar", "/opt/", NULL);
    assert_null(at(df, 4)->chown);
    assert_args(at(df, 4), "--weird-name", "/", NULL);
    assert_true(at(df, 5)->json_form);
    assert_string_equal(at(df, 5)->chown, "app:staff");
    sw_dockerfile_free(df);

    assert_prefix(parse_unsupported("FROM x\nCOPY --from=builder /app /app\n"),
                  "Dockerfile:2: COPY --from is not supported yet");
    assert_prefix(parse_unsupported("FROM x\nCOPY <<EOF /x\nhello\nEOF\n"),
                  "Dockerfile:2: COPY: heredocs (<<EOF)");
    assert_prefix(parse_unsupported("FROM --platform=linux/amd64 x\n"),
                  "Dockerfile:1: FROM --platform is not supported");
    struct {
        const char *text;
        const char *want;
    } cases[] = {
        {"FROM x\nCOPY --chmod=999 a b\n", "Dockerfile:2: COPY: invalid --chmod=999"},
        {"FROM x\nCOPY --chmod=u+x a b\n", "Dockerfile:2: COPY: invalid --chmod=u+x"},
        {"FROM x\nCOPY --chmod=17777 a b\n", "Dockerfile:2: COPY: invalid --chmod=17777"},
        {"FROM x\nCOPY --chown=:g a b\n", "Dockerfile:2: COPY: invalid --chown=:g"},
        {"FROM x\nCOPY --chown=u: a b\n", "Dockerfile:2: COPY: invalid --chown=u:"},
        {"FROM x\nCOPY --chown a b\n", "Dockerfile:2: COPY: missing a value on flag --chown"},
        {"FROM x\nCOPY --chown=1 --chown=2 a b\n", "Dockerfile:2: COPY: duplicate flag --chown"},
        {"FROM x\nCOPY --parents a b\n", "Dockerfile:2: COPY: unknown flag --parents"},
        {"FROM x\nADD --checksum=sha256:00 a b\n", "Dockerfile:2: ADD --checksum is not supported"},
        {"FROM x\nADD https://example.com/a.tgz /\n",
         "Dockerfile:2: ADD https://example.com/a.tgz: remote sources are not supported"},
        {"FROM x\nADD git@github.com:a/b.git /\n", "Dockerfile:2: ADD git@github.com:a/b.git"},
        {"FROM x\nCOPY\n", "Dockerfile:2: COPY requires at least two arguments"},
        {"FROM x\nCOPY onlyone\n", "Dockerfile:2: COPY requires at least two arguments"},
        {"FROM x\nCOPY $NOPE /x\n", "Dockerfile:2: COPY: source 1 is empty after variable"},
        {"FROM x\nCOPY a \"\"\n", "Dockerfile:2: COPY: the destination 2 is empty"},
        {"FROM x\nENV --foo=bar\n", "Dockerfile:2: ENV: unknown flag --foo"},
        {"FROM x\nCMD --help\n", "Dockerfile:2: CMD: unknown flag --help"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
        assert_prefix(parse_fail(cases[i].text), cases[i].want);
}

static void test_workdir(void **state)
{
    sw_dockerfile *df = parse("FROM x\n"
                              "WORKDIR rel\n"
                              "WORKDIR /a\n"
                              "WORKDIR b\n"
                              "WORKDIR ../c/./d//\n"
                              "WORKDIR ../../../..\n"
                              "ENV DIR=/srv/app\n"
                              "WORKDIR $DIR\n"
                              "WORKDIR with space\n");
    assert_args(at(df, 1), "/rel", NULL);
    assert_args(at(df, 2), "/a", NULL);
    assert_args(at(df, 3), "/a/b", NULL);
    assert_args(at(df, 4), "/a/c/d", NULL);
    assert_args(at(df, 5), "/", NULL);
    assert_args(at(df, 7), "/srv/app", NULL);
    assert_args(at(df, 8), "/srv/app/with space", NULL);
    sw_dockerfile_free(df);
    assert_string_equal(parse_fail("FROM x\nWORKDIR\n"),
                        "Dockerfile:2: WORKDIR requires exactly one argument");
    assert_string_equal(parse_fail("FROM x\nWORKDIR $U\n"),
                        "Dockerfile:2: WORKDIR: the value is empty after variable substitution");
}

static void test_user_stopsignal(void **state)
{
    sw_dockerfile *df = parse("FROM x\nENV U=app\nUSER $U:staff\nSTOPSIGNAL 9\n"
                              "STOPSIGNAL sigkill\nSTOPSIGNAL RTMIN+3\nSTOPSIGNAL QUIT\n");
    assert_args(at(df, 2), "app:staff", NULL);
    assert_args(at(df, 3), "9", NULL);
    assert_args(at(df, 4), "sigkill", NULL);
    assert_args(at(df, 5), "RTMIN+3", NULL);
    assert_args(at(df, 6), "QUIT", NULL);
    sw_dockerfile_free(df);
    assert_string_equal(parse_fail("FROM x\nSTOPSIGNAL SIGFOO\n"),
                        "Dockerfile:2: STOPSIGNAL: invalid signal \"SIGFOO\"");
    assert_prefix(parse_fail("FROM x\nSTOPSIGNAL 0\n"), "Dockerfile:2: STOPSIGNAL: invalid");
    assert_prefix(parse_fail("FROM x\nSTOPSIGNAL 65\n"), "Dockerfile:2: STOPSIGNAL: invalid");
    assert_prefix(parse_fail("FROM x\nUSER a b\n"), "Dockerfile:2: USER: invalid user \"a b\"");
    assert_string_equal(parse_fail("FROM x\nUSER\n"),
                        "Dockerfile:2: USER requires exactly one argument");
    assert_string_equal(parse_fail("FROM x\nCMD\n"),
                        "Dockerfile:2: CMD requires at least one argument");
}

static void test_refusals(void **state)
{
    const char *msg = parse_unsupported("FROM alpine\nENV A=1\nCOPY a /a\nLABEL b=2\n\n# comment\n"
                                        "RUN apk add curl\n");
    assert_string_equal(msg, "Dockerfile:7: RUN is not supported: slipway builds without a "
                             "container runtime; move the step into an earlier image or the "
                             "build context");
    msg = parse_unsupported("FROM x\n\nrun \\\n  make\n");
    assert_prefix(msg, "Dockerfile:3: RUN is not supported");
    msg = parse_unsupported("FROM x\nHEALTHCHECK CMD curl -f http://localhost/\n");
    assert_prefix(msg, "Dockerfile:2: HEALTHCHECK is not supported: ");
    msg = parse_unsupported("FROM x\nCOPY a b\nONBUILD COPY . /src\n");
    assert_prefix(msg, "Dockerfile:3: ONBUILD is not supported: ");
    msg = parse_unsupported("FROM x\n\n\nSHELL [\"/bin/bash\", \"-c\"]\n");
    assert_prefix(msg, "Dockerfile:4: SHELL is not supported: ");
    msg = parse_fail("FROM x\nCOPY a b\nFOOBAR baz\n");
    assert_string_equal(msg, "Dockerfile:3: unknown instruction: FOOBAR");
    msg = parse_fail("# c\nCOPY a b\nFROM x\n");
    assert_string_equal(msg, "Dockerfile:2: the first instruction must be FROM (or ARG), not COPY");
    msg = parse_fail("ARG A=1\nENV B=2\n");
    assert_string_equal(msg, "Dockerfile:2: the first instruction must be FROM (or ARG), not ENV");
    msg = parse_unsupported("FROM golang AS build\nCOPY . /src\nFROM scratch\n");
    assert_string_equal(msg, "Dockerfile:3: multi-stage builds are not supported yet: this is a "
                             "second FROM (the first is on line 1)");
    assert_string_equal(parse_fail(""), "Dockerfile: file with no instructions");
    assert_string_equal(parse_fail("# only\n\n   # comments\n"),
                        "Dockerfile: file with no instructions");
    assert_string_equal(parse_fail("ARG A=1\n"), "Dockerfile: no FROM instruction");
    assert_prefix(parse_fail("FROM a b\n"), "Dockerfile:1: FROM requires either one or three");
    assert_prefix(parse_fail("FROM a AS 1x\n"), "Dockerfile:1: invalid name for build stage");
    assert_prefix(parse_fail("FROM\n"), "Dockerfile:1: FROM requires either one or three");
    assert_prefix(parse_fail("FROM $NOPE\n"), "Dockerfile:1: FROM: base name ($NOPE) should not");
    assert_prefix(parse_fail("ARG B=\"a b\"\nFROM $B\n"), "Dockerfile:2: FROM: invalid base image");
}

/* A text of n copies of line. */
static char *repeat(const char *head, const char *line, size_t n, size_t *len)
{
    sw_buf b = SW_BUF_INIT(64u << 20);
    sw_buf_puts(&b, head);
    for (size_t i = 0; i < n; i++)
        sw_buf_puts(&b, line);
    return sw_buf_detach(&b, len);
}

static void test_limits(void **state)
{
    size_t len;
    char *text = repeat("FROM x\n", "# padding padding padding padding padding\n", 30000, &len);
    assert_true(len > SW_DOCKERFILE_MAX_BYTES);
    assert_prefix(parse_fail_n(text, len, SW_ELIMIT), "Dockerfile: ");
    sw_free(text);

    text = repeat("FROM x\n", "EXPOSE 1\n", SW_DOCKERFILE_MAX_INSTRUCTIONS - 1, &len);
    sw_dockerfile *df = NULL;
    assert_int_equal(sw_dockerfile_parse(text, len, NULL, &df), 0);
    assert_int_equal(sw_dockerfile_count(df), SW_DOCKERFILE_MAX_INSTRUCTIONS);
    sw_dockerfile_free(df);
    sw_free(text);
    text = repeat("FROM x\n", "EXPOSE 1\n", SW_DOCKERFILE_MAX_INSTRUCTIONS, &len);
    assert_string_equal(parse_fail_n(text, len, SW_ELIMIT),
                        "Dockerfile:10001: more than 10000 instructions");
    sw_free(text);

    /* 64 KiB after joining continuations. */
    text = repeat("FROM x\nLABEL a=1 \\\n", "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb\\\n",
                  1500, &len);
    assert_string_equal(parse_fail_n(text, len, SW_ELIMIT),
                        "Dockerfile:2: the instruction is longer than 65536 bytes");
    sw_free(text);

    /* ${...} nesting. */
    sw_buf b = SW_BUF_INIT(1 << 20);
    sw_buf_puts(&b, "FROM x\nENV A=");
    for (int i = 0; i < SW_DOCKERFILE_MAX_NESTING; i++)
        sw_buf_puts(&b, "${U:-");
    sw_buf_puts(&b, "deep");
    for (int i = 0; i < SW_DOCKERFILE_MAX_NESTING; i++)
        sw_buf_putc(&b, '}');
    df = parse(sw_buf_cstr(&b));
    assert_string_equal(env_of(df, "A"), "deep");
    sw_dockerfile_free(df);
    sw_buf_clear(&b);
    sw_buf_puts(&b, "FROM x\nENV A=");
    for (int i = 0; i <= SW_DOCKERFILE_MAX_NESTING; i++)
        sw_buf_puts(&b, "${U:-");
    assert_string_equal(parse_fail_n(sw_buf_cstr(&b), b.len, SW_ELIMIT),
                        "Dockerfile:2: ENV: ${...} nested more than 32 levels deep");
    sw_buf_dispose(&b);

    /* Doubling a variable on every line hits the size caps, not the memory. */
    text = repeat("FROM x\nENV A=0123456789abcdef0123456789abcdef\n", "ENV A=$A$A$A$A\n", 40, &len);
    assert_int_equal(sw_dockerfile_parse(text, len, NULL, &df), SW_ELIMIT);
    sw_free(text);

    /* NUL bytes and invalid UTF-8 name their line. */
    static const char nul[] = "FROM x\nCOPY a\0b /c\n";
    assert_string_equal(parse_fail_n(nul, sizeof(nul) - 1, SW_EINVALID),
                        "Dockerfile:2: NUL byte in the line");
    assert_string_equal(parse_fail("FROM x\n\nLABEL a=\xC3\x28\n"),
                        "Dockerfile:3: the line is not valid UTF-8");
    assert_string_equal(parse_fail("FROM x\nLABEL a=\xED\xA0\x80\n"),
                        "Dockerfile:2: the line is not valid UTF-8");
    df = parse("FROM x\nLABEL a=\xC3\xA9t\xC3\xA9 b=\xF0\x9F\x9A\xA2\n");
    assert_pair(at(df, 1), 0, "a", "\xC3\xA9t\xC3\xA9");
    sw_dockerfile_free(df);
}

static void test_crlf_bom(void **state)
{
    sw_dockerfile *df = parse("\xEF\xBB\xBF# escape=`\r\n"
                              "FROM x\r\n"
                              "COPY a `\r\n"
                              "  b /c\r\n"
                              "\r\n"
                              "LABEL k=\"v\"\r\n"
                              "CMD [\"/app\"]\r\n");
    assert_int_equal(sw_dockerfile_count(df), 4);
    assert_args(at(df, 1), "a", "b", "/c", NULL);
    assert_int_equal(at(df, 2)->line, 6);
    assert_pair(at(df, 2), 0, "k", "v");
    assert_true(at(df, 3)->json_form);
    assert_args(at(df, 3), "/app", NULL);
    sw_dockerfile_free(df);

    df = parse("\xEF\xBB\xBF"
               "FROM scratch\r\nCMD run\r\n");
    assert_string_equal(sw_dockerfile_base(df), "scratch");
    assert_args(at(df, 1), "/bin/sh", "-c", "run", NULL);
    sw_dockerfile_free(df);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_minimal),       cmocka_unit_test(test_shell_forms),
        cmocka_unit_test(test_json_forms),    cmocka_unit_test(test_json_errors),
        cmocka_unit_test(test_continuations), cmocka_unit_test(test_escape_directive),
        cmocka_unit_test(test_substitution),  cmocka_unit_test(test_env_semantics),
        cmocka_unit_test(test_arg_scope),     cmocka_unit_test(test_build_args),
        cmocka_unit_test(test_base_config),   cmocka_unit_test(test_label_env_pairs),
        cmocka_unit_test(test_expose),        cmocka_unit_test(test_copy_flags),
        cmocka_unit_test(test_workdir),       cmocka_unit_test(test_user_stopsignal),
        cmocka_unit_test(test_refusals),      cmocka_unit_test(test_limits),
        cmocka_unit_test(test_crlf_bom),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
