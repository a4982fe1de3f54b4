#!/usr/bin/env bash
# test_kubectl.sh: the unmodified kubectl on PATH against `slipway server` (issue 2, "Tests"):
# api-resources, apply (create and 3-way update), get (table, yaml, json, -w, -o name, -A,
# label and field selectors), describe, edit, patch (strategic, merge, json, status), replace
# (and its Conflict), delete (waits and returns), namespaces, Secret stringData, Lease,
# --dry-run=server and diff. Every check compares real output; any mismatch exits non-zero.
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "$0")/lib.sh"

F=$SW_FIXTURES
REGISTRY=registry.example.com:5000
DIGEST=sha256:$(printf '%064d' 0 | tr 0 a)
PAST=$(date -u -d '-3 days' +%Y-%m-%dT%H:%M:%SZ) # for status and event timestamps

# jsonpath OBJ... PATH: prints one field through kubectl's own jsonpath.
jp()
{
    local path=${*: -1}
    kc get "${@:1:$#-1}" -o "jsonpath=$path"
}

# sorted_names ARGS...: `kubectl get ARGS -o name`, sorted, on one line.
sorted_names()
{
    kc get "$@" -o name | sort | tr '\n' ' ' | sed 's/ $//'
}

check_api_resources()
{
    expect_ok "kubectl version reaches the server" kc version
    expect_match "server version printed" '^Server Version: v1\.32\.' "$OUT"
    expect_ok "kubectl api-resources" kc api-resources
    local res=$OUT
    expect_match "api-resources: imagestreams (is, image.openshift.io/v1, namespaced)" \
        '^imagestreams +is +image\.openshift\.io/v1 +true +ImageStream$' "$res"
    expect_match "api-resources: images are cluster-scoped" \
        '^images +image\.openshift\.io/v1 +false +Image$' "$res"
    expect_match "api-resources: leases" '^leases +coordination\.k8s\.io/v1 +true +Lease$' "$res"
    expect_match "api-resources: configmaps" '^configmaps +cm +v1 +true +ConfigMap$' "$res"
    expect_match "api-resources: namespaces" '^namespaces +ns +v1 +false +Namespace$' "$res"
    expect_match "api-resources: secrets" '^secrets +v1 +true +Secret$' "$res"
    expect_not_contains "api-resources: subresources are not listed as resources" \
        "imagestreams/status" "$res"
    expect_ok "api-resources -o wide" kc api-resources -o wide --api-group=image.openshift.io
    expect_match "imagestreams verbs" \
        '^imagestreams .* create,delete,deletecollection,get,list,patch,update,watch +all$' "$OUT"
    expect_ok "api-resources --namespaced=false -o name" kc api-resources --namespaced=false -o name
    expect_match "cluster-scoped: images" '^images\.image\.openshift\.io$' "$OUT"
    expect_match "cluster-scoped: namespaces" '^namespaces$' "$OUT"
    expect_not_contains "imagestreams are not cluster-scoped" "imagestreams" "$OUT"
}

check_apply()
{
    local uid
    expect_ok "apply creates an ImageStream" kc apply -f "$F/is-ruby-v1.yaml"
    expect_eq "apply create message" "imagestream.image.openshift.io/ruby created" "$OUT"
    expect_eq "created: generation and tags" "1 latest old 1 1" \
        "$(jp is ruby '{.metadata.generation} {.spec.tags[*].name} {.spec.tags[*].generation}')"
    expect_eq "created: labels" "a bar" "$(jp is ruby '{.metadata.labels.env} {.metadata.labels.foo}')"
    uid=$(jp is ruby '{.metadata.uid}')
    expect_match "created: uid is an RFC 4122 uuid" '^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$' "$uid"
    expect_contains "created: last-applied annotation" '"foo":"bar"' \
        "$(jp is ruby '{.metadata.annotations.kubectl\.kubernetes\.io/last-applied-configuration}')"

    expect_ok "3-way apply updates" kc apply -f "$F/is-ruby-v2.yaml"
    expect_eq "update message" "imagestream.image.openshift.io/ruby configured" "$OUT"
    expect_eq "updated: generation bumped, tag old removed, latest regenerated" "2 latest 2" \
        "$(jp is ruby '{.metadata.generation} {.spec.tags[*].name} {.spec.tags[*].generation}')"
    expect_eq "updated: changed fields" "docker.io/library/ruby:3.4 false" \
        "$(jp is ruby '{.spec.tags[0].from.name} {.spec.lookupPolicy.local}')"
    expect_eq "updated: removed label is gone" '{"app":"ruby","env":"a"}' "$(jp is ruby '{.metadata.labels}')"
    expect_eq "updated: same object (uid)" "$uid" "$(jp is ruby '{.metadata.uid}')"
    expect_ok "re-apply of the same file" kc apply -f "$F/is-ruby-v2.yaml"
    expect_eq "re-apply leaves generation alone" 2 "$(jp is ruby '{.metadata.generation}')"

    expect_ok "apply creates a ConfigMap" kc apply -f "$F/cm-cfg.yaml"
    expect_eq "ConfigMap create message" "configmap/cfg created" "$OUT"
    expect_ok "3-way apply (strategic) on the ConfigMap" kc apply -f "$F/cm-cfg-v2.yaml"
    expect_eq "ConfigMap update message" "configmap/cfg configured" "$OUT"
    expect_eq "ConfigMap: key a removed, b changed" '{"b":"20","keep":"yes"}' "$(jp cm cfg '{.data}')"
}

