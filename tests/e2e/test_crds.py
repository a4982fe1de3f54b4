"""End-to-end: CustomResourceDefinitions as crd-gc.md Part 1 has them (test cases 1-14, 16,
19-24 and 36 of §3) against a real `slipway server`, over raw HTTP where the exact reply matters
and through the official Python client's dynamic client (discovery, create, get, patch, list,
delete of a custom resource): CRD validation and conditions, discovery and OpenAPI, the
custom-resource pipeline (prune with the Warning and Strict replies, defaults, every validation
reason), status and scale subresources, tables with printer columns, selectable fields, schema
changes (read defaults, ratcheting), and deleting a CRD or a namespace with instances."""

import json
import os
import ssl
import sys
import time
import urllib.error
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import swtest  # noqa: E402

GROUP = "stable.example.com"
CRD = "crontabs." + GROUP
BASE = "/apis/%s/v1" % GROUP


def ct_path(ns="default", name="", sub=""):
    p = "%s/namespaces/%s/crontabs" % (BASE, ns)
    if name:
        p += "/" + name
    if sub:
        p += "/" + sub
    return p


def crontab_crd(name=CRD, plural="crontabs", kind="CronTab", group=GROUP, schema=None,
                columns=None, status=True, scale=True, selectable=None):
    spec_schema = schema or {
        "type": "object",
        "properties": {
            "cronSpec": {"type": "string", "pattern": r"^(\d+|\*)(/\d+)?(\s+(\d+|\*)(/\d+)?){4}$"},
            "image": {"type": "string", "maxLength": 20},
            "replicas": {"type": "integer", "minimum": 0, "maximum": 10},
            "color": {"type": "string", "enum": ["red", "blue"]},
            "tags": {"type": "array", "maxItems": 3, "items": {"type": "string"}},
            "port": {"x-kubernetes-int-or-string": True},
            "mode": {"type": "object",
                     "properties": {"a": {"type": "string"}, "b": {"type": "string"}},
                     "oneOf": [{"required": ["a"]}, {"required": ["b"]}]},
        },
    }
    ver = {"name": "v1", "served": True, "storage": True,
           "schema": {"openAPIV3Schema": {
               "type": "object",
               "properties": {
                   "spec": spec_schema,
                   "status": {"type": "object", "properties": {
                       "replicas": {"type": "integer"}, "labelSelector": {"type": "string"},
                       "phase": {"type": "string"}}},
               }}}}
    subs = {}
    if status:
        subs["status"] = {}
    if scale:
        subs["scale"] = {"specReplicasPath": ".spec.replicas",
                         "statusReplicasPath": ".status.replicas",
                         "labelSelectorPath": ".status.labelSelector"}
    if subs:
        ver["subresources"] = subs
    if columns is not None:
        ver["additionalPrinterColumns"] = columns
    if selectable:
        ver["selectableFields"] = [{"jsonPath": p} for p in selectable]
    return {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": name},
            "spec": {"group": group, "scope": "Namespaced",
                     "names": {"plural": plural, "kind": kind, "shortNames": ["ct"]},
                     "versions": [ver]}}


class T:
    def __init__(self, s, c):
        self.s, self.c = s, c
        self.ctx = ssl.create_default_context()
        self.ctx.check_hostname = False
        self.ctx.verify_mode = ssl.CERT_NONE

    def req(self, method, path, body=None, ctype="application/json", accept="application/json"):
        """(code, parsed body, headers)"""
        data = None if body is None else json.dumps(body).encode()
        r = urllib.request.Request(self.s.url + path, data=data, method=method)
        r.add_header("Authorization", "Bearer " + self.s.token)
        r.add_header("Accept", accept)
        if data is not None:
            r.add_header("Content-Type", ctype)
        try:
            with urllib.request.urlopen(r, timeout=10, context=self.ctx) as resp:
                raw, code, hdrs = resp.read(), resp.status, resp.headers
        except urllib.error.HTTPError as e:
            raw, code, hdrs = e.read(), e.code, e.headers
        try:
            obj = json.loads(raw) if raw else None
        except ValueError:
            obj = None
        return code, obj, hdrs

    def until(self, fn, secs=10.0):
        deadline = time.monotonic() + secs
        while time.monotonic() < deadline:
            v = fn()
            if v:
                return v
            time.sleep(0.05)
        return fn()

    def cond(self, crd_name, ctype):
        code, obj, _ = self.req("GET", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/"
                                + crd_name)
        for cd in (obj or {}).get("status", {}).get("conditions", []):
            if cd.get("type") == ctype:
                return cd
        return None

    def ct(self, name, spec, ns="default", extra=None):
        body = {"apiVersion": GROUP + "/v1", "kind": "CronTab",
                "metadata": {"name": name}, "spec": spec}
        if extra:
            body.update(extra)
        return self.req("POST", ct_path(ns), body)

    def causes(self, obj):
        return [(x.get("reason"), x.get("field"), x.get("message"))
                for x in (obj or {}).get("details", {}).get("causes", [])]


CRDS = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"


