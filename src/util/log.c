/* log: timestamped single-line logging to stderr with a global verbosity. */
#include "util/log.h"

#include "util/time.h"

#include <stdarg.h>
#include <stdio.h>

static int verbosity = 0;

void sw_log_set_verbosity(int v)
{
    verbosity = v;
}

int sw_log_verbosity(void)
{
    return verbosity;
}

void sw_log(int level, const char *fmt, ...)
{
    if (level > verbosity)
        return;
    char ts[40];
    sw_time_format_micro(sw_time_now_micro(), ts, sizeof(ts));
    const char *tag = level <= SW_LOG_ERROR ? "E" : level == SW_LOG_WARN ? "W" : "I";
    char line[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof(line), fmt, ap);
    va_end(ap);
    fprintf(stderr, "%s %s %s\n", tag, ts, line);
}
