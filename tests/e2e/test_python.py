"""End-to-end: the official Python kubernetes client (Debian python3-kubernetes)
against a real `slipway server`: typed CoreV1Api on namespaces, secrets and
configmaps; the typed discovery calls (trailing slashes, group discovery), 404 for
unserved resources whatever the body (400 for a kindless protobuf envelope to a served one), a namespace's default ServiceAccount and
kube-root-ca.crt; the dynamic client on image.openshift.io/v1 ImageStreams (CRUD,
default strategic-merge patch, status subresource, generation rules, watch,
bookmarks, delete with propagationPolicy, limit/continue pagination)."""

import base64
import json
import os
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import swtest  # noqa: E402

from kubernetes import client, watch  # noqa: E402
from kubernetes.client.rest import ApiException  # noqa: E402

IS_API = "image.openshift.io/v1"


def b64(s):
    return base64.b64encode(s.encode()).decode()


def meta(name, labels=None, rv=None):
    return client.V1ObjectMeta(name=name, labels=labels, resource_version=rv)


def gone_within(read, secs=5.0):
    """True once read() raises a 404 ApiException (polls up to secs)."""
    deadline = time.monotonic() + secs
    while True:
        try:
            read()
        except ApiException as e:
            if e.status == 404:
                return True
            raise
        if time.monotonic() > deadline:
            return False
        time.sleep(0.1)


def rv_int(obj):
    return int(obj["metadata"]["resourceVersion"])


# -- typed client ---------------------------------------------------------

def test_namespaces(c, core):
    c.section("namespaces (CoreV1Api)")
    ns = core.create_namespace(client.V1Namespace(metadata=meta("py-ns1", {"t": "py"})))
    c.eq(ns.metadata.name, "py-ns1", "create namespace returns it")
    c.eq(ns.status.phase if ns.status else None, "Active", "created namespace is Active")
    got = core.read_namespace("py-ns1")
    c.eq(got.status.phase, "Active", "read namespace: phase Active")
    c.ok(got.metadata.uid and got.metadata.resource_version, "read namespace: uid and resourceVersion set")
    names = [n.metadata.name for n in core.list_namespace().items]
    c.ok("py-ns1" in names and "default" in names, "list namespaces has py-ns1 and default", names)
    names = [n.metadata.name for n in core.list_namespace(label_selector="t=py").items]
    c.eq(names, ["py-ns1"], "list namespaces by label")
    c.raises(lambda: core.create_namespaced_config_map(
        "no-such-ns", client.V1ConfigMap(metadata=meta("x"), data={"a": "b"})),
        404, "write into a missing namespace: 404")
    c.raises(lambda: core.create_namespace(client.V1Namespace(metadata=meta("py-ns1"))),
             409, "create existing namespace: 409")
    core.create_namespaced_config_map("py-ns1", client.V1ConfigMap(metadata=meta("inner"), data={"a": "b"}))
    core.delete_namespace("py-ns1")
    c.ok(gone_within(lambda: core.read_namespace("py-ns1")), "deleted namespace goes away")
    c.raises(lambda: core.read_namespaced_config_map("inner", "py-ns1"), 404,
             "content of a deleted namespace is gone")


