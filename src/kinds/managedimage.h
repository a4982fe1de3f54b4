/* managedimage: image.slipway.dev/v1alpha1 ManagedImage (docs/managedimages.md), a resource
 * that cares about the image, not the build: its spec is a BuildConfig's build (source,
 * strategy, output to an ImageStreamTag in its namespace) plus a policy; the ManagedImage
 * controller (controllers/managedimage.h) owns the ImageStream and BuildConfig it implies.
 * The kind's defaults and validation, and the pure helpers the controller derives what it owns
 * from, live here so the server and the controller read a ManagedImage the same way. */
#ifndef SW_KINDS_MANAGEDIMAGE_H
#define SW_KINDS_MANAGEDIMAGE_H

#include "kinds/kind.h"

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

extern const sw_kind sw_kind_managedimage;

#define SW_MI_API_VERSION "image.slipway.dev/v1alpha1"
#define SW_MI_KIND "ManagedImage"

/* Annotations a ManagedImage's builds carry: what they were started for. */
#define SW_MI_ANN_SPEC_HASH "image.slipway.dev/spec-hash"      /* sw_mi_spec_hash at start */
#define SW_MI_ANN_BASE "image.slipway.dev/base-image"          /* base pull spec with digest */
#define SW_MI_ANN_REVISION "image.slipway.dev/source-revision" /* git commit, or "" */
#define SW_MI_ANN_OWNER "image.slipway.dev/managed-image"      /* the ManagedImage's name */
/* On the owned BuildConfig: the ManagedImage generation its spec was last written from. */
#define SW_MI_ANN_GENERATION "image.slipway.dev/generation"

/* Defaults (also applied by the controller to what it reads, so that both agree). */
#define SW_MI_VERIFY_DEFAULT 600
#define SW_MI_HISTORY_DEFAULT 5

/* The output "<stream>:<tag>" of a (validated) ManagedImage into stream and tag. false when
 * it has none that parses. */
bool sw_mi_output(const json_t *mi, char *stream, size_t sn, char *tag, size_t tn);

/* The BuildConfig spec the ManagedImage implies: its build fields, output to its
 * ImageStreamTag in its own namespace, runPolicy Serial, no triggers (the ManagedImage
 * controller decides when to build) and the policy's history limits. A new object. */
json_t *sw_mi_bc_spec(const json_t *mi);

/* "sha256:<hex>" over what a build of mi produces from (the BuildConfig spec without its
 * history limits), canonical JSON: equal for specs that build the same thing. out >= 72. */
void sw_mi_spec_hash(const json_t *mi, char *out, size_t n);

/* policy.verifyIntervalSeconds (default 600) and policy.rebuildOnBaseImageChange (true). */
int64_t sw_mi_verify_interval(const json_t *mi);
bool sw_mi_rebuild_on_base(const json_t *mi);

#endif
