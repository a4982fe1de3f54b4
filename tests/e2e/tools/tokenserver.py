#!/usr/bin/env python3
"""tokenserver.py: a Docker token-auth server for docker-registry's `auth: token` mode.

At startup it generates a signing key (ES256 on P-256, or RS256 with --alg RS256) and a
self-signed certificate for it, written as PEM to --cert-out: give that file to the registry
as `rootcertbundle`. It then listens on 127.0.0.1 (a free port unless --port is given; the port
goes to --port-file once listening) and answers GET /token?service=S&scope=repository:N:A,B:

  * HTTP Basic credentials equal to --user/--password: 200 {"token", "access_token",
    "expires_in", "issued_at"}, the token a JWT whose header carries x5c = [the certificate]
    and whose claims are iss (--issuer), sub (the user), aud (the service asked for), exp, nbf,
    iat, jti and access = [{type, name, actions}] for every scope asked for;
  * anonymous or wrong credentials: 401 with WWW-Authenticate: Basic.

Every request is logged to --log as "PATH STATUS USER" (never the password).
Needs python3-cryptography.
"""
import argparse
import base64
import datetime
import hmac
import http.server
import json
import os
import secrets
import sys
import threading
import time
import urllib.parse

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, padding, rsa
from cryptography.hazmat.primitives.asymmetric.utils import decode_dss_signature
from cryptography.x509.oid import NameOID

TOKEN_TTL_S = 300


def b64url(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


class Signer:
    def __init__(self, alg):
        self.alg = alg
        if alg == "ES256":
            self.key = ec.generate_private_key(ec.SECP256R1())
        else:
            self.key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "slipway test token signer")])
        now = datetime.datetime.now(datetime.timezone.utc)
        self.cert = (x509.CertificateBuilder()
                     .subject_name(name).issuer_name(name)
                     .public_key(self.key.public_key())
                     .serial_number(x509.random_serial_number())
                     .not_valid_before(now - datetime.timedelta(days=1))
                     .not_valid_after(now + datetime.timedelta(days=2))
                     .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
                     .sign(self.key, hashes.SHA256()))

    def cert_pem(self):
        return self.cert.public_bytes(serialization.Encoding.PEM)

    def sign(self, data):
        if self.alg == "ES256":
            r, s = decode_dss_signature(self.key.sign(data, ec.ECDSA(hashes.SHA256())))
            return r.to_bytes(32, "big") + s.to_bytes(32, "big")  # JWS: R || S, not DER
        return self.key.sign(data, padding.PKCS1v15(), hashes.SHA256())

    def jwt(self, claims):
        der = self.cert.public_bytes(serialization.Encoding.DER)
        header = {"typ": "JWT", "alg": self.alg, "x5c": [base64.b64encode(der).decode()]}
        signing_input = (b64url(json.dumps(header, separators=(",", ":")).encode()) + "." +
                         b64url(json.dumps(claims, separators=(",", ":")).encode()))
        return signing_input + "." + b64url(self.sign(signing_input.encode()))


def parse_scope(scope):
    """repository:name:pull,push → {type, name, actions}; the name may hold colons (ports)."""
    kind, _, rest = scope.partition(":")
    name, _, actions = rest.rpartition(":")
    if not kind or not name:
        return None
    return {"type": kind, "name": name, "actions": [a for a in actions.split(",") if a]}


class TokenServer(http.server.ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, addr, args, signer):
        super().__init__(addr, Handler)
        self.args = args
        self.signer = signer
        self.lock = threading.Lock()
        self.log = open(args.log, "a", buffering=1) if args.log else None

    def record(self, path, status, user):
        if self.log:
            with self.lock:
                self.log.write("%s %d %s\n" % (path, status, user or "-"))


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, fmt, *args):
        pass

    def send(self, status, body, extra=()):
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for k, v in extra:
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(data)

    def user(self):
        """The user when the Basic credentials are the configured ones, else None."""
        auth = self.headers.get("Authorization") or ""
        if not auth.startswith("Basic "):
            return None
        try:
            user, sep, password = base64.b64decode(auth[6:], validate=True).decode().partition(":")
        except ValueError:
            return None
        a = self.server.args
        ok = sep and hmac.compare_digest(user.encode(), a.user.encode()) and \
            hmac.compare_digest(password.encode(), a.password.encode())
        return user if ok else None

    def do_GET(self):
        url = urllib.parse.urlsplit(self.path)
        query = urllib.parse.parse_qs(url.query)
        if url.path != "/token":
            self.send(404, {"errors": [{"code": "NOT_FOUND", "message": "no such path"}]})
            return self.server.record(url.path, 404, None)
        user = self.user()
        if not user:
            self.send(401, {"errors": [{"code": "UNAUTHORIZED",
                                        "message": "authentication required"}]},
                      [("WWW-Authenticate", 'Basic realm="slipway-test-token"')])
            return self.server.record(url.path, 401, None)
        now = int(time.time())
        access = [a for a in (parse_scope(s) for v in query.get("scope", [])
                              for s in v.split(" ")) if a]
        claims = {"iss": self.server.args.issuer, "sub": user,
                  "aud": (query.get("service") or [self.server.args.service])[0],
                  "exp": now + TOKEN_TTL_S, "nbf": now - 10, "iat": now,
                  "jti": secrets.token_hex(16), "access": access}
        token = self.server.signer.jwt(claims)
        issued = datetime.datetime.fromtimestamp(now, datetime.timezone.utc)
        self.send(200, {"token": token, "access_token": token, "expires_in": TOKEN_TTL_S,
                        "issued_at": issued.strftime("%Y-%m-%dT%H:%M:%SZ")})
        self.server.record(url.path, 200, user)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--port", type=int, default=0)
    p.add_argument("--port-file", help="write the listening port here")
    p.add_argument("--cert-out", required=True, help="PEM certificate for rootcertbundle")
    p.add_argument("--issuer", required=True)
    p.add_argument("--service", required=True, help="default audience")
    p.add_argument("--user", required=True)
    p.add_argument("--password", required=True)
    p.add_argument("--alg", choices=("ES256", "RS256"), default="ES256")
    p.add_argument("--log")
    args = p.parse_args()
    signer = Signer(args.alg)
    with open(args.cert_out, "wb") as f:
        f.write(signer.cert_pem())
    server = TokenServer(("127.0.0.1", args.port), args, signer)
    if args.port_file:
        with open(args.port_file + ".tmp", "w") as f:
            f.write("%d\n" % server.server_address[1])
        os.replace(args.port_file + ".tmp", args.port_file)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    sys.exit(0)


if __name__ == "__main__":
    main()
