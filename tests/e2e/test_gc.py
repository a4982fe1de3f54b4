"""End-to-end: deletion as Kubernetes has it (crd-gc.md §2, test cases 26-38 of §3) against a
real `slipway server` with its garbage collector and namespace controller, through the official
Python client (typed CoreV1Api with V1DeleteOptions, as a user writes it) and raw HTTP where
the exact reply matters: DeleteOptions from body and query (dryRun in the body deletes
nothing), propagation policies and the replies they give, ownerReferences validation, the
collector's rules (dangling, re-created and cross-namespace owners, unknown owner kinds,
cluster-scoped dependents), finalizer rules, deletecollection through the same pipeline, and
the namespace lifecycle with its conditions."""

import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import swtest  # noqa: E402

from kubernetes import client  # noqa: E402


def cm_path(ns, name=""):
    return "/api/v1/namespaces/%s/configmaps%s" % (ns, "/" + name if name else "")


def ref(obj, block=False, controller=False, kind="ConfigMap", api="v1"):
    r = {"apiVersion": api, "kind": kind, "name": obj["metadata"]["name"],
         "uid": obj["metadata"]["uid"]}
    if block:
        r["blockOwnerDeletion"] = True
    if controller:
        r["controller"] = True
    return r


class T:
    def __init__(self, s, c):
        self.s, self.c = s, c

    def req(self, method, path, body=None, ctype="application/json"):
        code, data = self.s.request(method, path, body, ctype)
        try:
            obj = json.loads(data) if data else None
        except ValueError:
            obj = None
        return code, obj

    def cm(self, ns, name, owners=None, finalizers=None, data=None):
        md = {"name": name}
        if owners:
            md["ownerReferences"] = owners
        if finalizers:
            md["finalizers"] = finalizers
        code, obj = self.req("POST", cm_path(ns), {"apiVersion": "v1", "kind": "ConfigMap",
                                                   "metadata": md, "data": data or {}})
        if code != 201:
            raise RuntimeError("create %s/%s: %d %r" % (ns, name, code, obj))
        return obj

    def ns(self, name):
        code, obj = self.req("POST", "/api/v1/namespaces",
                             {"apiVersion": "v1", "kind": "Namespace",
                              "metadata": {"name": name}})
        if code != 201:
            raise RuntimeError("create namespace %s: %d %r" % (name, code, obj))
        return obj

    def get(self, path):
        return self.req("GET", path)

    def gone(self, path, secs=15.0):
        deadline = time.monotonic() + secs
        while time.monotonic() < deadline:
            if self.get(path)[0] == 404:
                return True
            time.sleep(0.05)
        return False

    def until(self, fn, secs=15.0):
        deadline = time.monotonic() + secs
        while time.monotonic() < deadline:
            v = fn()
            if v:
                return v
            time.sleep(0.05)
        return fn()

    def unfinalize(self, path):
        return self.req("PATCH", path, {"metadata": {"finalizers": None}},
                        "application/merge-patch+json")


def test_validation(t, c):
    c.section("ownerReferences validation: 422 with the field and apimachinery's words")
    a = t.cm("default", "v-a")
    cases = [
        ([{"apiVersion": "v1", "kind": "ConfigMap", "name": "v-a"}],
         'metadata.ownerReferences.uid: Invalid value: "": uid must not be empty'),
        ([{"apiVersion": "v1", "kind": "ConfigMap", "uid": "x"}],
         'metadata.ownerReferences.name: Invalid value: "": name must not be empty'),
        ([{"apiVersion": "", "kind": "ConfigMap", "name": "a", "uid": "x"}],
         "metadata.ownerReferences.apiVersion: Invalid value: \"\": version must not be empty"),
        ([ref(a, controller=True), dict(ref(a, controller=True), name="b", uid="u2")],
         'Only one reference can have Controller set to true. Found "true" in references for '
         'ConfigMap/v-a and ConfigMap/b'),
        ([{"apiVersion": "v1", "kind": "Event", "name": "e", "uid": "u3"}],
         "/v1, Kind=Event is disallowed from being an owner"),
    ]
    for owners, msg in cases:
        code, obj = t.req("POST", cm_path("default"),
                          {"metadata": {"name": "v-bad", "ownerReferences": owners}})
        c.eq(code, 422, "invalid ownerReferences: 422 (%s)" % msg[:40])
        c.ok(obj and msg in obj.get("message", ""), "... says: %s" % msg, obj)
    code, _ = t.req("PATCH", cm_path("default", "v-a"),
                    {"metadata": {"ownerReferences": [{"apiVersion": "v1", "kind": "X"}]}},
                    "application/merge-patch+json")
    c.eq(code, 422, "an update with an invalid reference: 422")
    c.eq(t.get(cm_path("default", "v-bad"))[0], 404, "nothing invalid was stored")