def test_secrets(c, core, ns):
    c.section("secrets (CoreV1Api)")
    body = client.V1Secret(metadata=meta("s1", {"app": "py"}),
                           string_data={"user": "admin", "pass": "s3cr3t"})
    s = core.create_namespaced_secret(ns, body)
    c.eq(s.data, {"user": b64("admin"), "pass": b64("s3cr3t")}, "create with string_data: data is base64")
    c.eq(s.string_data, None, "create: stringData is not stored")
    c.eq(s.type, "Opaque", "create: type defaults to Opaque")
    core.create_namespaced_secret(ns, client.V1Secret(metadata=meta("s2", {"app": "other"}),
                                                      data={"k": b64("v")}))
    got = core.read_namespaced_secret("s1", ns)
    c.eq(got.data, s.data, "read secret: same data")
    names = [x.metadata.name for x in core.list_namespaced_secret(ns, label_selector="app=py").items]
    c.eq(names, ["s1"], "list secrets with labelSelector app=py")
    names = sorted(x.metadata.name for x in
                   core.list_namespaced_secret(ns, label_selector="app in (py,other)").items)
    c.eq(names, ["s1", "s2"], "list secrets with labelSelector app in (py,other)")
    p = core.patch_namespaced_secret("s1", ns, {"metadata": {"labels": {"tier": "db"}},
                                                "data": {"extra": b64("x"), "pass": None}})
    c.eq(p.metadata.labels, {"app": "py", "tier": "db"}, "patch (strategic): labels merged")
    c.eq(p.data, {"user": b64("admin"), "extra": b64("x")}, "patch (strategic): data merged, null deletes")
    c.ok(int(p.metadata.resource_version) > int(got.metadata.resource_version),
         "patch bumps resourceVersion")
    core.delete_namespaced_secret("s1", ns)
    c.raises(lambda: core.read_namespaced_secret("s1", ns), 404, "deleted secret: read 404")
    c.raises(lambda: core.delete_namespaced_secret("s1", ns), 404, "delete again: 404")


def wait_read(read, secs=10.0):
    """read()'s result once it stops raising 404 (polls up to secs), else None."""
    deadline = time.monotonic() + secs
    while True:
        try:
            return read()
        except ApiException as e:
            if e.status != 404:
                raise
        if time.monotonic() > deadline:
            return None
        time.sleep(0.1)


def test_namespace_defaults(c, srv, core, ns):
    c.section("a namespace's default ServiceAccount and kube-root-ca.crt")
    sa = wait_read(lambda: core.read_namespaced_service_account("default", ns))
    c.ok(sa is not None, "the default ServiceAccount appears")
    cm = wait_read(lambda: core.read_namespaced_config_map("kube-root-ca.crt", ns))
    c.ok(cm is not None, "the kube-root-ca.crt ConfigMap appears")
    c.eq((cm.data or {}).get("ca.crt") if cm else None, srv.ca_pem,
         "it carries the CA the kubeconfig trusts")
    core.delete_namespaced_service_account("default", ns)
    core.patch_namespaced_config_map("kube-root-ca.crt", ns, {"data": {"ca.crt": "tampered"}})
    core.patch_namespace(ns, {"metadata": {"labels": {"touched": "yes"}}})
    sa = wait_read(lambda: core.read_namespaced_service_account("default", ns))
    c.ok(sa is not None, "a deleted default ServiceAccount comes back (on the namespace's next event)")
    deadline = time.monotonic() + 10
    while core.read_namespaced_config_map("kube-root-ca.crt", ns).data.get("ca.crt") != srv.ca_pem \
            and time.monotonic() < deadline:
        time.sleep(0.1)
    c.eq(core.read_namespaced_config_map("kube-root-ca.crt", ns).data.get("ca.crt"), srv.ca_pem,
         "an edited kube-root-ca.crt is put right")


