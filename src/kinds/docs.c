/* docs: field documentation of the OpenShift-style kinds (docs.h). */
#include "kinds/docs.h"

/* The build inputs BuildConfig, Build and ManagedImage share, under spec. */
#define BUILD_SPEC_DOCS                                                                            \
    {"spec.source", "Where the build's input comes from: a Git repository, an inline Dockerfile, " \
                    "a binary upload, images to copy files from, secrets and config maps."},       \
        {"spec.source.type", "Git, Dockerfile, Binary, Image or None."},                           \
        {"spec.source.git",                                                                        \
         "The Git repository to clone: uri, and ref (a branch, tag or commit)."},                  \
        {"spec.source.dockerfile", "An inline Dockerfile; used instead of the one in the source "  \
                                   "when set."},                                                   \
        {"spec.source.contextDir", "The sub-directory of the source the build runs in."},          \
        {"spec.source.binary", "Set when the input is uploaded to instantiatebinary (start-build " \
                               "--from-dir or --from-file)."},                                     \
        {"spec.strategy", "How the image is assembled."},                                          \
        {"spec.strategy.type", "Docker (a Dockerfile), Source (source-to-image), Custom or "       \
                               "JenkinsPipeline; slipway's builder runs Docker builds."},          \
        {"spec.strategy.dockerStrategy", "The Dockerfile build: from (the base image, overriding " \
                                         "the first FROM), buildArgs, env, noCache, "              \
                                         "dockerfilePath."},                                       \
        {"spec.output", "Where the built image goes."},                                            \
        {"spec.output.to", "An ImageStreamTag (the stream gets a tag event for the new digest) "   \
                           "or a DockerImage pull spec to push to."},                              \
        {"spec.output.pushSecret", "The Secret with the registry credentials to push with."},      \
        {"spec.output.imageLabels", "Labels added to the built image's config."},                  \
        {"spec.completionDeadlineSeconds", "A build running longer than this fails with "          \
                                           "DeadlineExceeded."},                                   \
    {                                                                                              \
        "spec.nodeSelector", "Stored for OpenShift compatibility; slipway's builder runs on the "  \
                             "server's machine."                                                   \
    }

const sw_field_doc sw_docs_imagestream[] = {
    {"", "An ImageStream is a set of tags, each pointing at an image by digest, with the history "
         "of what it pointed at. Tags follow a registry (imported, again on a schedule or on a "
         "registry notification) or another tag."},
    {"spec", "The tags wanted and how they are resolved."},
    {"spec.lookupPolicy", "Whether workloads in the namespace may name this stream's tags as "
                          "images."},
    {"spec.lookupPolicy.local", "When true, an image field naming <stream>:<tag> resolves to the "
                                "tag's image."},
    {"spec.dockerImageRepository", "A registry repository whose tags are all imported (legacy; "
                                   "prefer spec.tags)."},
    {"spec.tags", "The tags of the stream, each following an external image or another tag."},
    {"spec.tags.name", "The tag's name."},
    {"spec.tags.annotations", "Annotations of the tag."},
    {"spec.tags.from", "What the tag follows: a DockerImage pull spec (imported), an "
                       "ImageStreamTag (a reference to another tag, of this or another stream) "
                       "or an ImageStreamImage (a fixed digest)."},
    {"spec.tags.reference", "When true, the tag points at from without importing it."},
    {"spec.tags.generation", "The spec generation this tag was last changed in; set by the "
                             "server."},
    {"spec.tags.importPolicy", "How the tag is imported: scheduled (re-import periodically), "
                               "insecure (HTTP or an unverified certificate), importMode "
                               "(Legacy or PreserveOriginal for manifest lists)."},
    {"spec.tags.referencePolicy", "Source: workloads pull from the original registry; Local: "
                                  "through the stream's repository."},
    {"status", "What each tag resolved to, with its history; written by the importer."},
    {"status.dockerImageRepository", "Where images pushed to this stream go (from the server's "
                                     "--image-registry)."},
    {"status.publicDockerImageRepository", "The repository as reached from outside, when "
                                           "different."},
    {"status.tags", "Per tag: the images it pointed at, newest first, and why an import failed."},
    {"status.tags.tag", "The tag's name."},
    {"status.tags.items", "The history of the tag: each entry's image is a digest, with its pull "
                          "spec and the generation it was set in."},
    {"status.tags.conditions", "ImportSuccess False, with the reason, when the last import of the "
                               "tag failed."},
    {NULL, NULL},
};

const sw_field_doc sw_docs_image[] = {
    {"", "An Image is one image manifest known to the server, named by its digest "
         "(sha256:...); cluster-scoped and shared by every stream that points at it."},
    {"dockerImageReference", "The pull spec of the image, by digest."},
    {"dockerImageMetadata", "The image's config as Docker reports it (architecture, created, "
                            "config)."},
    {"dockerImageManifestMediaType", "The manifest's media type (OCI or Docker schema 2)."},
    {"dockerImageLayers", "The image's layers, base first: digest, size and media type."},
    {"dockerImageManifests", "For a manifest list: its per-platform manifests."},
    {NULL, NULL},
};