def test_policies(t, c, core):
    c.section("Background (case 26): a Status naming the resource, then the dependent goes")
    a = t.cm("default", "bg-a")
    t.cm("default", "bg-b", owners=[ref(a)])
    st = core.delete_namespaced_config_map(
        "bg-a", "default", body=client.V1DeleteOptions(propagation_policy="Background"))
    c.eq((st.kind, st.status, st.details.kind, st.details.uid),
         ("Status", "Success", "configmaps", a["metadata"]["uid"]),
         "Python V1DeleteOptions(Background): Status with details.kind configmaps and the uid")
    c.ok(t.gone(cm_path("default", "bg-b")), "the dependent is collected")

    c.section("default (no options): Background")
    a = t.cm("default", "df-a")
    t.cm("default", "df-b", owners=[ref(a)])
    code, _ = t.req("DELETE", cm_path("default", "df-a"))
    c.eq(code, 200, "DELETE without a body: 200")
    c.ok(t.gone(cm_path("default", "df-b")), "the dependent is collected")

    c.section("Foreground (case 27): the owner waits for its blocking dependent")
    a = t.cm("default", "fg-a")
    t.cm("default", "fg-b", owners=[ref(a, block=True)], finalizers=["test.example.com/hold"])
    code, obj = t.req("DELETE", cm_path("default", "fg-a"), {"propagationPolicy": "Foreground"})
    md = (obj or {}).get("metadata", {})
    c.eq((code, md.get("finalizers"), md.get("deletionGracePeriodSeconds")),
         (200, ["foregroundDeletion"], 0),
         "200 with the owner: finalizers [foregroundDeletion], deletionGracePeriodSeconds 0")
    c.ok(md.get("deletionTimestamp"), "... and a deletionTimestamp")
    c.ok(t.until(lambda: (t.get(cm_path("default", "fg-b"))[1] or {}).get("metadata", {})
                 .get("deletionTimestamp")), "the blocking dependent is deleted first")
    time.sleep(1.0)
    c.eq(t.get(cm_path("default", "fg-a"))[0], 200, "the owner stays while it is held")
    t.unfinalize(cm_path("default", "fg-b"))
    c.ok(t.gone(cm_path("default", "fg-b")), "the dependent goes once its finalizer does")
    c.ok(t.gone(cm_path("default", "fg-a")), "then the owner")

    c.section("Foreground, a dependent that does not block (case 28)")
    a = t.cm("default", "nb-a")
    t.cm("default", "nb-b", owners=[ref(a)], finalizers=["x.example.com/y"])
    t.req("DELETE", cm_path("default", "nb-a"), {"propagationPolicy": "Foreground"})
    c.ok(t.gone(cm_path("default", "nb-a")), "the owner goes without waiting")
    c.ok(t.until(lambda: (t.get(cm_path("default", "nb-b"))[1] or {}).get("metadata", {})
                 .get("deletionTimestamp")), "the dependent is marked and waits")
    t.unfinalize(cm_path("default", "nb-b"))
    c.ok(t.gone(cm_path("default", "nb-b")), "... and goes with its finalizer")

    c.section("Orphan (case 29) through the Python client's query parameter")
    a = t.cm("default", "or-a")
    t.cm("default", "or-b", owners=[ref(a)])
    t.cm("default", "or-c", owners=[ref(a), ref(t.cm("default", "or-x"))])
    core.delete_namespaced_config_map("or-a", "default", propagation_policy="Orphan")
    code, obj = t.get(cm_path("default", "or-a"))
    c.ok(code == 404 or "orphan" in obj["metadata"].get("finalizers", []),
         "the owner carries the orphan finalizer until it goes")
    c.ok(t.gone(cm_path("default", "or-a")), "the owner goes")
    b = t.get(cm_path("default", "or-b"))[1]
    c.eq(b and b["metadata"].get("ownerReferences"), None,
         "the dependent stays, its reference removed")
    cc = t.get(cm_path("default", "or-c"))[1]
    c.eq([r["name"] for r in cc["metadata"].get("ownerReferences", [])], ["or-x"],
         "a dependent with another owner keeps that one")
    a = t.cm("default", "or2-a")
    code, obj = t.req("DELETE", cm_path("default", "or2-a"), {"propagationPolicy": "Orphan"})
    c.eq((code, obj["metadata"].get("finalizers")), (200, ["orphan"]),
         "raw Orphan DELETE: 200 with finalizers [orphan]")
    c.ok(t.gone(cm_path("default", "or2-a")), "an owner without dependents then goes")

    c.section("orphanDependents (case 30)")
    t.cm("default", "od", finalizers=["test.example.com/hold"])
    code, obj = t.req("DELETE", cm_path("default", "od"), {"orphanDependents": False})
    c.eq(code, 202, "orphanDependents:false on a held object: 202")
    c.eq(obj["metadata"].get("finalizers"), ["test.example.com/hold"],
         "... its dependents go in the background (no GC finalizer)")
    code, obj = t.req("DELETE", cm_path("default", "od"),
                      {"orphanDependents": True, "propagationPolicy": "Orphan"})
    c.eq(code, 422, "orphanDependents with a propagationPolicy: 422")
    c.ok("orphanDependents and deletionPropagation cannot be both set" in obj["message"],
         "... says why", obj)
    t.unfinalize(cm_path("default", "od"))


