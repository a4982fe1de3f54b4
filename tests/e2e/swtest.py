"""Helpers for the Python end-to-end tests: run `slipway server` on a free
loopback port with a temporary data dir, wait for /readyz, build API clients
from the admin kubeconfig it writes, and count pass/fail checks.

Set SW_E2E_KEEP=1 to keep the data dir (server.log, the store) for a look
after a failure. The server is started under `setpriv --pdeathsig KILL` when available, so it
dies with the test even if the test itself is killed; on every normal exit
path (return, exception, SIGTERM/SIGINT, atexit) it is stopped and the data
dir removed.
"""

import atexit
import base64
import json
import os
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import tempfile
import time
import traceback
import urllib.error
import urllib.request

_LIVE = []  # Server objects to clean up at exit
_PREFIX = "slipway-e2e-"


def _sweep_stale():
    """Removes data dirs left by earlier runs whose process was SIGKILLed
    (the one exit path that cannot clean up after itself)."""
    tmp = tempfile.gettempdir()
    for d in os.listdir(tmp):
        if not d.startswith(_PREFIX):
            continue
        path = os.path.join(tmp, d)
        try:
            with open(os.path.join(path, "owner.pid")) as f:
                pid = int(f.read().strip())
        except (OSError, ValueError):
            continue
        if pid != os.getpid() and not os.path.exists("/proc/%d" % pid):
            shutil.rmtree(path, ignore_errors=True)


def free_port():
    """A TCP port on 127.0.0.1 that nothing uses right now, below the kernel's ephemeral range
    (32768-60999), so no outgoing connection can take it before the server binds it."""
    import random
    while True:
        port = random.randint(20000, 32767)
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port


def _binary():
    path = os.environ.get("SLIPWAY")
    if not path:
        here = os.path.dirname(os.path.abspath(__file__))
        path = os.path.join(here, "..", "..", "build", "slipway")
    if not os.access(path, os.X_OK):
        raise RuntimeError("slipway binary not found (set SLIPWAY): %s" % path)
    return os.path.abspath(path)


def _parse_kubeconfig(path):
    """Server URL, token and CA PEM from the flat kubeconfig slipway writes."""
    server = token = ca = None
    with open(path) as f:
        for line in f:
            key, _, val = line.strip().partition(":")
            val = val.strip()
            if key == "server":
                server = val
            elif key == "token":
                token = val
            elif key == "certificate-authority-data":
                ca = base64.b64decode(val).decode()
    if not (server and token and ca):
        raise RuntimeError("incomplete kubeconfig %s" % path)
    return server, token, ca


