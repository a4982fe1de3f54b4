/* log: one line per event on stderr. Errors are always printed; info at --v=1 and up,
 * requests at --v=2, debug at --v=4 (klog's verbosity numbers). */
#ifndef SW_LOG_H
#define SW_LOG_H

enum { SW_LOG_ERROR = -1, SW_LOG_WARN = 0, SW_LOG_INFO = 1, SW_LOG_REQUEST = 2, SW_LOG_DEBUG = 4 };

void sw_log_set_verbosity(int v);
int sw_log_verbosity(void);
void sw_log(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#define sw_log_enabled(level) ((level) <= sw_log_verbosity())

#endif