check_diff_and_dry_run()
{
    expect_ok "kubectl diff of the applied file shows nothing" kc diff -f "$F/is-ruby-v2.yaml"
    expect_eq "diff output for an unchanged object" "" "$OUT"
    run kc diff -f "$F/is-ruby-v1.yaml"
    expect_eq "kubectl diff exit status when objects differ" 1 "$RC"
    expect_match "diff shows the old tag as removed" '^-  +name: docker\.io/library/ruby:3\.4$' "$OUT"
    expect_match "diff shows the file's tag as added" '^\+  +name: docker\.io/library/ruby:3\.3$' "$OUT"
    expect_eq "diff did not persist" "docker.io/library/ruby:3.4 2" \
        "$(jp is ruby '{.spec.tags[0].from.name} {.metadata.generation}')"

    expect_ok "apply --dry-run=server" kc apply --dry-run=server -f "$F/is-dryrun.yaml"
    expect_eq "dry-run message" "imagestream.image.openshift.io/ghost created (server dry run)" "$OUT"
    expect_fails "dry-run create did not persist" '"ghost" not found' kc get is ghost
    expect_ok "apply --dry-run=server of a change" kc apply --dry-run=server -f "$F/is-ruby-v1.yaml"
    expect_eq "dry-run update did not persist" "docker.io/library/ruby:3.4 2" \
        "$(jp is ruby '{.spec.tags[0].from.name} {.metadata.generation}')"
}

check_get()
{
    expect_ok "apply more streams" kc apply -f "$F/is-selectors.yaml"
    expect_ok "kubectl get is (table)" kc get is
    expect_match "ImageStream table header" '^NAME +IMAGE REPOSITORY +TAGS +UPDATED +AGE$' "$OUT"
    expect_match "ImageStream table row with the computed repository" \
        "^ruby +$REGISTRY/default/ruby +[0-9]+[smhd]" "$OUT"
    expect_eq "table has one row per stream" 5 "$(printf '%s\n' "$OUT" | wc -l)"
    expect_ok "kubectl get cm (table)" kc get cm cfg
    expect_match "ConfigMap table" '^cfg +2 +[0-9]+[smhd]' "$OUT"
    expect_match "ConfigMap table header" '^NAME +DATA +AGE$' "$OUT"
    expect_ok "kubectl get is --show-labels" kc get is ruby --show-labels
    expect_match "labels column" 'app=ruby,env=a$' "$OUT"

    expect_ok "get -o yaml" kc get is ruby -o yaml
    local y=$OUT
    expect_match "yaml: kind" '^kind: ImageStream$' "$y"
    expect_match "yaml: apiVersion" '^apiVersion: image\.openshift\.io/v1$' "$y"
    expect_match "yaml: generation" '^  generation: 2$' "$y"
    expect_match "yaml: resourceVersion" '^  resourceVersion: "[0-9]+"$' "$y"
    expect_match "yaml: creationTimestamp in RFC 3339" \
        '^  creationTimestamp: "[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}Z"$' "$y"
    expect_match "yaml: status.dockerImageRepository" \
        "^  dockerImageRepository: $REGISTRY/default/ruby\$" "$y"

    expect_ok "get -o json" kc get is ruby -o json
    local j=$OUT
    expect_match "json: kind" '^    "kind": "ImageStream",$' "$j"
    expect_match "json: name" '^        "name": "ruby",$' "$j"
    expect_eq "jsonpath on the object" "ImageStream image.openshift.io/v1 ruby default" \
        "$(jp is ruby '{.kind} {.apiVersion} {.metadata.name} {.metadata.namespace}')"
    expect_eq "jsonpath over a list" "golang node python ruby" \
        "$(kc get is -o 'jsonpath={.items[*].metadata.name}')"
    expect_eq "list items carry kind" "ImageStream ImageStream ImageStream ImageStream" \
        "$(kc get is -o 'jsonpath={.items[*].kind}')"
    expect_eq "get -o name" "imagestream.image.openshift.io/golang imagestream.image.openshift.io/node imagestream.image.openshift.io/python imagestream.image.openshift.io/ruby" \
        "$(sorted_names is)"
    expect_ok "get one by short name -o name" kc get is ruby -o name
    expect_eq "get is ruby -o name" "imagestream.image.openshift.io/ruby" "$OUT"
    expect_fails "get of a missing object" \
        'Error from server (NotFound): imagestreams.image.openshift.io "nosuch" not found' \
        kc get is nosuch
    expect_ok "get -o custom-columns" kc get is -o custom-columns=N:.metadata.name,APP:.metadata.labels.app --no-headers
    expect_match "custom columns" '^python +python$' "$OUT"
}

