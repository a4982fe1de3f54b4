/* build: the build.openshift.io/v1 kinds, BuildConfig and Build. */
#ifndef SW_KINDS_BUILD_H
#define SW_KINDS_BUILD_H

#include "kinds/kind.h"

extern const sw_kind sw_kind_buildconfig;
extern const sw_kind sw_kind_build;

/* Creates the next Build of BuildConfig ns/bc from a BuildRequest (lastVersion bumped first). */
int sw_build_instantiate(sw_objects *o, const char *ns, const char *bc, const json_t *req,
                         json_t **out);

/* Subresource handlers (buildgen.c). */
int sw_build_bc_instantiate(const sw_kind_ctx *ctx, sw_objects *o, const sw_subreq *r,
                            sw_subresp *out);
int sw_build_bc_webhook(const sw_kind_ctx *ctx, sw_objects *o, const sw_subreq *r,
                        sw_subresp *out);
int sw_build_build_clone(const sw_kind_ctx *ctx, sw_objects *o, const sw_subreq *r,
                         sw_subresp *out);
int sw_build_build_log(const sw_kind_ctx *ctx, sw_objects *o, const sw_subreq *r,
                       sw_subresp *out);
int sw_build_build_details(const sw_kind_ctx *ctx, sw_objects *o, const sw_subreq *r,
                           sw_subresp *out);

/* Complete, Failed, Error or Cancelled. */
bool sw_build_phase_terminal(const char *phase);

#endif