def test_discovery_paths(c, srv, api, core):
    c.section("typed discovery calls and unknown resources")
    v = client.VersionApi(api).get_code()
    c.ok("slipway" in v.git_version, "VersionApi().get_code() (GET /version/)", v.git_version)
    groups = [g.name for g in client.ApisApi(api).get_api_versions().groups]
    c.ok("image.openshift.io" in groups and "apps.openshift.io" in groups,
         "ApisApi().get_api_versions() (GET /apis/)", groups)
    names = [r.name for r in core.get_api_resources().resources]
    c.ok("pods" in names and "configmaps" in names, "CoreV1Api().get_api_resources() (GET /api/v1/)", names)
    c.ok(client.CoreApi(api).get_api_versions().versions == ["v1"], "CoreApi().get_api_versions() (GET /api/)")
    g = client.AppsApi(api).get_api_group()
    c.eq(g.name, "apps", "AppsApi().get_api_group() (GET /apis/apps/)")
    names = [r.name for r in client.AppsV1Api(api).get_api_resources().resources]
    c.ok("deployments" in names, "AppsV1Api().get_api_resources() (GET /apis/apps/v1/)", names)
    code, out = srv.request("GET", "/apis/image.openshift.io")
    c.eq((code, json.loads(out).get("kind"), json.loads(out).get("preferredVersion", {}).get("version")),
         (200, "APIGroup", "v1"), "group discovery /apis/image.openshift.io")
    code, _ = srv.request("GET", "/apis/nope.example.com")
    c.eq(code, 404, "an unknown group: 404")
    pb = b"k8s\x00\x0a\x00"
    code, out = srv.request("POST", "/apis/nope.example.com/v1/things", pb,
                            ctype="application/vnd.kubernetes.protobuf")
    c.eq((code, json.loads(out).get("reason")), (404, "NotFound"),
         "a protobuf body to an unserved resource: 404, not 415")
    # served now (TokenRequest, the reviews): an envelope naming no kind is a bad request
    for path in ("/api/v1/namespaces/default/serviceaccounts/default/token",
                 "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews"):
        code, out = srv.request("POST", path, pb, ctype="application/vnd.kubernetes.protobuf")
        c.eq((code, json.loads(out).get("reason")), (400, "BadRequest"),
             "a protobuf envelope without a kind: 400 (%s)" % path)


def test_configmaps(c, core, ns):
    c.section("configmaps (CoreV1Api)")
    c.ok(wait_read(lambda: core.read_namespaced_config_map("kube-root-ca.crt", ns)) is not None,
         "the namespace's kube-root-ca.crt is there first (as on a cluster)")
    cm = core.create_namespaced_config_map(ns, client.V1ConfigMap(
        metadata=meta("cm1", {"app": "py"}), data={"a": "1"}))
    c.eq(cm.data, {"a": "1"}, "create configmap")
    core.create_namespaced_config_map(ns, client.V1ConfigMap(metadata=meta("cm2"), data={"z": "0"}))
    old_rv = cm.metadata.resource_version
    cm.data = {"a": "2"}
    upd = core.replace_namespaced_config_map("cm1", ns, cm)
    c.eq(upd.data, {"a": "2"}, "replace with current resourceVersion")
    c.ok(int(upd.metadata.resource_version) > int(old_rv), "replace bumps resourceVersion")
    stale = client.V1ConfigMap(metadata=meta("cm1", {"app": "py"}, rv=old_rv), data={"a": "3"})
    c.raises(lambda: core.replace_namespaced_config_map("cm1", ns, stale), 409,
             "replace with stale resourceVersion: 409")
    got = core.read_namespaced_config_map("cm1", ns)
    c.eq(got.data, {"a": "2"}, "read after rejected replace: unchanged")
    p = core.patch_namespaced_config_map("cm1", ns, {"data": {"b": "x"}})
    c.eq(p.data, {"a": "2", "b": "x"}, "patch (strategic) merges data")
    p = core.patch_namespaced_config_map("cm1", ns, [{"op": "replace", "path": "/data/b", "value": "y"}])
    c.eq(p.data, {"a": "2", "b": "y"}, "patch with a list body (json-patch)")
    d = core.create_namespaced_config_map(ns, client.V1ConfigMap(metadata=meta("dry"), data={"d": "1"}),
                                          dry_run="All")
    c.eq(d.data, {"d": "1"}, "create with dryRun=All returns the object")
    c.raises(lambda: core.read_namespaced_config_map("dry", ns), 404, "dryRun=All did not persist")
    names = sorted(x.metadata.name for x in core.list_namespaced_config_map(ns).items)
    c.eq(names, ["cm1", "cm2", "kube-root-ca.crt"], "list configmaps")
    names = [x.metadata.name for x in
             core.list_namespaced_config_map(ns, field_selector="metadata.name=cm1").items]
    c.eq(names, ["cm1"], "list with fieldSelector metadata.name=cm1")
    names = [x.metadata.name for x in
             core.list_namespaced_config_map(ns, field_selector="metadata.name!=cm1").items]
    c.eq(sorted(names), ["cm2", "kube-root-ca.crt"], "list with fieldSelector metadata.name!=cm1")
    names = [x.metadata.name for x in core.list_config_map_for_all_namespaces(
        field_selector="metadata.namespace=%s,metadata.name=cm2" % ns).items]
    c.eq(names, ["cm2"], "list across namespaces with fieldSelector namespace+name")
    core.delete_namespaced_config_map("cm1", ns)
    c.raises(lambda: core.read_namespaced_config_map("cm1", ns), 404, "deleted configmap: read 404")