def test_crd_validation(t, c):
    c.section("CRD validation: 422 with kube-apiserver's fields and words (cases 1-3)")
    bad = crontab_crd(name="crontab." + GROUP)
    code, obj, _ = t.req("POST", CRDS, bad)
    c.eq(code, 422, "name other than plural.group: 422")
    c.ok(any(f == "metadata.name" and 'must be spec.names.plural+"."+spec.group' in m
             for _, f, m in t.causes(obj)), "... cause at metadata.name", obj)
    bad = crontab_crd(name="crontabs.example", group="example")
    code, obj, _ = t.req("POST", CRDS, bad)
    c.ok(code == 422 and "should be a domain with at least one dot" in obj["message"],
         "group without a dot: 422", obj)
    bad = crontab_crd()
    bad["spec"]["versions"].append(dict(bad["spec"]["versions"][0], name="v2"))
    code, obj, _ = t.req("POST", CRDS, bad)
    c.ok(code == 422 and "must have exactly one version marked as storage version"
         in obj["message"], "two storage versions: 422", obj)
    bad = crontab_crd()
    del bad["spec"]["versions"][0]["schema"]
    code, obj, _ = t.req("POST", CRDS, bad)
    c.ok(code == 422 and "spec.versions[0].schema.openAPIV3Schema: Required value"
         in obj["message"], "a version without a schema: 422", obj)
    bad = crontab_crd(schema={"properties": {"x": {"type": "string"}}})
    code, obj, _ = t.req("POST", CRDS, bad)
    c.ok(code == 422 and "spec.validation.openAPIV3Schema.properties[spec].type: Required value: "
         "must not be empty for specified object fields" in obj["message"],
         "an untyped spec: 422 at kube's path", obj)
    bad = crontab_crd()
    bad["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"][
        "x-kubernetes-validations"] = [{"rule": "self.replicas <= 10"}]
    code, obj, _ = t.req("POST", CRDS, bad)
    c.ok(code == 422 and "does not evaluate CEL" in obj["message"],
         "a CEL rule is refused with 422 saying why, never ignored", obj)
    bad = crontab_crd(schema={"type": "object", "properties": {
        "a": {"type": "string", "pattern": r"\pL+"}}})
    code, obj, _ = t.req("POST", CRDS, bad)
    c.ok(code == 422 and "pattern" in obj["message"], "an RE2 pattern with no POSIX spelling: 422",
         obj)
    c.eq(t.req("GET", CRDS + "/" + CRD)[0], 404, "nothing invalid was stored")


