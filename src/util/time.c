/* time: UTC formatting/parsing (gmtime_r/timegm, never gmtime/localtime) and HumanDuration. */
#include "util/time.h"

#include "util/error.h"
#include "util/str.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

int64_t sw_time_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec;
}

int64_t sw_time_now_micro(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

double sw_time_mono_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int64_t sw_time_mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void sw_time_sleep_ms(int64_t ms)
{
    struct timespec ts = {(time_t)(ms / 1000), (long)(ms % 1000) * 1000000L};
    while (ms > 0 && nanosleep(&ts, &ts) != 0)
        ;
}

struct timespec sw_time_mono_deadline(int64_t ms)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    if (ms < 0)
        ms = 0;
    ts.tv_sec += (time_t)(ms / 1000);
    ts.tv_nsec += (long)(ms % 1000) * 1000000L;
    if (ts.tv_nsec >= 1000000000L) {
        ts.tv_sec++;
        ts.tv_nsec -= 1000000000L;
    }
    return ts;
}

void sw_time_cond_init(pthread_cond_t *c)
{
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(c, &ca);
    pthread_condattr_destroy(&ca);
}

void sw_time_format(int64_t secs, char *out, size_t n)
{
    time_t t = (time_t)secs;
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(out, n, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

void sw_time_format_micro(int64_t micros, char *out, size_t n)
{
    time_t t = (time_t)(micros / 1000000);
    struct tm tm;
    char base[32];
    gmtime_r(&t, &tm);
    strftime(base, sizeof(base), "%Y-%m-%dT%H:%M:%S", &tm);
    snprintf(out, n, "%s.%06dZ", base, (int)(micros % 1000000));
}

static int digits(const char **pp, int count, int *out)
{
    uint64_t v;
    const char *start = *pp;
    const char *p = *pp;
    if (sw_parse_u64(&p, 1000000, &v) < 0 || p - start != count)
        return SW_EINVALID;
    *pp = p;
    *out = (int)v;
    return 0;
}

static int expect(const char **pp, char c)
{
    if (**pp != c)
        return SW_EINVALID;
    (*pp)++;
    return 0;
}

int sw_time_parse(const char *s, int64_t *secs_out)
{
    const char *p = s;
    struct tm tm = {0};
    int y, mo, d, h, mi, se, oh = 0, om = 0, sign = 0;
    if (digits(&p, 4, &y) || expect(&p, '-') || digits(&p, 2, &mo) || expect(&p, '-') ||
        digits(&p, 2, &d) || (*p != 'T' && *p != 't' && *p != ' ') || !++p || digits(&p, 2, &h) ||
        expect(&p, ':') || digits(&p, 2, &mi) || expect(&p, ':') || digits(&p, 2, &se))
        return sw_error_set(SW_EINVALID, "invalid RFC 3339 time %.40s", s);
    if (*p == '.') {
        p++;
        while (*p >= '0' && *p <= '9')
            p++;
    }
    if (*p == 'Z' || *p == 'z') {
        p++;
    } else if (*p == '+' || *p == '-') {
        sign = *p == '+' ? 1 : -1;
        p++;
        if (digits(&p, 2, &oh) || expect(&p, ':') || digits(&p, 2, &om))
            return sw_error_set(SW_EINVALID, "invalid RFC 3339 offset in %.40s", s);
    } else {
        return sw_error_set(SW_EINVALID, "invalid RFC 3339 time %.40s", s);
    }
    if (*p || mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 || se > 60)
        return sw_error_set(SW_EINVALID, "invalid RFC 3339 time %.40s", s);
    tm.tm_year = y - 1900;
    tm.tm_mon = mo - 1;
    tm.tm_mday = d;
    tm.tm_hour = h;
    tm.tm_min = mi;
    tm.tm_sec = se;
    *secs_out = (int64_t)timegm(&tm) - sign * (oh * 3600 + om * 60);
    return 0;
}

void sw_time_human(int64_t secs, char *out, size_t n)
{
    if (secs < 0)
        secs = 0; /* clock skew: apimachinery prints "<invalid>" only for large skews */
    if (secs < 60 * 2) {
        snprintf(out, n, "%llds", (long long)secs);
        return;
    }
    int64_t minutes = secs / 60;
    if (minutes < 10) {
        int64_t s = secs % 60;
        if (s == 0)
            snprintf(out, n, "%lldm", (long long)minutes);
        else
            snprintf(out, n, "%lldm%llds", (long long)minutes, (long long)s);
        return;
    }
    if (minutes < 60 * 3) {
        snprintf(out, n, "%lldm", (long long)minutes);
        return;
    }
    int64_t hours = secs / 3600;
    if (hours < 8) {
        int64_t m = minutes % 60;
        if (m == 0)
            snprintf(out, n, "%lldh", (long long)hours);
        else
            snprintf(out, n, "%lldh%lldm", (long long)hours, (long long)m);
        return;
    }
    if (hours < 48) {
        snprintf(out, n, "%lldh", (long long)hours);
        return;
    }
    if (hours < 24 * 8) {
        int64_t h = hours % 24;
        if (h == 0)
            snprintf(out, n, "%lldd", (long long)(hours / 24));
        else
            snprintf(out, n, "%lldd%lldh", (long long)(hours / 24), (long long)h);
        return;
    }
    if (hours < 24 * 365 * 2) {
        snprintf(out, n, "%lldd", (long long)(hours / 24));
        return;
    }
    if (hours < 24 * 365 * 8) {
        int64_t dy = (hours / 24) % 365;
        if (dy == 0)
            snprintf(out, n, "%lldy", (long long)(hours / 24 / 365));
        else
            snprintf(out, n, "%lldy%lldd", (long long)(hours / 24 / 365), (long long)dy);
        return;
    }
    snprintf(out, n, "%lldy", (long long)(hours / 24 / 365));
}
