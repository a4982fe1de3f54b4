#!/usr/bin/env bash
# test_crds_js.sh: the official JavaScript client (@kubernetes/client-node 1.x, installed into
# tests/js by scripts/install-deps from the npm registry) on a custom resource: CustomObjectsApi
# create, get, merge patch, list, delete, a 422 with its causes, and an informer (list, then
# watch) that sees ADD, UPDATE and DELETE. The checks are in tests/js/crd_client.mjs.
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "$0")/lib.sh"

JS=$SW_TESTS/js
[ -d "$JS/node_modules/@kubernetes/client-node" ] ||
    fail "tests/js/node_modules is missing: scripts/install-deps installs @kubernetes/client-node"
sw_start_server
kc apply -f - >/dev/null <<'YAML' || fail "apply the CronTab CRD"
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: crontabs.stable.example.com}
spec:
  group: stable.example.com
  scope: Namespaced
  names: {plural: crontabs, singular: crontab, kind: CronTab}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              cronSpec: {type: string}
              replicas: {type: integer, minimum: 0, maximum: 10}
YAML
kc wait --for=condition=Established crd/crontabs.stable.example.com --timeout=10s >/dev/null ||
    fail "the CRD is established"
expect_ok "the JavaScript client on a custom resource" timeout 60 node "$JS/crd_client.mjs"
echo "$OUT"
sw_finish