check_status_subresource()
{
    local patch
    patch="{\"status\":{\"tags\":[{\"tag\":\"latest\",\"items\":[{\"created\":\"$PAST\","
    patch+="\"dockerImageReference\":\"docker.io/library/ruby@$DIGEST\",\"image\":\"$DIGEST\","
    patch+='"generation":2}]}]}}'
    expect_ok "patch --subresource=status" kc patch is ruby --subresource=status --type merge -p "$patch"
    expect_eq "status written, generation unchanged" "$DIGEST 2" \
        "$(jp is ruby '{.status.tags[0].items[0].image} {.metadata.generation}')"
    expect_ok "get is after status update" kc get is ruby
    expect_match "TAGS and UPDATED columns from status" \
        "^ruby +$REGISTRY/default/ruby +latest +(2d23h|3d) +[0-9]+[sm] *\$" "$OUT"
    expect_ok "status in a main-resource patch is ignored" \
        kc patch is ruby --type merge -p '{"status":{"tags":null},"metadata":{"labels":{"st":"1"}}}'
    expect_eq "status kept by a main-resource patch" "$DIGEST 1" \
        "$(jp is ruby '{.status.tags[0].items[0].image} {.metadata.labels.st}')"
}

# kubectl get -w in the background: the table must show the later create, update and delete.
check_watch()
{
    local w=$SW_TMP/watch.out we=$SW_TMP/watch-events.out
    sw_bg timeout 60 kubectl get is -w >"$w" 2>&1
    sw_bg timeout 60 kubectl get is -w --output-watch-events >"$we" 2>&1
    for _ in $(seq 100); do
        grep -q '^ruby ' "$w" && grep -q '^ADDED  *ruby ' "$we" && break
        sleep 0.1
    done
    expect_match "watch printed the initial list" '^ruby ' "$(cat "$w")"
    expect_ok "create while watching" kc apply -f "$F/is-watched.yaml"
    expect_ok "change while watching" kc label is python watched=yes
    expect_ok "delete while watching" kc delete is watched
    for _ in $(seq 100); do
        grep -q '^DELETED  *watched ' "$we" && [ "$(grep -c '^watched ' "$w")" -ge 2 ] &&
            grep -q '^python ' "$w" && [ "$(grep -c '^python ' "$w")" -ge 2 ] && break
        sleep 0.1
    done
    expect_eq "watch events in order" \
        "ADDED/watched MODIFIED/python DELETED/watched" \
        "$(grep -E '^[A-Z]+ +(watched|python) ' "$we" | grep -v '^ADDED  *python ' |
            awk '{printf "%s%s/%s", (NR > 1 ? " " : ""), $1, $2}')"
    expect_match "event watch header" '^EVENT +NAME +IMAGE REPOSITORY +TAGS +UPDATED +AGE$' "$(cat "$we")"
    expect_match "table watch printed the new stream" "^watched +$REGISTRY/default/watched" "$(cat "$w")"
    expect_eq "table watch printed python twice (list + update)" 2 "$(grep -c '^python ' "$w")"
    expect_not_contains "watch printed no error" "rror" "$(cat "$w" "$we")"
    sw_bg_stop
}

