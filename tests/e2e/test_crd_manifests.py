"""End-to-end: `slipway crds` (issue 14 part 5). The manifests it writes parse as YAML (PyYAML,
a real parser), name every stored OpenShift-style kind, filter by --group and refuse a bad one;
each loads through slipway's own CRD validation (structural schema, names) once its group is
renamed so that it does not collide with the built-in kind; and a real object of each kind, as
slipway stores it (defaults and status included), round-trips through the CRD's schema with
fieldValidation=Strict and comes back with every field it had."""

import copy
import json
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import swtest  # noqa: E402
import yaml  # noqa: E402

CRDS = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
KINDS = {"ImageStream", "Image", "BuildConfig", "Build", "DeploymentConfig", "ManagedImage"}


def renamed(group):
    return group.rsplit(".", 1)[0] + ".test"


def crds(*args):
    p = subprocess.run([swtest._binary(), "crds", *args], capture_output=True, text=True,
                       timeout=30)
    return p.returncode, p.stdout, p.stderr


def objects(s, c):
    """Creates one real object of each kind and returns them as stored: {kind: (path, obj)}."""
    def post(path, body):
        code, data = s.request("POST", path, body)
        c.ok(code == 201, "create %s %s" % (body["kind"], body["metadata"]["name"]), data[:300])
        return path
    ns = "/apis/%s/v1/namespaces/default/"
    made = {
        "ImageStream": post(ns % "image.openshift.io" + "imagestreams", {
            "apiVersion": "image.openshift.io/v1", "kind": "ImageStream",
            "metadata": {"name": "ruby", "labels": {"app": "ruby"},
                         "annotations": {"note": "x"}},
            "spec": {"lookupPolicy": {"local": True}, "tags": [
                {"name": "3.3", "from": {"kind": "DockerImage",
                                         "name": "registry.example.com/ruby:3.3"},
                 "importPolicy": {"scheduled": False, "insecure": True},
                 "referencePolicy": {"type": "Local"}, "annotations": {"a": "b"}},
                {"name": "latest", "from": {"kind": "ImageStreamTag", "name": "3.3"}}]}}),
        "BuildConfig": post(ns % "build.openshift.io" + "buildconfigs", {
            "apiVersion": "build.openshift.io/v1", "kind": "BuildConfig",
            "metadata": {"name": "web"},
            "spec": {"source": {"type": "Dockerfile", "dockerfile": "FROM busybox\n"},
                     "strategy": {"type": "Docker", "dockerStrategy": {
                         "from": {"kind": "DockerImage", "name": "busybox:1.36"}}},
                     "output": {"to": {"kind": "ImageStreamTag", "name": "web:latest"}},
                     "triggers": [{"type": "ConfigChange"}],
                     "successfulBuildsHistoryLimit": 3}}),
        "DeploymentConfig": post(ns % "apps.openshift.io" + "deploymentconfigs", {
            "apiVersion": "apps.openshift.io/v1", "kind": "DeploymentConfig",
            "metadata": {"name": "redis"},
            "spec": {"replicas": 2, "selector": {"app": "redis"},
                     "triggers": [{"type": "ConfigChange"}],
                     "template": {"metadata": {"labels": {"app": "redis"}},
                                  "spec": {"containers": [
                                      {"name": "redis", "image": "redis:7",
                                       "env": [{"name": "A", "value": "1"}],
                                       "ports": [{"containerPort": 6379}]}]}}}}),
        "ManagedImage": post("/apis/image.slipway.dev/v1alpha1/namespaces/default/managedimages", {
            "apiVersion": "image.slipway.dev/v1alpha1", "kind": "ManagedImage",
            "metadata": {"name": "mi"},
            "spec": {"source": {"type": "Dockerfile", "dockerfile": "FROM busybox\n"},
                     "strategy": {"dockerStrategy": {
                         "from": {"kind": "DockerImage", "name": "busybox:1.36"}}},
                     "output": {"to": {"kind": "ImageStreamTag", "name": "mi:latest"}}}}),
        "Image": post("/apis/image.openshift.io/v1/images", {
            "apiVersion": "image.openshift.io/v1", "kind": "Image",
            "metadata": {"name": "sha256:" + "b" * 64},
            "dockerImageReference": "registry.example.com/x@sha256:" + "b" * 64,
            "dockerImageMetadata": {"kind": "DockerImage", "apiVersion": "1.0",
                                    "Architecture": "amd64"}}),
    }
    # a Build, as the BuildConfig's ConfigChange trigger or start-build makes it
    code, data = s.request("POST", ns % "build.openshift.io" + "buildconfigs/web/instantiate",
                           {"kind": "BuildRequest", "apiVersion": "build.openshift.io/v1",
                            "metadata": {"name": "web"}})
    c.ok(code == 201, "a Build through instantiate", data[:300])
    made["Build"] = ns % "build.openshift.io" + "builds"
    out = {}
    for kind, path in made.items():
        if kind == "Build":
            code, data = s.request("GET", path)
            items = json.loads(data)["items"]
            obj = items[0] if items else {}
            path = path + "/" + obj.get("metadata", {}).get("name", "x")
        elif kind == "Image":
            path = path + "/sha256:" + "b" * 64
            obj = json.loads(s.request("GET", path)[1])
        else:
            name = {"ImageStream": "ruby", "BuildConfig": "web", "DeploymentConfig": "redis",
                    "ManagedImage": "mi"}[kind]
            path = path + "/" + name
            obj = json.loads(s.request("GET", path)[1])
        out[kind] = (path, obj)
    return out


