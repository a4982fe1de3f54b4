/* describe_int: the layout helpers describe.c shares with the other describers
 * (describe_build.c): oc's "Label:\tvalue" fields, metadata, ages and tabwriter alignment. */
#ifndef SW_CMD_DESCRIBE_INT_H
#define SW_CMD_DESCRIBE_INT_H

#include "util/buf.h"

#include <jansson.h>
#include <stdint.h>

/* "label:" then "\t<line>" for each line of value ("<none>" when empty). */
void sw_describe__field(sw_buf *b, const char *label, const char *value);
/* Name, Namespace, Created, Labels, Annotations. */
void sw_describe__meta(sw_buf *b, const json_t *meta, int64_t now);
/* docker's HumanDuration; "<age> ago" of an RFC 3339 time ("<none>" when absent). */
void sw_describe__duration(int64_t secs, char *out, size_t n);
void sw_describe__age(const char *when, int64_t now, char *out, size_t n);
/* Appends text (lines of tab-separated cells, each ending in '\n') to out, aligned as Go's
 * tabwriter aligns oc's output. */
void sw_describe__align(sw_buf *out, const char *text);

#endif