check_describe()
{
    local uid
    expect_ok "describe is" kc describe is ruby
    expect_match "describe is: name" '^Name: +ruby$' "$OUT"
    expect_match "describe is: namespace" '^Namespace: +default$' "$OUT"
    expect_match "describe is: kind" '^Kind: +ImageStream$' "$OUT"
    expect_contains "describe is: spec tag" "docker.io/library/ruby:3.4" "$OUT"
    expect_match "describe is: events section" '^Events: +<none>$' "$OUT"

    uid=$(jp cm cfg '{.metadata.uid}')
    sed "s/@UID@/$uid/; s/@PAST@/$PAST/" >"$SW_TMP/event.yaml" <<'EOF'
apiVersion: v1
kind: Event
metadata:
  name: cfg.e2e
involvedObject:
  apiVersion: v1
  kind: ConfigMap
  name: cfg
  namespace: default
  uid: @UID@
reason: Checked
message: hello from the e2e test
type: Normal
count: 1
firstTimestamp: "@PAST@"
lastTimestamp: "@PAST@"
source:
  component: slipway-e2e
EOF
    expect_ok "create an Event about the ConfigMap" kc create -f "$SW_TMP/event.yaml"
    expect_ok "describe cm" kc describe cm cfg
    expect_match "describe cm: name" '^Name: +cfg$' "$OUT"
    expect_match "describe cm: labels" '^Labels: +app=web$' "$OUT"
    expect_match "describe cm: data key" '^keep:$' "$OUT"
    expect_match "describe cm: the event from the events list" \
        '^ +Normal +Checked +(2d23h|3d) +slipway-e2e +hello from the e2e test$' "$OUT"
    expect_ok "describe ns" kc describe ns default
    expect_match "describe ns: status" '^Status: +Active$' "$OUT"
}

check_edit()
{
    local ed=$SW_TMP/editor.sh gen
    gen=$(jp is ruby '{.metadata.generation}')
    printf '#!/bin/sh\nsed -i "s/^    local: false$/    local: true/" "$1"\n' >"$ed"
    chmod +x "$ed"
    EDITOR=$ed expect_ok "kubectl edit is (EDITOR=sed script)" kc edit is ruby
    expect_eq "edit message" "imagestream.image.openshift.io/ruby edited" "$OUT"
    expect_eq "edit changed the field and bumped generation" "true $((gen + 1))" \
        "$(jp is ruby '{.spec.lookupPolicy.local} {.metadata.generation}')"
    printf '#!/bin/sh\nsed -i "s/^  b: \\"20\\"$/  b: \\"21\\"/" "$1"\n' >"$ed"
    EDITOR=$ed expect_ok "kubectl edit cm" kc edit cm cfg
    expect_eq "edit cm message" "configmap/cfg edited" "$OUT"
    expect_eq "edit cm changed b" "21" "$(jp cm cfg '{.data.b}')"
    EDITOR=true expect_ok "kubectl edit without changes" kc edit cm cfg
    expect_contains "edit without changes" "Edit cancelled, no changes made." "$OUT"
}

