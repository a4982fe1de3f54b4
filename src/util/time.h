/* time: wall-clock helpers in UTC: RFC 3339 formatting and parsing, monotonic clock and
 * timed waits on it, and Kubernetes' HumanDuration ("45s", "5m12s", "3h4m", "2d5h", "400d")
 * for Age columns. */
#ifndef SW_TIME_H
#define SW_TIME_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

int64_t sw_time_now(void);       /* seconds since the epoch */
int64_t sw_time_now_micro(void); /* microseconds since the epoch */
int64_t sw_time_mono_ms(void);   /* monotonic milliseconds */
double sw_time_mono_s(void);     /* monotonic seconds, to the nanosecond (for latencies) */
/* Sleeps ms milliseconds (signals do not cut it short). */
void sw_time_sleep_ms(int64_t ms);
/* CLOCK_MONOTONIC now plus ms, as an absolute deadline for pthread_cond_timedwait on a
 * sw_time_cond_init condition variable. */
struct timespec sw_time_mono_deadline(int64_t ms);
/* A condition variable whose timed waits run on CLOCK_MONOTONIC (a wall-clock step moves no
 * deadline). */
void sw_time_cond_init(pthread_cond_t *c);
/* "2006-01-02T15:04:05Z"; out must hold 21 bytes. */
void sw_time_format(int64_t secs, char *out, size_t n);
/* "2006-01-02T15:04:05.000000Z" (MicroTime). */
void sw_time_format_micro(int64_t micros, char *out, size_t n);
/* Parses RFC 3339 ("Z" or "+hh:mm", optional fraction); returns 0 or SW_EINVALID. */
int sw_time_parse(const char *s, int64_t *secs_out);
/* apimachinery duration.HumanDuration. */
void sw_time_human(int64_t secs, char *out, size_t n);

#endif
