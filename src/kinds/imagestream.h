/* imagestream: the ImageStream kind and the tag-event helpers that the import controller and the
 * virtual image kinds will share (AddTagEventToImageStream semantics, openshift-api.md §1.4). */
#ifndef SW_KINDS_IMAGESTREAM_H
#define SW_KINDS_IMAGESTREAM_H

#include "kinds/kind.h"

extern const sw_kind sw_kind_imagestream;

json_t *sw_imagestream_spec_tag(const json_t *stream, const char *tag);
json_t *sw_imagestream_status_tag(const json_t *stream, const char *tag);
/* Adds event (borrowed; copied when inserted) to status tag `tag`; true if the stream changed. */
bool sw_imagestream_add_tag_event(json_t *stream, const char *tag, const json_t *event);

#endif
