#!/usr/bin/env python3
"""A stand-in for Google on 127.0.0.1, for the fuzz runs (Tests/Fuzz/hostile.sh, schemathesis.sh):

  POST /token                 OAuth for service accounts: takes an RS256 assertion signed with the
                              service-account key this script wrote, answers an access token
  GET  /androidpublisher/v3/applications/{pkg}/purchases/products/{product}/tokens/{token}
                              a purchased, unconsumed purchase (quantity 1, orderId "GPA." + token)
                              for tokens starting with "ok-"; 404 for any other token
  POST .../tokens/{token}:consume
                              204 (400 once consumed, as Google answers)
  GET  /androidpublisher/v3/applications/{pkg}/purchases/voidedpurchases
                              full and partial voids of the tokens in VOIDED (all "ok-void-*")
  GET  /oauth2/v3/certs       the JWKS whose private key signs push tokens (`push_token` below)
  GET  /standin/report        what the stand-in saw that the wallet should never send: a path
                              outside these routes or naming another package, a token or product
                              that is not one URL path segment, an API call without an access token
                              it issued (the harness checks that this stays empty)

Usage: google_standin.py serve PORT_FILE PUSH_KEY_FILE SERVICE_ACCOUNT_FILE
  writes the push key (PKCS#8 PEM) and the service account's key file (as Google Cloud issues it,
  `token_uri` pointing here), then the port to PORT_FILE (atomically, last), then serves until killed.
       google_standin.py push-token PUSH_KEY_FILE AUDIENCE SERVICE_ACCOUNT_EMAIL
  prints a valid push token (an hour's), for a run that cannot import this module.

hostile.py imports this module for `load_push_key` and `push_token` (Pub/Sub's OIDC tokens, valid
or forged). Needs the `cryptography` package.
"""
import base64
import hashlib
import hmac
import http.server
import json
import os
import re
import secrets
import sys
import threading
import time
import urllib.parse

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import padding, rsa

PACKAGE_NAME = "com.example.game"
CLIENT_EMAIL = "wallet@hostile-project.iam.gserviceaccount.com"
PRIVATE_KEY_ID = "0f1e2d3c4b5a69788796a5b4c3d2e1f001234567"
SCOPE = "https://www.googleapis.com/auth/androidpublisher"
PUSH_KID = "hostile-push-1"
PUSH_AUDIENCE = "https://wallet.example.com/v1/notifications/google"
PUSH_SERVICE_ACCOUNT = "pubsub-push@hostile-project.iam.gserviceaccount.com"
# Voids the Voided Purchases API lists, each voided an hour before the stand-in started:
# (purchase token, refundType, voidedQuantity). Every purchase is of quantity 1.
VOIDED = [("ok-void-1", 1, None), ("ok-void-2", 2, 1), ("ok-void-3", 1, None)]
SEGMENT = re.compile(r"^[A-Za-z0-9._-]+$")
API = "/androidpublisher/v3/applications/"