def test_dangling(t, c):
    c.section("references to owners that do not exist (case 32)")
    t.cm("default", "dg-never", owners=[{"apiVersion": "v1", "kind": "ConfigMap",
                                         "name": "nobody", "uid": "no-such-uid"}])
    c.ok(t.gone(cm_path("default", "dg-never")), "an owner that never existed: collected")
    a = t.cm("default", "dg-a")
    stale = dict(ref(a), uid="not-%s" % a["metadata"]["uid"])
    t.cm("default", "dg-other", owners=[stale])
    c.ok(t.gone(cm_path("default", "dg-other")),
         "an owner name that holds another uid (re-created owner): collected")
    c.eq(t.get(cm_path("default", "dg-a"))[0], 200, "the live object of that name stays")
    t.cm("default", "dg-mixed", owners=[ref(a), {"apiVersion": "v1", "kind": "ConfigMap",
                                                 "name": "gone", "uid": "gone-uid"}])
    mixed = t.until(lambda: (lambda o: o if len(o["metadata"].get("ownerReferences", [])) == 1
                             else None)(t.get(cm_path("default", "dg-mixed"))[1]))
    c.ok(mixed and mixed["metadata"]["ownerReferences"][0]["uid"] == a["metadata"]["uid"],
         "a live owner keeps it; the dangling reference is removed", mixed)

    c.section("owners the collector never deletes for (case 33)")
    t.cm("default", "dg-nope", owners=[{"apiVersion": "nope.example.com/v1", "kind": "Nope",
                                        "name": "n", "uid": "nope-uid"}])
    code, img = t.req("POST", "/apis/image.openshift.io/v1/images", {
        "apiVersion": "image.openshift.io/v1", "kind": "Image",
        "metadata": {"name": "sha256:" + "a" * 64, "ownerReferences": [ref(a)]},
        "dockerImageReference": "example.com/x@sha256:" + "a" * 64})
    c.eq(code, 201, "a cluster-scoped Image naming a namespaced owner kind is accepted")
    t.req("DELETE", cm_path("default", "dg-a"))
    time.sleep(3.0)
    c.eq(t.get(cm_path("default", "dg-nope"))[0], 200,
         "an owner kind nobody serves: never deleted (retried with backoff)")
    c.eq(t.get("/apis/image.openshift.io/v1/images/sha256:" + "a" * 64)[0], 200,
         "a cluster-scoped dependent of a namespaced owner kind: never deleted")
    c.ok(t.gone(cm_path("default", "dg-mixed")), "while the other dependent of that owner goes")

    c.section("an owner in another namespace (case 34)")
    t.ns("gc-a")
    t.ns("gc-b")
    a = t.cm("gc-a", "xa")
    b = t.cm("gc-b", "xb", owners=[ref(a)])
    c.ok(t.gone(cm_path("gc-b", "xb")), "a dependent naming an owner of another namespace: "
                                        "collected")
    c.eq(t.get(cm_path("gc-a", "xa"))[0], 200, "the owner in its own namespace stays")

    def warning():
        code, evs = t.get("/api/v1/namespaces/gc-b/events?fieldSelector=involvedObject.uid%3D"
                          + b["metadata"]["uid"])
        return [e for e in (evs or {}).get("items", [])
                if e.get("reason") == "OwnerRefInvalidNamespace"]
    evs = t.until(warning)
    c.ok(evs and evs[0]["type"] == "Warning" and 'does not exist in namespace "gc-b"'
         in evs[0]["message"], "a Warning Event OwnerRefInvalidNamespace on the dependent", evs)


