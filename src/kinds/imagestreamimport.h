/* imagestreamimport: the ImageStreamImport virtual kind and the import entry point the
 * notification webhook and the controllers share. */
#ifndef SW_KINDS_IMAGESTREAMIMPORT_H
#define SW_KINDS_IMAGESTREAMIMPORT_H

#include "kinds/import.h"
#include "kinds/kind.h"

extern const sw_kind sw_kind_imagestreamimport;

/* Runs an ImageStreamImport (isi: the request object) in namespace ns; *out is the ISI with its
 * status. Whole-request problems are errors; per-image failures are in status.images[].status
 * and, with spec.import, in the stream's ImportSuccess conditions. */
int sw_imagestreamimport_run(const sw_kind_ctx *ctx, sw_objects *o, const char *ns, json_t *isi,
                             json_t **out);

#endif
