/* imagestream: the ImageStream kind and the tag-event helpers that the import controller and the
 * virtual image kinds will share (AddTagEventToImageStream semantics, openshift-api.md §1.4). */
#ifndef SW_KINDS_IMAGESTREAM_H
#define SW_KINDS_IMAGESTREAM_H

#include "kinds/kind.h"

extern const sw_kind sw_kind_imagestream;

/* A tag name: 1-128 of [A-Za-z0-9_.-]. */
bool sw_imagestream_tag_name_ok(const char *name);
/* 0 when ref parses as an image reference, else SW_EINVALID naming field (a printf format
 * with its arguments: "spec.tags[%s].from.name", tag) and the parser's reason. */
int sw_image_ref_check(const char *ref, const char *field_fmt, ...)
    __attribute__((format(printf, 2, 3)));
json_t *sw_imagestream_spec_tag(const json_t *stream, const char *tag);
json_t *sw_imagestream_status_tag(const json_t *stream, const char *tag);
/* Adds event (borrowed; copied when inserted) to status tag `tag`; true if the stream changed. */
bool sw_imagestream_add_tag_event(json_t *stream, const char *tag, const json_t *event);

/* UpdateTrackingTags: spec tags that follow `tag` in the same stream get its newest event. */
bool sw_imagestream_update_tracking_tags(json_t *stream, const char *tag);
/* The pull spec of a tag event, honouring the tag's referencePolicy (Local: the stream's own
 * repository by digest; Source: the event's dockerImageReference). */
void sw_imagestream_pull_spec(const json_t *stream, const char *tag, const json_t *event, char *out,
                              size_t n);
/* The image tag `tag` of stream points at now, as "<registry>/<repository>@<digest>" (the
 * repository of its pull spec under the tag's referencePolicy, the digest of its newest event):
 * what image triggers write. false when the tag has no image with a valid digest yet. */
bool sw_imagestream_tag_image(const json_t *stream, const char *tag, char *out, size_t n);
/* Splits "<stream>:<tag>" (SW_EBADREQUEST when malformed). */
int sw_imagestream_split_tag_name(const char *name, char *stream, size_t sn, char *tag, size_t tn);

/* The virtual ImageStreamTag of tag in stream; NULL when the tag has no image yet. */
json_t *sw_istag_build(const sw_kind_ctx *ctx, sw_objects *o, const json_t *stream,
                       const char *tag);

/* Adds event to tag of stream ns/stream_name (creating the stream), lets tracking tags follow,
 * and writes the status with conflict retries. event's generation defaults to the stream's. */
int sw_imagestream_record(sw_objects *o, const char *ns, const char *stream_name, const char *tag,
                          const json_t *event);

extern const sw_kind sw_kind_image;

#endif
