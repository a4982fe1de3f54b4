/* build: the build.openshift.io/v1 kinds, BuildConfig and Build. */
#ifndef SW_KINDS_BUILD_H
#define SW_KINDS_BUILD_H

#include "kinds/kind.h"

extern const sw_kind sw_kind_buildconfig;
extern const sw_kind sw_kind_build;

/* Complete, Failed, Error or Cancelled. */
bool sw_build_phase_terminal(const char *phase);

#endif