def test_typed_watch_bookmarks(c, core, ns):
    c.section("typed watch with allowWatchBookmarks (configmaps)")
    lst = core.list_namespaced_config_map(ns)
    rv = lst.metadata.resource_version

    def writer():
        time.sleep(0.3)
        core.create_namespaced_config_map(ns, client.V1ConfigMap(metadata=meta("wb1"), data={"a": "1"}))

    t = threading.Thread(target=writer)
    t.start()
    seen = []
    w = watch.Watch()
    t0 = time.monotonic()
    for ev in w.stream(core.list_namespaced_config_map, ns, resource_version=rv,
                       allow_watch_bookmarks=True, timeout_seconds=6):
        seen.append(ev)
    dt = time.monotonic() - t0
    t.join()
    types = [e["type"] for e in seen]
    c.ok("ADDED" in types, "typed watch sees ADDED", types)
    bms = [e["raw_object"] for e in seen if e["type"] == "BOOKMARK"]
    c.ok(bms, "typed watch gets a BOOKMARK within 6 s", types)
    if bms:
        c.eq((bms[0].get("kind"), bms[0].get("apiVersion")), ("ConfigMap", "v1"),
             "bookmark carries the watched kind")
    c.ok(dt < 9, "watch ends at timeoutSeconds", "%.1fs" % dt)


# -- dynamic client -------------------------------------------------------

def is_body(name, tags=None, labels=None):
    spec = {"lookupPolicy": {"local": False}}
    if tags is not None:
        spec["tags"] = [{"name": t, "from": {"kind": "DockerImage", "name": ref}} for t, ref in tags]
    md = {"name": name}
    if labels:
        md["labels"] = labels
    return {"apiVersion": IS_API, "kind": "ImageStream", "metadata": md, "spec": spec}


def spec_tag(obj, name):
    for t in obj.get("spec", {}).get("tags") or []:
        if t.get("name") == name:
            return t
    return None