def test_finalizer_rules(t, c):
    c.section("finalizers and deletionTimestamp (case 35)")
    t.cm("default", "fz", finalizers=["a.example.com/a"])
    code, first = t.req("DELETE", cm_path("default", "fz"))
    ts = first["metadata"].get("deletionTimestamp")
    c.ok(code == 200 and ts, "DELETE of a held object: 200, deletionTimestamp set")
    code, obj = t.req("PATCH", cm_path("default", "fz"),
                      {"metadata": {"finalizers": ["a.example.com/a", "b.example.com/b"]}},
                      "application/merge-patch+json")
    c.eq(code, 422, "adding a finalizer once deletion began: 422")
    c.ok('no new finalizers can be added if the object is being deleted, found new finalizers '
         '[]string{"b.example.com/b"}' in (obj or {}).get("message", ""), "... says which", obj)
    code, obj = t.req("PATCH", cm_path("default", "fz"),
                      {"metadata": {"deletionTimestamp": None}}, "application/merge-patch+json")
    c.eq((code, obj["metadata"].get("deletionTimestamp")), (200, ts),
         "clearing deletionTimestamp: 200, and it stays")
    code, obj = t.req("DELETE", cm_path("default", "fz"))
    c.eq((code, obj["metadata"].get("deletionTimestamp")), (200, ts),
         "a second DELETE: 200, the same deletionTimestamp")
    rv = obj["metadata"]["resourceVersion"]
    stream = t.s.open_stream(cm_path("default") + "?watch=1&timeoutSeconds=10&resourceVersion="
                             + rv)
    code, obj = t.unfinalize(cm_path("default", "fz"))
    c.eq(code, 200, "removing the last finalizer: 200")
    c.eq(t.get(cm_path("default", "fz"))[0], 404, "... and the object is gone")
    kinds = []
    for line in stream:
        ev = json.loads(line)
        kinds.append(ev["type"])
        if ev["type"] == "DELETED":
            break
    stream.close()
    c.eq(kinds[-1:], ["DELETED"], "the watch sees it DELETED")
    t.cm("default", "fz2")
    code, obj = t.req("PATCH", cm_path("default", "fz2"),
                      {"metadata": {"deletionTimestamp": "2026-01-01T00:00:00Z"}},
                      "application/merge-patch+json")
    c.eq(code, 422, "setting deletionTimestamp on a live object: 422")
    c.ok("field is immutable" in obj["message"], "... field is immutable", obj)
    code, obj = t.req("POST", cm_path("default"), {"metadata": {
        "name": "fz3", "finalizers": ["orphan", "foregroundDeletion"]}})
    c.eq(code, 422, "orphan and foregroundDeletion together: 422")
    code, obj = t.req("PATCH", cm_path("default", "fz2"),
                      {"metadata": {"resourceVersion": "1"}, "data": {"x": "y"}},
                      "application/merge-patch+json")
    c.eq(code, 409, "a merge patch with a stale resourceVersion: 409 (case 38)")


