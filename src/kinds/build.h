/* build: the build.openshift.io/v1 kinds, BuildConfig and Build. */
#ifndef SW_KINDS_BUILD_H
#define SW_KINDS_BUILD_H

#include "kinds/kind.h"

extern const sw_kind sw_kind_buildconfig;
extern const sw_kind sw_kind_build;

#define SW_BUILD_OBJREF                                                                            \
    "{\"kind\":\"string\",\"namespace\":\"string\",\"name\":\"string\",\"uid\":\"string\","        \
    "\"apiVersion\":\"string\",\"resourceVersion\":\"string\",\"fieldPath\":\"string\"}"
#define SW_BUILD_LOCALREF "{\"name\":\"string\"}"
#define SW_BUILD_ENVVAR "[{\"name\":\"string\",\"value\":\"string\",\"valueFrom\":\"any\"}]"

/* The strict schema of CommonSpec (the fields of a build), shared by BuildConfig, Build and
 * ManagedImage, as the text of a JSON object's members (see meta/schema.h). */
#define SW_BUILD_COMMON_SPEC                                                                       \
    "\"serviceAccount\":\"string\",\"source\":{\"type\":\"string\",\"git\":{\"uri\":\"string\","   \
    "\"ref\":\"string\",\"httpProxy\":\"string\",\"httpsProxy\":\"string\",\"noProxy\":"           \
    "\"string\"},"                                                                                 \
    "\"dockerfile\":\"string\",\"binary\":{\"asFile\":\"string\"},\"images\":[\"any\"],"           \
    "\"contextDir\":\"string\",\"sourceSecret\":" SW_BUILD_LOCALREF ",\"secrets\":[\"any\"],"      \
    "\"configMaps\":[\"any\"]},\"revision\":\"any\",\"strategy\":{\"type\":\"string\","            \
    "\"dockerStrategy\":{\"from\":" SW_BUILD_OBJREF ",\"pullSecret\":" SW_BUILD_LOCALREF           \
    ",\"noCache\":\"boolean\","                                                                    \
    "\"env\":" SW_BUILD_ENVVAR                                                                     \
    ",\"forcePull\":\"boolean\",\"dockerfilePath\":\"string\",\"buildArgs\":" SW_BUILD_ENVVAR      \
    ",\"imageOptimizationPolicy\":\"string\",\"volumes\":[\"any\"]},\"sourceStrategy\":"           \
    "\"any\",\"customStrategy\":\"any\",\"jenkinsPipelineStrategy\":\"any\"},\"output\":{"         \
    "\"to\":" SW_BUILD_OBJREF ",\"pushSecret\":" SW_BUILD_LOCALREF                                 \
    ",\"imageLabels\":[{\"name\":\"string\",\"value\":"                                            \
    "\"string\"}]},\"resources\":\"any\",\"postCommit\":\"any\",\"completionDeadlineSeconds\":"    \
    "\"integer\",\"nodeSelector\":\"map\",\"mountTrustedCA\":\"boolean\""

/* Validates a CommonSpec: what slipway can build (Docker strategy; Git, Dockerfile, Binary or
 * None source; output to an ImageStreamTag or a DockerImage), SW_EINVALID naming the field
 * under "spec.". */
int sw_build_validate_common(const json_t *spec);

/* A binary Build's annotation: "sha256:<hex>" of the uploaded source (the builder's input
 * digest covers it). */
#define SW_BUILD_SOURCE_DIGEST_ANNOTATION "build.slipway.dev/source-digest"

/* Creates the next Build of BuildConfig ns/bc from a BuildRequest (lastVersion bumped first);
 * the request's metadata.annotations are added to the Build's (never replacing its own). */
int sw_build_instantiate(sw_objects *o, const char *ns, const char *bc, const json_t *req,
                         json_t **out);

/* Subresource handlers (buildgen.c). */
int sw_build_bc_instantiate(const sw_kind_ctx *ctx, sw_objects *o, const sw_subreq *r,
                            sw_subresp *out);
int sw_build_bc_webhook(const sw_kind_ctx *ctx, sw_objects *o, const sw_subreq *r, sw_subresp *out);
/* Whether BuildConfig ns/name has a webhook trigger of type hook whose secret is secret
 * (compared in constant time). */
bool sw_build_webhook_allowed(sw_objects *o, const char *ns, const char *name, const char *secret,
                              const char *hook);
int sw_build_build_clone(const sw_kind_ctx *ctx, sw_objects *o, const sw_subreq *r,
                         sw_subresp *out);
int sw_build_build_log(const sw_kind_ctx *ctx, sw_objects *o, const sw_subreq *r, sw_subresp *out);
/* Wakes the log readers of build ns/name waiting for it to start, for more log or for its end
 * (called when its log grows and when it is written or deleted). */
void sw_build_log_wake(const char *ns, const char *name);
/* Remove a deleted Build's log and uploaded source files (no error when absent). */
void sw_build_log_remove(const sw_kind_ctx *ctx, const char *ns, const char *name);
void sw_build_source_remove(const sw_kind_ctx *ctx, const char *ns, const char *name);
int sw_build_build_details(const sw_kind_ctx *ctx, sw_objects *o, const sw_subreq *r,
                           sw_subresp *out);

/* Build-scoped tokens (buildtoken.c). */
int sw_build_token_make(const unsigned char *key, size_t keylen, const char *ns, const char *name,
                        const char *uid, char *out, size_t n);
/* The build a token names (not yet verified: check it with sw_build_token_valid). */
int sw_build_token_subject(const char *token, char *ns, size_t nn, char *name, size_t nname);
bool sw_build_token_valid(const unsigned char *key, size_t keylen, const char *token,
                          const char *ns, const char *name, const char *uid);
int sw_build_bc_instantiatebinary(const sw_kind_ctx *ctx, sw_objects *o, const sw_subreq *r,
                                  sw_subresp *out);
int sw_build_build_source(const sw_kind_ctx *ctx, sw_objects *o, const sw_subreq *r,
                          sw_subresp *out);
int sw_build_build_token(const sw_kind_ctx *ctx, sw_objects *o, const sw_subreq *r,
                         sw_subresp *out);

/* Complete, Failed, Error or Cancelled. */
bool sw_build_phase_terminal(const char *phase);

/* The strategy object's path of a Build or BuildConfig: "spec.strategy.sourceStrategy" when
 * spec.strategy.type is Source, else "spec.strategy.dockerStrategy". */
const char *sw_build_strategy_path(const json_t *obj);
/* The strategy's "from" (the base or builder image), or NULL. */
const json_t *sw_build_strategy_from(const json_t *obj);
/* A binary source's asFile: a plain file name (no '/' or '\\', not "." or "..", no control
 * characters, 1-255 bytes). */
bool sw_build_file_name_ok(const char *name);
/* An env or buildArgs name: Kubernetes' [-._a-zA-Z][-._a-zA-Z0-9]* (len bytes of name). */
bool sw_build_env_name_ok(const char *name, size_t len);

#endif