def test_is_crud(c, isr, ns):
    c.section("ImageStream CRUD (dynamic client)")
    o = isr.create(body=is_body("py1", [("latest", "quay.io/a/b:1")], {"app": "py"}), namespace=ns).to_dict()
    c.eq(o["metadata"]["name"], "py1", "create imagestream")
    c.eq((o["apiVersion"], o["kind"]), (IS_API, "ImageStream"), "create returns apiVersion/kind")
    c.eq(o["metadata"].get("generation"), 1, "create: generation 1")
    c.raises(lambda: isr.create(body=is_body("py1"), namespace=ns), 409, "create duplicate: 409")
    g = isr.get(name="py1", namespace=ns).to_dict()
    c.eq(g["spec"], o["spec"], "get returns the created spec")
    isr.create(body=is_body("py2", labels={"app": "other"}), namespace=ns)
    lst = isr.get(namespace=ns).to_dict()
    c.eq(lst.get("kind"), "ImageStreamList", "list kind is ImageStreamList")
    c.eq(sorted(i["metadata"]["name"] for i in lst["items"]), ["py1", "py2"], "list imagestreams")
    c.ok(all(i.get("kind") == "ImageStream" for i in lst["items"]), "list items carry kind")
    lst = isr.get(namespace=ns, label_selector="app=py").to_dict()
    c.eq([i["metadata"]["name"] for i in lst["items"]], ["py1"], "list with labelSelector")
    p = isr.patch(name="py1", namespace=ns, body={
        "metadata": {"annotations": {"note": "x"}},
        "spec": {"lookupPolicy": {"local": True}}}).to_dict()
    c.eq(p["spec"]["lookupPolicy"], {"local": True}, "patch (default SMP content type) applied")
    c.eq(p["metadata"].get("annotations", {}).get("note"), "x", "patch adds annotation")
    c.eq([t["name"] for t in p["spec"].get("tags", [])], ["latest"], "patch keeps unmentioned fields")
    c.eq(p["metadata"].get("labels"), {"app": "py"}, "patch keeps labels")
    p = isr.patch(name="py1", namespace=ns, content_type="application/merge-patch+json",
                  body={"metadata": {"annotations": {"note": None}}}).to_dict()
    c.ok("note" not in (p["metadata"].get("annotations") or {}), "merge patch: null removes a key")
    p = isr.patch(name="py1", namespace=ns, content_type="application/json-patch+json",
                  body=[{"op": "add", "path": "/metadata/labels/extra", "value": "1"}]).to_dict()
    c.eq(p["metadata"].get("labels"), {"app": "py", "extra": "1"}, "json patch adds a label")


def test_is_generation_status(c, isr, ns):
    c.section("ImageStream generation rules and status subresource")
    o = isr.create(body=is_body("gen", [("latest", "quay.io/a/b:1")]), namespace=ns).to_dict()
    c.eq(spec_tag(o, "latest").get("generation"), 1, "create: spec tag generation 1")
    o["spec"]["tags"].append({"name": "v2", "from": {"kind": "DockerImage", "name": "quay.io/a/b:2"}})
    o = isr.replace(body=o, namespace=ns).to_dict()
    c.eq(o["metadata"]["generation"], 2, "add a tag: generation 2")
    c.eq((spec_tag(o, "latest").get("generation"), spec_tag(o, "v2").get("generation")), (1, 2),
         "unchanged tag keeps generation 1, new tag gets 2")
    spec_tag(o, "latest")["from"]["name"] = "quay.io/a/b:1.1"
    spec_tag(o, "v2")["generation"] = 77  # users cannot set tag generations
    o = isr.replace(body=o, namespace=ns).to_dict()
    c.eq(o["metadata"]["generation"], 3, "change a tag's from: generation 3")
    c.eq((spec_tag(o, "latest").get("generation"), spec_tag(o, "v2").get("generation")), (3, 2),
         "changed tag gets 3; user-set generation replaced by stored")
    p = isr.patch(name="gen", namespace=ns, body={"metadata": {"labels": {"only": "labels"}}}).to_dict()
    c.eq(p["metadata"]["generation"], 3, "changing only labels does not bump generation")
    c.ok(rv_int(p) > rv_int(o), "label patch bumps resourceVersion")

    status = {"tags": [{"tag": "latest", "items": [{
        "created": "2024-01-02T03:04:05Z",
        "dockerImageReference": "quay.io/a/b@sha256:" + "ab" * 32,
        "image": "sha256:" + "ab" * 32, "generation": 3}]}]}
    body = dict(p)
    body["status"] = status
    body["spec"] = {"lookupPolicy": {"local": True}, "tags": []}  # must be ignored
    s = isr.status.replace(body=body, namespace=ns).to_dict()
    items = (s.get("status", {}).get("tags") or [{}])[0].get("items") or [{}]
    c.eq(items[0].get("image"), "sha256:" + "ab" * 32, "status replace writes status")
    c.eq(s["spec"], p["spec"], "status replace leaves spec untouched")
    c.eq(s["metadata"]["generation"], 3, "status replace does not bump generation")
    c.eq(s["metadata"].get("labels"), {"only": "labels"}, "status replace keeps metadata")
    g = isr.get(name="gen", namespace=ns).to_dict()
    c.eq(g.get("status", {}).get("tags"), s.get("status", {}).get("tags"), "status persisted")
    o = dict(g)
    o["status"] = {"tags": []}
    o["spec"]["lookupPolicy"] = {"local": True}
    u = isr.replace(body=o, namespace=ns).to_dict()
    c.eq(u.get("status", {}).get("tags"), g["status"]["tags"], "main-resource replace keeps status")
    c.eq(u["metadata"]["generation"], 4, "spec change through replace: generation 4")
    c.eq(spec_tag(u, "latest").get("generation"), 3, "tags untouched by that change keep generation")


