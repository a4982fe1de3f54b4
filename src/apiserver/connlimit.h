/* connlimit: who may hold the server's connections. Connections that have not yet shown a
 * credential (a new one, or one whose requests were all anonymous) must send a whole request
 * header within header_timeout_ms of being opened or of their last answer, or they are cut
 * (Go's ReadHeaderTimeout, total rather than per byte; an anonymous request, a health probe,
 * stays under it through its body and answer); one client address holds at most per_address
 * of them (a new one from that address cuts its oldest idle one); and when all max are taken,
 * the oldest such connection is cut to admit a new one. A connection that carried a request
 * with a token or client certificate, or is running one, is never cut here (the idle timeout
 * still applies to it); a webhook secret or the registry's token does not count. So one
 * client, from one address or many, cannot lock authenticated clients out.
 *
 * Threading: admit and opened are called by the listening thread, the others by a
 * connection's own thread; all take the limiter's mutex. A cut is shutdown(2) of the socket
 * under that mutex; closed() is called (by libmicrohttpd's NOTIFY_CLOSED) before the socket
 * is closed, so a cut never reaches a reused descriptor. */
#ifndef SW_CONNLIMIT_H
#define SW_CONNLIMIT_H

#include <stdbool.h>
#include <sys/socket.h>

typedef struct sw_connlimit sw_connlimit;
typedef struct sw_connlimit_conn sw_connlimit_conn;

typedef struct sw_connlimit_opts {
    unsigned max;               /* connections in all */
    unsigned per_address;       /* unauthenticated connections per client address */
    unsigned header_timeout_ms; /* 0: no header deadline */
} sw_connlimit_opts;

/* Starts the reaper thread. 0, or SW_ERROR when the thread cannot be started. */
int sw_connlimit_new(sw_connlimit **out, const sw_connlimit_opts *opts);
/* Stops the reaper; every connection must be closed already. NULL is a no-op. */
void sw_connlimit_free(sw_connlimit *l);

/* Whether a new connection from addr may be accepted (may cut an older unauthenticated one). */
bool sw_connlimit_admit(sw_connlimit *l, const struct sockaddr *addr, socklen_t len);
/* Tracks an accepted connection; its handle, or NULL when not tracked (never cut). */
sw_connlimit_conn *sw_connlimit_opened(sw_connlimit *l, int fd, const struct sockaddr *addr,
                                       socklen_t len);
/* A request's headers are in: no deadline until it is answered. NULL c is a no-op. */
void sw_connlimit_request(sw_connlimit *l, sw_connlimit_conn *c, bool authenticated);
/* The request is answered: the header deadline restarts unless the connection authenticated. */
void sw_connlimit_idle(sw_connlimit *l, sw_connlimit_conn *c);
void sw_connlimit_closed(sw_connlimit *l, sw_connlimit_conn *c);

#endif