def test_dry_run(t, c, core):
    c.section("dry runs delete nothing (the data-loss bug)")
    t.ns("gc-dry")
    t.cm("gc-dry", "keep", data={"a": "b"})
    core.delete_namespaced_config_map("keep", "gc-dry",
                                      body=client.V1DeleteOptions(dry_run=["All"]))
    c.eq(t.get(cm_path("gc-dry", "keep"))[0], 200,
         "Python V1DeleteOptions(dry_run=['All']) on a ConfigMap: still there")
    code, _ = t.req("DELETE", "/api/v1/namespaces/gc-dry",
                    {"propagationPolicy": "Background", "dryRun": ["All"]})
    c.eq(code, 200, "kubectl's dry-run body on a namespace: 200")
    time.sleep(1.0)
    code, ns = t.get("/api/v1/namespaces/gc-dry")
    c.eq((code, ns["status"]["phase"], ns["metadata"].get("deletionTimestamp")),
         (200, "Active", None), "the namespace is untouched")
    c.eq(t.get(cm_path("gc-dry", "keep"))[0], 200, "... and so is its content")
    code, _ = t.req("DELETE", cm_path("gc-dry") + "?dryRun=All")
    c.eq(t.get(cm_path("gc-dry", "keep"))[0], 200, "a dry-run deletecollection deletes nothing")
    code, _ = t.req("DELETE", cm_path("gc-dry", "keep") + "?dryRun=All",
                    {"propagationPolicy": "Background"})
    c.eq(t.get(cm_path("gc-dry", "keep"))[0], 200, "dryRun in the query beside a body too")


def test_collection(t, c):
    c.section("deletecollection goes through the same pipeline")
    t.ns("gc-col")
    t.cm("gc-col", "held", finalizers=["test.example.com/hold"])
    t.cm("gc-col", "terminating", finalizers=["test.example.com/hold"])
    t.req("DELETE", cm_path("gc-col", "terminating"))
    t.cm("gc-col", "plain")
    # the namespace's own kube-root-ca.crt is content too: once it is there, 4 items
    deadline = time.monotonic() + 10
    while t.get(cm_path("gc-col", "kube-root-ca.crt"))[0] != 200 and time.monotonic() < deadline:
        time.sleep(0.1)
    code, obj = t.req("DELETE", cm_path("gc-col"), {"preconditions": {"uid": "nope"}})
    c.eq(code, 409, "items that fail (a uid precondition) are reported: 409")
    c.ok("4 of 4 configmaps could not be deleted" in obj["message"], "... how many", obj)
    code, _ = t.req("DELETE", cm_path("gc-col"))
    c.eq(code, 200, "deletecollection: 200")
    c.eq(t.get(cm_path("gc-col", "plain"))[0], 404, "an object without finalizers goes")
    for name in ("held", "terminating"):
        code, obj = t.get(cm_path("gc-col", name))
        c.ok(code == 200 and obj["metadata"].get("deletionTimestamp"),
             "an object with finalizers (%s) is marked, not removed" % name)
        t.unfinalize(cm_path("gc-col", name))
    code, obj = t.req("DELETE", "/api/v1/namespaces?fieldSelector=metadata.name%3Dgc-col")
    c.eq(code, 405, "deletecollection is not served on namespaces")
    c.eq(t.get("/api/v1/namespaces/gc-col")[0], 200, "... and deleted none")
    code, res = t.get("/api/v1")
    verbs = [r["verbs"] for r in res["resources"] if r["name"] == "namespaces"][0]
    c.ok("deletecollection" not in verbs and "delete" in verbs,
         "discovery advertises no deletecollection on namespaces", verbs)


