/* describe: the text `oc describe` prints for image streams and images (shared by
 * `slipway describe` and `slipway import-image`), build configs, builds and ManagedImages. Lines
 * are laid out in oc's columns (Go's tabwriter with tab padding); ages are docker's human durations
 * relative to now. */
#ifndef SW_CMD_DESCRIBE_H
#define SW_CMD_DESCRIBE_H

#include "client/rest.h"
#include "util/buf.h"

#include <jansson.h>
#include <stdint.h>

/* Appends the description of an ImageStream (`oc describe is`) to out. */
void sw_describe_imagestream(sw_buf *out, const json_t *stream, int64_t now);
/* Appends the description of an Image (`oc describe istag`); name is the "Image Name" line
 * (NULL: none). */
void sw_describe_image(sw_buf *out, const json_t *image, const char *name, int64_t now);

/* BuildConfig, Build and ManagedImage (describe_build.c): c reads what the object alone does
 * not say (its builds, owned objects, Events). */
void sw_describe_buildconfig(sw_buf *out, sw_client *c, const json_t *bc, int64_t now);
void sw_describe_build(sw_buf *out, sw_client *c, const json_t *build, int64_t now);
void sw_describe_managedimage(sw_buf *out, sw_client *c, const json_t *mi, int64_t now);

#endif