def test_create_and_serve(t, c, s):
    c.section("a valid CRD: defaults, conditions, discovery, OpenAPI (cases 4-7)")
    t0 = time.monotonic()
    code, obj, _ = t.req("POST", CRDS, crontab_crd(columns=[
        {"name": "Spec", "type": "string", "jsonPath": ".spec.cronSpec"},
        {"name": "Replicas", "type": "integer", "jsonPath": ".spec.replicas"},
        {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"}],
        selectable=[".spec.color"]))
    c.eq(code, 201, "valid CRD: 201")
    c.eq(obj["status"].get("storedVersions"), ["v1"], "storedVersions [v1]")
    c.eq((obj["spec"]["names"].get("singular"), obj["spec"]["names"].get("listKind")),
         ("crontab", "CronTabList"), "singular and listKind defaulted")
    na = t.until(lambda: t.cond(CRD, "NamesAccepted"))
    es = t.until(lambda: (t.cond(CRD, "Established") or {}).get("status") == "True"
                 and t.cond(CRD, "Established"))
    c.eq((na or {}).get("reason"), "NoConflicts", "NamesAccepted NoConflicts")
    c.eq((es or {}).get("reason"), "InitialNamesAccepted", "Established InitialNamesAccepted")

    def served():
        code, d, _ = t.req("GET", BASE)
        return code == 200 and d
    disc = t.until(served)
    print("# CRD create to served in discovery: %.1f ms" % ((time.monotonic() - t0) * 1000))
    res = {r["name"]: r for r in (disc or {}).get("resources", [])}
    ct = res.get("crontabs", {})
    c.eq(len(ct.get("verbs", [])), 8, "discovery: crontabs with 8 verbs")
    c.eq(ct.get("shortNames"), ["ct"], "... shortNames [ct]")
    c.ok("crontabs/status" in res and "crontabs/scale" in res, "... crontabs/status and /scale",
         sorted(res))
    code, idx, _ = t.req("GET", "/openapi/v3")
    c.ok("apis/%s/v1" % GROUP in idx.get("paths", {}), "/openapi/v3 lists the group-version")
    code, doc, _ = t.req("GET", "/openapi/v3/apis/%s/v1" % GROUP)
    schemas = doc.get("components", {}).get("schemas", {})
    c.ok("com.example.stable.v1.CronTab" in schemas, "... with com.example.stable.v1.CronTab",
         sorted(schemas))
    sch = schemas.get("com.example.stable.v1.CronTab", {})
    c.eq(sch.get("properties", {}).get("spec", {}).get("properties", {}).get("replicas"),
         {"type": "integer", "minimum": 0, "maximum": 10}, "... carrying the CRD's schema")
    ops = [op for p in doc.get("paths", {}).values() for m, op in p.items() if m == "patch"]
    ctypes = set(ops[0].get("requestBody", {}).get("content", {})) if ops else set()
    c.ok(ops and "application/strategic-merge-patch+json" not in ctypes
         and "application/merge-patch+json" in ctypes, "... a PATCH operation without SMP",
         ctypes)

    c.section("a second CRD whose kind conflicts (case 6) and immutable names (case 7)")
    dup = crontab_crd(name="crontabsx." + GROUP, plural="crontabsx")
    dup["spec"]["names"].update(singular="crontabx", shortNames=[])
    code, obj, _ = t.req("POST", CRDS, dup)
    c.eq(code, 201, "conflicting kind: still stored (201)")
    na = t.until(lambda: t.cond("crontabsx." + GROUP, "NamesAccepted"))
    c.eq(((na or {}).get("status"), (na or {}).get("reason")), ("False", "KindConflict"),
         "NamesAccepted False KindConflict")
    c.eq(t.req("GET", "%s/namespaces/default/crontabsx" % BASE)[0], 404, "its URLs are 404")
    _, disc, _ = t.req("GET", BASE)
    c.ok("crontabsx" not in [r["name"] for r in disc["resources"]], "... and not in discovery")
    t.req("DELETE", CRDS + "/crontabsx." + GROUP)
    code, cur, _ = t.req("GET", CRDS + "/" + CRD)
    changed = json.loads(json.dumps(cur))
    changed["spec"]["group"] = "other.example.com"
    code, obj, _ = t.req("PUT", CRDS + "/" + CRD, changed)
    c.ok(code == 422 and "field is immutable" in obj["message"], "changing the group: 422", obj)
    changed = json.loads(json.dumps(cur))
    changed["spec"]["names"]["plural"] = "crontabz"
    code, obj, _ = t.req("PUT", CRDS + "/" + CRD, changed)
    c.ok(code == 422 and "field is immutable" in obj["message"], "changing the plural: 422", obj)


def test_pipeline(t, c):
    c.section("prune with Warning / Strict (case 8), validation replies (cases 9-10)")
    code, obj, hdrs = t.ct("prune", {"cronSpec": "* * * * */5", "someRandomField": 1})
    c.eq(code, 201, "an unknown field: 201")
    c.ok("someRandomField" not in obj["spec"], "... pruned from the reply", obj)
    c.eq(hdrs.get("Warning"), '299 - "unknown field \\"spec.someRandomField\\""',
         "... with the Warning header")
    code, got, _ = t.req("GET", ct_path(name="prune"))
    c.ok("someRandomField" not in got["spec"], "... and not stored")
    code, obj, _ = t.req("POST", ct_path() + "?fieldValidation=Strict",
                         {"apiVersion": GROUP + "/v1", "kind": "CronTab",
                          "metadata": {"name": "strict"}, "spec": {"someRandomField": 1}})
    c.eq(code, 400, "fieldValidation=Strict: 400")
    c.eq(obj.get("message"), 'CronTab in version "v1" cannot be handled as a CronTab: strict '
         'decoding error: unknown field "spec.someRandomField"', "... kube's message")
    code, obj, _ = t.req("POST", ct_path() + "?fieldValidation=Ignore",
                         {"apiVersion": GROUP + "/v1", "kind": "CronTab",
                          "metadata": {"name": "ignore"}, "spec": {"someRandomField": 1}})
    c.eq(code, 201, "fieldValidation=Ignore: 201, silently pruned")

    code, obj, _ = t.ct("x", {"replicas": 15})
    want = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
            "message": 'CronTab.stable.example.com "x" is invalid: spec.replicas: Invalid value: '
            '15: spec.replicas in body should be less than or equal to 10',
            "reason": "Invalid",
            "details": {"name": "x", "group": GROUP, "kind": "CronTab", "causes": [
                {"reason": "FieldValueInvalid", "message": "Invalid value: 15: spec.replicas in "
                 "body should be less than or equal to 10", "field": "spec.replicas"}]},
            "code": 422}
    c.eq((code, obj), (422, want), "replicas 15 over maximum 10: kube's exact 422")
    cases = [
        ({"color": "pink"}, ("FieldValueNotSupported", "spec.color",
                             'Unsupported value: "pink": supported values: "red", "blue"')),
        ({"replicas": "three"}, ("FieldValueTypeInvalid", "spec.replicas",
                                 'Invalid value: "string": spec.replicas in body must be of type '
                                 'integer: "string"')),
        ({"image": "x" * 21}, ("FieldValueTooLong", "spec.image",
                               "Too long: may not be more than 20 bytes")),
        ({"tags": ["a", "b", "c", "d"]}, ("FieldValueTooMany", "spec.tags",
                                          "Too many: 4: must have at most 3 items")),
        ({"cronSpec": "every minute"}, ("FieldValueInvalid", "spec.cronSpec",
                                        'Invalid value: "every minute": spec.cronSpec in body '
                                        "should match '^(\\d+|\\*)(/\\d+)?(\\s+(\\d+|\\*)"
                                        "(/\\d+)?){4}$'")),
        ({"mode": {"a": "1", "b": "2"}}, ("FieldValueInvalid", "<nil>",
                                          'Invalid value: "": "spec.mode" must validate one and '
                                          "only one schema (oneOf)")),
        ({"port": True}, ("FieldValueTypeInvalid", "spec.port",
                          'Invalid value: "boolean": spec.port in body must be of type '
                          'int-or-string: "boolean"')),
    ]
    for spec, cause in cases:
        code, obj, _ = t.ct("bad", spec)
        c.ok(code == 422 and cause in t.causes(obj), "%s: 422 %s" % (json.dumps(spec)[:40],
                                                                      cause[0]), obj)
    code, obj, _ = t.ct("two", {"color": "pink", "replicas": 11})
    c.eq(len(t.causes(obj)), 2, "two failures at once: two causes")
    c.ok(obj["message"].startswith('CronTab.stable.example.com "two" is invalid: ['),
         "... the message lists them in brackets", obj["message"])
    for ok_spec in ({"port": 8080}, {"port": "http"}, {"mode": {"a": "1"}},
                    {"cronSpec": "*/5 * * * *", "replicas": 10, "color": "red"}):
        code, obj, _ = t.ct("fine", ok_spec)
        c.eq(code, 201, "valid %s: 201" % json.dumps(ok_spec))
        t.req("DELETE", ct_path(name="fine"))
        t.until(lambda: t.req("GET", ct_path(name="fine"))[0] == 404)
    code, obj, _ = t.req("POST", ct_path(), {"apiVersion": GROUP + "/v1", "kind": "CronTab",
                                             "metadata": {"name": "Bad_Name"}, "spec": {}})
    c.eq(code, 422, "a name that is not a DNS subdomain: 422")


def test_defaults(t, c):
    c.section("defaults (cases 11-12) and schema tightening (case 22)")
    name = "widgets.test.example.com"
    schema = {"type": "object", "default": {}, "properties": {
        "replicas": {"type": "integer", "default": 1, "maximum": 10},
        "size": {"type": "string", "default": "M"},
        "note": {"type": "string"},
        "keep": {"type": "string", "nullable": True}}}
    crd = crontab_crd(name=name, plural="widgets", kind="Widget", group="test.example.com",
                      schema=schema, scale=False)
    crd["spec"]["names"]["shortNames"] = []
    code, obj, _ = t.req("POST", CRDS, crd)
    c.eq(code, 201, "a CRD with defaults: 201")
    wbase = "/apis/test.example.com/v1/namespaces/default/widgets"
    t.until(lambda: t.req("GET", wbase)[0] == 200)

    def w(wname, spec=None, **kw):
        body = {"apiVersion": "test.example.com/v1", "kind": "Widget",
                "metadata": {"name": wname}}
        if spec is not None:
            body["spec"] = spec
        return t.req("POST", wbase, body)
    code, obj, _ = w("w1")
    c.eq((code, obj.get("spec")), (201, {"replicas": 1, "size": "M"}),
         "no spec: spec {} defaulted, then its replicas and size")
    code, obj, _ = w("w2", {"replicas": None, "note": None, "keep": None})
    c.eq(obj.get("spec"), {"replicas": 1, "size": "M", "keep": None},
         "null with a default: the default; null without: removed; nullable: kept")
    # a default added later shows on GET of old objects, resourceVersion unchanged
    rv_before = t.req("GET", wbase + "/w1")[1]["metadata"]["resourceVersion"]
    _, cur, _ = t.req("GET", CRDS + "/" + name)
    props = cur["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"][
        "properties"]
    props["note"]["default"] = "hello"
    props["replicas"]["maximum"] = 5
    code, obj, _ = t.req("PUT", CRDS + "/" + name, cur)
    c.eq(code, 200, "the CRD gets a new default and a tighter maximum: 200")
    code, got, _ = t.req("GET", wbase + "/w1")
    c.eq((got["spec"].get("note"), got["metadata"]["resourceVersion"]), ("hello", rv_before),
         "the new default shows on GET of an old object, resourceVersion unchanged")
    code, obj, _ = w("w3", {"replicas": 8})
    c.eq(code, 422, "a new object over the tighter maximum: 422")
    # an object stored with 8 under the old schema
    _, cur, _ = t.req("GET", CRDS + "/" + name)
    cur["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"][
        "replicas"]["maximum"] = 10
    t.req("PUT", CRDS + "/" + name, cur)
    c.eq(t.until(lambda: w("w8", {"replicas": 8})[0] == 201), True, "stored with replicas 8")
    _, cur, _ = t.req("GET", CRDS + "/" + name)
    cur["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"][
        "replicas"]["maximum"] = 5
    t.req("PUT", CRDS + "/" + name, cur)

    def tightened():
        return w("probe", {"replicas": 6})[0] == 422
    t.until(tightened)
    code, got, _ = t.req("GET", wbase + "/w8")
    c.eq((code, got["spec"]["replicas"]), (200, 8), "schema tightened to 5: GET still gives 8")
    got["metadata"].setdefault("labels", {})["x"] = "y"
    code, upd, _ = t.req("PUT", wbase + "/w8", got)
    c.eq(code, 200, "a PUT that only changes a label: 200 (unchanged fields are not re-checked)")
    upd["spec"]["replicas"] = 9
    code, obj, _ = t.req("PUT", wbase + "/w8", upd)
    c.eq(code, 422, "a PUT setting replicas 9: 422")
    t.req("DELETE", CRDS + "/" + name)


def test_subresources(t, c):
    c.section("status (case 13), patches (case 14), scale (case 16)")
    code, obj, _ = t.ct("st", {"cronSpec": "* * * * *", "replicas": 1},
                        extra={"status": {"phase": "Set"}})
    c.ok(code == 201 and "status" not in obj, "create with status: status dropped", obj)
    gen = obj["metadata"]["generation"]
    obj["status"] = {"phase": "Main"}
    code, obj, _ = t.req("PUT", ct_path(name="st"), obj)
    c.eq((code, obj.get("status"), obj["metadata"]["generation"]), (200, None, gen),
         "main PUT of status only: unchanged, same generation")
    obj["spec"]["replicas"] = 2
    code, obj, _ = t.req("PUT", ct_path(name="st"), obj)
    c.eq(obj["metadata"]["generation"], gen + 1, "a spec change: generation + 1")
    obj["spec"]["replicas"] = 3
    obj["metadata"]["labels"] = {"via": "status"}
    obj["status"] = {"phase": "Done", "replicas": 3}
    code, st, _ = t.req("PUT", ct_path(name="st", sub="status"), obj)
    c.eq((code, st["spec"]["replicas"], st["metadata"].get("labels"), st.get("status")),
         (200, 2, None, {"phase": "Done", "replicas": 3}),
         "/status PUT changing spec, labels and status: status only")

    code, obj, _ = t.req("PATCH", ct_path(name="st"), {"spec": {"replicas": 4}},
                         "application/strategic-merge-patch+json")
    c.eq(code, 415, "strategic merge patch: 415")
    c.eq((obj.get("reason"), obj.get("message")),
         ("UnsupportedMediaType", "the body of the request was in an unknown format - accepted "
          "media types include: application/json-patch+json, application/merge-patch+json, "
          "application/apply-patch+yaml"), "... kube-apiserver's reason and message")
    code, obj, _ = t.req("PATCH", ct_path(name="st"), {"spec": {"replicas": 4}},
                         "application/merge-patch+json")
    c.eq((code, obj["spec"]["replicas"]), (200, 4), "merge patch: 200")
    code, obj, _ = t.req("PATCH", ct_path(name="st"),
                         [{"op": "replace", "path": "/spec/replicas", "value": 5}],
                         "application/json-patch+json")
    c.eq((code, obj["spec"]["replicas"]), (200, 5), "JSON patch: 200")
    code, obj, _ = t.req("PATCH", ct_path(name="st"), {"spec": {"replicas": 50}},
                         "application/merge-patch+json")
    c.eq(code, 422, "a patch that breaks the schema: 422")

    code, sc, _ = t.req("GET", ct_path(name="st", sub="scale"))
    c.eq((code, sc.get("kind"), sc.get("apiVersion"), sc["spec"], sc["status"].get("replicas")),
         (200, "Scale", "autoscaling/v1", {"replicas": 5}, 3), "GET /scale: autoscaling/v1 Scale")
    gen = t.req("GET", ct_path(name="st"))[1]["metadata"]["generation"]
    sc["spec"]["replicas"] = 6
    code, sc2, _ = t.req("PUT", ct_path(name="st", sub="scale"), sc)
    _, obj, _ = t.req("GET", ct_path(name="st"))
    c.eq((code, obj["spec"]["replicas"], obj["metadata"]["generation"]), (200, 6, gen + 1),
         "PUT /scale replicas 6: .spec.replicas 6, generation + 1")
    code, obj, _ = t.req("PATCH", ct_path(name="st", sub="scale"), {"spec": {"replicas": -1}},
                         "application/merge-patch+json")
    c.eq(code, 422, "scale to -1: 422")
    code, _, _ = t.req("PUT", ct_path(name="st", sub="scale"), sc)
    c.eq(code, 409, "PUT /scale with a stale resourceVersion: 409")


def test_tables_and_routing(t, c):
    c.section("tables (case 19), routing (case 20), selectable fields (case 21)")
    acc = "application/json;as=Table;v=v1;g=meta.k8s.io"
    code, tab, _ = t.req("GET", ct_path(), accept=acc)
    cols = [d["name"] for d in tab.get("columnDefinitions", [])]
    c.eq(cols, ["Name", "Spec", "Replicas", "Age"], "a Table with the printer columns")
    rows = {r["cells"][0]: r["cells"] for r in tab.get("rows", [])}
    c.eq(rows.get("prune", [None] * 3)[2], None, "a missing value is null")
    c.eq(rows.get("st", [None] * 3)[2], 6, "an integer column is a number")
    plain = crontab_crd(name="plains." + GROUP, plural="plains", kind="Plain", scale=False)
    plain["spec"]["names"]["shortNames"] = []
    t.req("POST", CRDS, plain)
    pbase = "%s/namespaces/default/plains" % BASE
    t.until(lambda: t.req("GET", pbase)[0] == 200)
    code, tab, _ = t.req("GET", pbase, accept=acc)
    c.eq([d["name"] for d in tab.get("columnDefinitions", [])], ["Name", "Age"],
         "no columns: Name and Age")
    t.req("DELETE", CRDS + "/plains." + GROUP)

    c.eq(t.req("GET", "%s/crontabs/st" % BASE)[0], 404, "a namespaced name without namespace: 404")
    t.req("POST", "/api/v1/namespaces", {"metadata": {"name": "other"}})
    t.until(lambda: t.ct("elsewhere", {"color": "red"}, ns="other")[0] == 201)
    code, lst, _ = t.req("GET", "%s/crontabs" % BASE)
    c.ok(code == 200 and {"elsewhere", "st"} <= {i["metadata"]["name"] for i in lst["items"]},
         "a list at the cluster path: every namespace")
    c.eq(t.req("GET", "/apis/%s/v9/namespaces/default/crontabs" % GROUP)[0], 404,
         "an unserved version: 404")
    code, lst, _ = t.req("GET", "%s/crontabs?fieldSelector=spec.color%%3Dred" % BASE)
    c.eq((code, [i["metadata"]["name"] for i in lst.get("items", [])]), (200, ["elsewhere"]),
         "fieldSelector on a selectable field")
    code, obj, _ = t.req("GET", "%s/crontabs?fieldSelector=spec.image%%3Dx" % BASE)
    c.ok(code == 400 and "field label not supported: spec.image" in obj.get("message", ""),
         "fieldSelector on any other field: 400 field label not supported", obj)
    code, lst, _ = t.req("GET", ct_path() + "?limit=1")
    c.ok(code == 200 and len(lst["items"]) == 1 and lst["metadata"].get("continue"),
         "pagination: limit=1 gives one item and a continue token")


def test_versions(t, c):
    c.section("several versions with conversion None (cases 17-18)")
    name = "gadgets.test.example.com"

    def ver(vname, storage, props):
        return {"name": vname, "served": True, "storage": storage,
                "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                    "spec": {"type": "object", "properties": props}}}}}
    crd = {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
           "metadata": {"name": name},
           "spec": {"group": "test.example.com", "scope": "Namespaced",
                    "names": {"plural": "gadgets", "kind": "Gadget"},
                    "versions": [ver("v1beta1", False, {"a": {"type": "string"}}),
                                 ver("v1", True, {"a": {"type": "string"},
                                                  "b": {"type": "string"}})]}}
    code, obj, _ = t.req("POST", CRDS, crd)
    c.eq(code, 201, "a CRD with v1beta1 and v1 (storage): 201")
    g1 = "/apis/test.example.com/v1/namespaces/default/gadgets"
    gb = "/apis/test.example.com/v1beta1/namespaces/default/gadgets"
    t.until(lambda: t.req("GET", gb)[0] == 200)
    code, obj, _ = t.req("POST", g1, {"apiVersion": "test.example.com/v1", "kind": "Gadget",
                                      "metadata": {"name": "g"}, "spec": {"a": "x", "b": "y"}})
    c.eq(code, 201, "created through v1")
    code, got, _ = t.req("GET", gb + "/g")
    c.eq((code, got.get("apiVersion"), got.get("spec")), (200, "test.example.com/v1beta1",
                                                          {"a": "x"}),
         "read through v1beta1: its apiVersion, pruned to its schema")
    code, got, _ = t.req("GET", g1 + "/g")
    c.eq((got.get("apiVersion"), got.get("spec")), ("test.example.com/v1", {"a": "x", "b": "y"}),
         "read through v1: everything")
    _, cur, _ = t.req("GET", CRDS + "/" + name)
    cur["spec"]["versions"][0]["storage"] = True
    cur["spec"]["versions"][1]["storage"] = False
    code, obj, _ = t.req("PUT", CRDS + "/" + name, cur)
    c.eq((code, obj.get("status", {}).get("storedVersions")), (200, ["v1", "v1beta1"]),
         "storage moved to v1beta1: storedVersions [v1, v1beta1]")
    del obj["spec"]["versions"][1]
    code, bad, _ = t.req("PUT", CRDS + "/" + name, obj)
    c.ok(code == 422 and "storedVersions" in bad.get("message", ""),
         "dropping v1 while it is a stored version: 422", bad)
    t.req("DELETE", CRDS + "/" + name)


def test_review_findings(t, c, s):
    c.section("defects a review found: watches across CRD changes, cut values, ratcheting, "
              "root metadata, lookups during a CRD update")
    import threading
    # a watch opened before a CRD change keeps getting events after it
    # the server ends the watch after 5 s; the reader thread goes with it
    stream = s.open_stream(ct_path() + "?watch=true&resourceVersion=0&timeoutSeconds=5",
                           timeout=15)
    events = []

    def reader():
        try:
            for line in stream:
                try:
                    ev = json.loads(line)
                except ValueError:
                    continue
                events.append((ev.get("type"),
                               ev.get("object", {}).get("metadata", {}).get("name")))
        except OSError:  # the stream closed, or its read timed out
            pass
    th = threading.Thread(target=reader, daemon=True)
    th.start()
    _, cur, _ = t.req("GET", CRDS + "/" + CRD)
    cur["spec"]["versions"][0]["additionalPrinterColumns"].append(
        {"name": "Color", "type": "string", "jsonPath": ".spec.color"})
    c.eq(t.req("PUT", CRDS + "/" + CRD, cur)[0], 200, "the CRD changes (a printer column)")
    t.ct("after-change", {"color": "red"})
    c.ok(t.until(lambda: ("ADDED", "after-change") in events),
         "a watch opened before the change sees an object created after it", events[-5:])
    # a value over 4 KiB that is cut inside a UTF-8 character still fails its enum
    code, obj, _ = t.ct("cutvalue", {"color": "a" * 4094 + "\u00e9x"})
    c.eq(code, 422, "an invalid value cut inside a UTF-8 character for the message: still 422")
    c.eq(t.req("GET", ct_path(name="cutvalue"))[0], 404, "... and not stored")
    # ratcheting compares values, never re-parsed paths: dotted map keys are checked
    m = crontab_crd(name="maps." + GROUP, plural="maps", kind="Map", scale=False, status=False,
                    schema={"type": "object", "properties": {"m": {
                        "type": "object",
                        "additionalProperties": {"type": "string", "maxLength": 3}}}})
    m["spec"]["names"]["shortNames"] = []
    t.req("POST", CRDS, m)
    mbase = "%s/namespaces/default/maps" % BASE
    t.until(lambda: t.req("GET", mbase)[0] == 200)
    t.req("POST", mbase, {"apiVersion": GROUP + "/v1", "kind": "Map", "metadata": {"name": "m1"},
                          "spec": {"m": {"ok": "x"}}})
    for key in ("a.b", "x[0]", "plain"):
        code, _, _ = t.req("PATCH", mbase + "/m1", {"spec": {"m": {key: "toolong"}}},
                           "application/merge-patch+json")
        c.eq(code, 422, "an update adding an invalid value under the key %r: 422" % key)
    t.req("DELETE", CRDS + "/maps." + GROUP)
    # root metadata is ObjectMeta: unknown fields there are pruned and reported
    code, obj, hdrs = t.req("POST", ct_path(), {"apiVersion": GROUP + "/v1", "kind": "CronTab",
                                                "metadata": {"name": "metafoo", "foo": {"b": 1}},
                                                "spec": {}})
    c.ok(code == 201 and "foo" not in obj["metadata"] and
         'unknown field \\"metadata.foo\\"' in (hdrs.get("Warning") or ""),
         "an unknown field in metadata: pruned, with a Warning", (obj.get("metadata"),
                                                                  hdrs.get("Warning")))
    # a CRD refused for a name conflict gets its names once the CRD it conflicted with goes
    first = crontab_crd(name="gizmos.names.example.com", plural="gizmos", kind="Gizmo",
                        group="names.example.com", scale=False)
    second = crontab_crd(name="gadgetz.names.example.com", plural="gadgetz", kind="Gizmo",
                         group="names.example.com", scale=False)
    for d in (first, second):
        d["spec"]["names"].update(shortNames=[], singular=d["spec"]["names"]["plural"][:-1])
        t.req("POST", CRDS, d)
    c.eq((t.cond("gadgetz.names.example.com", "NamesAccepted") or {}).get("reason"),
         "KindConflict", "the second CRD with the same kind: KindConflict")
    t.req("DELETE", CRDS + "/gizmos.names.example.com")
    acc = t.until(lambda: (t.cond("gadgetz.names.example.com", "NamesAccepted") or {})
                  .get("status") == "True", 15)
    c.ok(acc, "once the first is deleted, the second's names are accepted",
         t.cond("gadgetz.names.example.com", "NamesAccepted"))
    c.ok(t.until(lambda: t.req("GET", "/apis/names.example.com/v1/namespaces/default/gadgetz")[0]
                 == 200), "... and it is served")
    t.req("DELETE", CRDS + "/gadgetz.names.example.com")
    # requests during a CRD update never see the resource missing
    stop = time.monotonic() + 2
    bad = []

    def updater():
        i = 0
        while time.monotonic() < stop:
            i += 1
            _, cur2, _ = t.req("GET", CRDS + "/" + CRD)
            cur2["spec"]["versions"][0]["additionalPrinterColumns"][-1]["name"] = "C%d" % i
            t.req("PUT", CRDS + "/" + CRD, cur2)
    u = threading.Thread(target=updater)
    u.start()
    n = 0
    while time.monotonic() < stop:
        n += 1
        code = t.req("GET", ct_path(name="after-change"))[0]
        if code != 200:
            bad.append(code)
    u.join()
    c.eq(bad, [], "%d GETs of a CR while its CRD is rewritten: every one 200" % n)


def test_dynamic_client(t, c, s):
    c.section("the official Python client's dynamic client on a custom resource")
    dyn = s.dynamic_client()
    api = dyn.resources.get(api_version=GROUP + "/v1", kind="CronTab")
    created = api.create(namespace="default", body={
        "apiVersion": GROUP + "/v1", "kind": "CronTab", "metadata": {"name": "dyn"},
        "spec": {"cronSpec": "* * * * *", "replicas": 2}})
    c.eq(created.spec.replicas, 2, "dynamic create")
    got = api.get(namespace="default", name="dyn")
    c.eq(got.metadata.name, "dyn", "dynamic get")
    patched = api.patch(namespace="default", name="dyn", body={"spec": {"replicas": 3}},
                        content_type="application/merge-patch+json")
    c.eq(patched.spec.replicas, 3, "dynamic merge patch")
    names = [i.metadata.name for i in api.get(namespace="default").items]
    c.ok("dyn" in names, "dynamic list", names)
    try:
        api.create(namespace="default", body={"apiVersion": GROUP + "/v1", "kind": "CronTab",
                                              "metadata": {"name": "dynbad"},
                                              "spec": {"replicas": 99}})
        c.ok(False, "dynamic create of an invalid object fails")
    except Exception as e:  # noqa: BLE001
        c.eq(getattr(e, "status", None), 422, "dynamic create of an invalid object: 422")
    api.delete(namespace="default", name="dyn")
    c.ok(t.until(lambda: t.req("GET", ct_path(name="dyn"))[0] == 404), "dynamic delete")


def test_namespace_delete(t, c):
    c.section("deleting a namespace with custom resources (case 36)")
    t.req("POST", "/api/v1/namespaces", {"metadata": {"name": "ns1"}})
    t.until(lambda: t.ct("a", {}, ns="ns1")[0] == 201)
    t.ct("b", {}, ns="ns1", extra={"metadata": {"name": "b", "finalizers": ["example.com/f"]}})
    code, obj, _ = t.req("DELETE", "/api/v1/namespaces/ns1")
    c.eq(code, 200, "DELETE ns1: 200")
    c.eq(t.ct("c", {}, ns="ns1")[0], 403, "POST in the terminating namespace: 403")
    c.ok(t.until(lambda: t.req("GET", ct_path("ns1", "a"))[0] == 404), "its CronTab goes")

    def remaining():
        _, ns, _ = t.req("GET", "/api/v1/namespaces/ns1")
        for cd in (ns or {}).get("status", {}).get("conditions", []):
            if cd["type"] == "NamespaceFinalizersRemaining" and cd["status"] == "True":
                return True
        return False
    c.ok(t.until(remaining), "a CR finalizer: NamespaceFinalizersRemaining True, ns1 stays")
    t.req("PATCH", ct_path("ns1", "b"), {"metadata": {"finalizers": None}},
          "application/merge-patch+json")
    c.ok(t.until(lambda: t.req("GET", "/api/v1/namespaces/ns1")[0] == 404, 20),
         "the finalizer removed: ns1 goes")


def test_crd_delete(t, c):
    c.section("deleting the CRD removes its instances (cases 23-24)")
    t.ct("fin", {}, extra={"metadata": {"name": "fin", "finalizers": ["example.com/hold"]}})
    code, obj, _ = t.req("DELETE", CRDS + "/" + CRD)
    c.eq(code, 200, "DELETE the CRD: 200")
    c.ok(obj["metadata"].get("deletionTimestamp") and
         "customresourcecleanup.apiextensions.k8s.io" in obj["metadata"].get("finalizers", []),
         "... with deletionTimestamp and the cleanup finalizer", obj["metadata"])
    term = t.until(lambda: (t.cond(CRD, "Terminating") or {}).get("status") == "True"
                   and t.cond(CRD, "Terminating"))
    c.ok(term and term["reason"] in ("InstanceDeletionPending", "InstanceDeletionInProgress",
                                     "InstanceDeletionCheck"),
         "Terminating True", term)
    code, obj, _ = t.ct("late", {})
    c.eq(code, 403, "a new CronTab while it is terminating: 403")
    _, disc, _ = t.req("GET", BASE)
    verbs = [r for r in (disc or {}).get("resources", []) if r["name"] == "crontabs"]
    c.eq(len(verbs[0]["verbs"]) if verbs else None, 5, "discovery: 5 verbs while terminating")
    time.sleep(0.5)
    c.eq(t.req("GET", CRDS + "/" + CRD)[0], 200, "a CR finalizer keeps the CRD")
    c.eq(t.req("GET", ct_path(name="prune"))[0], 404, "... while the other instances went")
    t.req("PATCH", ct_path(name="fin"), {"metadata": {"finalizers": None}},
          "application/merge-patch+json")
    c.ok(t.until(lambda: t.req("GET", CRDS + "/" + CRD)[0] == 404),
         "the finalizer removed: instances and CRD go")
    code, obj, _ = t.req("POST", CRDS, crontab_crd())
    c.eq(code, 201, "the CRD created again")
    t.until(lambda: t.req("GET", ct_path())[0] == 200)
    code, lst, _ = t.req("GET", "%s/crontabs" % BASE)
    c.eq((code, lst.get("items")), (200, []), "... lists no instances")


def body(c):
    with swtest.Server() as s:
        s.start()
        t = T(s, c)
        test_crd_validation(t, c)
        test_create_and_serve(t, c, s)
        test_pipeline(t, c)
        test_defaults(t, c)
        test_subresources(t, c)
        test_tables_and_routing(t, c)
        test_versions(t, c)
        test_review_findings(t, c, s)
        test_dynamic_client(t, c, s)
        test_namespace_delete(t, c)
        test_crd_delete(t, c)
        c.eq(s.stop(), 0, "the server stops cleanly")
        log = open(s.log_path, errors="replace").read()
        writes = log.count("PUT %s/%s/status" % (CRDS, CRD))
        c.ok(writes < 40, "the cleanup controller wrote the CRD's status %d times (no spinning)"
             % writes)
        c.ok("ERROR: AddressSanitizer" not in log and "runtime error" not in log,
             "no sanitizer report in the server log")


if __name__ == "__main__":
    swtest.run("test_crds", body)
