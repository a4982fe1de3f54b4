/* report: what a build tells its Build object through builds/<n>/details, in OpenShift's shapes:
 * status.stages ({name, startTime, durationMilliseconds, steps: [{name, startTime,
 * durationMilliseconds}]} for FetchInputs, PullImages, Build, PushImage), the failure reason and
 * message, and on success status.output.to.imageDigest. The body is built here from recorded
 * times (pure, tested); sending is one PUT with the build token.
 * Design: docs/builds.md ("The builder"). */
#ifndef SW_BUILDER_REPORT_H
#define SW_BUILDER_REPORT_H

#include "client/rest.h"

#include <jansson.h>
#include <stdint.h>

/* OpenShift's stage and step names (build/v1 types.go). */
#define SW_STAGE_FETCH_INPUTS "FetchInputs"
#define SW_STAGE_PULL_IMAGES "PullImages"
#define SW_STAGE_BUILD "Build"
#define SW_STAGE_PUSH_IMAGE "PushImage"
#define SW_STEP_FETCH_GIT "FetchGitSource"
#define SW_STEP_FETCH_BINARY "FetchBinarySource" /* slipway's: the uploaded source */
#define SW_STEP_PULL_BASE "PullBaseImage"
#define SW_STEP_DOCKER_BUILD "DockerBuild"
#define SW_STEP_PUSH_IMAGE "PushDockerImage"

/* OpenShift's failure reasons (build/v1 consts.go) the builder reports. */
#define SW_REASON_FETCH_SOURCE "FetchSourceFailed"
#define SW_REASON_CONTEXT_DIR "InvalidContextDirectory"
#define SW_REASON_DOCKERFILE "ManageDockerfileFailed"
#define SW_REASON_BUILD "DockerBuildFailed"
#define SW_REASON_PULL "PullBuilderImageFailed"
#define SW_REASON_PUSH "PushImageToRegistryFailed"
#define SW_REASON_OUTPUT "InvalidOutputReference"
#define SW_REASON_IMAGE "InvalidImageReference"
#define SW_REASON_GENERIC "GenericBuildFailed"

#define SW_REPORT_MESSAGE_MAX 2048 /* bytes of message kept (cut at a UTF-8 boundary) */

typedef struct sw_report sw_report;

/* Always 0 (allocation failure aborts). */
int sw_report_new(sw_report **out);
void sw_report_free(sw_report *r);

/* Times are wall-clock milliseconds since the epoch. A stage is open from _begin to _end; a
 * step is recorded in the open stage (ignored when none is open). Beginning a stage ends the
 * open one at that time. */
void sw_report_stage_begin(sw_report *r, const char *name, int64_t now_ms);
void sw_report_step(sw_report *r, const char *name, int64_t start_ms, int64_t end_ms);
void sw_report_stage_end(sw_report *r, int64_t now_ms);
/* The failure (first one wins: later calls are ignored); message is cut to
 * SW_REPORT_MESSAGE_MAX bytes. */
void sw_report_fail(sw_report *r, const char *reason, const char *message);
const char *sw_report_reason(const sw_report *r); /* NULL until a failure */
/* The pushed image: reference (registry/repo:tag) and manifest digest. */
void sw_report_set_output(sw_report *r, const char *reference, const char *digest);

/* The backend that builds (backend.h): status.backend, slipway's own field. */
void sw_report_set_backend(sw_report *r, const char *backend);

/* The builds/<n>/details body: {kind, apiVersion, metadata{name, namespace}, status{stages,
 * reason?, message?, output?{to{imageDigest}}, outputDockerImageReference?, backend?}}. New
 * reference. */
json_t *sw_report_body(const sw_report *r, const char *ns, const char *name);
/* PUT the body to /apis/build.openshift.io/v1/namespaces/<ns>/builds/<name>/details. */
int sw_report_send(const sw_report *r, sw_client *c, const char *ns, const char *name);

#endif
