/* core: the core-group (v1) kinds slipway stores: Namespace, Secret, ConfigMap, Event,
 * ServiceAccount. */
#ifndef SW_KINDS_CORE_H
#define SW_KINDS_CORE_H

#include "kinds/kind.h"

extern const sw_kind sw_kind_namespace;
extern const sw_kind sw_kind_secret;
extern const sw_kind sw_kind_configmap;
extern const sw_kind sw_kind_event;
extern const sw_kind sw_kind_serviceaccount;

#endif