def b64u(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def b64u_decode(text):
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def jdump(value):
    return json.dumps(value, separators=(",", ":")).encode()


# ---------------------------------------------------------------------------------------------
# Push tokens: what Pub/Sub sends in `Authorization: Bearer` with each push, and forgeries of it.

FORGERIES = (
    "no-kid", "unknown-kid", "wrong-key", "alg-none", "hs256-public-pem", "hs256-public-jwk", "rs512",
    "wrong-audience", "audience-list-without-ours", "wrong-issuer", "wrong-email", "unverified-email",
    "no-email-verified", "expired", "issued-in-future", "signature-of-other-claims", "signature-stripped",
    "signature-flipped",
)


def load_push_key(path):
    with open(path, "rb") as handle:
        return serialization.load_pem_private_key(handle.read(), password=None)


def push_token(key, forgery=None, now=None, audience=PUSH_AUDIENCE, email=PUSH_SERVICE_ACCOUNT):
    """An OIDC token as Pub/Sub signs one for a push subscription, by `key` (the JWKS's), or
    forged as `forgery` (one of FORGERIES) says."""
    now = int(time.time() if now is None else now)
    issued = now - (4200 if forgery == "expired" else 0) + (600 if forgery == "issued-in-future" else 0)
    claims = {
        "aud": {"wrong-audience": "https://attacker.example.com/push", "audience-list-without-ours": ["https://a.example.com", audience + "/"]}.get(forgery, audience),
        "azp": "104200000000000000000",
        "email": "attacker@evil-project.iam.gserviceaccount.com" if forgery == "wrong-email" else email,
        "email_verified": forgery != "unverified-email",
        "exp": issued + 3600,
        "iat": issued,
        "iss": "https://accounts.example.com" if forgery == "wrong-issuer" else "https://accounts.google.com",
        "sub": "104200000000000000000",
    }
    if forgery == "no-email-verified":
        del claims["email_verified"]
    header = {"alg": {"alg-none": "none", "hs256-public-pem": "HS256", "hs256-public-jwk": "HS256", "rs512": "RS512"}.get(forgery, "RS256"), "typ": "JWT"}
    if forgery != "no-kid":
        header["kid"] = "hostile-push-9" if forgery == "unknown-kid" else PUSH_KID
    signing_input = (b64u(jdump(header)) + "." + b64u(jdump(claims))).encode()
    public = key.public_key()
    if forgery == "alg-none":
        signature = b""
    elif forgery == "hs256-public-pem":
        pem = public.public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
        signature = hmac.new(pem, signing_input, hashlib.sha256).digest()
    elif forgery == "hs256-public-jwk":
        signature = hmac.new(jdump(jwk(public)), signing_input, hashlib.sha256).digest()
    elif forgery == "wrong-key":
        signature = rsa.generate_private_key(public_exponent=65537, key_size=2048).sign(signing_input, padding.PKCS1v15(), hashes.SHA256())
    elif forgery == "rs512":
        signature = key.sign(signing_input, padding.PKCS1v15(), hashes.SHA512())
    else:
        signature = key.sign(signing_input, padding.PKCS1v15(), hashes.SHA256())
    token = signing_input.decode() + "." + b64u(signature)
    if forgery == "signature-of-other-claims":
        # Google's own signature, over claims for another audience, moved onto ours.
        other = push_token(key, "wrong-audience", now=now, audience=audience, email=email).split(".")[2]
        token = signing_input.decode() + "." + other
    elif forgery == "signature-stripped":
        token = signing_input.decode() + "."
    elif forgery == "signature-flipped":
        raw = bytearray(signature)
        raw[len(raw) // 2] ^= 0x01
        token = signing_input.decode() + "." + b64u(bytes(raw))
    return token


def jwk(public):
    numbers = public.public_numbers()
    n = numbers.n.to_bytes((numbers.n.bit_length() + 7) // 8, "big")
    e = numbers.e.to_bytes((numbers.e.bit_length() + 7) // 8, "big")
    return {"kty": "RSA", "alg": "RS256", "use": "sig", "kid": PUSH_KID, "n": b64u(n), "e": b64u(e)}


# ---------------------------------------------------------------------------------------------
# The server


class State:
    def __init__(self, service_account_public, push_public):
        self.lock = threading.Lock()
        self.service_account_public = service_account_public
        self.push_public = push_public
        self.issued = set()
        self.consumed = set()
        self.counts = {}
        self.unexpected = []
        self.voided_at = str(int(time.time() * 1000) - 3_600_000)

    def count(self, kind):
        with self.lock:
            self.counts[kind] = self.counts.get(kind, 0) + 1

    def flag(self, why, method, path):
        with self.lock:
            self.counts["unexpected"] = self.counts.get("unexpected", 0) + 1
            if len(self.unexpected) < 50:
                self.unexpected.append(f"{why}: {method} {path[:300]}")


STATE = None


class Handler(http.server.BaseHTTPRequestHandler):
    def answer(self, status, body=None, headers=()):
        data = json.dumps(body).encode() if body is not None else b""
        self.send_response(status)
        if body is not None:
            self.send_header("Content-Type", "application/json; charset=UTF-8")
            self.send_header("Content-Length", str(len(data)))
        for name, value in headers:
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)

    def google_error(self, status, message):
        self.answer(status, {"error": {"code": status, "message": message, "errors": [{"message": message, "domain": "androidpublisher", "reason": "standIn"}]}})

    def body(self):
        length = int(self.headers.get("Content-Length") or "0")
        return self.rfile.read(length) if 0 < length <= 1 << 20 else b""

    def authorized(self):
        token = self.headers.get("Authorization", "")
        with STATE.lock:
            known = token.startswith("Bearer ") and token[7:] in STATE.issued
        if not known:
            STATE.flag("an API call without an access token the stand-in issued", self.command, self.path)
            self.google_error(401, "Request had invalid authentication credentials. Expected OAuth 2 access token.")
        return known

    def api_path(self):
        """(package, rest of the path segments, query) for an Android Publisher path, or None
        after answering what Google would. Anything a wallet must never send is flagged."""
        split = urllib.parse.urlsplit(self.path)
        raw_segments = split.path[len(API):].split("/")
        segments = [urllib.parse.unquote(segment) for segment in raw_segments]
        if any(not SEGMENT.fullmatch(segment.removesuffix(":consume")) or segment in (".", "..") for segment in segments):
            STATE.flag("a path segment that is not a plain token or product id", self.command, self.path)
            self.google_error(404, "Not Found")
            return None
        if segments[0] != PACKAGE_NAME:
            STATE.flag("another package than the wallet's", self.command, self.path)
            self.google_error(404, "No application was found for the given package name.")
            return None
        return segments[1:], urllib.parse.parse_qs(split.query, keep_blank_values=True)

    def do_GET(self):
        if self.path == "/oauth2/v3/certs":
            STATE.count("jwks")
            return self.answer(200, {"keys": [jwk(STATE.push_public)]}, headers=[("Cache-Control", "public, max-age=3600, must-revalidate, no-transform")])
        if self.path == "/standin/report":
            with STATE.lock:
                return self.answer(200, {"counts": dict(STATE.counts), "unexpected": list(STATE.unexpected)})
        if not self.path.startswith(API):
            STATE.flag("a path outside Google's API", "GET", self.path)
            return self.google_error(404, "Not Found")
        parsed = self.api_path()
        if parsed is None or not self.authorized():
            return
        rest, query = parsed
        if rest == ["purchases", "voidedpurchases"]:
            STATE.count("voided")
            return self.voided(query)
        if len(rest) == 5 and rest[:2] == ["purchases", "products"] and rest[3] == "tokens":
            STATE.count("purchase")
            product, token = rest[2], rest[4]
            if not token.startswith("ok-"):
                return self.google_error(404, "The purchase token was not found.")
            with STATE.lock:
                consumed = token in STATE.consumed
            return self.answer(200, {
                "kind": "androidpublisher#productPurchase", "purchaseTimeMillis": str(int(time.time() * 1000) - 60_000),
                "purchaseState": 0, "consumptionState": 1 if consumed else 0, "developerPayload": "", "orderId": "GPA." + token,
                "acknowledgementState": 0, "quantity": 1, "regionCode": "US", "productId": product,
            })
        STATE.flag("a GET Google's API does not have", "GET", self.path)
        return self.google_error(404, "Not Found")

    def do_POST(self):
        body = self.body()
        if self.path == "/token":
            STATE.count("token")
            problem = assertion_problem(body)
            if problem:
                STATE.flag(f"a token request Google refuses ({problem})", "POST", self.path)
                return self.answer(400, {"error": "invalid_grant", "error_description": problem})
            token = "ya29.hostile-" + secrets.token_urlsafe(24)
            with STATE.lock:
                STATE.issued.add(token)
            return self.answer(200, {"access_token": token, "expires_in": 3600, "token_type": "Bearer"})
        if not self.path.startswith(API):
            STATE.flag("a path outside Google's API", "POST", self.path)
            return self.google_error(404, "Not Found")
        parsed = self.api_path()
        if parsed is None or not self.authorized():
            return
        rest, _ = parsed
        if len(rest) == 5 and rest[:2] == ["purchases", "products"] and rest[3] == "tokens" and rest[4].endswith(":consume"):
            STATE.count("consume")
            token = rest[4].removesuffix(":consume")
            if not token.startswith("ok-"):
                return self.google_error(404, "The purchase token was not found.")
            with STATE.lock:
                if token in STATE.consumed:
                    return self.google_error(400, "The purchase has already been consumed.")
                STATE.consumed.add(token)
            return self.answer(204)
        STATE.flag("a POST Google's API does not have", "POST", self.path)
        return self.google_error(404, "Not Found")

    def voided(self, query):
        def number(name, default):
            values = query.get(name)
            return int(values[0]) if values and values[0].isdigit() else default

        now = int(time.time() * 1000)
        start, end = number("startTime", now - 30 * 86_400_000), number("endTime", now)
        if start > end or start < now - 30 * 86_400_000 - 60_000 or "token" in query:
            return self.google_error(400, "Invalid Value")
        voids = []
        for token, refund_type, quantity in VOIDED:
            if start <= int(STATE.voided_at) <= end:
                void = {"kind": "androidpublisher#voidedPurchase", "purchaseToken": token, "orderId": "GPA." + token,
                        "purchaseTimeMillis": str(int(STATE.voided_at) - 60_000), "voidedTimeMillis": STATE.voided_at,
                        "voidedSource": 0, "voidedReason": 1, "refundType": refund_type}
                if quantity is not None:
                    void["voidedQuantity"] = quantity
                voids.append(void)
        return self.answer(200, {"pageInfo": {"totalResults": len(voids), "resultPerPage": len(voids), "startIndex": 0}, "voidedPurchases": voids})

    def do_PUT(self):
        STATE.flag("a method Google's API does not have here", "PUT", self.path)
        self.google_error(405, "Method Not Allowed")

    do_DELETE = do_PATCH = do_PUT

    def log_message(self, *args):
        pass


def assertion_problem(form):
    """Why Google would refuse the token request, or None: the grant type, then an RS256 JWT with
    the key's id, signed by the service account's key, with its email, the scope, this endpoint
    as audience and a lifetime of at most an hour around now."""
    fields = urllib.parse.parse_qs(form.decode("utf-8", "replace"))
    if fields.get("grant_type") != ["urn:ietf:params:oauth:grant-type:jwt-bearer"] or len(fields.get("assertion", [])) != 1:
        return "Invalid grant_type"
    parts = fields["assertion"][0].split(".")
    if len(parts) != 3:
        return "Invalid JWT"
    try:
        header, claims = json.loads(b64u_decode(parts[0])), json.loads(b64u_decode(parts[1]))
        signature = b64u_decode(parts[2])
    except ValueError:
        return "Invalid JWT"
    if not isinstance(header, dict) or header.get("alg") != "RS256" or header.get("kid") != PRIVATE_KEY_ID:
        return "Invalid JWT header"
    try:
        STATE.service_account_public.verify(signature, (parts[0] + "." + parts[1]).encode(), padding.PKCS1v15(), hashes.SHA256())
    except InvalidSignature:
        return "Invalid JWT Signature."
    now = int(time.time())
    if not isinstance(claims, dict) or claims.get("iss") != CLIENT_EMAIL or claims.get("scope") != SCOPE:
        return "Invalid JWT claims"
    iat, exp = claims.get("iat"), claims.get("exp")
    if not isinstance(iat, int) or not isinstance(exp, int) or exp - iat > 3600 or exp <= now or iat > now + 60:
        return "Invalid JWT: Token must be a short-lived token (60 minutes) and in a reasonable timeframe."
    return None


def write_private(path, data):
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(descriptor, "wb") as handle:
        handle.write(data)


def serve(port_file, push_key_file, service_account_file):
    global STATE
    push_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    account_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    pkcs8 = serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    write_private(push_key_file, push_key.private_bytes(*pkcs8))
    STATE = State(account_key.public_key(), push_key.public_key())
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    port = server.server_address[1]
    account = {
        "type": "service_account", "project_id": "hostile-project", "private_key_id": PRIVATE_KEY_ID,
        "private_key": account_key.private_bytes(*pkcs8).decode(), "client_email": CLIENT_EMAIL, "client_id": "104729386510293847561",
        "auth_uri": "https://accounts.google.com/o/oauth2/auth", "token_uri": f"http://127.0.0.1:{port}/token",
        "auth_provider_x509_cert_url": "https://www.googleapis.com/oauth2/v1/certs", "universe_domain": "googleapis.com",
    }
    write_private(service_account_file, json.dumps(account, indent=2).encode())
    # The port goes last, and whole: whoever waits for the file finds the keys written.
    with open(port_file + ".tmp", "w") as handle:
        handle.write(f"{port}\n")
    os.replace(port_file + ".tmp", port_file)
    server.serve_forever()


if __name__ == "__main__":
    if len(sys.argv) == 5 and sys.argv[1] == "serve":
        serve(*sys.argv[2:])
    elif len(sys.argv) == 5 and sys.argv[1] == "push-token":
        print(push_token(load_push_key(sys.argv[2]), audience=sys.argv[3], email=sys.argv[4]))
    else:
        sys.exit(__doc__)