def test_namespaces(t, c, core):
    c.section("the namespace lifecycle (cases 36, 37)")
    ns = t.ns("gc-ns1")
    c.eq(ns["metadata"]["labels"], {"kubernetes.io/metadata.name": "gc-ns1"},
         "a new namespace carries kubernetes.io/metadata.name")
    t.cm("gc-ns1", "plain")
    t.cm("gc-ns1", "held", finalizers=["example.com/f"])
    code, obj = t.req("DELETE", "/api/v1/namespaces/gc-ns1")
    c.eq((code, obj["status"]["phase"], obj["spec"]["finalizers"]),
         (200, "Terminating", ["kubernetes"]),
         "DELETE: 200, Terminating, spec.finalizers [kubernetes]")
    code, obj = t.req("POST", cm_path("gc-ns1"), {"metadata": {"name": "late"}})
    c.eq(code, 403, "a create in a terminating namespace: 403")
    c.ok('configmaps "late" is forbidden: unable to create new content in namespace gc-ns1 '
         "because it is being terminated"
         in obj["message"], "... says why", obj)

    def cond(kind):
        code, ns = t.get("/api/v1/namespaces/gc-ns1")
        for x in (ns or {}).get("status", {}).get("conditions", []):
            if x["type"] == kind and x["status"] == "True":
                return x
        return None
    fin = t.until(lambda: cond("NamespaceFinalizersRemaining"))
    c.ok(fin and fin["reason"] == "SomeFinalizersRemain" and fin["message"] ==
         "Some content in the namespace has finalizers remaining: example.com/f in 1 resource "
         "instances", "NamespaceFinalizersRemaining True names the finalizer", fin)
    rem = cond("NamespaceContentRemaining")
    c.ok(rem and rem["message"] == "Some resources are remaining: configmaps. has 1 resource "
         "instances", "NamespaceContentRemaining True counts what is left", rem)
    c.eq(t.get(cm_path("gc-ns1", "plain"))[0], 404, "content without finalizers is gone")
    c.eq(t.get("/api/v1/namespaces/gc-ns1")[0], 200, "the namespace stays while content does")
    t.unfinalize(cm_path("gc-ns1", "held"))
    c.ok(t.gone("/api/v1/namespaces/gc-ns1"), "it goes once the finalizer is removed")

    code, obj = t.req("DELETE", "/api/v1/namespaces/default")
    c.eq(code, 403, "DELETE namespace default: 403")
    c.ok('namespaces "default" is forbidden: this namespace may not be deleted' in
         obj["message"], "... this namespace may not be deleted", obj)

    c.section("/finalize by hand, and a Python namespace delete")
    t.ns("gc-ns2")
    t.cm("gc-ns2", "held", finalizers=["example.com/f"])
    t.req("DELETE", "/api/v1/namespaces/gc-ns2")
    for _ in range(20):  # the namespace controller writes conditions meanwhile: 409, again
        code, ns = t.get("/api/v1/namespaces/gc-ns2")
        ns["spec"]["finalizers"] = []
        code, _ = t.req("PUT", "/api/v1/namespaces/gc-ns2/finalize", ns)
        if code != 409:
            break
    c.eq(code, 200, "PUT /finalize with spec.finalizers []: 200")
    c.ok(t.gone("/api/v1/namespaces/gc-ns2", 5), "the namespace without metadata.finalizers "
                                                 "is gone")
    t.ns("gc-ns3")
    t.cm("gc-ns3", "x")
    got = core.delete_namespace("gc-ns3", body=client.V1DeleteOptions(
        propagation_policy="Foreground"))
    c.ok(got is not None, "Python delete_namespace with V1DeleteOptions(Foreground)")
    c.ok(t.gone("/api/v1/namespaces/gc-ns3"), "... the namespace is emptied and removed")