check_patch()
{
    local gen
    expect_ok "patch cm (default strategic)" kc patch cm cfg -p '{"data":{"c":"3"}}'
    expect_eq "strategic patch message" "configmap/cfg patched" "$OUT"
    expect_eq "strategic patch merged" '{"b":"21","c":"3","keep":"yes"}' "$(jp cm cfg '{.data}')"
    expect_ok "patch cm --type merge (null deletes)" kc patch cm cfg --type merge -p '{"data":{"c":null,"d":"4"}}'
    expect_eq "merge patch applied" '{"b":"21","d":"4","keep":"yes"}' "$(jp cm cfg '{.data}')"
    expect_ok "patch cm --type json" kc patch cm cfg --type json \
        -p '[{"op":"replace","path":"/data/b","value":"22"},{"op":"remove","path":"/data/d"}]'
    expect_eq "json patch applied" '{"b":"22","keep":"yes"}' "$(jp cm cfg '{.data}')"
    expect_ok "patch cm with no change" kc patch cm cfg --type merge -p '{"data":{"b":"22"}}'
    expect_eq "no-op patch message" "configmap/cfg patched (no change)" "$OUT"

    gen=$(jp is ruby '{.metadata.generation}')
    expect_ok "patch is (default strategic)" kc patch is ruby -p '{"spec":{"lookupPolicy":{"local":false}}}'
    expect_eq "strategic patch on is" "false $((gen + 1))" \
        "$(jp is ruby '{.spec.lookupPolicy.local} {.metadata.generation}')"
    expect_ok "patch is --type merge" kc patch is ruby --type merge -p '{"metadata":{"labels":{"patched":"merge"}}}'
    expect_eq "merge patch on is (labels only: no generation bump)" "merge $((gen + 1))" \
        "$(jp is ruby '{.metadata.labels.patched} {.metadata.generation}')"
    expect_ok "patch is --type json (add a tag)" kc patch is ruby --type json -p \
        '[{"op":"add","path":"/spec/tags/-","value":{"name":"dev","from":{"kind":"DockerImage","name":"docker.io/library/ruby:3.5"}}}]'
    expect_eq "json patch on is: new tag gets the new generation" "latest dev $((gen + 2)) $((gen + 2))" \
        "$(jp is ruby '{.spec.tags[*].name} {.metadata.generation} {.spec.tags[1].generation}')"
    expect_fails "json patch with a failing test op" '"ruby" is invalid' \
        kc patch is ruby --type json -p '[{"op":"test","path":"/spec/lookupPolicy/local","value":true}]'
    expect_fails "patch of a missing object" 'imagestreams.image.openshift.io "nosuch" not found' \
        kc patch is nosuch --type merge -p '{"metadata":{"labels":{"a":"b"}}}'
}

check_replace()
{
    local cur=$SW_TMP/cm-current.yaml stale=$SW_TMP/cm-stale.yaml
    kc get cm cfg -o yaml >"$stale" || fail "get cm -o yaml"
    sed 's/^  keep: "yes"$/  keep: replaced/' "$stale" >"$cur"
    expect_ok "kubectl replace" kc replace -f "$cur"
    expect_eq "replace message" "configmap/cfg replaced" "$OUT"
    expect_eq "replace wrote the file" "replaced" "$(jp cm cfg '{.data.keep}')"
    expect_fails "replace with a stale resourceVersion" \
        'Error from server (Conflict): error when replacing' kc replace -f "$stale"
    expect_contains "conflict message" \
        'Operation cannot be fulfilled on configmaps "cfg": the object has been modified' "$OUT"
    expect_eq "stale replace changed nothing" "replaced" "$(jp cm cfg '{.data.keep}')"

    kc get is python -o yaml >"$stale" || fail "get is -o yaml"
    expect_ok "touch python" kc label is python touched=1
    expect_fails "replace is with a stale resourceVersion" 'Conflict' kc replace -f "$stale"
    sed '/^  resourceVersion:/d; s/^    app: python$/    app: python3/' "$stale" >"$cur"
    expect_ok "replace without resourceVersion (unconditional)" kc replace -f "$cur"
    expect_eq "replace is wrote labels" "python3 " "$(jp is python '{.metadata.labels.app} {.metadata.labels.touched}')"
}

check_delete()
{
    local t0 t1
    expect_ok "create an object to delete" kc apply -f "$F/is-watched.yaml"
    t0=$(date +%s)
    expect_ok "kubectl delete (waits for deletion)" timeout 60 kubectl delete is watched
    t1=$(date +%s)
    expect_eq "delete message" 'imagestream.image.openshift.io "watched" deleted' "$OUT"
    [ $((t1 - t0)) -lt 10 ] || fail "kubectl delete took $((t1 - t0)) s"
    pass "kubectl delete returned in $((t1 - t0)) s"
    expect_fails "deleted object is gone" '"watched" not found' kc get is watched
    expect_fails "delete of a missing object" '"watched" not found' kc delete is watched
    expect_ok "delete --ignore-not-found" kc delete is watched --ignore-not-found
    expect_ok "delete -f" timeout 60 kubectl delete -f "$F/cm-cfg.yaml"
    expect_eq "delete -f message" 'configmap "cfg" deleted' "$OUT"
    expect_fails "cm gone" '"cfg" not found' kc get cm cfg
    expect_ok "delete --cascade=foreground" timeout 60 kubectl delete is golang --cascade=foreground
    expect_fails "foreground delete removed it" '"golang" not found' kc get is golang

    local dpid rc
    expect_ok "ConfigMap with a finalizer" kc apply -f "$F/cm-held.yaml"
    sw_bg timeout 30 kubectl delete cm held >"$SW_TMP/delete-held.out" 2>&1
    dpid=${SW_BG_PIDS[-1]}
    sleep 1.5
    kill -0 "$dpid" 2>/dev/null ||
        fail "kubectl delete returned while a finalizer was set: $(cat "$SW_TMP/delete-held.out")"
    pass "kubectl delete waits while a finalizer is set"
    expect_match "deletionTimestamp set while finalizing" '^20[0-9]{2}-[0-9]{2}-[0-9]{2}T.* \["example.com/hold"\]$' \
        "$(jp cm held '{.metadata.deletionTimestamp} {.metadata.finalizers}')"
    expect_ok "remove the finalizer" kc patch cm held --type json -p '[{"op":"remove","path":"/metadata/finalizers"}]'
    wait "$dpid"
    rc=$?
    SW_BG_PIDS=()
    expect_eq "kubectl delete returns 0 once the finalizer is gone" 0 "$rc"
    expect_eq "its output" 'configmap "held" deleted' "$(cat "$SW_TMP/delete-held.out")"
    expect_fails "finalized object is gone" '"held" not found' kc get cm held
}

