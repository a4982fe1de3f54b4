/* trigger: the image trigger controller (docs/workloads.md, etcd-triggers.md §6): the
 * `image.openshift.io/triggers` annotation on Deployments, StatefulSets, DaemonSets, CronJobs
 * and Pods, parsed as OpenShift parses it, resolved against the ImageStream tags it names.
 *
 * The rule that differs from OpenShift: a container is updated only when the digest of the
 * image the tag points at differs from the digest the container runs. OpenShift compares pull
 * spec strings, so the same image reached under another name (an `external` tag, a registry
 * alias, a re-import under a new source reference) rolls the workload out again; slipway writes
 * nothing. The image written is always `<repository>@sha256:<digest>`, all of an object's
 * triggers in one update; a manual edit of a triggered image is put back.
 *
 * Where OpenShift only logs a malformed annotation, slipway records one Warning Event
 * (reason InvalidImageTrigger) per distinct problem on the object, and changes nothing.
 *
 * Threading: as every controller on the scaffold; the parse and plan helpers are pure. */
#ifndef SW_CONTROLLERS_TRIGGER_H
#define SW_CONTROLLERS_TRIGGER_H

#include "client/controller.h"
#include "client/rest.h"

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#define SW_TRIGGERS_ANNOTATION "image.openshift.io/triggers"

typedef struct sw_trigger_controller sw_trigger_controller;

typedef struct sw_rollout_hook sw_rollout_hook;

typedef struct sw_trigger_controller_opts {
    int workers;           /* 0: 4 */
    sw_rollout_hook *hook; /* rollout notifications (rollouthook.h), or NULL; borrowed */
} sw_trigger_controller_opts;

int sw_trigger_controller_new(sw_trigger_controller **out, sw_client *c, sw_informers *f,
                              const sw_trigger_controller_opts *opts);
int sw_trigger_controller_start(sw_trigger_controller *t);
void sw_trigger_controller_free(sw_trigger_controller *t);

/* ---- pure helpers (exposed for tests) ---- */

typedef struct sw_trigger {
    char ns[254]; /* the stream's namespace (the object's when the trigger names none) */
    char stream[254];
    char tag[129];
    bool paused;
    bool init;          /* initContainers, not containers */
    long index;         /* the container's index, or -1 when selected by name */
    char container[64]; /* the container's name when index is -1 */
    char field_path[512];
} sw_trigger;

/* The triggers of obj (a workload of kind Deployment, StatefulSet, DaemonSet, CronJob or Pod):
 * *out is sw_malloc'd (NULL when there are none), *n its length. A trigger whose fieldPath is
 * under another pod spec than the kind's is left out silently, as OpenShift does. SW_EINVALID
 * with a message naming the annotation's problem: not JSON, not an array of objects, from.kind
 * other than ImageStreamTag, a set from.apiVersion, a name without ":<tag>", "paused" not a
 * boolean, a fieldPath that is not <podspec>.(init)containers[<index> | ?(@.name=="<n>")].image,
 * duplicate fieldPaths. */
int sw_triggers_parse(const json_t *obj, sw_trigger **out, size_t *n);

/* One entry (number i, for messages) of the annotation of a kind object in namespace obj_ns:
 * 1 parsed into t, 0 under another kind's pod spec (skipped), SW_EINVALID as
 * sw_triggers_parse says. */
int sw_trigger_parse_entry(const json_t *e, size_t i, const char *kind, const char *obj_ns,
                           sw_trigger *t);

/* The index of the container t selects in obj (of kind obj["kind"]), in its containers or
 * initContainers list, or -1 when there is none. */
long sw_trigger_container(const json_t *obj, const sw_trigger *t);

/* Applies one resolved trigger to obj (a copy the caller owns): image is the tag's
 * "<repository>@sha256:<digest>". Returns 1 when the container's image changed (its old image
 * into old, n bytes, when old is not NULL), 0 when the container already runs that digest
 * (whatever its repository is named), or SW_EINVALID when the container does not exist
 * ("no such container: ..."). */
int sw_trigger_apply(json_t *obj, const sw_trigger *t, const char *image, char *old, size_t n);

#endif
