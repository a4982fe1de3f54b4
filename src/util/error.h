/* error: slipway's error codes and the thread-local error message.
 * Functions return 0 on success or a negative SW_E* code; the code maps to an HTTP status and a
 * Kubernetes StatusReason. The one-line detail is set with sw_error_set() and read with
 * sw_error_msg(). */
#ifndef SW_ERROR_H
#define SW_ERROR_H

enum {
    SW_OK = 0,
    SW_ERROR = -1,         /* 500 InternalError */
    SW_ENOTFOUND = -2,     /* 404 NotFound */
    SW_EEXISTS = -3,       /* 409 AlreadyExists */
    SW_ECONFLICT = -4,     /* 409 Conflict (resourceVersion / precondition mismatch) */
    SW_EGONE = -5,         /* 410 Expired (resourceVersion compacted) */
    SW_EINVALID = -6,      /* 422 Invalid */
    SW_EBADREQUEST = -7,   /* 400 BadRequest */
    SW_ELIMIT = -8,        /* 413 RequestEntityTooLarge */
    SW_EUNAUTHORIZED = -9, /* 401 Unauthorized */
    SW_EFORBIDDEN = -10,   /* 403 Forbidden */
    SW_EMETHOD = -11,      /* 405 MethodNotAllowed */
    SW_EUNSUPPORTED = -12, /* 415 UnsupportedMediaType */
    SW_ETIMEOUT = -13,     /* 504 Timeout */
    SW_EUNAVAILABLE = -14, /* 503 ServiceUnavailable */
    SW_ENOTACCEPT = -15,   /* 406 NotAcceptable */
    SW_ETOOMANY = -16,     /* 429 TooManyRequests (retry later) */
};

/* Sets the thread-local message (printf format, one line) and returns code, so callers can write
 * `return sw_error_set(SW_EINVALID, "bad name %s", n);`. */
int sw_error_set(int code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
const char *sw_error_msg(void);
int sw_error_code(void);
void sw_error_clear(void);

/* Structured details kept with the current error (Kubernetes' details.causes, util/json.h
 * sw_error_set_causes): attach takes details and release frees it; the next sw_error_set or
 * sw_error_clear releases it. NULL when the current error has none. */
void sw_error_attach(void *details, void (*release)(void *details));
void *sw_error_details(void);

/* The text of errno value e, through strerror_r (strerror is not thread-safe): valid until
 * the calling thread's next call. */
const char *sw_strerror(int e);

int sw_error_http_status(int code);
const char *sw_error_reason(int code);

#endif
