/* server: the HTTP front end on libmicrohttpd (thread per connection): bearer-token auth from
 * the headers before any body is read, body limits (per request and in all), connection limits
 * (connlimit.h), routing to discovery/openapi/REST handlers, health endpoints, request logging, and
 * the periodic store compaction. */
#ifndef SW_SERVER_H
#define SW_SERVER_H

#include "apiserver/api.h"

#include <stdint.h>

typedef struct sw_apiserver sw_apiserver;

typedef struct sw_apiserver_opts {
    const char *host; /* numeric IPv4 address to bind */
    uint16_t port;
    const char *token;    /* bearer token every request must carry */
    bool anonymous;       /* --insecure-anonymous: no token needed (loopback only) */
    int compact_interval; /* seconds between compactions; 0 disables */
    int64_t compact_keep; /* newest revisions kept */
    const char *tls_cert; /* PEM; NULL serves plain HTTP */
    const char *tls_key;
    const char *client_ca;      /* PEM of --client-ca-file: clients may present a certificate it
                                 * signed instead of a token (CN user, O groups); NULL: tokens only */
    unsigned idle_timeout;      /* seconds a connection may send nothing while no request of it is
                                 * being served (headers, body, keep-alive); 0: no limit */
    unsigned max_connections;   /* connections in all (connlimit.h) */
    unsigned max_per_address;   /* unauthenticated connections per client address */
    unsigned header_timeout_ms; /* to send a whole request header, unauthenticated; 0: none */
    uint64_t body_budget;       /* bytes all request bodies in memory may hold together */
} sw_apiserver_opts;

int sw_apiserver_start(sw_apiserver **out, sw_api *api, const sw_apiserver_opts *opts);
void sw_apiserver_stop(sw_apiserver *s);

#endif
