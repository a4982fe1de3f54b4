/* error: thread-local error message and the code → HTTP/StatusReason mapping. */
#include "util/error.h"

#include <stdarg.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

static _Thread_local char msg[1024];
static _Thread_local int last_code;
static _Thread_local void *details;
static _Thread_local void (*details_release)(void *);

static void drop_details(void)
{
    if (details && details_release)
        details_release(details);
    details = NULL;
    details_release = NULL;
}

/* Details still attached when a thread ends are released then (a key whose destructor runs in
 * the ending thread, while its thread-locals are still there). */
static pthread_key_t exit_key;
static pthread_once_t exit_once = PTHREAD_ONCE_INIT;

static void on_thread_exit(void *unused)
{
    (void)unused;
    drop_details();
}

static void exit_key_init(void)
{
    pthread_key_create(&exit_key, on_thread_exit);
}

void sw_error_attach(void *d, void (*release)(void *))
{
    drop_details();
    details = d;
    details_release = release;
    pthread_once(&exit_once, exit_key_init);
    pthread_setspecific(exit_key, (void *)1);
}

void *sw_error_details(void)
{
    return details;
}

int sw_error_set(int code, const char *fmt, ...)
{
    drop_details();
    /* Formatted aside first: callers may wrap the current message ("x: %s", sw_error_msg()). */
    char tmp[sizeof(msg)];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(tmp, sizeof(tmp), fmt, ap);
    va_end(ap);
    memcpy(msg, tmp, strlen(tmp) + 1);
    last_code = code;
    return code;
}

const char *sw_error_msg(void)
{
    return msg[0] ? msg : "unknown error";
}

int sw_error_code(void)
{
    return last_code;
}

void sw_error_clear(void)
{
    drop_details();
    msg[0] = '\0';
    last_code = 0;
}

static const struct {
    int code;
    int http;
    const char *reason;
} table[] = {
    {SW_ERROR, 500, "InternalError"},
    {SW_ENOTFOUND, 404, "NotFound"},
    {SW_EEXISTS, 409, "AlreadyExists"},
    {SW_ECONFLICT, 409, "Conflict"},
    {SW_EGONE, 410, "Expired"},
    {SW_EINVALID, 422, "Invalid"},
    {SW_EBADREQUEST, 400, "BadRequest"},
    {SW_ELIMIT, 413, "RequestEntityTooLarge"},
    {SW_EUNAUTHORIZED, 401, "Unauthorized"},
    {SW_EFORBIDDEN, 403, "Forbidden"},
    {SW_EMETHOD, 405, "MethodNotAllowed"},
    {SW_EUNSUPPORTED, 415, "UnsupportedMediaType"},
    {SW_ETIMEOUT, 504, "Timeout"},
    {SW_EUNAVAILABLE, 503, "ServiceUnavailable"},
    {SW_ENOTACCEPT, 406, "NotAcceptable"},
    {SW_ETOOMANY, 429, "TooManyRequests"},
};

const char *sw_strerror(int e)
{
    static _Thread_local char text[128];
    /* glibc with _GNU_SOURCE: the GNU strerror_r, which returns the text (maybe its own) */
    const char *r = strerror_r(e, text, sizeof(text));
    return r ? r : "unknown error";
}

int sw_error_http_status(int code)
{
    for (size_t i = 0; i < sizeof(table) / sizeof(table[0]); i++)
        if (table[i].code == code)
            return table[i].http;
    return 500;
}

const char *sw_error_reason(int code)
{
    for (size_t i = 0; i < sizeof(table) / sizeof(table[0]); i++)
        if (table[i].code == code)
            return table[i].reason;
    return "InternalError";
}