check_selectors()
{
    expect_eq "-l app=node" "imagestream.image.openshift.io/node" "$(sorted_names is -l app=node)"
    expect_eq "-l 'env in (a,b)'" \
        "imagestream.image.openshift.io/python imagestream.image.openshift.io/ruby" \
        "$(sorted_names is -l 'env in (a,b)')"
    expect_eq "-l '!foo'" \
        "imagestream.image.openshift.io/golang imagestream.image.openshift.io/python imagestream.image.openshift.io/ruby" \
        "$(sorted_names is -l '!foo')"
    expect_eq "-l foo (exists)" "imagestream.image.openshift.io/node" "$(sorted_names is -l foo)"
    expect_eq "-l 'env notin (a,b)'" \
        "imagestream.image.openshift.io/golang imagestream.image.openshift.io/node" \
        "$(sorted_names is -l 'env notin (a,b)')"
    expect_eq "-l env!=a,app!=golang" \
        "imagestream.image.openshift.io/node imagestream.image.openshift.io/python" \
        "$(sorted_names is -l 'env!=a,app!=golang')"
    expect_eq "-l with two terms (AND)" "imagestream.image.openshift.io/ruby" \
        "$(sorted_names is -l 'app=ruby,env=a')"
    expect_ok "-l matching nothing" kc get is -l app=nothing
    expect_eq "no match message" "No resources found in default namespace." "$OUT"
    expect_eq "--field-selector metadata.name=python" "imagestream.image.openshift.io/python" \
        "$(sorted_names is --field-selector metadata.name=python)"
    expect_eq "--field-selector metadata.name!=python,metadata.name!=ruby" \
        "imagestream.image.openshift.io/golang imagestream.image.openshift.io/node" \
        "$(sorted_names is --field-selector 'metadata.name!=python,metadata.name!=ruby')"
    expect_fails "unsupported field selector" 'field label not supported' \
        kc get is --field-selector spec.foo=x
}

