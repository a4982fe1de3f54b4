/* log: one line per event on stderr. Errors are always printed; info at --v=1 and up,
 * requests at --v=2, debug at --v=4 (klog's verbosity numbers). Text lines read
 * "<E|W|I> <time> <message>"; with the JSON format each line is one object: time, level,
 * msg, and for request lines verb, path, code, latency_ms and user. Callers never pass a
 * secret (webhook paths come redacted, tokens are never logged). */
#ifndef SW_LOG_H
#define SW_LOG_H

#include <stdbool.h>
#include <stdint.h>

enum { SW_LOG_ERROR = -1, SW_LOG_WARN = 0, SW_LOG_INFO = 1, SW_LOG_REQUEST = 2, SW_LOG_DEBUG = 4 };

void sw_log_set_verbosity(int v);
int sw_log_verbosity(void);
/* Before any thread logs: true for one JSON object per line. */
void sw_log_set_json(bool json);
/* Parses --log-format's value: 0 (and sets the format), or SW_EINVALID. */
int sw_log_parse_format(const char *v);
void sw_log(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* A served request (level SW_LOG_REQUEST, or SW_LOG_ERROR with detail for a 5xx the caller
 * logs at any verbosity). detail may be NULL. */
void sw_log_request(int level, const char *verb, const char *path, int code, int64_t latency_ms,
                    const char *user, const char *detail);

#define sw_log_enabled(level) ((level) <= sw_log_verbosity())

#endif
