/* docs: what `kubectl explain` says about slipway's OpenShift-style kinds, field by field (the
 * kinds' descriptors point here; /openapi/v3 and `slipway crds` publish it). Written for
 * slipway, from what each field does here. */
#ifndef SW_KINDS_DOCS_H
#define SW_KINDS_DOCS_H

#include "meta/schema.h"

extern const sw_field_doc sw_docs_imagestream[];
extern const sw_field_doc sw_docs_image[];
extern const sw_field_doc sw_docs_buildconfig[];
extern const sw_field_doc sw_docs_build[];
extern const sw_field_doc sw_docs_deploymentconfig[];
extern const sw_field_doc sw_docs_managedimage[];

#endif