check_namespaces()
{
    expect_ok "namespace from YAML" kc apply -f "$F/ns-team-a.yaml"
    expect_eq "namespace create message" "namespace/team-a created" "$OUT"
    expect_eq "namespace phase" "Active" "$(jp ns team-a '{.status.phase}')"
    expect_ok "get ns (table)" kc get ns
    expect_match "ns table row" '^team-a +Active +[0-9]+[smhd]$' "$OUT"
    expect_match "default namespace exists" '^default +Active ' "$OUT"
    expect_ok "create into the namespace" kc apply -f "$F/team-a-content.yaml"
    expect_eq "objects in team-a (and its kube-root-ca.crt)" \
        "configmap/settings imagestream.image.openshift.io/app" \
        "$(sorted_names is,cm -n team-a | tr ' ' '\n' | grep -v '^configmap/kube-root-ca.crt$' | tr '\n' ' ' | sed 's/ $//')"
    expect_eq "repository uses the namespace" "$REGISTRY/team-a/app" \
        "$(jp is app -n team-a '{.status.dockerImageRepository}')"
    expect_fails "write into a missing namespace" \
        'Error from server (NotFound): error when creating' kc create -f "$F/is-missing-ns.yaml"
    expect_contains "missing namespace message" 'namespaces "nowhere" not found' "$OUT"
    expect_fails "apply into a missing namespace (-n)" 'namespaces "nowhere2" not found' \
        kc apply -n nowhere2 -f "$F/is-watched.yaml"

    expect_ok "get is -A" kc get is -A
    expect_match "-A header" '^NAMESPACE +NAME +IMAGE REPOSITORY +TAGS +UPDATED +AGE$' "$OUT"
    expect_match "-A row in team-a" "^team-a +app +$REGISTRY/team-a/app " "$OUT"
    expect_match "-A row in default" "^default +ruby +$REGISTRY/default/ruby " "$OUT"
    expect_eq "-A -o jsonpath namespaces" "default default default team-a" \
        "$(kc get is -A -o 'jsonpath={.items[*].metadata.namespace}' | tr ' ' '\n' | sort | tr '\n' ' ' | sed 's/ $//')"
    expect_ok "get cm -A" kc get cm -A
    expect_match "cm -A row" '^team-a +settings +1 +' "$OUT"
    expect_ok "get -A with a label selector" kc get is -A -l app=team-app -o name
    expect_eq "-A -l" "imagestream.image.openshift.io/app" "$OUT"

    expect_ok "delete the namespace" timeout 60 kubectl delete ns team-a
    expect_eq "namespace delete message" 'namespace "team-a" deleted' "$OUT"
    expect_fails "namespace gone" 'namespaces "team-a" not found' kc get ns team-a
    expect_ok "content of the deleted namespace" kc get is,cm -n team-a
    expect_eq "namespace content removed" "No resources found in team-a namespace." "$OUT"
    expect_not_contains "-A no longer lists team-a" "team-a" "$(kc get is -A)"
    expect_fails "cannot create into the deleted namespace" 'namespaces "team-a" not found' \
        kc create -f "$F/team-a-content.yaml"
}

check_secret_and_lease()
{
    expect_ok "Secret with stringData" kc apply -f "$F/secret-creds.yaml"
    expect_eq "secret create message" "secret/creds created" "$OUT"
    expect_eq "stringData became base64 data" "YWRtaW4= czNjcjN0" \
        "$(jp secret creds '{.data.username} {.data.password}')"
    expect_eq "data decodes" "admin" "$(jp secret creds '{.data.username}' | base64 -d)"
    expect_eq "stringData not stored" "" "$(jp secret creds '{.stringData}')"
    expect_ok "get secret (table)" kc get secret creds
    expect_match "secret table" '^creds +Opaque +2 +[0-9]+[smhd]$' "$OUT"
    expect_ok "re-apply of the Secret" kc apply -f "$F/secret-creds.yaml"

    expect_ok "apply a Lease" kc apply -f "$F/lease.yaml"
    expect_eq "lease create message" "lease.coordination.k8s.io/controller-leader created" "$OUT"
    expect_eq "lease fields" "slipway-e2e-1 15" \
        "$(jp lease controller-leader '{.spec.holderIdentity} {.spec.leaseDurationSeconds}')"
    expect_ok "get lease (table)" kc get lease
    expect_match "lease table" '^controller-leader +slipway-e2e-1 +[0-9]+[smhd]$' "$OUT"
    sed 's/slipway-e2e-1/slipway-e2e-2/' "$F/lease.yaml" >"$SW_TMP/lease2.yaml"
    expect_ok "apply a Lease update (strategic)" kc apply -f "$SW_TMP/lease2.yaml"
    expect_eq "lease update message" "lease.coordination.k8s.io/controller-leader configured" "$OUT"
    expect_eq "lease holder changed" "slipway-e2e-2" "$(jp lease controller-leader '{.spec.holderIdentity}')"
}

