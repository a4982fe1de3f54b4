/* lease: coordination.k8s.io/v1 Lease, used for controller leader election. */
#include "kinds/kind.h"

static void lease_holder(const json_t *obj, sw_buf *out)
{
    sw_column_str(obj, "spec.holderIdentity", out);
}

static const sw_column lease_columns[] = {
    {"Holder", "string", "The current holder of the lease", 0, lease_holder, NULL, NULL},
};

const sw_kind sw_kind_lease = {
    .group = "coordination.k8s.io",
    .version = "v1",
    .kind = "Lease",
    .plural = "leases",
    .singular = "lease",
    .namespaced = true,
    .name_rule = SW_NAME_SUBDOMAIN,
    .schema_text = "{\"spec\":{\"holderIdentity\":\"string\",\"leaseDurationSeconds\":\"integer\","
                   "\"acquireTime\":\"string\",\"renewTime\":\"string\","
                   "\"leaseTransitions\":\"integer\",\"strategy\":\"string\","
                   "\"preferredHolder\":\"string\"}}",
    .smp = sw_smp_schema_core,
    .columns = lease_columns,
    .ncolumns = 1,
};
