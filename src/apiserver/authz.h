/* authz: who a request is (sw_user, from authentication) and what that user may do: Kubernetes
 * RBAC over the stored Roles, ClusterRoles, RoleBindings and ClusterRoleBindings, kept in
 * memory from the server's one store watch as nscache is (on SQLite updated on the committing
 * writer's thread before the write is acknowledged, so a binding works from the moment its
 * create is answered; on etcd once the watch delivers it).
 *
 * Decisions follow the RBAC authorizer: a request is allowed when any rule of any role bound
 * to the user, to one of its groups or (for system:serviceaccount:<ns>:<name>) to the
 * ServiceAccount allows it; a RoleBinding counts in its own namespace only. Members of
 * system:masters are allowed everything without a lookup, as kube-apiserver's privileged
 * group is. An aggregated ClusterRole (aggregationRule) has its own rules plus those of every
 * ClusterRole its selectors match, computed here when the roles change. Thread-safe. */
#ifndef SW_AUTHZ_H
#define SW_AUTHZ_H

#include "store/store.h"

#include <jansson.h>
#include <stdbool.h>

#define SW_USER_MAX_GROUPS 16

typedef struct sw_user {
    char name[256];
    char uid[128];
    char groups[SW_USER_MAX_GROUPS][128];
    size_t ngroups;
} sw_user;

/* Sets the name (cut to fit) and no groups. */
void sw_user_init(sw_user *u, const char *name);
/* Adds g unless the user has it already or has SW_USER_MAX_GROUPS (then it is dropped). */
void sw_user_add_group(sw_user *u, const char *g);
bool sw_user_in_group(const sw_user *u, const char *g);
/* {"username", "uid", "groups"} as authentication.k8s.io's UserInfo (new reference). */
json_t *sw_user_info(const sw_user *u);

/* What a request asks, as kube-apiserver's RequestInfo: a resource request
 * (/api/v1/..., /apis/<group>/<version>/...) or a non-resource URL with the lower-cased
 * method as its verb. */
typedef struct sw_authz_attrs {
    bool resource;
    char verb[32];
    char group[256];
    char resource_name[64]; /* the resource ("imagestreams") */
    char subresource[64];
    char ns[256];
    char name[256];
    char path[512]; /* non-resource requests: the path */
} sw_authz_attrs;

/* Fills out from a request. watch is the watch= query value, field_selector the
 * fieldSelector= one (a list or watch pinned to metadata.name=<n> is authorized for that
 * name, as in Kubernetes); either may be NULL. */
void sw_authz_attrs_from(const char *method, const char *path, const char *watch,
                         const char *field_selector, sw_authz_attrs *out);

typedef struct sw_authz sw_authz;

/* Lists the stored RBAC objects at revision rev (0: latest); the events after rev go to
 * sw_authz_event. */
int sw_authz_new(sw_authz **out, sw_store *store, int64_t rev);
/* One store event (any key; those of RBAC kinds count), in revision order. */
void sw_authz_event(sw_authz *a, const sw_store_event *ev);
/* Whether the ServiceAccount ns/name exists with uid, as the store watch last said (false:
 * unknown or another uid; the caller then reads the store, which may know better on etcd). */
bool sw_authz_sa_known(sw_authz *a, const char *ns, const char *name, const char *uid);
/* Whether u may do at. When reason is not NULL it gets why ("RBAC: allowed by
 * ClusterRoleBinding \"x\" of ClusterRole \"y\" to Group \"z\""), or "" when denied. */
bool sw_authz_allowed(sw_authz *a, const sw_user *u, const sw_authz_attrs *at, char *reason,
                      size_t n);
/* The rules that apply to u in namespace ns ("" or NULL: cluster bindings only), as
 * SelfSubjectRulesReview's status: resourceRules and nonResourceRules (new references). */
void sw_authz_rules(sw_authz *a, const sw_user *u, const char *ns, json_t **resource_rules,
                    json_t **non_resource_rules);
/* Kubernetes's forbidden message for at ("imagestreams.image.openshift.io is forbidden: User
 * \"x\" cannot list resource ...") into out. */
void sw_authz_denied_message(const sw_user *u, const sw_authz_attrs *at, char *out, size_t n);
/* Escalation prevention, as the RBAC registry's: a user writing a Role or ClusterRole (obj)
 * must hold every permission it grants or have escalate on it (an aggregated ClusterRole
 * needs escalate); one writing a binding must hold every permission of the role it names or
 * have bind on that role. A PATCH (method "PATCH": obj is not the result) needs escalate or
 * bind. 0, or SW_EFORBIDDEN saying what is missing. system:masters may do anything. */
int sw_authz_check_grant(sw_authz *a, const sw_user *u, const char *method, const char *kind,
                         const char *ns, const json_t *obj);
void sw_authz_free(sw_authz *a);

#endif
