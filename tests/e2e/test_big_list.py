"""End-to-end: an unpaged LIST bigger than the server's 64 MiB response buffer (issue 14: it
failed with 413, and the Python client and `kubectl --chunk-size=0` with it). 80 ConfigMaps of
about 1 MiB each are listed whole through the official Python client (CoreV1Api, which does not
page), by kubectl with --chunk-size=0, and over raw HTTP, where the reply is streamed in pages
read at one revision; a paged list still answers in one buffer with its continue token."""

import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import swtest  # noqa: E402

from kubernetes import client  # noqa: E402

COUNT = 80
SIZE = 1000 * 1000  # bytes of data per ConfigMap


def body(c):
    with swtest.Server(args=["--store-sync", "normal"]) as s:
        s.start()
        s.request("POST", "/api/v1/namespaces", {"metadata": {"name": "big"}})
        blob = "x" * SIZE
        for i in range(COUNT):
            code, data = s.request("POST", "/api/v1/namespaces/big/configmaps",
                                   {"metadata": {"name": "cm-%03d" % i}, "data": {"blob": blob}},
                                   timeout=30)
            if code != 201:
                c.ok(False, "create cm-%03d" % i, data[:200])
                return
        c.ok(True, "%d ConfigMaps of %d bytes (%d MiB) created" % (COUNT, SIZE,
                                                                    COUNT * SIZE >> 20))
        code, data = s.request("GET", "/api/v1/namespaces/big/configmaps", timeout=60)
        c.eq(code, 200, "an unpaged raw LIST over 64 MiB: 200")
        try:
            lst = json.loads(data)
        except ValueError:
            lst = {}
        names = [i["metadata"]["name"] for i in lst.get("items", [])]
        c.eq(len(names), COUNT + 1, "... every item (kube-root-ca.crt too), as one JSON document")
        c.ok(len(data) > 64 << 20 and lst.get("metadata", {}).get("resourceVersion"),
             "... %d bytes with a resourceVersion" % len(data))
        c.ok(all(len(i["data"].get("blob", "")) == SIZE for i in lst["items"]
                 if i["metadata"]["name"].startswith("cm-")), "... each item whole")
        core = client.CoreV1Api(s.api_client())
        got = core.list_namespaced_config_map("big", _request_timeout=120)
        c.eq(len(got.items), COUNT + 1, "the Python client's list_namespaced_config_map")
        env = dict(os.environ, KUBECONFIG=s.kubeconfig, HOME=s.dir)
        p = subprocess.run(["kubectl", "get", "configmaps", "-n", "big", "--chunk-size=0",
                            "-o", "name"], capture_output=True, text=True, env=env, timeout=120)
        c.eq((p.returncode, len(p.stdout.split())), (0, COUNT + 1),
             "kubectl get --chunk-size=0")
        code, data = s.request("GET", "/api/v1/namespaces/big/configmaps?limit=10")
        page = json.loads(data)
        c.ok(code == 200 and len(page["items"]) == 10 and page["metadata"].get("continue"),
             "a paged list: 10 items and a continue token")
        c.eq(s.stop(), 0, "the server stops cleanly")


if __name__ == "__main__":
    swtest.run("test_big_list", body)