const sw_field_doc sw_docs_buildconfig[] = {
    {"", "A BuildConfig describes how to build an image and when: each run is a Build, started "
         "by instantiate, a trigger or a webhook."},
    {"spec", "The build's inputs, strategy, output and triggers."},
    {"spec.triggers", "What starts a build: ConfigChange (the config is created), ImageChange "
                      "(the base image's digest changes), GitHub, GitLab, Bitbucket or Generic "
                      "webhooks."},
    {"spec.runPolicy", "Serial (one at a time, in order), SerialLatestOnly (skip to the newest "
                       "queued) or Parallel."},
    {"spec.successfulBuildsHistoryLimit", "Completed builds kept; older ones are deleted."},
    {"spec.failedBuildsHistoryLimit", "Failed, errored or cancelled builds kept."},
    BUILD_SPEC_DOCS,
    {"status", "The config's build counter and trigger state."},
    {"status.lastVersion", "The number of the newest build (builds are named <config>-<n>)."},
    {"status.imageChangeTriggers", "The image each ImageChange trigger last started a build "
                                   "for."},
    {NULL, NULL},
};

const sw_field_doc sw_docs_build[] = {
    {"", "A Build is one run of a BuildConfig (or a standalone build): the builder assembles the "
         "image and reports here; nothing else talks to the builder."},
    {"spec", "What this build does: a copy of its config's spec at the time it started."},
    {"spec.triggeredBy", "Why it started: a manual request, a trigger, a webhook."},
    BUILD_SPEC_DOCS,
    {"status", "Where the build is; written by the build controller and the builder."},
    {"status.phase", "New, Pending, Running, Complete, Failed, Error or Cancelled."},
    {"status.reason", "A machine-readable reason for the phase (for example "
                      "PullBuilderImageFailed)."},
    {"status.message", "A human-readable explanation of the phase."},
    {"status.cancelled", "Set to true to cancel the build."},
    {"status.startTimestamp", "When the builder started."},
    {"status.completionTimestamp", "When the build finished."},
    {"status.duration", "How long it ran, in nanoseconds."},
    {"status.outputDockerImageReference", "Where the image is pushed."},
    {"status.output", "The pushed image: output.to.imageDigest."},
    {"status.conditions", "One condition per phase, as OpenShift sets them (kubectl wait "
                          "--for=condition=Complete)."},
    {"status.logSnippet", "The last lines of a failed build's log."},
    {"status.backend", "slipway: the build backend that built the image (native or buildah)."},
    {NULL, NULL},
};

const sw_field_doc sw_docs_deploymentconfig[] = {
    {"", "A DeploymentConfig rolls out a pod template as numbered versions, each a "
         "ReplicationController, when its config or (by digest) its images change."},
    {"spec", "The pod template, replicas, triggers and strategy."},
    {"spec.triggers", "ConfigChange (a template change starts a version) and ImageChange (a "
                      "tag's new digest is written into the named containers)."},
    {"spec.triggers.imageChangeParams", "automatic, containerNames, from (an ImageStreamTag) and "
                                        "lastTriggeredImage."},
    {"spec.replicas", "Pods wanted."},
    {"spec.revisionHistoryLimit", "Old ReplicationControllers kept for rollback."},
    {"spec.paused", "When true, triggers wait and no version is started."},
    {"spec.selector", "Labels the pods are selected by."},
    {"spec.template", "The pod template of every version."},
    {"spec.strategy", "Rolling or Recreate; stored, but no deployer pod runs in slipway."},
    {"status", "The latest version and its replicas."},
    {"status.latestVersion", "The number of the newest version (its controller is "
                             "<name>-<version>)."},
    {"status.details", "What caused the latest version."},
    {"status.conditions", "Available and Progressing."},
    {NULL, NULL},
};

const sw_field_doc sw_docs_managedimage[] = {
    {"", "A ManagedImage keeps an image existing: built from its source into its output tag, "
         "rebuilt when the image vanishes from the registry or an input changes."},
    {"spec", "The build inputs and the policy."},
    BUILD_SPEC_DOCS,
    {"spec.policy", "When to verify and rebuild."},
    {"spec.policy.verifyIntervalSeconds", "How often the image is checked in the registry."},
    {"spec.policy.rebuildOnBaseImageChange", "Rebuild when the base image's digest changes."},
    {"status", "Whether the image exists and was built from the current inputs."},
    {"status.conditions", "Ready, with the reason it is or is not."},
    {"status.latestImage", "The image built last, repository@digest."},
    {"status.latestBuild", "The Build that made it."},
    {"status.inputs", "What it was built from: the spec's hash, the base image digest, the source "
                      "revision."},
    {NULL, NULL},
};