def body(c):
    rc, out, err = crds()
    c.eq(rc, 0, "slipway crds: exit 0")
    docs = [d for d in yaml.safe_load_all(out) if d]
    c.eq({d["spec"]["names"]["kind"] for d in docs}, KINDS, "one CRD per stored kind")
    c.ok(all(d["metadata"]["name"] == "%s.%s" % (d["spec"]["names"]["plural"], d["spec"]["group"])
             for d in docs), "names are <plural>.<group>")
    rc, out2, _ = crds("--group", "build.openshift.io")
    c.eq(sorted(d["spec"]["names"]["kind"] for d in yaml.safe_load_all(out2) if d),
         ["Build", "BuildConfig"], "--group build.openshift.io: BuildConfig and Build")
    rc, _, err = crds("--group", "nope.example.com")
    c.ok(rc == 2 and "--group must be one of" in err, "a bad --group: exit 2 and why", err)
    rc, helptext, _ = crds("--help")
    c.ok(rc == 0 and "Usage: slipway crds" in helptext, "--help")

    with swtest.Server(controllers=False) as s:
        s.start()
        real = objects(s, c)
        by_kind = {}
        for d in docs:
            kind = d["spec"]["names"]["kind"]
            group = d["spec"]["group"]
            d = copy.deepcopy(d)
            by_kind[kind] = d
            d["spec"]["group"] = renamed(group)
            d["metadata"]["name"] = "%s.%s" % (d["spec"]["names"]["plural"], renamed(group))
            code, data = s.request("POST", CRDS, d)
            c.ok(code == 201, "%s's CRD passes slipway's CRD validation" % kind, data[:400])
        for kind, (path, obj) in real.items():
            group, version = obj["apiVersion"].split("/")
            plural = path.split("/")[-2]
            ns = obj["metadata"].get("namespace")
            base = "/apis/%s/%s/%s%s" % (renamed(group), version,
                                         "namespaces/%s/" % ns if ns else "", plural)
            deadline = time.monotonic() + 10
            while s.request("GET", base)[0] != 200 and time.monotonic() < deadline:
                time.sleep(0.05)
            cr = {k: v for k, v in obj.items() if k not in ("metadata",)}
            cr["apiVersion"] = "%s/%s" % (renamed(group), version)
            cr["metadata"] = {k: obj["metadata"][k] for k in ("name", "labels", "annotations")
                              if k in obj["metadata"]}
            if kind == "Image":
                # a CR's name is a DNS subdomain: an Image as a CRD cannot be named sha256:...
                cr["metadata"]["name"] = cr["metadata"]["name"].replace(":", "-")
            code, data = s.request("POST", base + "?fieldValidation=Strict", cr)
            got = json.loads(data) if data else {}
            c.ok(code == 201, "a stored %s is accepted by its CRD with Strict validation" % kind,
                 data[:400])
            want = {k: v for k, v in cr.items() if k not in ("metadata", "status", "apiVersion")}
            have = {k: v for k, v in got.items() if k not in ("metadata", "status", "apiVersion")}
            c.eq(have, want, "%s round-trips through the schema without losing a field" % kind)
            subs = by_kind[kind]["spec"]["versions"][0].get("subresources", {})
            if "status" in obj and subs.get("status") is not None:
                got["status"] = obj["status"]
                code, data = s.request("PUT", base + "/" + obj["metadata"]["name"] + "/status",
                                       got)
                st = json.loads(data).get("status") if data else None
                c.eq((code, st), (200, obj["status"]), "%s's status round-trips too" % kind)
        c.eq(s.stop(), 0, "the server stops cleanly")


if __name__ == "__main__":
    swtest.run("test_crd_manifests", body)