# ImageStreamTag writes as OpenShift's: a PUT naming a stale resourceVersion is refused, a PUT
# without a tag keeps the tag and sets its annotations, which GET shows as the istag's.
check_istag_updates()
{
    local D=sha256:4444444444444444444444444444444444444444444444444444444444444444 rv code
    kc create -f - >/dev/null <<EOF || fail "create stream ist"
apiVersion: image.openshift.io/v1
kind: ImageStream
metadata: {name: ist}
spec:
  tags:
  - {name: v1, from: {kind: DockerImage, name: "quay.io/x/y:1"}}
EOF
    kc create -f - >/dev/null <<EOF || fail "map ist:v1"
apiVersion: image.openshift.io/v1
kind: ImageStreamMapping
metadata: {name: ist}
tag: v1
image:
  metadata: {name: "$D"}
  dockerImageReference: "quay.io/x/y@$D"
EOF
    rv=$(kc get istag ist:v1 -o jsonpath='{.metadata.resourceVersion}')
    [ -n "$rv" ] || fail "no istag ist:v1"
    kc annotate is ist touched=1 >/dev/null || fail "annotate ist"
    code=$(sw_api PUT /apis/image.openshift.io/v1/namespaces/default/imagestreamtags/ist:v1 \
        -H 'Content-Type: application/json' -o /dev/null -w '%{http_code}' \
        -d "{\"kind\": \"ImageStreamTag\", \"apiVersion\": \"image.openshift.io/v1\",
             \"metadata\": {\"name\": \"ist:v1\", \"resourceVersion\": \"$rv\"},
             \"tag\": {\"name\": \"v1\", \"from\": {\"kind\": \"DockerImage\", \"name\": \"quay.io/x/y:2\"}}}")
    expect_eq "istag PUT with a stale resourceVersion" 409 "$code"
    code=$(sw_api PUT /apis/image.openshift.io/v1/namespaces/default/imagestreamtags/ist:v1 \
        -H 'Content-Type: application/json' -o /dev/null -w '%{http_code}' \
        -d '{"kind": "ImageStreamTag", "apiVersion": "image.openshift.io/v1",
             "metadata": {"name": "ist:v1", "annotations": {"team": "blue"}}, "tag": null}')
    expect_eq "istag PUT without a tag keeps the tag" 200 "$code"
    expect_eq "the tag kept its source, got the annotation, GET shows it" "quay.io/x/y:1 blue blue" \
        "$(kc get istag ist:v1 -o jsonpath='{.tag.from.name} {.tag.annotations.team} {.metadata.annotations.team}')"
}

# ImageStreamMapping and Image references must parse; a managed image that exists already is
# pulled through the receiving stream's own repository (OpenShift re-points it).
check_mapping_rules()
{
    local D=sha256:5555555555555555555555555555555555555555555555555555555555555555 i code
    code=$(sw_api POST /apis/image.openshift.io/v1/namespaces/default/imagestreammappings \
        -H 'Content-Type: application/json' -o /dev/null -w '%{http_code}' \
        -d "{\"metadata\": {\"name\": \"mapped\"}, \"tag\": \"v1\",
             \"image\": {\"metadata\": {\"name\": \"$D\"}, \"dockerImageReference\": \"not a ref!!\"}}")
    expect_eq "a mapping with an unparsable reference" 422 "$code"
    code=$(sw_api POST /apis/image.openshift.io/v1/images -H 'Content-Type: application/json' \
        -o /dev/null -w '%{http_code}' \
        -d "{\"metadata\": {\"name\": \"$D\"}, \"dockerImageReference\": \"bad ref !!\"}")
    expect_eq "an Image with an unparsable reference" 422 "$code"
    for i in ma mb; do
        code=$(sw_api POST /apis/image.openshift.io/v1/namespaces/default/imagestreammappings \
            -H 'Content-Type: application/json' -o /dev/null -w '%{http_code}' \
            -d "{\"metadata\": {\"name\": \"$i\"}, \"tag\": \"v1\",
                 \"image\": {\"metadata\": {\"name\": \"$D\",
                   \"annotations\": {\"openshift.io/image.managed\": \"true\"}},
                   \"dockerImageReference\": \"$REGISTRY/default/ma@$D\"}}")
        expect_eq "managed mapping into $i" 201 "$code"
    done
    expect_eq "the second stream pulls the managed image through its own repository" \
        "$REGISTRY/default/mb@$D" \
        "$(kc get is mb -o jsonpath='{.status.tags[0].items[0].dockerImageReference}')"
}

# Compaction every hour, keeping one revision: it must not run during this test (a wakeup of
# the compactor by anything but its interval once compacted after every request).
sw_start_server --image-registry "$REGISTRY" --compact-interval 3600 --compact-keep 1
check_api_resources
check_apply
check_diff_and_dry_run
check_get
check_status_subresource
check_watch
check_describe
check_edit
check_patch
check_replace
check_selectors
check_delete
check_namespaces
check_secret_and_lease
check_istag_updates
check_mapping_rules
expect_eq "no compaction before its interval, after $(grep -cE ' (GET|POST|PUT|PATCH|DELETE) .* 20[01] [0-9]+ms$' "$SW_LOG") successful requests" 0 \
    "$(grep -c 'compacted the store' "$SW_LOG")"
sw_finish