def test_is_watch(c, isr, ns):
    c.section("ImageStream watch (dynamic client)")
    lst = isr.get(namespace=ns).to_dict()
    rv = lst["metadata"]["resourceVersion"]
    errors = []

    def writer():
        try:
            time.sleep(0.3)
            isr.create(body=is_body("w1"), namespace=ns)
            isr.patch(name="w1", namespace=ns, body={"metadata": {"labels": {"step": "2"}}})
            isr.delete(name="w1", namespace=ns)
        except Exception as e:  # noqa: BLE001 - reported as a check
            errors.append(e)

    t = threading.Thread(target=writer)
    t.start()
    events = []
    w = watch.Watch()
    for ev in w.stream(isr.get, namespace=ns, resource_version=rv, timeout_seconds=8,
                       serialize=False):
        obj = ev["raw_object"]
        events.append((ev["type"], obj["metadata"]["name"], int(obj["metadata"]["resourceVersion"]),
                       obj["metadata"].get("labels")))
        if ev["type"] == "DELETED" and obj["metadata"]["name"] == "w1":
            w.stop()
    t.join()
    c.ok(not errors, "writer thread succeeded", errors)
    mine = [e for e in events if e[1] == "w1"]
    c.eq([e[0] for e in mine], ["ADDED", "MODIFIED", "DELETED"], "watch from list RV: ADDED, MODIFIED, DELETED")
    rvs = [e[2] for e in events]
    c.ok(rvs == sorted(rvs) and len(set(rvs)) == len(rvs) and all(r > int(rv) for r in rvs),
         "watch event RVs strictly increase, after the list RV", rvs)
    if len(mine) == 3:
        c.eq(mine[1][3], {"step": "2"}, "MODIFIED carries the new object")

    c.section("ImageStream watch with allowWatchBookmarks (dynamic client)")
    lst = isr.get(namespace=ns).to_dict()
    rv = lst["metadata"]["resourceVersion"]
    t = threading.Thread(target=lambda: (time.sleep(0.3), isr.create(body=is_body("w2"), namespace=ns)))
    t.start()
    events = []
    t0 = time.monotonic()
    for ev in watch.Watch().stream(isr.get, namespace=ns, resource_version=rv, timeout_seconds=6,
                                   serialize=False, query_params=[("allowWatchBookmarks", True)]):
        events.append((ev["type"], ev["raw_object"]))
    dt = time.monotonic() - t0
    t.join()
    types = [e[0] for e in events]
    c.ok(("ADDED" in types), "bookmark watch still delivers ADDED", types)
    bms = [o for ty, o in events if ty == "BOOKMARK"]
    c.ok(bms, "BOOKMARK received", types)
    if bms:
        b = bms[-1]
        c.eq((b.get("kind"), b.get("apiVersion")), ("ImageStream", IS_API), "bookmark has ImageStream GVK")
        added = [int(o["metadata"]["resourceVersion"]) for ty, o in events if ty == "ADDED"]
        c.ok(int(b["metadata"]["resourceVersion"]) >= max(added or [int(rv)]),
             "bookmark RV is not behind delivered events", b["metadata"])
    c.ok(dt < 9, "stream closes at timeoutSeconds", "%.1fs" % dt)