class Server:
    """One `slipway server` process on DIR (a fresh temp dir unless given)."""

    def __init__(self, port=None, data_dir=None, args=(), verbose=2, controllers=False):
        # A port picked here may be taken by someone else before the server binds it: a
        # start that fails on "address already in use" picks another (fixed ports do not).
        self.auto_port = port is None
        self.port = port or free_port()
        self.own_dir = data_dir is None
        if data_dir is None:
            _sweep_stale()
            data_dir = tempfile.mkdtemp(prefix=_PREFIX)
            with open(os.path.join(data_dir, "owner.pid"), "w") as f:
                f.write("%d\n" % os.getpid())
        self.dir = data_dir
        # API-server tests run without the import and build controllers, so nothing but the
        # test writes to the objects it checks; deletion works as on a cluster (garbage
        # collector and namespace controller).
        self.args = list(args) + (
            [] if controllers else ["--controllers=garbagecollector,namespace"])
        self.verbose = verbose
        self.proc = None
        self.log_path = os.path.join(self.dir, "server.log")
        self.kubeconfig = os.path.join(self.dir, "admin.kubeconfig")
        self.url = self.token = self.ca_pem = None
        self._ssl = None
        self.starts = 0
        _LIVE.append(self)

    # -- lifecycle -------------------------------------------------------
    def start(self, timeout=20.0):
        for attempt in range(5):
            try:
                return self._start_once(timeout)
            except RuntimeError:
                if not (self.auto_port and self.starts == 1 and attempt < 4 and
                        "address already in use" in self.log_tail().lower()):
                    raise
                self.proc = None
                self.starts = 0
                self.port = free_port()
        raise RuntimeError("unreachable")

    def _start_once(self, timeout):
        if self.proc is not None:
            raise RuntimeError("server already running")
        cmd = [_binary(), "server", "--data-dir", self.dir,
               "--listen", "127.0.0.1:%d" % self.port,
               "--v=%d" % self.verbose] + self.args
        if shutil.which("setpriv"):
            cmd = ["setpriv", "--pdeathsig", "KILL", "--"] + cmd
        # The kubeconfig is rewritten on every start; drop the old one so
        # wait_ready never reads a stale or half-written file.
        if os.path.exists(self.kubeconfig):
            os.unlink(self.kubeconfig)
        self.starts += 1
        log = open(self.log_path, "ab")
        log.write(("---- start %d\n" % self.starts).encode())
        log.flush()
        self.proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL,
                                     stdout=log, stderr=log)
        log.close()
        self.wait_ready(timeout)
        return self

    def wait_ready(self, timeout=20.0):
        deadline = time.monotonic() + timeout
        last = None
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError("server exited early (rc=%s):\n%s"
                                   % (self.proc.returncode, self.log_tail()))
            try:
                if os.path.exists(self.kubeconfig):
                    self._load_kubeconfig()
                    code, body = self.request("GET", "/readyz")
                    if code == 200:
                        return
                    last = "readyz %d %r" % (code, body[:200])
            except (OSError, RuntimeError, ValueError) as e:
                last = repr(e)
            time.sleep(0.05)
        raise RuntimeError("server not ready after %.0fs (%s):\n%s"
                           % (timeout, last, self.log_tail()))

    def _load_kubeconfig(self):
        self.url, self.token, self.ca_pem = _parse_kubeconfig(self.kubeconfig)
        ctx = ssl.create_default_context(cadata=self.ca_pem)
        self._ssl = ctx

    def kill(self):
        """SIGKILL, as a crash would; keeps the data dir."""
        if self.proc is None:
            return None
        self.proc.kill()
        rc = self.proc.wait()
        self.proc = None
        return rc

    def stop(self, timeout=15.0):
        """SIGTERM and wait; returns the exit code (None if not running)."""
        if self.proc is None:
            return None
        self.proc.send_signal(signal.SIGTERM)
        try:
            rc = self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            rc = "timeout"
        self.proc = None
        return rc

    def close(self):
        """Stop the server (kill if needed) and remove a temp data dir."""
        try:
            if self.proc is not None:
                self.kill()
        finally:
            if os.environ.get("SW_E2E_KEEP"):
                print("# kept data dir %s (SW_E2E_KEEP)" % self.dir, flush=True)
            elif self.own_dir and os.path.isdir(self.dir):
                shutil.rmtree(self.dir, ignore_errors=True)
            if self in _LIVE:
                _LIVE.remove(self)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False

    def log_tail(self, n=40):
        try:
            with open(self.log_path, "rb") as f:
                lines = f.read().decode(errors="replace").splitlines()
            return "\n".join(lines[-n:])
        except OSError:
            return "(no log)"

    # -- raw HTTP --------------------------------------------------------
    def request(self, method, path, body=None, ctype="application/json",
                timeout=10.0):
        """One HTTPS request with the admin token; returns (code, bytes)."""
        data = None
        if body is not None:
            data = body if isinstance(body, bytes) else json.dumps(body).encode()
        req = urllib.request.Request(self.url + path, data=data, method=method)
        req.add_header("Authorization", "Bearer " + self.token)
        req.add_header("Accept", "application/json")
        if data is not None:
            req.add_header("Content-Type", ctype)
        try:
            with urllib.request.urlopen(req, timeout=timeout,
                                        context=self._ssl) as resp:
                return resp.status, resp.read()
        except urllib.error.HTTPError as e:
            return e.code, e.read()

    def open_stream(self, path, timeout=10.0):
        """Open a streaming GET (a watch); returns the response object."""
        req = urllib.request.Request(self.url + path, method="GET")
        req.add_header("Authorization", "Bearer " + self.token)
        req.add_header("Accept", "application/json")
        return urllib.request.urlopen(req, timeout=timeout, context=self._ssl)

    # -- kubernetes clients ----------------------------------------------
    def api_client(self):
        from kubernetes import config
        return config.new_client_from_config(config_file=self.kubeconfig,
                                             persist_config=False)

    def dynamic_client(self, api_client=None):
        from kubernetes import dynamic
        cache = os.path.join(self.dir, "discovery-cache-%d.json" % self.starts)
        if os.path.exists(cache):
            os.unlink(cache)
        return dynamic.DynamicClient(api_client or self.api_client(),
                                     cache_file=cache)


class Checks:
    """Prints one line per check and remembers whether any failed."""

    def __init__(self, name):
        self.name = name
        self.failed = 0
        self.passed = 0
        self.t0 = time.monotonic()

    def ok(self, cond, what, detail=None):
        if cond:
            self.passed += 1
            print("ok   %s" % what, flush=True)
        else:
            self.failed += 1
            extra = "" if detail is None else ": %s" % (detail,)
            print("FAIL %s%s" % (what, extra), flush=True)
        return bool(cond)

    def eq(self, got, want, what):
        return self.ok(got == want, what, "got %r, want %r" % (got, want))

    def raises(self, fn, status, what):
        """fn() must raise an ApiException (or HTTP error) with status."""
        try:
            fn()
        except Exception as e:  # noqa: BLE001 - any client error type
            got = getattr(e, "status", None)
            return self.ok(got == status, what,
                           "got status %r (%s)" % (got, str(e)[:200]))
        return self.ok(False, what, "no error raised, want %d" % status)

    def section(self, title):
        print("# %s" % title, flush=True)

    def summary(self):
        dt = time.monotonic() - self.t0
        print("# %s: %d passed, %d failed in %.1fs"
              % (self.name, self.passed, self.failed, dt), flush=True)
        return 1 if self.failed else 0


def _cleanup_all():
    for s in list(_LIVE):
        s.close()


def _on_signal(signum, _frame):
    raise SystemExit(128 + signum)


def run(name, body):
    """Run body(checks) with cleanup on every exit path; exit non-zero on
    a failed check or an unexpected exception."""
    atexit.register(_cleanup_all)
    signal.signal(signal.SIGTERM, _on_signal)
    signal.signal(signal.SIGINT, _on_signal)
    checks = Checks(name)
    rc = 1
    try:
        body(checks)
        rc = checks.summary()
    except SystemExit:
        raise
    except BaseException:  # noqa: BLE001 - report, then fail the test
        traceback.print_exc()
        checks.ok(False, "test ran to completion (unexpected exception)")
        checks.summary()
        for s in list(_LIVE):
            print("---- server log tail (%s):\n%s" % (s.dir, s.log_tail()))
    finally:
        _cleanup_all()
    sys.exit(rc)