def test_review_findings(t, c):
    c.section("holes a review found (each once reproduced against the server)")
    code, _ = t.req("POST", "/apis/image.openshift.io/v1/namespaces/default/imagestreams", {
        "metadata": {"name": "dry-is"}, "spec": {"tags": [{"name": "t", "from": {
            "kind": "DockerImage", "name": "example.com/x:1"}}]}})
    code, _ = t.req("DELETE", "/apis/image.openshift.io/v1/namespaces/default/imagestreamtags/"
                    "dry-is:t", {"dryRun": ["All"]})
    code, st = t.get("/apis/image.openshift.io/v1/namespaces/default/imagestreams/dry-is")
    c.eq([x["name"] for x in st["spec"].get("tags", [])], ["t"],
         "a dry-run DELETE of an ImageStreamTag (dryRun in the body) keeps the tag")
    t.cm("default", "all-ns-keep")
    code, _ = t.req("DELETE", "/api/v1/configmaps")
    c.eq(code, 405, "DELETE of a namespaced kind across all namespaces: 405")
    c.eq(t.get(cm_path("default", "all-ns-keep"))[0], 200, "... and nothing was deleted")
    code, _ = t.req("POST", "/api/v1/configmaps", {"metadata": {"name": "x"}})
    c.eq(code, 405, "POST of a namespaced kind without a namespace: 405")
    code, obj = t.req("PATCH", cm_path("default", "all-ns-keep"),
                      {"metadata": {"uid": "not-the-uid", "labels": {"a": "b"}}},
                      "application/merge-patch+json")
    c.eq(code, 422, "a patch naming another uid: 422")
    c.ok("metadata.uid" in obj["message"] and "field is immutable" in obj["message"],
         "... metadata.uid: field is immutable", obj)
    for body in ({"preconditions": {"uid": ""}}, {"preconditions": {"resourceVersion": ""}},
                 {"preconditions": {"resourceVersion": "not-a-number"}}):
        code, _ = t.req("DELETE", cm_path("default", "all-ns-keep"), body)
        c.eq(code, 409, "an empty or foreign precondition never matches: %s" % json.dumps(body))
    c.eq(t.get(cm_path("default", "all-ns-keep"))[0], 200, "... and nothing was deleted")
    code, _ = t.req("DELETE", cm_path("default", "all-ns-keep") + "?preconditions.uid=")
    c.eq(code, 409, "an empty uid precondition in the query: 409")

    code, ns = t.req("POST", "/api/v1/namespaces", {"metadata": {"name": "gc-sf"},
                                                    "spec": {"finalizers": ["example.com/x"]}})
    c.eq(ns["spec"]["finalizers"], ["example.com/x", "kubernetes"],
         "a namespace keeps the spec.finalizers it was created with, kubernetes added")
    code, obj = t.req("PATCH", "/api/v1/namespaces/gc-sf/status",
                      {"status": {"phase": "Terminating"}}, "application/merge-patch+json")
    c.eq(code, 422, "phase Terminating on a live namespace: 422")
    t.req("DELETE", "/api/v1/namespaces/gc-sf")
    code, obj = t.req("PATCH", "/api/v1/namespaces/gc-sf/status",
                      {"status": {"phase": "Active"}}, "application/merge-patch+json")
    c.eq(code, 422, "phase Active on a terminating namespace: 422")
    c.ok("may only be 'Terminating' if `deletionTimestamp` is not empty" in obj["message"],
         "... says why",
         obj)
    ns = t.until(lambda: (lambda o: o if o["spec"]["finalizers"] == ["example.com/x"] else None)
                 (t.get("/api/v1/namespaces/gc-sf")[1]))
    c.ok(ns, "the namespace controller removes only its own finalizer", ns)
    time.sleep(1.5)
    c.eq(t.get("/api/v1/namespaces/gc-sf")[0], 200, "... and the namespace waits for the other")
    code, obj = t.req("POST", cm_path("gc-sf"), {"metadata": {"name": "late"}})
    causes = (obj or {}).get("details", {}).get("causes", [])
    c.eq([(x.get("reason"), x.get("field")) for x in causes],
         [("NamespaceTerminating", "metadata.namespace")],
         "a 403 into a terminating namespace carries the NamespaceTerminating cause")
    for method in ("GET", "PATCH"):
        code, _ = t.req(method, "/api/v1/namespaces/gc-sf/finalize",
                        {"spec": {"finalizers": []}} if method == "PATCH" else None,
                        "application/merge-patch+json")
        c.eq(code, 405, "%s on namespaces/<n>/finalize: 405 (update only)" % method)
    for _ in range(20):
        code, ns = t.get("/api/v1/namespaces/gc-sf")
        ns["spec"]["finalizers"] = []
        code, _ = t.req("PUT", "/api/v1/namespaces/gc-sf/finalize", ns)
        if code != 409:
            break
    c.ok(t.gone("/api/v1/namespaces/gc-sf"), "PUT /finalize lets it go")

    fin = ["f.example.com/x%d" % i for i in range(20000)]
    t0 = time.monotonic()
    code, _ = t.req("POST", cm_path("default"), {"metadata": {"name": "many-fin",
                                                               "finalizers": fin}})
    code2, _ = t.req("DELETE", cm_path("default", "many-fin"))
    code3, _ = t.req("PATCH", cm_path("default", "many-fin"),
                     {"metadata": {"finalizers": fin + ["f.example.com/new"]}},
                     "application/merge-patch+json")
    dt = time.monotonic() - t0
    c.eq((code, code2, code3), (201, 200, 422), "20,000 finalizers: create, mark, refuse a new one")
    c.ok(dt < 10, "... in linear time (%.1f s)" % dt)
    t.unfinalize(cm_path("default", "many-fin"))


def body(c):
    with swtest.Server() as s:
        s.start()
        t = T(s, c)
        core = client.CoreV1Api(s.api_client())
        test_validation(t, c)
        test_policies(t, c, core)
        test_dangling(t, c)
        test_finalizer_rules(t, c)
        test_dry_run(t, c, core)
        test_collection(t, c)
        test_namespaces(t, c, core)
        test_review_findings(t, c)
        c.eq(s.stop(), 0, "the server stops cleanly")
        log = open(s.log_path, errors="replace").read()
        c.ok("ERROR: AddressSanitizer" not in log and "runtime error" not in log,
             "no sanitizer report in the server log")


if __name__ == "__main__":
    swtest.run("test_gc", body)