def test_is_delete(c, isr, ns):
    c.section("ImageStream delete (dynamic client)")
    isr.create(body=is_body("d1"), namespace=ns)
    isr.create(body=is_body("d2"), namespace=ns)
    isr.delete(name="d1", namespace=ns, propagation_policy="Foreground")
    c.ok(gone_within(lambda: isr.get(name="d1", namespace=ns)),
         "delete with propagationPolicy=Foreground (query): object goes away")
    isr.delete(name="d2", namespace=ns)
    c.ok(gone_within(lambda: isr.get(name="d2", namespace=ns), 0.5), "delete without options: gone at once")
    c.raises(lambda: isr.delete(name="d2", namespace=ns), 404, "delete missing: 404")


def test_is_pagination(c, isr, core):
    c.section("ImageStream limit/continue pagination")
    ns = "py-page"
    core.create_namespace(client.V1Namespace(metadata=meta(ns)))
    want = ["pg-%02d" % i for i in range(25)]
    for n in want:
        isr.create(body=is_body(n), namespace=ns)
    pages = []
    token = None
    first_rv = None
    for _ in range(10):
        kw = {"namespace": ns, "limit": 10}
        if token:
            kw["_continue"] = token
        page = isr.get(**kw).to_dict()
        pages.append([i["metadata"]["name"] for i in page["items"]])
        if first_rv is None:
            first_rv = page["metadata"].get("resourceVersion")
            rem = page["metadata"].get("remainingItemCount")
            c.ok(rem in (None, 15), "first page: remainingItemCount absent or 15", rem)
            isr.create(body=is_body("pg-zz"), namespace=ns)  # after the snapshot
        token = page["metadata"].get("continue")
        if not token:
            break
    c.eq([len(p) for p in pages], [10, 10, 5], "limit=10 over 25 objects: 3 pages")
    flat = [n for p in pages for n in p]
    c.eq(len(flat), len(set(flat)), "no duplicates across pages")
    c.eq(sorted(flat), want, "all names listed; the object created mid-listing is not (snapshot)")
    full = isr.get(namespace=ns).to_dict()
    c.eq(len(full["items"]), 26, "a fresh list sees all 26")
    c.raises(lambda: isr.get(namespace=ns, limit=10, _continue="garbage!"), 400, "bad continue token: 400")


def body(c):
    with swtest.Server() as srv:
        srv.start()
        api = srv.api_client()
        core = client.CoreV1Api(api)
        test_namespaces(c, core)
        core.create_namespace(client.V1Namespace(metadata=meta("py-typed")))
        test_discovery_paths(c, srv, api, core)
        test_secrets(c, core, "py-typed")
        test_configmaps(c, core, "py-typed")
        test_typed_watch_bookmarks(c, core, "py-typed")
        core.create_namespace(client.V1Namespace(metadata=meta("py-defaults")))
        test_namespace_defaults(c, srv, core, "py-defaults")

        dyn = srv.dynamic_client(api)
        isr = dyn.resources.get(api_version=IS_API, kind="ImageStream")
        c.ok(isr.namespaced and "status" in isr.subresources, "discovery: ImageStream namespaced with status")
        core.create_namespace(client.V1Namespace(metadata=meta("py-dyn")))
        test_is_crud(c, isr, "py-dyn")
        test_is_generation_status(c, isr, "py-dyn")
        test_is_watch(c, isr, "py-dyn")
        test_is_delete(c, isr, "py-dyn")
        test_is_pagination(c, isr, core)
        api.close()
        rc = srv.stop()
        if not c.eq(rc, 0, "server exits 0 on SIGTERM (no sanitizer report)"):
            print(srv.log_tail())


if __name__ == "__main__":
    swtest.run("test_python", body)
