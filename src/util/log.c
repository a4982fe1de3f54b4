/* log: timestamped single-line logging to stderr, text or JSON, with a global verbosity. */
#include "util/log.h"

#include "util/error.h"
#include "util/time.h"

#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int verbosity = 0;
static bool json_format = false;

void sw_log_set_verbosity(int v)
{
    verbosity = v;
}

int sw_log_verbosity(void)
{
    return verbosity;
}

void sw_log_set_json(bool json)
{
    json_format = json;
}

int sw_log_parse_format(const char *v)
{
    if (!v || (strcmp(v, "text") && strcmp(v, "json")))
        return sw_error_set(SW_EINVALID, "--log-format: expected text or json");
    sw_log_set_json(!strcmp(v, "json"));
    return 0;
}

static const char *level_name(int level)
{
    return level <= SW_LOG_ERROR ? "error" : level == SW_LOG_WARN ? "warning" : "info";
}

/* A JSON string of text; bytes that are not valid UTF-8 (a message cut mid-character, a
 * path from a client) become '?'. */
static json_t *safe_string(const char *text)
{
    json_t *j = json_string(text);
    if (j)
        return j;
    char safe[2048];
    size_t i = 0;
    for (; text[i] && i + 1 < sizeof(safe); i++)
        safe[i] = (unsigned char)text[i] < 0x80 ? text[i] : '?';
    safe[i] = '\0';
    return json_string(safe);
}

/* Prints o, with time, level and msg added, as one line; takes o. */
static void emit_json(json_t *o, int level, const char *msg)
{
    char ts[40];
    sw_time_format_micro(sw_time_now_micro(), ts, sizeof(ts));
    json_object_set_new(o, "time", json_string(ts));
    json_object_set_new(o, "level", json_string(level_name(level)));
    json_object_set_new(o, "msg", safe_string(msg));
    char *line = json_dumps(o, JSON_COMPACT | JSON_ENSURE_ASCII);
    if (line) {
        fprintf(stderr, "%s\n", line);
        free(line);
    }
    json_decref(o);
}

void sw_log(int level, const char *fmt, ...)
{
    if (level > verbosity)
        return;
    char line[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof(line), fmt, ap);
    va_end(ap);
    if (json_format) {
        emit_json(json_object(), level, line);
        return;
    }
    char ts[40];
    sw_time_format_micro(sw_time_now_micro(), ts, sizeof(ts));
    const char *tag = level <= SW_LOG_ERROR ? "E" : level == SW_LOG_WARN ? "W" : "I";
    fprintf(stderr, "%s %s %s\n", tag, ts, line);
}

void sw_log_request(int level, const char *verb, const char *path, int code, int64_t latency_ms,
                    const char *user, const char *detail)
{
    if (level > verbosity)
        return;
    if (!json_format) {
        if (detail)
            sw_log(level, "%s %s %d: %s", verb, path, code, detail);
        else
            sw_log(level, "%s %s %d %lldms", verb, path, code, (long long)latency_ms);
        return;
    }
    json_t *o = json_object();
    json_object_set_new(o, "verb", safe_string(verb));
    json_object_set_new(o, "path", safe_string(path));
    json_object_set_new(o, "code", json_integer(code));
    json_object_set_new(o, "latency_ms", json_integer(latency_ms));
    json_object_set_new(o, "user", safe_string(user ? user : ""));
    if (detail)
        json_object_set_new(o, "detail", safe_string(detail));
    emit_json(o, level, "request");
}
