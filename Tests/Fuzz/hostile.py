#!/usr/bin/env python3
"""Hostile traffic against a running `wallet serve` (started by Tests/Fuzz/hostile.sh).

Eight classes of requests, each its own function with its own `random.Random(20261122)`:
JSON bodies, look-alike identifiers, player JWTs, Apple JWS, HTTP framing, query strings,
Google Play (forged, malformed and replayed Pub/Sub pushes; redemptions into other wallets, of
path-traversal tokens, raced by several players), and the event feed and webhook endpoints
(SSRF-shaped URLs, look-alike endpoint ids, roles).
Each class runs a fixed list of cases, then seeded random variations until its share of
HOSTILE_SECONDS is spent (and never more than a fixed count). Every answer is checked:

  * the server is alive (after a connection error, and after every framing case: /healthz
    answers within 5 s); a dead server is a failure, and is restarted so that the run goes on;
  * no 5xx other than 503 with a Retry-After header;
  * every 4xx/5xx of the application is application/problem+json with a string `code`;
  * the status is one the case allows (e.g. duplicate JSON members must be 400).

At the end the victims of look-alike ids (Kate, café) must hold what they held before, the
stand-in Google must have seen nothing a wallet should never send it, the server is stopped and
`wallet verify` must accept the database. Prints each failure, then
`hostile: N passed, M failed`; exits 1 if anything failed.

Standard library only; `cryptography`, when installed, signs Apple-shaped JWS (a self-made
leaf and intermediate with Apple's marker extensions, under Apple's real root) so that their
payloads get parsed, and signs Google's push tokens (Tests/Fuzz/google_standin.py, which
hostile.sh starts when it can). Only 127.0.0.1 is contacted.
"""

import base64
import datetime
import hashlib
import hmac
import json
import os
import random
import select
import signal
import socket
import subprocess
import sys
import threading
import time
import unicodedata
import urllib.parse
import urllib.request
import uuid

SEED = 20261122
HOST = "127.0.0.1"
PORT = int(os.environ["HOSTILE_PORT"])
WALLET = os.environ["HOSTILE_WALLET"]
PID_FILE = os.environ["HOSTILE_PID_FILE"]
SERVER_LOG = os.environ["HOSTILE_SERVER_LOG"]
SERVICE = os.environ["HOSTILE_SERVICE_KEY"]
ADMIN = os.environ["HOSTILE_ADMIN_KEY"]
# A webhook endpoint hostile.sh added (to http://127.0.0.1:9, where nothing listens: the server
# is started with WALLET_WEBHOOK_ALLOW_HOSTS=127.0.0.1, and its sender only ever fails there).
WEBHOOK_ID = os.environ["HOSTILE_WEBHOOK_ID"]
WEBHOOK_URL = "http://127.0.0.1:9/hostile"
SUPPORT = os.environ["HOSTILE_SUPPORT_KEY"]
AUDITOR = os.environ["HOSTILE_AUDITOR_KEY"]
PRODUCT = os.environ.get("HOSTILE_PRODUCT", "com.example.game.consume5credits")
# A 1-month pass (non_renewing, entitlement fuzz_pass), set up by hostile.sh.
PASS_PRODUCT = os.environ.get("HOSTILE_PASS_PRODUCT", "com.example.game.fuzzpass")
JWT_SECRET = os.environ["WALLET_PLAYER_JWT_SECRET"].encode()
BUNDLE_ID = os.environ.get("WALLET_APPLE_BUNDLE_ID", "com.example.game")
# The repository's sibling shared/ folder holds Apple's public root, as CI lays it out.
APPLE_ROOT = os.environ.get(
    "HOSTILE_APPLE_ROOT", os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "shared", "certs", "AppleRootCA-G3.pem"))
BUDGET = float(os.environ.get("HOSTILE_SECONDS", "120"))
START = time.monotonic()
# Nothing starts after this: the whole run, stop and verify included, stays under BUDGET + 60 s.
HARD_DEADLINE = START + BUDGET + 35
REQUEST_TIMEOUT = 10.0
BODY_MAX = 64 * 1024
# Receipts and restores take a StoreKit 1 receipt: 1 MiB of base64 and 4 KiB around it.
RECEIPT_BODY_MAX = 1024 * 1024 + 4 * 1024
# HOSTILE_TRACE=FILE: every checked answer's class, case and status, for reading what the server did.
TRACE = open(os.environ["HOSTILE_TRACE"], "a", encoding="utf-8") if os.environ.get("HOSTILE_TRACE") else None
CAFE = "caf\u00e9"
VICTIMS = ("Kate", CAFE)

try:
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.hazmat.primitives.asymmetric import padding as rsa_padding
    from cryptography.hazmat.primitives.asymmetric.utils import decode_dss_signature
    from cryptography.x509.oid import NameOID

    HAVE_CRYPTO = True
except ImportError:  # pure standard library: Apple JWS are only malformed, never properly signed
    HAVE_CRYPTO = False

# Google Play, when hostile.sh started the stand-in Google: its URL, the key it signs push tokens
# with, and what `wallet serve` was told to expect of a push.
GOOGLE_URL = os.environ.get("HOSTILE_GOOGLE_URL")
GOOGLE_PACKAGE = os.environ.get("WALLET_GOOGLE_PACKAGE_NAME", "com.example.game")
PUSH_AUDIENCE = os.environ.get("WALLET_GOOGLE_PUSH_AUDIENCE", "")
PUSH_ACCOUNT = os.environ.get("WALLET_GOOGLE_PUSH_SERVICE_ACCOUNT", "")
PUSH_SUBSCRIPTION = "projects/hostile-project/subscriptions/wallet-push"
GOOGLE = bool(HAVE_CRYPTO and GOOGLE_URL and os.environ.get("HOSTILE_GOOGLE_PUSH_KEY"))
if GOOGLE:
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import google_standin

    GOOGLE_PUSH_KEY = google_standin.load_push_key(os.environ["HOSTILE_GOOGLE_PUSH_KEY"])


# ---------------------------------------------------------------------------------------------
# Bookkeeping


class Results:
    def __init__(self):
        self.passed = 0
        self.failures = []
        self.per_class = {}

    def ok(self, cls):
        self.passed += 1
        self.per_class.setdefault(cls, [0, 0])[0] += 1

    def fail(self, cls, sent, status, excerpt, why):
        """Fixed cases are listed one by one; failures of the random phases are grouped by
        class, reason, status and problem code (each group listed with a few examples)."""
        self.failures.append((cls, sent, status, excerpt, why))
        self.per_class.setdefault(cls, [0, 0])[1] += 1
        if sent.startswith("random"):
            code = excerpt.split('"code":"', 1)[1].split('"', 1)[0] if '"code":"' in excerpt else "-"
            kind = " ".join(sent.split()[:3])
            group = self.random_groups.setdefault((cls, why, str(status), code, kind), [])
            group.append((sent, excerpt))
            if len(group) > 1:
                return
        print(f"  FAIL [{cls}] {why}: {sent} -> {status} {excerpt}", flush=True)

    random_groups = {}


R = Results()
NOTES = {}  # observation -> one example


def short(value, limit=110):
    text = value if isinstance(value, str) else repr(value)
    text = text.encode("unicode_escape").decode("ascii") if not text.isascii() else text
    text = text.replace("\r", "\\r").replace("\n", "\\n")
    return text if len(text) <= limit else text[: limit - 12] + f"...({len(text)}ch)"


def time_left(deadline):
    return min(deadline, HARD_DEADLINE) - time.monotonic()


# ---------------------------------------------------------------------------------------------
# A raw HTTP/1.1 client: sends exactly the bytes given, parses what comes back.


class Response:
    def __init__(self, status, reason, headers, body):
        self.status = status
        self.reason = reason
        self.headers = headers  # lower-case name -> [values]
        self.body = body

    def header(self, name):
        values = self.headers.get(name.lower())
        return values[0] if values else None

    def excerpt(self):
        return short(self.body[:160].decode("utf-8", "replace"), 160)


class Incomplete(Exception):
    pass


def parse_response(buf, eof):
    """One response from the start of buf: (Response, bytes consumed); raises Incomplete."""
    end = buf.find(b"\r\n\r\n")
    if end < 0:
        raise Incomplete
    lines = buf[:end].decode("latin-1").split("\r\n")
    parts = lines[0].split(" ", 2)
    if len(parts) < 2 or not parts[0].startswith("HTTP/") or not parts[1].isdigit():
        raise ValueError(f"not an HTTP response: {lines[0][:80]!r}")
    status = int(parts[1])
    headers = {}
    for line in lines[1:]:
        name, _, value = line.partition(":")
        headers.setdefault(name.strip().lower(), []).append(value.strip())
    pos = end + 4
    if status < 200 or status in (204, 304):
        return Response(status, parts[2] if len(parts) > 2 else "", headers, b""), pos
    if "chunked" in ",".join(headers.get("transfer-encoding", [])).lower():
        body = b""
        while True:
            line_end = buf.find(b"\r\n", pos)
            if line_end < 0:
                raise Incomplete
            size = int(buf[pos:line_end].split(b";")[0].strip() or b"0", 16)
            pos = line_end + 2
            if size == 0:
                trailer_end = buf.find(b"\r\n", pos)
                if trailer_end < 0:
                    raise Incomplete
                while trailer_end != pos:  # skip trailers
                    pos = trailer_end + 2
                    trailer_end = buf.find(b"\r\n", pos)
                    if trailer_end < 0:
                        raise Incomplete
                return Response(status, parts[2] if len(parts) > 2 else "", headers, body), trailer_end + 2
            if len(buf) < pos + size + 2:
                raise Incomplete
            body += buf[pos : pos + size]
            pos += size + 2
    if "content-length" in headers:
        length = int(headers["content-length"][0])
        if len(buf) < pos + length:
            raise Incomplete
        return Response(status, parts[2] if len(parts) > 2 else "", headers, buf[pos : pos + length]), pos + length
    if not eof:
        raise Incomplete
    return Response(status, parts[2] if len(parts) > 2 else "", headers, buf[pos:]), len(buf)


def exchange(raw, timeout=REQUEST_TIMEOUT, expect=1):
    """Sends raw bytes on a fresh connection (reading while sending, so that an early answer to a
    large body is not lost) and returns (responses, error text or None)."""
    try:
        sock = socket.create_connection((HOST, PORT), timeout=3)
    except OSError as error:
        return [], f"connect: {error}"
    sock.setblocking(False)
    sent, buf, eof, error = 0, b"", False, None
    responses = []
    deadline = time.monotonic() + timeout
    try:
        while time.monotonic() < deadline:
            want_write = [sock] if sent < len(raw) else []
            readable, writable, _ = select.select([sock], want_write, [], 0.2)
            if writable:
                try:
                    sent += sock.send(raw[sent : sent + 65536])
                except (BrokenPipeError, ConnectionResetError):
                    sent = len(raw)  # the server stopped reading: read its answer, if any
            if readable:
                try:
                    chunk = sock.recv(262144)
                except ConnectionResetError:
                    chunk = b""
                if chunk:
                    buf += chunk
                else:
                    eof = True
            while buf:
                try:
                    response, used = parse_response(buf, eof)
                except Incomplete:
                    break
                except ValueError as bad:
                    error = str(bad)
                    buf = b""
                    break
                responses.append(response)
                buf = buf[used:]
            if len(responses) >= expect or eof or error:
                break
        else:
            if len(responses) < expect:
                error = f"no complete response within {timeout:.0f} s"
    finally:
        sock.close()
    if error is None and len(responses) < expect:
        error = "connection closed without a (complete) response"
    return responses, error


def build(method, target, headers=(), body=None, content_length=True, close=True, version=b"HTTP/1.1"):
    def b(value):
        return value if isinstance(value, bytes) else str(value).encode("utf-8", "surrogatepass")

    lines = [b(method) + b" " + b(target) + b" " + version, b"Host: 127.0.0.1:" + str(PORT).encode()]
    names = {b(name).lower() for name, _ in headers}
    for name, value in headers:
        lines.append(b(name) + b": " + b(value))
    if body is not None and content_length and b"content-length" not in names and b"transfer-encoding" not in names:
        lines.append(b"Content-Length: " + str(len(body)).encode())
    if close and b"connection" not in names:
        lines.append(b"Connection: close")
    return b"\r\n".join(lines) + b"\r\n\r\n" + (body or b"")


def auth(key):
    return [("Authorization", "Bearer " + key)] if key else []


def request(method, target, key=None, body=None, headers=(), content_type="application/json", timeout=REQUEST_TIMEOUT):
    """One request with Connection: close; body is bytes, or a dict/list to serialise."""
    if isinstance(body, (dict, list)):
        body = json.dumps(body).encode()
    all_headers = list(auth(key))
    if body is not None and content_type is not None:
        all_headers.append(("Content-Type", content_type))
    all_headers.extend(headers)
    responses, error = exchange(build(method, target, all_headers, body), timeout=timeout)
    return (responses[0] if responses else None), error


# ---------------------------------------------------------------------------------------------
# The server: alive or not, restarted after a crash so that the run goes on.

restarts = 0


def healthy(timeout=5.0):
    responses, _ = exchange(build("GET", "/healthz"), timeout=timeout)
    return bool(responses) and responses[0].status == 200


def server_pid():
    try:
        with open(PID_FILE) as handle:
            return int(handle.read().strip())
    except (OSError, ValueError):
        return None


def log_tail(lines=6):
    try:
        with open(SERVER_LOG, "rb") as handle:
            handle.seek(0, os.SEEK_END)
            handle.seek(max(0, handle.tell() - 8192))
            text = handle.read().decode("utf-8", "replace")
    except OSError:
        return ""
    interesting = [line for line in text.splitlines() if line.strip()]
    return " | ".join(interesting[-lines:])


def restart_server():
    global restarts
    restarts += 1
    old = server_pid()
    if old:
        try:
            os.kill(old, signal.SIGKILL)
        except OSError:
            pass
    log = open(SERVER_LOG, "ab")
    log.write(f"\n--- hostile.py: restarting the server (restart {restarts}) ---\n".encode())
    log.flush()
    process = subprocess.Popen(
        [WALLET, "serve", "--host", HOST, "--port", str(PORT)], stdout=log, stderr=subprocess.STDOUT, start_new_session=True
    )
    with open(PID_FILE, "w") as handle:
        handle.write(str(process.pid))
    for _ in range(100):
        if healthy(1.0):
            return True
        time.sleep(0.1)
    return False


def ensure_alive(cls, sent, must_answer_within=5.0):
    """Checks /healthz; a dead or hung server is a failure (and is restarted)."""
    if healthy(must_answer_within):
        return True
    time.sleep(0.5)
    if healthy(must_answer_within):  # one retry: a single slow answer under load is not a death
        R.fail(cls, sent, "-", "", f"/healthz did not answer 200 within {must_answer_within:.0f} s (answered on retry)")
        return True
    R.fail(cls, sent, "-", short(log_tail(), 300), "server died or hung; server log tail")
    if restarts >= 25 or not restart_server():
        print("hostile: the server cannot be restarted; stopping the run", flush=True)
        finish(aborted=True)
    return False


# ---------------------------------------------------------------------------------------------
# The checks every answer gets


def check(cls, sent, response, error, allowed=None, codes=None, no_answer_ok=False, why_allowed=None):
    """Generic checks (alive, no 5xx but 503 + Retry-After, problem+json with a code), then the
    status against `allowed` and the problem's code against `codes`. Returns the response."""
    if response is None:
        alive = ensure_alive(cls, sent)
        if alive and no_answer_ok:
            R.ok(cls)
        elif alive:
            R.fail(cls, sent, "-", "", f"no answer ({error})")
        return None
    status = response.status
    if TRACE:
        TRACE.write(f"{cls} | {short(sent, 150)} | {status} {response.excerpt()[:100]}\n")
    good = True
    # No X-Request-Id: the HTTP layer refused the request before the application saw it (a
    # header or target its parser rejects). Only the 5xx rule applies; a 4xx counts as a refusal.
    framework = response.header("x-request-id") is None
    if framework and 400 <= status < 500:
        NOTES.setdefault(f"the HTTP layer itself answers {status} (no X-Request-Id, {'empty body' if not response.body else 'not a problem document'})", sent[:100])
        if allowed is None or any(400 <= code < 500 for code in allowed):
            R.ok(cls)
            return response
    if status >= 500 and not (status == 503 and response.header("retry-after")):
        R.fail(cls, sent, status, response.excerpt(), "5xx answer" + (" (503 without Retry-After)" if status == 503 else ""))
        good = False
    if status >= 400:
        content_type = (response.header("content-type") or "").lower()
        code = None
        try:
            problem = json.loads(response.body)
            code = problem.get("code") if isinstance(problem, dict) else None
        except ValueError:
            problem = None
        if not content_type.startswith("application/problem+json") or not isinstance(code, str) or not code:
            R.fail(cls, sent, status, f"content-type={content_type!r} " + response.excerpt(), "error is not a problem document with a code")
            good = False
        elif codes is not None and code not in codes:
            R.fail(cls, sent, status, response.excerpt(), f"problem code {code!r} is not one of {sorted(codes)}")
            good = False
    if allowed is not None and status not in allowed:
        R.fail(cls, sent, status, response.excerpt(), f"expected {why_allowed or sorted(allowed)}")
        good = False
    if good:
        R.ok(cls)
    return response


def balance_of(player):
    response, _ = request("GET", "/v1/wallets/" + urllib.parse.quote(player, safe=""), key=SERVICE)
    if response is None or response.status != 200:
        return None
    try:
        return json.loads(response.body)["balances"].get("credits", 0)
    except (ValueError, KeyError, AttributeError):
        return None


def idem(rng):
    return "hostile-" + "%016x" % rng.getrandbits(64)


# ---------------------------------------------------------------------------------------------
# JWT and JWS helpers


def b64u(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def jdump(value):
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode("utf-8", "surrogatepass")


def player_token(claims=None, header=None, raw_header=None, raw_claims=None, sign="HS256", secret=None, signature=None):
    """A JWT built by hand; `sign` is how the signature is made (HS256, HS512, none)."""
    header_bytes = raw_header if raw_header is not None else jdump(header if header is not None else {"alg": "HS256", "typ": "JWT"})
    claims_bytes = raw_claims if raw_claims is not None else jdump(claims)
    signing_input = b64u(header_bytes) + "." + b64u(claims_bytes)
    if signature is None:
        if sign == "HS256":
            signature = hmac.new(secret or JWT_SECRET, signing_input.encode(), hashlib.sha256).digest()
        elif sign == "HS512":
            signature = hmac.new(secret or JWT_SECRET, signing_input.encode(), hashlib.sha512).digest()
        else:
            signature = b""
    return signing_input + "." + b64u(signature)


def token_for(sub, exp_in=3600):
    return player_token({"sub": sub, "exp": int(time.time()) + exp_in})


class AppleSigner:
    """A self-made leaf and intermediate with Apple's marker extensions; the x5c ends at the real
    Apple Root CA - G3, so the server parses the payload and fails only at the chain check."""

    LEAF_OID = "1.2.840.113635.100.6.11.1"
    INTERMEDIATE_OID = "1.2.840.113635.100.6.2.1"

    def __init__(self):
        with open(APPLE_ROOT, "rb") as handle:
            pem = handle.read()
        self.apple_root = x509.load_pem_x509_certificate(pem)
        self.apple_root_b64 = base64.b64encode(self.apple_root.public_bytes(serialization.Encoding.DER)).decode()
        now = datetime.datetime.now(datetime.timezone.utc)
        root_key = ec.generate_private_key(ec.SECP256R1())
        intermediate_key = ec.generate_private_key(ec.SECP256R1())
        self.leaf_key = ec.generate_private_key(ec.SECP256R1())

        def name(common):
            return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common)])

        def cert(subject, issuer, public_key, signer, is_ca, marker, years_before, years_after):
            builder = (
                x509.CertificateBuilder()
                .subject_name(subject)
                .issuer_name(issuer)
                .public_key(public_key)
                .serial_number(x509.random_serial_number())
                .not_valid_before(now - datetime.timedelta(days=365 * years_before))
                .not_valid_after(now + datetime.timedelta(days=365 * years_after))
                .add_extension(x509.BasicConstraints(ca=is_ca, path_length=None), critical=True)
            )
            if marker:
                builder = builder.add_extension(x509.UnrecognizedExtension(x509.ObjectIdentifier(marker), b"\x05\x00"), critical=False)
            return builder.sign(signer, hashes.SHA256())

        self_root = cert(name("Hostile Root"), name("Hostile Root"), root_key.public_key(), root_key, True, None, 5, 20)
        # The intermediate claims Apple's root as its issuer, but Apple never signed it.
        intermediate = cert(name("Hostile WWDR"), self.apple_root.subject, intermediate_key.public_key(), root_key, True, self.INTERMEDIATE_OID, 4, 10)
        leaf = cert(name("Hostile App Store"), name("Hostile WWDR"), self.leaf_key.public_key(), intermediate_key, False, self.LEAF_OID, 2, 5)
        p384_key = ec.generate_private_key(ec.SECP384R1())
        p384_leaf = cert(name("Hostile P-384"), name("Hostile WWDR"), p384_key.public_key(), intermediate_key, False, self.LEAF_OID, 2, 5)

        def der(certificate):
            return base64.b64encode(certificate.public_bytes(serialization.Encoding.DER)).decode()

        self.chain = [der(leaf), der(intermediate), self.apple_root_b64]
        self.self_rooted_chain = [der(leaf), der(intermediate), der(self_root)]
        self.p384_chain = [der(p384_leaf), der(intermediate), self.apple_root_b64]

    def sign(self, payload_bytes, header=None, raw_header=None):
        header_bytes = raw_header if raw_header is not None else jdump(header if header is not None else {"alg": "ES256", "x5c": self.chain})
        signing_input = b64u(header_bytes) + "." + b64u(payload_bytes)
        r, s = decode_dss_signature(self.leaf_key.sign(signing_input.encode(), ec.ECDSA(hashes.SHA256())))
        return signing_input + "." + b64u(r.to_bytes(32, "big") + s.to_bytes(32, "big"))


def raw_object(members):
    """A JSON object text from (name, raw value text) pairs, duplicates and all."""
    return ("{" + ",".join(json.dumps(name) + ":" + value for name, value in members) + "}").encode("utf-8", "surrogatepass")


def transaction_payload(signed_date_literal, **changes):
    fields = {
        "transactionId": "hostile-%d" % random.getrandbits(40),
        "originalTransactionId": "hostile-orig",
        "bundleId": BUNDLE_ID,
        "productId": PRODUCT,
        "type": "Consumable",
        "quantity": 1,
        "environment": "Production",
    }
    fields.update(changes)
    members = [(name, json.dumps(value)) for name, value in fields.items()]
    members.append(("signedDate", signed_date_literal))
    return raw_object(members)


def notification_payload(signed_date_literal, notification_type="TEST", signed_transaction=None):
    data = {"bundleId": BUNDLE_ID, "environment": "Production"}
    if signed_transaction is not None:
        data["signedTransactionInfo"] = signed_transaction
    return raw_object(
        [
            ("notificationType", json.dumps(notification_type)),
            ("notificationUUID", json.dumps(str(uuid.UUID(int=random.getrandbits(128))))),
            ("signedDate", signed_date_literal),
            ("data", json.dumps(data)),
        ]
    )


# ---------------------------------------------------------------------------------------------
# Google Play helpers: Pub/Sub pushes and their tokens

_push_token = []


def google_push_token(forgery=None):
    """Pub/Sub's OIDC token for the wallet's push subscription (minted again every ten minutes,
    so that a long run never sends an expired one), or a forgery of it."""
    if forgery is None:
        if not _push_token or time.monotonic() - _push_token[1] > 600:
            _push_token[:] = [google_standin.push_token(GOOGLE_PUSH_KEY, audience=PUSH_AUDIENCE, email=PUSH_ACCOUNT), time.monotonic()]
        return _push_token[0]
    return google_standin.push_token(GOOGLE_PUSH_KEY, forgery, audience=PUSH_AUDIENCE, email=PUSH_ACCOUNT)


def rtdn(event=None, package=None):
    """A Real-time developer notification's JSON (a test notification unless `event` says).
    No eventTimeMillis: a void push must not claim to be newer than the voids the stand-in lists."""
    notification = {"version": "1.0", "packageName": package or GOOGLE_PACKAGE}
    notification.update(event if event is not None else {"testNotification": {"version": "1.0"}})
    return jdump(notification)


def void_event(token, refund_type=1, quantity=None):
    void = {"purchaseToken": token, "orderId": "GPA." + token, "productType": 2, "refundType": refund_type}
    if quantity is not None:
        void["voidedQuantity"] = quantity
    return {"voidedPurchaseNotification": void}


def push_body(notification=None, message_id=None, data=None):
    """Pub/Sub's push envelope around the base64 of `notification` (raw `data` if given)."""
    if data is None:
        data = base64.b64encode(notification if notification is not None else rtdn()).decode()
    message = {"data": data, "messageId": "hostile-" + uuid.uuid4().hex[:16] if message_id is None else message_id, "publishTime": "2026-11-22T10:00:00.000Z"}
    return jdump({"message": message, "subscription": PUSH_SUBSCRIPTION})


def push(body, token="valid"):
    """POST /v1/notifications/google: with Google's token, another token (a string), or none."""
    headers = [] if token is None else [("Authorization", "Bearer " + (google_push_token() if token == "valid" else token))]
    return request("POST", "/v1/notifications/google", body=body, headers=headers)


def google_body(player, token=None, product=None):
    """A redemption's body: a fresh purchase of PRODUCT unless said."""
    return {"player_id": player, "product_id": PRODUCT if product is None else product, "purchase_token": "ok-" + uuid.uuid4().hex if token is None else token}


# ---------------------------------------------------------------------------------------------
# Class 1: JSON bodies

ROUTES = None


def json_routes():
    """(name, method, path, key, valid body fields, integer field, string field, JWS route?)"""
    return [
        ("spend", "POST", "/v1/wallets/p1/spend", SERVICE, {"amount": 1, "reason": "hostile"}, "amount", "reason", False),
        ("adjust", "POST", "/v1/wallets/p1/adjustments", SUPPORT, {"amount": 1, "reason_code": "goodwill", "note": "hostile"}, "amount", "note", False),
        ("purchase", "POST", "/v1/purchases", SERVICE, {"player_id": "p1", "store": "apple", "store_transaction_id": None, "product_id": PRODUCT}, "quantity", "store_transaction_id", False),
        ("apple-purchase", "POST", "/v1/purchases/apple", SERVICE, {"player_id": "p1", "signed_transaction": "a.b.c"}, None, "signed_transaction", True),
        ("refund", "POST", "/v1/refunds", SERVICE, {"store": "apple", "store_transaction_id": "hostile-no-such-purchase", "policy": "floor"}, "percentage", "store_transaction_id", False),
        ("notification", "POST", "/v1/notifications/apple", None, {"signedPayload": "a.b.c"}, None, "signedPayload", True),
        ("product", "PUT", "/v1/products/com.example.game.fuzzproduct", ADMIN, {"credits": 1}, "credits", "currency", False),
        # Entitlements: a pass bought with the store's purchase date, support's changes, a restore.
        ("pass-purchase", "POST", "/v1/purchases", SERVICE,
         {"player_id": "p1", "store": "apple", "store_transaction_id": None, "product_id": PASS_PRODUCT, "purchased_at": "2026-01-01T00:00:00Z"}, "quantity", "purchased_at", False),
        ("entitlement", "POST", "/v1/wallets/p1/entitlements", SUPPORT,
         {"action": "extend", "entitlement": "fuzz_pass", "days": 1, "reason_code": "goodwill", "note": "hostile"}, "days", "entitlement", False),
        ("restore", "POST", "/v1/wallets/p1/restore", SERVICE, {"receipt": "AAAA"}, None, "receipt", True),
        # Webhook endpoints: a new one (at most 50 exist: once full, a valid body is refused too),
        # and a replay of hostile.sh's (ReplayBody has one member, an integer, also the string field).
        ("webhook", "POST", "/v1/webhooks", ADMIN, {"url": WEBHOOK_URL, "types": ["*"], "description": "hostile run"}, None, "url", False),
        ("webhook-replay", "POST", f"/v1/webhooks/{WEBHOOK_ID}/replay", ADMIN, {"from_seq": 1}, "from_seq", "from_seq", False),
    ] + ([
        ("google-purchase", "POST", "/v1/purchases/google", SERVICE, {"player_id": "p1", "product_id": PRODUCT, "purchase_token": None}, None, "purchase_token", False),
        # The body is Pub/Sub's `message` object (send_body wraps it in the envelope), so that the
        # malformations reach what the wallet reads; the push carries Google's token.
        ("google-push", "POST", "/v1/notifications/google", None, {"messageId": None, "data": base64.b64encode(rtdn()).decode()}, None, "messageId", False),
    ] if GOOGLE else [])


# Fields left None in a route's body get a fresh value for each request: a new purchase each time.
FRESH = {"store_transaction_id": lambda rng: idem(rng), "purchase_token": lambda rng: "ok-" + idem(rng), "messageId": lambda rng: idem(rng)}


def fresh_fields(route, rng):
    fields = dict(route[4])
    for name, value in fields.items():
        if value is None:
            fields[name] = FRESH[name](rng)
    return fields


def wrap_push(message):
    return b'{"message":' + message + b',"subscription":"' + PUSH_SUBSCRIPTION.encode() + b'"}'


def body_max(route):
    """The largest body the route reads."""
    return RECEIPT_BODY_MAX if route[0] == "restore" else BODY_MAX


def wire_size(route, body):
    """The body's length as sent (the push's message goes inside the envelope)."""
    return len(wrap_push(body)) if route[0] == "google-push" else len(body)


def send_body(route, body, rng, content_type="application/json", headers=()):
    name, method, path, key = route[:4]
    extra = list(headers)
    if name in ("spend", "adjust", "entitlement"):
        extra.append(("Idempotency-Key", idem(rng)))
    if name == "google-push":
        body = wrap_push(body)
        extra.append(("Authorization", "Bearer " + google_push_token()))
    return request(method, path, key=key, body=body, content_type=content_type, headers=extra)


def with_value(route, rng, field, raw_value):
    """The route's valid body with `field` set to a raw JSON text (bytes or str)."""
    fields = fresh_fields(route, rng)
    members = []
    placed = False
    for name, value in fields.items():
        if name == field:
            members.append((name, raw_value))
            placed = True
        else:
            members.append((name, json.dumps(value)))
    if not placed:
        members.append((field, raw_value))
    parts = []
    for name, value in members:
        value = value if isinstance(value, bytes) else value.encode("utf-8", "surrogatepass")
        parts.append(json.dumps(name).encode() + b":" + value)
    return b"{" + b",".join(parts) + b"}"


def nested(depth, kind):
    if kind == "array":
        return "[" * depth + "]" * depth
    return '{"a":' * depth + "1" + "}" * depth


INVALID_NUMBER_SYNTAX = ["NaN", "Infinity", "-Infinity", "0x10", "01", "+1", "1.", ".5", "1e", "--1", "1_000", "١"]
NON_INTEGERS = ["999999999.99999999", "0.5", "1.5", "1e-3", "100.000000000000001"]
OUT_OF_RANGE = [
    "9223372036854775807", "9223372036854775808", "-9223372036854775808", "-9223372036854775809",
    "1" + "0" * 30, "9" * 400, "-" + "9" * 400, "1e400", "-1e400", "1000000001", "18446744073709551616",
]
MAYBE_INTEGERS = ["1.0", "1e0", "1E0", "1e+0", "10e-1", "-0", "-0.0", "0"]


def class_json(deadline):
    cls = "1-json"
    rng = random.Random(SEED)
    routes = json_routes()

    # Controls: each route's valid body is answered as the API describes (the harness is sound).
    controls = {"spend": {201}, "adjust": {201}, "purchase": {201}, "apple-purchase": {422}, "refund": {404, 200, 201}, "notification": {422}, "product": {200},
                "pass-purchase": {201}, "entitlement": {201}, "restore": {400}, "webhook": {201}, "webhook-replay": {200},
                "google-purchase": {201}, "google-push": {200}}
    for route in routes:
        response, error = send_body(route, json.dumps(fresh_fields(route, rng)).encode(), rng)
        check(cls, f"control {route[0]} valid body", response, error, allowed=controls[route[0]])

    for route in routes:
        name, int_field, str_field, is_jws = route[0], route[5], route[6], route[7]
        refused_string = {400, 422} if is_jws else {400}
        fields = fresh_fields(route, rng)
        first = next(iter(fields))
        # Duplicate members, in both orders and with an escaped spelling of the same name: 400.
        dup_field = int_field if int_field in fields else first
        if name == "spend":
            variants = [b'{"amount":1000,"amount":1}', b'{"amount":1,"amount":1000}', b'{"amount":1,"\\u0061mount":2}']
        else:
            other = json.dumps(fields[dup_field])
            if isinstance(fields[dup_field], int):
                alt = str(fields[dup_field] + 1)
            else:
                alt = json.dumps(str(fields[dup_field]) + "x" if name != "purchase" else "p2")
            if name == "purchase":
                dup_field, other, alt = "player_id", json.dumps("p1"), json.dumps("p2")
            base = [(k, json.dumps(v)) for k, v in fields.items()]
            escaped = "".join("\\u%04x" % ord(c) if i == 0 else c for i, c in enumerate(dup_field))
            variants = [
                raw_object(base + [(dup_field, alt)]),
                raw_object([(dup_field, alt)] + base),
                raw_object(base).rstrip(b"}") + b',"' + escaped.encode() + b'":' + alt.encode() + b"}",
                raw_object(base + [(dup_field, other)]),
            ]
        for body in variants:
            response, error = send_body(route, body, rng)
            check(cls, f"{name} duplicate member {short(body.decode(), 70)}", response, error, allowed={400})

        if int_field:
            for literal in INVALID_NUMBER_SYNTAX:
                response, error = send_body(route, with_value(route, rng, int_field, literal), rng)
                check(cls, f"{name} {int_field}={literal} (not JSON)", response, error, allowed={400})
            for literal in NON_INTEGERS:
                response, error = send_body(route, with_value(route, rng, int_field, literal), rng)
                check(cls, f"{name} {int_field}={literal} (not a whole number)", response, error, allowed={400}, why_allowed="400: a fraction is not an amount")
            for literal in OUT_OF_RANGE:
                response, error = send_body(route, with_value(route, rng, int_field, literal), rng)
                check(cls, f"{name} {int_field}={short(literal, 40)} (out of range)", response, error, allowed={400})
            for literal in MAYBE_INTEGERS:
                response, error = send_body(route, with_value(route, rng, int_field, literal), rng)
                check(cls, f"{name} {int_field}={literal}", response, error)
            for literal in ['"1"', "true", "null", "[1]", '{"a":1}']:
                response, error = send_body(route, with_value(route, rng, int_field, literal), rng)
                check(cls, f"{name} {int_field}={literal} (wrong type)", response, error, allowed={400})

        # Deep nesting in a string field (wrong type at any depth: 400; over 64 KiB: 413), and as the body.
        for depth in (65, 1000, 30000, 100000):
            for kind in ("array", "object"):
                text = nested(depth, kind)
                body = with_value(route, rng, str_field, text)
                big = wire_size(route, body) > body_max(route)
                response, error = send_body(route, body, rng)
                check(cls, f"{name} {str_field}={kind} nested {depth} deep ({len(body)} bytes)", response, error, allowed={413} if big else {400}, no_answer_ok=big)
        for depth in (65, 1000, 30000):
            body = nested(depth, "array").encode()
            response, error = send_body(route, body, rng)
            check(cls, f"{name} body = array nested {depth} deep", response, error, allowed={400})
        if name == "spend":  # metadata takes any JSON object: deep ones must not kill the server
            for depth in (65, 1000, 10000):
                metadata = nested(depth, "object")
                body = with_value(route, rng, "metadata", metadata)
                response, error = send_body(route, body, rng)
                check(cls, f"spend metadata nested {depth} deep ({len(body)} bytes)", response, error, allowed={201, 400, 413})
            for bad in ('{"a":"\\ud800"}', '{"\\udc00":1}', '{"a":"x\\u0000y"}', '{"a":1,"a":2}'):
                response, error = send_body(route, with_value(route, rng, "metadata", bad), rng)
                allowed = {400} if '"a":1,"a"' in bad else {201, 400}
                check(cls, f"spend metadata={bad}", response, error, allowed=allowed)

        # Huge strings, huge names.
        for size in (4097, 60000, 70000):
            body = with_value(route, rng, str_field, json.dumps("x" * size))
            big = wire_size(route, body) > body_max(route)
            response, error = send_body(route, body, rng)
            check(cls, f"{name} {str_field}='x'*{size}", response, error, allowed={413} if big else refused_string, no_answer_ok=big)
        body = raw_object([("n" * 60000, "1")])
        response, error = send_body(route, body, rng)
        check(cls, f"{name} member name of 60000 bytes", response, error, allowed={400})

        # Invalid UTF-8, lone surrogates, NUL, control characters.
        for raw in (b'"\xff\xfe"', b'"a\xc3\x28b"', b'"\xed\xa0\x80"', b'"\xc0\xaf"', b'"\xf8\x88\x80\x80\x80"', b'"\xe2\x82"'):
            response, error = send_body(route, with_value(route, rng, str_field, raw), rng)
            check(cls, f"{name} {str_field}=invalid UTF-8 {raw!r}", response, error, allowed=refused_string)
        response, error = send_body(route, b'{"\xff":1}', rng)
        check(cls, f"{name} member name of invalid UTF-8", response, error, allowed={400})
        for escape in ('"\\ud800"', '"a\\udc00b"', '"\\udbff\\u0041"', '"\\ud800\\ud800"'):
            response, error = send_body(route, with_value(route, rng, str_field, escape), rng)
            allowed = refused_string if name not in ("spend", "adjust") else {400, 201}  # reasons and notes are free text
            check(cls, f"{name} {str_field}={escape} (lone surrogate)", response, error, allowed=allowed)
        for escape in ('"a\\u0000b"', '"\\u0000"', '"a\\u001bb"'):
            response, error = send_body(route, with_value(route, rng, str_field, escape), rng)
            check(cls, f"{name} {str_field}={escape} (control character)", response, error, allowed=refused_string)
        response, error = send_body(route, with_value(route, rng, str_field, b'"a\x00b"'), rng)
        check(cls, f"{name} {str_field}=raw NUL byte in a string", response, error, allowed={400})

        # Wrong content types: 415.
        valid = json.dumps(fresh_fields(route, rng)).encode()
        for content_type in ("text/plain", "application/xml", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x", "", "text/json"):
            response, error = send_body(route, valid, rng, content_type=content_type)
            check(cls, f"{name} Content-Type {content_type!r}", response, error, allowed={415})
        response, error = send_body(route, valid.decode().encode("utf-16"), rng, content_type="application/json; charset=utf-16")
        check(cls, f"{name} UTF-16 body", response, error)  # JSON must be UTF-8, but decoding UTF-16 harms no one

        # Truncated JSON, empty bodies, other top-level values, unknown and null fields.
        for cut in sorted({1, 2, len(valid) // 3, len(valid) // 2, len(valid) - 2, len(valid) - 1}):
            response, error = send_body(route, valid[:cut], rng)
            check(cls, f"{name} truncated at {cut}: {short(valid[:cut].decode('utf-8', 'replace'), 40)}", response, error, allowed={400})
        for body in (b"", b" ", b"[]", b'"x"', b"1", b"null", b"true", b"{}", valid + b"x", valid + b"{}", valid.replace(b"{", b"{ \"unknown\": 1,", 1)):
            response, error = send_body(route, body, rng)
            # Pub/Sub adds members to its message (attributes, publishTime, ...): the push takes them.
            allowed = {200} if name == "google-push" and b'"unknown"' in body else {400}
            check(cls, f"{name} body {short(body.decode('utf-8', 'replace'), 50)}", response, error, allowed=allowed)
        response, error = send_body(route, with_value(route, rng, first, "null"), rng)
        check(cls, f"{name} {first}=null", response, error, allowed={400})

        # Random bytes declared as JSON.
        for _ in range(8):
            body = bytes(rng.getrandbits(8) for _ in range(rng.randint(1, 3000)))
            response, error = send_body(route, body, rng)
            check(cls, f"{name} {len(body)} random bytes", response, error, allowed={400})

    # Random mutations of valid bodies, until this class's time is spent.
    literals = INVALID_NUMBER_SYNTAX + NON_INTEGERS + OUT_OF_RANGE + MAYBE_INTEGERS + ['"\\ud800"', '"\\u0000"', "[[[[]]]]", '""', '"\\u212aate"', "null", "{}"]
    count = 0
    while count < 20000 and time_left(deadline) > 0:
        count += 1
        route = rng.choice(routes)
        body = bytearray(json.dumps(fresh_fields(route, rng)).encode())
        action = rng.randrange(5)
        if action == 0 and body:
            for _ in range(rng.randint(1, 4)):
                body[rng.randrange(len(body))] = rng.getrandbits(8)
        elif action == 1:
            position = rng.randrange(len(body) + 1)
            body[position:position] = rng.choice([b",", b"{", b"[", b'"', b"\\", b"\x00", b"\xff", b"}", b"]", b":", b'"amount":1,'])
        elif action == 2:
            field = rng.choice([f for f in (route[5], route[6]) if f] or [next(iter(route[4]))])
            body = bytearray(with_value(route, rng, field, rng.choice(literals)))
        elif action == 3:
            del body[rng.randrange(len(body)) :]
        else:
            fields = fresh_fields(route, rng)
            name = rng.choice(list(fields))
            body = bytearray(raw_object([(k, json.dumps(v)) for k, v in fields.items()] + [(name, rng.choice(literals))]))
            response, error = send_body(route, bytes(body), rng)
            check(cls, f"random {route[0]} duplicate {name}: {short(bytes(body).decode('utf-8', 'replace'), 60)}", response, error, allowed={400})
            continue
        response, error = send_body(route, bytes(body), rng)
        check(cls, f"random {route[0]} {short(bytes(body).decode('utf-8', 'replace'), 70)}", response, error)
    return count


# ---------------------------------------------------------------------------------------------
# Class 2: look-alike identifiers


def lookalikes():
    """(label, path segment as sent, decoded id, victim it imitates)."""
    items = []

    def add(label, player, victim, segment=None):
        items.append((label, segment if segment is not None else urllib.parse.quote(player, safe=""), player, victim))

    add("KELVIN SIGN", "\u212aate", "Kate")
    add("Kelvin in lower-case position", "Kat\u212a", "Kate")
    add("decomposed café", "cafe\u0301", CAFE)
    add("café + combining acute twice", "caf\u00e9\u0301", CAFE)
    add("zero-width space suffix", "Kate\u200b", "Kate")
    add("zero-width space prefix", "\u200bKate", "Kate")
    add("zero-width joiner inside", "Ka\u200dte", "Kate")
    add("BOM suffix", "Kate\ufeff", "Kate")
    add("BOM prefix", "\ufeffKate", "Kate")
    add("BOM prefix twice", "\ufeff\ufeffKate", "Kate")
    add("UTF-16 BOM bytes %FF%FE", "\ufffd\ufffdKate", "Kate", segment="%FF%FEKate")
    add("invalid UTF-8 %C0%AF", "\ufffd\ufffdKate", "Kate", segment="Kate%C0%AF")
    add("word joiner prefix", "\u2060Kate", "Kate")
    add("soft hyphen", "Ka\u00adte", "Kate")
    add("RTL override", "\u202eetaK", "Kate")
    add("RTL override suffix", "Kate\u202e", "Kate")
    add("LTR mark", "\u200eKate", "Kate")
    add("fullwidth", "\uff2b\uff41\uff54\uff45", "Kate")
    add("Cyrillic a", "K\u0430te", "Kate")
    add("Cyrillic e", "Kat\u0435", "Kate")
    add("Greek Kappa", "\u039aate", "Kate")
    add("mathematical bold K", "\U0001d40aate", "Kate")
    add("lower-case", "kate", "Kate")
    add("decomposed café with ZWSP", "cafe\u0301\u200b", CAFE)
    add("fullwidth café", "caf\uff45\u0301", CAFE)
    add("..%2F", "../Kate", "Kate", segment="..%2FKate")
    add("%2E%2E%2F", "../Kate", "Kate", segment="%2E%2E%2FKate")
    add("Kate%2F..", "Kate/..", "Kate", segment="Kate%2F..")
    add("Kate%2F..%2F..%2Fv1%2Fproducts", "Kate/../../v1/products", "Kate", segment="Kate%2F..%2F..%2Fv1%2Fproducts")
    add("..%5CKate", "..\\Kate", "Kate", segment="..%5CKate")
    add("dot-dot", "..", "Kate", segment="..")
    add("dot", ".", "Kate", segment=".")
    add("Kate%00", "Kate\x00", "Kate", segment="Kate%00")
    add("Kate%20", "Kate ", "Kate", segment="Kate%20")
    add("Kate%09", "Kate\t", "Kate", segment="Kate%09")
    add("double-encoded ..%252F", "..%2FKate", "Kate", segment="..%252FKate")
    add("256-byte id", "K" * 256, "Kate")
    add("255 x é (510 bytes)", "\u00e9" * 255, CAFE)
    add("1000-byte id", "Kate" * 250, "Kate")
    return items


def is_normalization_trap(player, victim):
    """Ids that must be refused even for a service key: ones that normalise to another id (or
    to the victim), hold invisible, bidi or control characters, look like path segments, or
    are too long. Distinct-script look-alikes (Cyrillic, fullwidth, lower case) may be real ids."""
    if unicodedata.normalize("NFC", player) != player:
        return True
    if unicodedata.normalize("NFC", player) == unicodedata.normalize("NFC", victim) and player != victim:
        return True
    if any(unicodedata.category(c) in ("Cf", "Cc", "Cs", "Co", "Cn", "Zs", "Zl", "Zp") for c in player):
        return True
    if "/" in player or "\\" in player or player in (".", "..") or "\ufffd" in player:
        return True
    return len(player.encode("utf-8", "surrogatepass")) > 255


def class_identifiers(deadline):
    cls = "2-ids"
    rng = random.Random(SEED)
    # A Google purchase of Kate's, which no look-alike may replay.
    kate_google_token = "ok-kate-" + idem(rng)
    if GOOGLE:
        response, error = request("POST", "/v1/purchases/google", key=SERVICE, body=google_body("Kate", kate_google_token))
        check(cls, "control: Kate's Google purchase redeemed by the service", response, error, allowed={201})
    before = {victim: balance_of(victim) for victim in VICTIMS}
    if before["Kate"] is None:
        R.fail(cls, "GET /v1/wallets/Kate", "-", str(before), "cannot read the victim's balance (harness)")
    # café is a victim only where the server takes non-ASCII player ids (hostile.sh funded it).
    victims = tuple(victim for victim in VICTIMS if before[victim] is not None) or ("Kate",)
    refused = {400, 401, 403, 404}

    # Controls: a player's own token works on its own wallet, and %4Bate is Kate itself.
    response, error = request("GET", "/v1/wallets/Kate", key=token_for("Kate"))
    check(cls, "control: Kate's token reads Kate", response, error, allowed={200})
    response, error = request("GET", "/v1/wallets/%4Bate", key=token_for("Kate"))
    check(cls, "control: Kate's token reads %4Bate (= Kate)", response, error, allowed={200})
    response, error = request("POST", "/v1/wallets/ctl/spend", key=token_for("ctl"), body={"amount": 1}, headers=[("Idempotency-Key", idem(rng))])
    check(cls, "control: ctl's token spends from ctl", response, error, allowed={201})
    response, error = request("GET", "/v1/wallets/Kate", key=token_for("ctl"))
    check(cls, "control: ctl's token reads Kate", response, error, allowed={403})

    def attacks(label, segment, player, victim, sub_override=None):
        """Every way this look-alike could reach another wallet."""
        trap = is_normalization_trap(player, victim)
        victim_segment = urllib.parse.quote(victim, safe="")
        look_token = token_for(sub_override or player)
        victim_token = token_for(victim)
        why = "400/401/403: a token for one id must not act on a look-alike wallet"
        # (a) a token whose sub is the look-alike, on the victim's wallet
        for method, suffix, body in (
            ("GET", "", None),
            ("GET", "/transactions", None),
            ("GET", "/statement", None),
            ("POST", "/spend", {"amount": 1}),
        ):
            headers = [("Idempotency-Key", idem(rng))] if body else []
            response, error = request(method, f"/v1/wallets/{victim_segment}{suffix}", key=look_token, body=body, headers=headers)
            check(cls, f"{label}: token sub={short(player, 30)} {method} /v1/wallets/{victim}{suffix}", response, error, allowed={400, 401, 403}, why_allowed=why)
        response, error = request("POST", "/v1/purchases/apple", key=look_token, body={"player_id": victim, "signed_transaction": "a.b.c"})
        check(cls, f"{label}: token sub={short(player, 30)} redeems into {victim}", response, error, allowed={400, 401, 403}, why_allowed=why)
        if GOOGLE:
            response, error = request("POST", "/v1/purchases/google", key=look_token, body=google_body(victim))
            check(cls, f"{label}: token sub={short(player, 30)} redeems a Google purchase into {victim}", response, error, allowed={400, 401, 403}, why_allowed=why)
        # (b) the victim's token on the look-alike's wallet
        for method, suffix, body in (("GET", "", None), ("POST", "/spend", {"amount": 1})):
            headers = [("Idempotency-Key", idem(rng))] if body else []
            response, error = request(method, f"/v1/wallets/{segment}{suffix}", key=victim_token, body=body, headers=headers)
            check(cls, f"{label}: {victim}'s token {method} /v1/wallets/{segment}{suffix}", response, error, allowed=refused, why_allowed=why)
        response, error = request("POST", "/v1/purchases/apple", key=victim_token, body={"player_id": player, "signed_transaction": "a.b.c"})
        check(cls, f"{label}: {victim}'s token redeems into {short(player, 30)}", response, error, allowed={400, 401, 403}, why_allowed=why)
        if GOOGLE:
            response, error = request("POST", "/v1/purchases/google", key=victim_token, body=google_body(player))
            check(cls, f"{label}: {victim}'s token redeems a Google purchase into {short(player, 30)}", response, error, allowed={400, 401, 403}, why_allowed=why)
        # (c) the look-alike's own token on its own wallet, and a service key on it
        own_allowed = {400, 401, 403, 404} if trap else None
        own_why = "4xx: an id that normalises to another, or holds invisible/bidi/control characters or path syntax, must be refused"
        response, error = request("GET", f"/v1/wallets/{segment}", key=look_token)
        check(cls, f"{label}: own token GET /v1/wallets/{segment}", response, error, allowed=own_allowed, why_allowed=own_why)
        for key_name, key in (("service", SERVICE),):
            response, error = request("GET", f"/v1/wallets/{segment}", key=key)
            response = check(cls, f"{label}: {key_name} key GET /v1/wallets/{segment}", response, error, allowed=own_allowed, why_allowed=own_why)
            if response is not None and response.status == 200:
                try:
                    named = json.loads(response.body).get("player_id")
                except ValueError:
                    named = None
                if named != player:
                    R.fail(cls, f"{label}: GET /v1/wallets/{segment}", 200, response.excerpt(), f"answered for player {named!r}, not the id sent")
                else:
                    R.ok(cls)
        response, error = request("POST", f"/v1/wallets/{segment}/spend", key=SERVICE, body={"amount": 1}, headers=[("Idempotency-Key", idem(rng))])
        check(cls, f"{label}: service key spends from /v1/wallets/{segment}", response, error, allowed=(own_allowed or {400, 403, 404, 409}), why_allowed=own_why)
        response, error = request(
            "POST", f"/v1/wallets/{segment}/adjustments", key=SUPPORT,
            body={"amount": 1, "reason_code": "goodwill", "note": "hostile"}, headers=[("Idempotency-Key", idem(rng))])
        check(cls, f"{label}: support key adjusts /v1/wallets/{segment}", response, error, allowed=(own_allowed or {201, 400, 403, 404}), why_allowed=own_why)
        # (d) ids in bodies: a purchase for the look-alike, and a replay of the victim's own grant
        response, error = request("POST", "/v1/purchases", key=SERVICE, body={"player_id": player, "store": "apple", "store_transaction_id": idem(rng), "product_id": PRODUCT})
        check(cls, f"{label}: purchase for player_id={short(player, 30)}", response, error, allowed=(own_allowed and {400} or {201, 400}), why_allowed=own_why)
        response, error = request(
            "POST", "/v1/purchases", key=SERVICE,
            body={"player_id": player, "store": "apple", "store_transaction_id": "hostile-seed-" + ("cafe" if victim == CAFE else victim), "product_id": PRODUCT, "quantity": 100})
        check(cls, f"{label}: replay of {victim}'s grant for player_id={short(player, 30)}", response, error, allowed={400, 409},
              why_allowed="400/409: another player's store transaction is never replayed for a look-alike")
        if GOOGLE:
            response, error = request("POST", "/v1/purchases/google", key=SERVICE, body=google_body(player))
            check(cls, f"{label}: Google purchase for player_id={short(player, 30)}", response, error, allowed=(own_allowed and {400} or {201, 400}), why_allowed=own_why)
            if victim == "Kate":
                response, error = request("POST", "/v1/purchases/google", key=SERVICE, body=google_body(player, kate_google_token))
                check(cls, f"{label}: Kate's Google purchase for player_id={short(player, 30)}", response, error, allowed={400, 409},
                      why_allowed="400/409: a purchase token credits one player for ever")

    for label, segment, player, victim in lookalikes():
        if time.monotonic() > HARD_DEADLINE:
            break
        attacks(label, segment, player, victim)
        # Raw (not percent-encoded) UTF-8 in the path, as some clients send it.
        if not player.isascii() and len(player.encode()) < 300:
            response, error = request("GET", "/v1/wallets/" + player, key=token_for(victim))
            check(cls, f"{label}: {victim}'s token GET raw UTF-8 path", response, error, allowed={400, 401, 403, 404})
            response, error = request("GET", "/v1/wallets/" + victim, key=token_for(player))
            check(cls, f"{label}: token sub={short(player, 30)} GET /v1/wallets/{victim} (raw)", response, error, allowed={400, 401, 403})

    # JWT subjects spelled with escapes, and raw UTF-8, for the victim's look-alikes.
    exp = int(time.time()) + 3600
    for raw_claims, label in (
        (b'{"sub":"\\u212aate","exp":%d}' % exp, "sub escaped KELVIN SIGN"),
        (b'{"sub":"cafe\\u0301","exp":%d}' % exp, "sub escaped decomposed cafe"),
        (b'{"sub":"Kate\\u0000","exp":%d}' % exp, "sub with NUL"),
        (b'{"sub":"Kate\\ud800","exp":%d}' % exp, "sub with lone surrogate"),
        (b'{"sub":"\xe2\x84\xaaate","exp":%d}' % exp, "sub raw KELVIN SIGN"),
    ):
        for victim in victims:
            token = player_token(raw_claims=raw_claims)
            response, error = request("GET", "/v1/wallets/" + urllib.parse.quote(victim, safe=""), key=token)
            check(cls, f"{label}: GET /v1/wallets/{victim}", response, error, allowed={400, 401, 403})

    # Random look-alikes: invisible or confusable characters sprinkled into the victims' ids.
    sprinkles = ["\u200b", "\u200c", "\u200d", "\u2060", "\ufeff", "\u202e", "\u202d", "\u2066", "\u00ad", "\u034f", "\u0301", "\u212a", "\u0430", "\u0435", "\uff21"]
    confusable = {"K": ["\u212a", "\u039a", "\u041a", "\uff2b"], "a": ["\u0430", "\u03b1", "\uff41"], "e": ["\u0435", "\uff45", "e\u0301"], "t": ["\u0442", "\uff54"], "c": ["\u0441", "\u217d"], "f": ["\uff46"], "\u00e9": ["e\u0301", "\u0435\u0301"]}
    count = 0
    while count < 3000 and time_left(deadline) > 0:
        count += 1
        victim = rng.choice(victims)
        chars = list(victim)
        for _ in range(rng.randint(1, 3)):
            if rng.random() < 0.5:
                chars.insert(rng.randrange(len(chars) + 1), rng.choice(sprinkles))
            else:
                index = rng.randrange(len(chars))
                chars[index] = rng.choice(confusable.get(chars[index], [chars[index]]))
        player = "".join(chars)
        if player == victim:
            continue
        segment = urllib.parse.quote(player, safe="")
        route = rng.randrange(4)
        if route == 0:
            response, error = request("GET", f"/v1/wallets/{urllib.parse.quote(victim, safe='')}", key=token_for(player))
            check(cls, f"random: token sub={short(player, 30)} GET {victim}", response, error, allowed={400, 401, 403})
        elif route == 1:
            response, error = request("POST", f"/v1/wallets/{urllib.parse.quote(victim, safe='')}/spend", key=token_for(player), body={"amount": 1}, headers=[("Idempotency-Key", idem(rng))])
            check(cls, f"random: token sub={short(player, 30)} spends from {victim}", response, error, allowed={400, 401, 403})
        elif route == 2:
            response, error = request("POST", f"/v1/wallets/{segment}/spend", key=token_for(victim), body={"amount": 1}, headers=[("Idempotency-Key", idem(rng))])
            check(cls, f"random: {victim}'s token spends from {short(player, 30)}", response, error, allowed={400, 401, 403, 404})
        elif GOOGLE and rng.random() < 0.5:
            response, error = request("POST", "/v1/purchases/google", key=token_for(player), body=google_body(victim))
            check(cls, f"random: token sub={short(player, 30)} redeems a Google purchase into {victim}", response, error, allowed={400, 401, 403})
        else:
            response, error = request("POST", "/v1/purchases/apple", key=token_for(player), body={"player_id": victim, "signed_transaction": "a.b.c"})
            check(cls, f"random: token sub={short(player, 30)} redeems into {victim}", response, error, allowed={400, 401, 403})

    after = {victim: balance_of(victim) for victim in victims}
    for victim in victims:
        if before[victim] is not None and after[victim] == before[victim]:
            R.ok(cls)
        else:
            R.fail(cls, f"GET /v1/wallets/{victim} after the look-alike requests", "-", f"before {before[victim]}, after {after[victim]}", "a victim's balance changed")
    return count, before


# ---------------------------------------------------------------------------------------------
# Class 3: player JWTs


def class_jwt(deadline):
    cls = "3-jwt"
    rng = random.Random(SEED)
    now = int(time.time())
    exp = now + 3600
    target = "/v1/wallets/jwtp"

    def send(token, path=target):
        return request("GET", path, key=token)

    response, error = send(token_for("jwtp"))
    check(cls, "control: valid HS256 token for jwtp", response, error, allowed={200})
    response, error = send(player_token({"sub": "jwtp", "exp": exp}, header={"typ": "JWT", "alg": "HS256", "kid": "x"}))
    check(cls, "control: valid token with typ and kid", response, error, allowed={200})

    refused = {401}
    cases = []  # (label, token, path, allowed)
    for raw, label in (
        (b'{"sub":"jwtp","sub":"Kate","exp":%d}' % exp, "duplicate sub (jwtp, Kate)"),
        (b'{"sub":"Kate","sub":"jwtp","exp":%d}' % exp, "duplicate sub (Kate, jwtp)"),
        (b'{"sub":"jwtp","\\u0073ub":"Kate","exp":%d}' % exp, "duplicate sub, second escaped"),
        (b'{"sub":"jwtp","exp":1,"exp":%d}' % exp, "duplicate exp (expired, then valid)"),
        (b'{"sub":"jwtp","exp":%d,"exp":1}' % exp, "duplicate exp (valid, then expired)"),
        (b'{"sub":"jwtp","exp":%d,"nbf":9999999999,"nbf":0}' % exp, "duplicate nbf"),
    ):
        for path in (target, "/v1/wallets/Kate"):
            cases.append((f"{label} -> {path}", player_token(raw_claims=raw), path, refused))
    for literal, label, allowed in (
        ("1e400", "exp 1e400 (overflows a double)", refused),
        ("-1e400", "exp -1e400", refused),
        ('"%d"' % exp, "exp as a string", refused),
        ('"1e400"', "exp as the string 1e400", refused),
        ("-1", "exp negative", refused),
        ("0", "exp zero", refused),
        ("-9223372036854775809", "exp below Int64", refused),
        ("true", "exp true", refused),
        ("null", "exp null", refused),
        ("[%d]" % exp, "exp array", refused),
        ("NaN", "exp NaN", refused),
        ("1e300", "exp 1e300 (far future)", None),
        ("9223372036854775807", "exp Int64.max", None),
        ("18446744073709551616", "exp 2^64", None),
        ("%d.5" % exp, "exp fractional", None),
    ):
        raw = b'{"sub":"jwtp","exp":' + literal.encode() + b"}"
        cases.append((label, player_token(raw_claims=raw), target, allowed))
    cases.append(("no exp", player_token({"sub": "jwtp"}), target, refused))
    cases.append(("nbf 1e400", player_token(raw_claims=b'{"sub":"jwtp","exp":%d,"nbf":1e400}' % exp), target, refused))
    cases.append(("nbf in the future", player_token({"sub": "jwtp", "exp": exp, "nbf": now + 600}), target, refused))
    cases.append(("nbf string", player_token({"sub": "jwtp", "exp": exp, "nbf": "0"}), target, refused))
    for sub, label in ((123, "sub number"), ("", "sub empty"), (None, "sub null"), (["jwtp"], "sub array"), ("j" * 300, "sub 300 bytes"), ("jw tp", "sub with a space")):
        cases.append((label, player_token({"sub": sub, "exp": exp}), target, refused))
    # Algorithms other than the configured one.
    claims = {"sub": "jwtp", "exp": exp}
    cases.append(("alg none, no signature", player_token(claims, header={"alg": "none"}, sign="none"), target, refused))
    cases.append(("alg None", player_token(claims, header={"alg": "None"}, sign="none"), target, refused))
    cases.append(("alg NONE with HS256 signature", player_token(claims, header={"alg": "NONE"}), target, refused))
    cases.append(("alg none with HS256 signature", player_token(claims, header={"alg": "none"}), target, refused))
    cases.append(("alg ES256 with HS256 signature", player_token(claims, header={"alg": "ES256"}), target, refused))
    cases.append(("alg ES256 with 64 random bytes", player_token(claims, header={"alg": "ES256"}, signature=bytes(rng.getrandbits(8) for _ in range(64))), target, refused))
    cases.append(("alg HS512 signed with the secret", player_token(claims, header={"alg": "HS512"}, sign="HS512"), target, refused))
    cases.append(("alg HS384 with HS256 signature", player_token(claims, header={"alg": "HS384"}), target, refused))
    cases.append(("alg hs256 (lower case)", player_token(claims, header={"alg": "hs256"}), target, refused))
    cases.append(("alg missing", player_token(claims, header={"typ": "JWT"}), target, refused))
    cases.append(("alg number", player_token(claims, header={"alg": 256}), target, refused))
    cases.append(("duplicate alg (none, HS256)", player_token(claims, raw_header=b'{"alg":"none","alg":"HS256"}'), target, refused))
    cases.append(("duplicate alg (HS256, none)", player_token(claims, raw_header=b'{"alg":"HS256","alg":"none"}', sign="none"), target, refused))
    cases.append(("wrong secret", player_token(claims, secret=b"x" * 32), target, refused))
    cases.append(("empty signature", player_token(claims, signature=b""), target, refused))
    # Size: a header of 10,000 members, a token of 5 KB, a header of 200 KB (over the 64 KiB head).
    big_header = {"alg": "HS256"}
    big_header.update({f"m{i}": i for i in range(10000)})
    cases.append(("header with 10,000 members", player_token(claims, header=big_header), target, refused))
    cases.append(("token of 5 KB", player_token({"sub": "jwtp", "exp": exp, "pad": "x" * 3700}), target, refused))
    cases.append(("claims nested 10,000 deep", player_token(raw_claims=b'{"sub":"jwtp","exp":%d,"x":' % exp + b"[" * 10000 + b"]" * 10000 + b"}"), target, refused))
    # Malformed compact forms.
    valid = token_for("jwtp")
    head, body, sig = valid.split(".")
    for token, label in (
        (head + "." + body, "two parts"),
        (valid + ".x", "four parts"),
        ("..", "empty parts"),
        (head + ".." + sig, "empty claims"),
        ("!!!." + body + "." + sig, "header not base64url"),
        (head + "." + body + "." + sig[:-1], "signature truncated by one character"),
        (head + "." + body + "." + sig + "A", "signature with a character added"),
        (head + "." + body + "%" + "." + sig, "percent sign in claims"),
        (b64u(b"[]") + "." + body + "." + sig, "header is an array"),
        (head + "." + b64u(b"not json") + "." + sig, "claims not JSON (bad signature too)"),
        (head + "\u00e9." + body + "." + sig, "non-ASCII in header"),
    ):
        cases.append((label, token, target, refused))
    # A token for jwtp re-signed claims without JSON: signature valid, claims garbage.
    cases.append(("valid signature over non-JSON claims", player_token(raw_claims=b"\xff\xfe garbage"), target, refused))
    cases.append(("valid signature over claims array", player_token(raw_claims=b"[1,2]"), target, refused))
    cases.append(("valid signature, claims with lone surrogate sub", player_token(raw_claims=b'{"sub":"\\ud800","exp":%d}' % exp), target, refused))

    for label, token, path, allowed in cases:
        response, error = send(token, path)
        check(cls, f"{label} -> GET {path}", response, error, allowed=allowed)
    # Authorization header shapes.
    for value, label in (
        ("Bearer", "Bearer alone"),
        ("Bearer  " + valid, "two spaces"),
        ("bearer " + valid, "lower-case scheme (allowed)"),
        ("Basic " + base64.b64encode(b"jwtp:x").decode(), "Basic"),
        ("Bearer " + valid + " extra", "trailing word"),
        ("Bearer " + "a" * 8000, "8000-byte credential"),
        ("Bearer " + "." * 4000, "dots only"),
    ):
        response, error = request("GET", target, headers=[("Authorization", value)])
        check(cls, f"Authorization: {short(value, 40)} ({label})", response, error, allowed={200} if "allowed" in label else {401})

    # Random tokens: random claims and headers, random mutations of valid tokens.
    values = [None, True, 0, -1, 1e308, "x", "jwtp", [], {}, exp, str(exp), 2**63, -(2**63)]
    count = 0
    while count < 5000 and time_left(deadline) > 0:
        count += 1
        action = rng.randrange(3)
        if action == 0:
            claims = {rng.choice(["sub", "exp", "nbf", "iat", "aud", "sub"]): rng.choice(values) for _ in range(rng.randint(0, 4))}
            header = {rng.choice(["alg", "typ", "kid", "crit", "jku"]): rng.choice(values + ["HS256", "none", "ES256"]) for _ in range(rng.randint(0, 3))}
            token = player_token(claims, header=header)
        elif action == 1:
            token = bytearray(token_for("jwtp").encode())
            for _ in range(rng.randint(1, 3)):
                token[rng.randrange(len(token))] = rng.choice(b"ABCxyz019-_.=+/!\x7f")
            token = token.decode("latin-1")
        else:
            token = ".".join(b64u(bytes(rng.getrandbits(8) for _ in range(rng.randint(0, 60)))) for _ in range(rng.randint(1, 4)))
        if "." not in token:
            token += "."
        response, error = send(token)
        check(cls, f"random token {short(token, 60)}", response, error, allowed={200, 401, 403})
    return count


# ---------------------------------------------------------------------------------------------
# Class 4: Apple JWS


def class_apple(deadline):
    cls = "4-apple"
    rng = random.Random(SEED)
    random.seed(SEED)  # transaction ids and notification UUIDs in the payload builders
    signer = None
    if HAVE_CRYPTO:
        try:
            signer = AppleSigner()
        except OSError as error:
            print(f"hostile: cannot read Apple's root ({error}); Apple JWS are only malformed", flush=True)
    else:
        print("hostile: `cryptography` is not installed; Apple JWS are only malformed", flush=True)

    invalid = {422}
    codes = {"purchase_invalid"}

    def to_purchase(jws, label, key=SERVICE, player="p_apple", allowed=invalid, why=None):
        body = {"player_id": player, "signed_transaction": jws}
        data = json.dumps(body).encode()
        big = len(data) > BODY_MAX
        response, error = request("POST", "/v1/purchases/apple", key=key, body=data)
        check(cls, f"purchase {label}", response, error, allowed={413} if big else allowed, codes=None if big or allowed is not invalid else codes,
              no_answer_ok=big, why_allowed=why)

    def to_notification(jws, label, allowed=invalid):
        data = json.dumps({"signedPayload": jws}).encode()
        big = len(data) > BODY_MAX
        response, error = request("POST", "/v1/notifications/apple", body=data)
        check(cls, f"notification {label}", response, error, allowed={413} if big else allowed, codes=None if big else codes, no_answer_ok=big)

    def both(jws, label):
        to_purchase(jws, label)
        to_notification(jws, label)

    garbage_b64 = base64.b64encode(b"garbage" * 10).decode()
    header_x5c = lambda x5c, alg="ES256": b64u(jdump({"alg": alg, "x5c": x5c}))  # noqa: E731
    payload = b64u(transaction_payload(str(int(time.time() * 1000))))
    sig = b64u(bytes(64))
    # Malformed compact forms.
    for jws, label in (
        ("", "empty"),
        (".", "one dot"),
        ("..", "two dots"),
        ("a.b", "two parts"),
        ("a.b.c.d", "four parts"),
        ("a..c", "empty payload"),
        ("!!!.!!!.!!!", "not base64url"),
        ("\u00e9.\u00e9.\u00e9", "non-ASCII"),
        (b64u(b"not json") + "." + payload + "." + sig, "header not JSON"),
        (b64u(b"[1]") + "." + payload + "." + sig, "header an array"),
        (b64u(b'{"alg":"ES256"}') + "." + payload + "." + sig, "no x5c"),
        (b64u(b'{"alg":"ES256","x5c":"abc"}') + "." + payload + "." + sig, "x5c a string"),
        (b64u(b'{"alg":"ES256","x5c":[1,2,3]}') + "." + payload + "." + sig, "x5c numbers"),
        (b64u(b'{"alg":"ES256","x5c":null}') + "." + payload + "." + sig, "x5c null"),
        (header_x5c(["!!!", "@@@", "###"]) + "." + payload + "." + sig, "x5c of 3 non-base64 strings"),
        (header_x5c([garbage_b64] * 3) + "." + payload + "." + sig, "x5c of 3 garbage DER"),
        (header_x5c([""] * 3) + "." + payload + "." + sig, "x5c of 3 empty strings"),
        (header_x5c([garbage_b64]) + "." + payload + "." + sig, "x5c of 1"),
        (header_x5c(["AAAA"] * 1000) + "." + payload + "." + sig, "x5c of 1000"),
        (header_x5c([garbage_b64] * 3, alg="none") + "." + payload + ".", "alg none"),
        (header_x5c([garbage_b64] * 3, alg="HS256") + "." + payload + "." + sig, "alg HS256"),
        (b64u(b'{"alg":"ES256","alg":"none","x5c":[]}') + "." + payload + "." + sig, "duplicate alg"),
        ("e" * 17000 + ".a.b", "17 KB JWS"),
        ("a" * 70000, "70 KB string (body over 64 KiB)"),
    ):
        both(jws, label)

    if signer:
        apple_root = signer.apple_root_b64
        # Properly signed by the self-made leaf, under Apple's real root: payload parsed, chain refused.
        dates = [
            (str(int(time.time() * 1000)), "now"),
            ("253402300800000", "year 10000"),
            ("2534023008000000", "year ~82000"),
            ("9e18", "9e18"),
            ("9000000000000000000", "9000000000000000000"),
            ("9223372036854775807", "Int64.max"),
            ("9223372036854775808", "Int64.max + 1"),
            ("-9223372036854775808", "Int64.min"),
            ("-9000000000000000000", "-9e18 as integer"),
            ("-1", "-1"),
            ("0", "0"),
            ("-62135596800001", "year 0"),
            ("-253402300800000", "year -6000"),
            ("1e400", "1e400"),
            ("1.5", "fraction"),
            ('"1700000000000"', "a string"),
            ("null", "null"),
        ]
        for literal, label in dates:
            transaction = signer.sign(transaction_payload(literal))
            to_purchase(transaction, f"ES256 self-made chain, signedDate {label}")
            to_purchase(transaction, f"ES256 self-made chain, signedDate {label}, player token", key=token_for("p_apple"))
            for notification_type in ("TEST", "REFUND"):
                inner = signer.sign(transaction_payload(literal)) if notification_type == "REFUND" else None
                to_notification(signer.sign(notification_payload(literal, notification_type, inner)), f"{notification_type} ES256 self-made chain, signedDate {label}")
        valid_payload = transaction_payload(str(int(time.time() * 1000)))
        for x5c, label in (
            (signer.self_rooted_chain, "self-made root as the third certificate"),
            (signer.chain[:2], "two certificates"),
            (signer.chain + [apple_root], "four certificates"),
            ([apple_root] * 3, "Apple's root three times"),
            (signer.p384_chain, "P-384 leaf"),
            ([signer.chain[0], garbage_b64, apple_root], "garbage intermediate"),
            ([signer.chain[0], signer.chain[1], apple_root[:-8]], "truncated root"),
            ([signer.chain[0], signer.chain[1], apple_root + "AAAA"], "root with trailing bytes"),
            ([signer.chain[1], signer.chain[0], apple_root], "leaf and intermediate swapped"),
        ):
            both(signer.sign(valid_payload, header={"alg": "ES256", "x5c": x5c}), f"ES256 {label}")
        good = signer.sign(valid_payload)
        head, body, signature = good.split(".")
        raw = base64.urlsafe_b64decode(signature + "==")
        for sig_bytes, label in (
            (bytes(64), "zero signature"),
            (raw[:63], "63-byte signature"),
            (raw + b"\x00", "65-byte signature"),
            (b"\xff" * 64, "r = s = 2^256 - 1"),
            (bytes.fromhex("ffffffff00000000ffffffffffffffffbce6faada7179e84f3b9cac2fc632551") * 2, "r = s = n"),
            (raw[32:] + raw[:32], "r and s swapped"),
        ):
            both(f"{head}.{body}.{b64u(sig_bytes)}", f"ES256 {label}")
        both(f"{head}.{body}.{signature}=", "signature with padding")
        both(f"{head}.{b64u(b'{}')}.{signature}", "payload swapped for {}")
        both(signer.sign(b"\xff\xfe not json"), "signed non-JSON payload")
        both(signer.sign(b"[]"), "signed array payload")
        both(signer.sign(b'{"signedDate":1,"signedDate":253402300800000}'), "signed payload with duplicate signedDate")
        both(signer.sign(transaction_payload("1", bundleId="com.example.game", quantity=2**63 - 1)), "quantity Int64.max")
        both(signer.sign(transaction_payload("1", quantity=-1)), "quantity -1")
        both(signer.sign(transaction_payload("1", transactionId="\u212aate" * 100)), "transactionId non-ASCII")
        # The same transaction redeemed for a victim's look-alike by a look-alike's token.
        to_purchase(good, "ES256 self-made chain, token sub=\u212aate for Kate", key=token_for("\u212aate"), player="Kate",
                    allowed={400, 401, 403}, why="400/401/403: a token may not redeem into a look-alike's wallet")
        big_x5c = [apple_root] * 1000
        both(signer.sign(valid_payload, header={"alg": "ES256", "x5c": big_x5c}), "x5c of 1000 real certificates (over 64 KiB)")

    # Random JWS: random headers around the self-made chain, random mutations of a signed JWS.
    count = 0
    literals = [d for d, _ in (dates if signer else [])] or ["1", "-1", "9e18"]
    while count < 1500 and time_left(deadline) > 0:
        count += 1
        if signer and rng.random() < 0.5:
            literal = rng.choice(literals)
            jws = bytearray(signer.sign(transaction_payload(literal) if rng.random() < 0.5 else notification_payload(literal)).encode())
            for _ in range(rng.randint(0, 3)):
                jws[rng.randrange(len(jws))] = rng.choice(b"AZaz09-_.=!")
            jws = jws.decode("latin-1")
        else:
            x5c = [b64u(bytes(rng.getrandbits(8) for _ in range(rng.randint(0, 200)))) for _ in range(rng.choice([0, 1, 2, 3, 3, 3, 4]))]
            header = {"alg": rng.choice(["ES256", "none", "RS256", ""]), "x5c": x5c}
            jws = b64u(jdump(header)) + "." + b64u(transaction_payload(rng.choice(literals))) + "." + b64u(bytes(rng.getrandbits(8) for _ in range(rng.choice([0, 64, 70]))))
        if rng.random() < 0.5:
            to_purchase(jws, f"random {short(jws, 50)}")
        else:
            to_notification(jws, f"random {short(jws, 50)}")
    return count


# ---------------------------------------------------------------------------------------------
# Class 5: HTTP framing


def raw_check(cls, label, raw, expect=1, timeout=5.0, allowed=None, must_answer=False):
    """Sends raw bytes; whatever comes back must not be a 5xx (but 503 + Retry-After), errors
    from the application must be problem documents; then /healthz must answer within 5 s."""
    responses, error = exchange(raw, timeout=timeout, expect=expect)
    for response in responses:
        status_ok = allowed is None or response.status in allowed
        if response.status >= 500 and not (response.status == 503 and response.header("retry-after")):
            R.fail(cls, label, response.status, response.excerpt(), "5xx answer")
        elif response.status >= 400 and response.body and not (response.header("content-type") or "").startswith("application/problem+json"):
            R.fail(cls, label, response.status, response.excerpt(), "error body is not a problem document")
        elif not status_ok:
            R.fail(cls, label, response.status, response.excerpt(), f"expected {sorted(allowed)}")
        else:
            R.ok(cls)
    if must_answer and len(responses) < expect:
        R.fail(cls, label, "-", f"{len(responses)} of {expect} answers", f"missing answers ({error})")
    if healthy(5.0):
        R.ok(cls)
    else:
        ensure_alive(cls, f"after {label}")
    return responses


def hold_connections(count, payload):
    socks = []
    for _ in range(count):
        try:
            sock = socket.create_connection((HOST, PORT), timeout=3)
            sock.sendall(payload)
            socks.append(sock)
        except OSError:
            break
    return socks


def close_all(socks):
    for sock in socks:
        try:
            sock.close()
        except OSError:
            pass


def class_framing(deadline):
    cls = "5-http"
    rng = random.Random(SEED)
    host = f"Host: 127.0.0.1:{PORT}\r\n".encode()
    spend_head = b"POST /v1/wallets/p1/spend HTTP/1.1\r\n" + host + b"Authorization: Bearer " + SERVICE.encode() + b"\r\nContent-Type: application/json\r\nIdempotency-Key: "

    def key_line():
        return idem(rng).encode() + b"\r\n"

    # Half-sent request heads, left open while /healthz must still answer.
    socks = hold_connections(40, b"GET /healthz HTTP/1.1\r\n" + host + b"X-Half: ")
    socks += hold_connections(10, spend_head + key_line() + b"Content-Length: 100\r\n\r\n{\"amount\":")
    answered = healthy(5.0)
    (R.ok if answered else lambda c: R.fail(c, "50 half-sent requests held open", "-", "", "/healthz did not answer within 5 s"))(cls)
    close_all(socks)
    if not answered:
        ensure_alive(cls, "after half-sent requests")

    # Slowloris: a few dozen connections trickling header lines, bounded in count and time.
    socks = hold_connections(30, b"GET /healthz HTTP/1.1\r\n" + host)
    trickle_end = time.monotonic() + min(8.0, max(2.0, time_left(deadline) / 4))
    line = 0
    slow_ok = True
    while time.monotonic() < trickle_end and line < 40:
        line += 1
        for sock in socks:
            try:
                sock.send(b"X-Slow-%d: %d\r\n" % (line, line))
            except OSError:
                pass
        if line % 4 == 0 and not healthy(5.0):
            slow_ok = False
        time.sleep(0.25)
    (R.ok if slow_ok else lambda c: R.fail(c, f"slowloris: 30 connections, {line} header lines each", "-", "", "/healthz did not answer within 5 s"))(cls)
    close_all(socks)
    ensure_alive(cls, "after slowloris") and R.ok(cls)

    # Exports nobody reads: the server must keep answering and committing writes meanwhile
    # (an export holds no read transaction, and the stalled connections are cut after the idle timeout).
    socks = []
    for _ in range(10):
        try:
            sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
            sock.settimeout(3)
            sock.connect((HOST, PORT))
            sock.sendall(b"GET /v1/ledger/export?format=jsonl HTTP/1.1\r\n" + host + b"Authorization: Bearer " + AUDITOR.encode() + b"\r\n\r\n")
            socks.append(sock)
        except OSError:
            break
    time.sleep(0.5)
    sent = "10 exports requested and never read, then a spend"
    response, error = request("POST", "/v1/wallets/p_stall/spend", SERVICE, body=b'{"amount":1}', headers=[("Idempotency-Key", idem(rng))])
    check(cls, sent, response, error, allowed={201, 409}, why_allowed="a spend answers while exports stall")
    (R.ok if healthy(5.0) else lambda c: R.fail(c, sent, "-", "", "/healthz did not answer within 5 s"))(cls)
    close_all(socks)
    ensure_alive(cls, "after stalled exports") and R.ok(cls)

    cases = [
        ("64 KB header value", b"GET /healthz HTTP/1.1\r\n" + host + b"X-Big: " + b"a" * 65536 + b"\r\n\r\n", None),
        ("1000 headers", b"GET /healthz HTTP/1.1\r\n" + host + b"".join(b"X-H%d: v\r\n" % i for i in range(1000)) + b"\r\n", None),
        ("64 KB request target", b"GET /healthz?" + b"a" * 65536 + b" HTTP/1.1\r\n" + host + b"\r\n", None),
        ("64 KB header name", b"GET /healthz HTTP/1.1\r\n" + host + b"X" * 65536 + b": v\r\n\r\n", None),
        ("64 KB Authorization", b"GET /v1/products HTTP/1.1\r\n" + host + b"Authorization: Bearer " + b"k" * 65536 + b"\r\n\r\n", None),
        ("64 KB X-Request-Id", b"GET /healthz HTTP/1.1\r\n" + host + b"X-Request-Id: " + b"r" * 65536 + b"\r\n\r\n", None),
        ("10 MB Content-Length, 12-byte body", spend_head + key_line() + b"Content-Length: 10485760\r\nConnection: close\r\n\r\n{\"amount\":1}", {413, 400}),
        ("10 MB Content-Length on an open route", b"POST /v1/notifications/apple HTTP/1.1\r\n" + host + b"Content-Type: application/json\r\nContent-Length: 10485760\r\n\r\n{\"signedPayload\":\"", {413, 400}),
        ("Content-Length: abc", spend_head + key_line() + b"Content-Length: abc\r\n\r\n{}", {400}),
        ("Content-Length: -1", spend_head + key_line() + b"Content-Length: -1\r\n\r\n{}", {400}),
        ("Content-Length: 1, 2", spend_head + key_line() + b"Content-Length: 1, 2\r\n\r\n{}", {400}),
        ("two different Content-Lengths", spend_head + key_line() + b"Content-Length: 2\r\nContent-Length: 12\r\n\r\n{\"amount\":1}", {400}),
        ("Content-Length: 2^70", spend_head + key_line() + b"Content-Length: 1180591620717411303424\r\n\r\n{}", {400, 413}),
        ("Content-Length: 0x10", spend_head + key_line() + b"Content-Length: 0x10\r\n\r\n{}", {400}),
        ("Content-Length: +12", spend_head + key_line() + b"Content-Length: +12\r\n\r\n{\"amount\":1}", {400}),
        ("Content-Length and chunked", spend_head + key_line() + b"Content-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\nc\r\n{\"amount\":1}\r\n0\r\n\r\n", {400, 201}),
        ("Transfer-Encoding: gzip, chunked", spend_head + key_line() + b"Transfer-Encoding: gzip, chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n", {400, 415, 501}),
        ("Transfer-Encoding: xchunked", spend_head + key_line() + b"Transfer-Encoding: xchunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n", {400, 501}),
        ("chunk size zz", spend_head + key_line() + b"Transfer-Encoding: chunked\r\n\r\nzz\r\n{}\r\n0\r\n\r\n", {400}),
        ("chunk size 2^80", spend_head + key_line() + b"Transfer-Encoding: chunked\r\n\r\n100000000000000000000\r\n{}\r\n0\r\n\r\n", {400, 413}),
        ("chunk size -1", spend_head + key_line() + b"Transfer-Encoding: chunked\r\n\r\n-1\r\n{}\r\n0\r\n\r\n", {400}),
        ("chunked body never finished", spend_head + key_line() + b"Transfer-Encoding: chunked\r\n\r\n5\r\n{\"amo", None),
        ("invalid method FOO", b"FOO /healthz HTTP/1.1\r\n" + host + b"\r\n", {400, 404, 405, 501}),
        ("method with NUL", b"GE\x00T /healthz HTTP/1.1\r\n" + host + b"\r\n", {400, 501}),
        ("method of 1000 letters", b"G" * 1000 + b" /healthz HTTP/1.1\r\n" + host + b"\r\n", {400, 404, 405, 501}),
        ("lower-case get", b"get /healthz HTTP/1.1\r\n" + host + b"\r\n", {400, 404, 405, 501}),
        ("DELETE a product", b"DELETE /v1/products/x HTTP/1.1\r\n" + host + b"Authorization: Bearer " + ADMIN.encode() + b"\r\n\r\n", {405}),
        ("PATCH a wallet", b"PATCH /v1/wallets/p1 HTTP/1.1\r\n" + host + b"Authorization: Bearer " + SERVICE.encode() + b"\r\n\r\n", {405}),
        ("TRACE", b"TRACE / HTTP/1.1\r\n" + host + b"\r\n", {400, 404, 405, 501}),
        ("CONNECT", b"CONNECT 127.0.0.1:1 HTTP/1.1\r\n" + host + b"\r\n", {400, 404, 405, 501}),
        ("OPTIONS *", b"OPTIONS * HTTP/1.1\r\n" + host + b"\r\n", {200, 204, 400, 404, 405, 501}),
        ("absolute-form target", b"GET http://127.0.0.1/healthz HTTP/1.1\r\n" + host + b"\r\n", {200, 400, 404}),
        ("HTTP/2.0 request line", b"GET /healthz HTTP/2.0\r\n" + host + b"\r\n", {200, 400, 505}),
        ("HTTP/9.9 request line", b"GET /healthz HTTP/9.9\r\n" + host + b"\r\n", {400, 505}),
        ("HTTP/0.9 request", b"GET /healthz\r\n\r\n", {200, 400, 505}),
        ("HTTP/1.0 request", b"GET /healthz HTTP/1.0\r\n\r\n", {200}),
        ("bare LF line endings", b"GET /healthz HTTP/1.1\n" + host.replace(b"\r\n", b"\n") + b"\n", {200, 400}),
        ("header without a colon", b"GET /healthz HTTP/1.1\r\n" + host + b"NoColon\r\n\r\n", {400}),
        ("space before the colon", b"GET /healthz HTTP/1.1\r\n" + host + b"X-A : v\r\n\r\n", {200, 400}),
        ("obs-fold continuation", b"GET /healthz HTTP/1.1\r\n" + host + b"X-A: v\r\n  folded\r\n\r\n", {200, 400}),
        ("NUL in a header value", b"GET /healthz HTTP/1.1\r\n" + host + b"X-A: a\x00b\r\n\r\n", {200, 400}),
        ("non-ASCII header name", b"GET /healthz HTTP/1.1\r\n" + host + b"X-\xc3\xa9: v\r\n\r\n", {200, 400}),
        ("no Host header", b"GET /healthz HTTP/1.1\r\n\r\n", {200, 400}),
        ("two Host headers", b"GET /healthz HTTP/1.1\r\n" + host + host + b"\r\n", {200, 400}),
        ("raw UTF-8 and NUL in the target", b"GET /v1/wallets/\xe2\x84\xaaate\x00 HTTP/1.1\r\n" + host + b"Authorization: Bearer " + SERVICE.encode() + b"\r\n\r\n", {400, 404}),
        ("invalid percent-encoding in the path", b"GET /v1/wallets/%zz%ff%c0%af HTTP/1.1\r\n" + host + b"Authorization: Bearer " + SERVICE.encode() + b"\r\n\r\n", {400, 404}),
        ("h2c upgrade", b"GET /healthz HTTP/1.1\r\n" + host + b"Connection: Upgrade, HTTP2-Settings\r\nUpgrade: h2c\r\nHTTP2-Settings: AAMAAABkAARAAAAAAAIAAAAA\r\n\r\n", {200, 400}),
        ("HTTP/2 preface", b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", {400, 505}),
        ("TLS client hello", bytes.fromhex("16030100a5010000a10303") + bytes(rng.getrandbits(8) for _ in range(160)), {400}),
        ("Expect: 100-continue without a body", spend_head + key_line() + b"Expect: 100-continue\r\nContent-Length: 12\r\n\r\n", None),
        ("Expect: bogus", spend_head + key_line() + b"Expect: bogus\r\nContent-Length: 12\r\n\r\n{\"amount\":1}", {201, 400, 417}),
    ]
    for label, raw, allowed in cases:
        if time.monotonic() > HARD_DEADLINE:
            break
        raw_check(cls, label, raw, allowed=allowed)

    # Chunked bodies bigger than 64 KiB: 413 payload_too_large.
    for route_head, label in (
        (spend_head + key_line(), "spend"),
        (b"POST /v1/notifications/apple HTTP/1.1\r\n" + host + b"Content-Type: application/json\r\n", "notification"),
        (b"PUT /v1/products/com.example.game.fuzzproduct HTTP/1.1\r\n" + host + b"Authorization: Bearer " + ADMIN.encode() + b"\r\nContent-Type: application/json\r\n", "product"),
    ):
        chunk = b"x" * 8192
        body = b'{"reason":"'
        raw = route_head + b"Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n" + b"%x\r\n%s\r\n" % (len(body), body)
        raw += (b"%x\r\n" % len(chunk) + chunk + b"\r\n") * 10 + b'2\r\n"}\r\n0\r\n\r\n'
        responses = raw_check(cls, f"chunked {label} body of 80 KiB", raw, allowed={413})
        if not responses:
            R.fail(cls, f"chunked {label} body of 80 KiB", "-", "", "no answer (expected 413)")

    # Pipelined requests: every one answered, in order.
    pipeline = b""
    for index in range(5):
        pipeline += b"GET /healthz HTTP/1.1\r\n" + host + b"X-Request-Id: pipe-%d\r\n\r\n" % index
    pipeline += spend_head + key_line() + b'Content-Length: 12\r\n\r\n{"amount":1}'
    pipeline += b"GET /v1/wallets/p1 HTTP/1.1\r\n" + host + b"Authorization: Bearer " + SERVICE.encode() + b"\r\n\r\n"
    pipeline += b"GET /v1/nope HTTP/1.1\r\n" + host + b"Connection: close\r\n\r\n"
    responses = raw_check(cls, "8 pipelined requests", pipeline, expect=8, must_answer=True)
    statuses = [r.status for r in responses]
    if statuses == [200] * 5 + [201, 200, 404]:
        R.ok(cls)
    else:
        R.fail(cls, "8 pipelined requests", statuses, "", "expected [200]*5 + [201, 200, 404] in order")
    pipeline = b"".join(spend_head + key_line() + b'Content-Length: 6\r\n\r\n{"amou' + b"GET /healthz HTTP/1.1\r\n" + host + b"\r\n" for _ in range(2))
    raw_check(cls, "pipelined bodies shorter than their JSON (Content-Length 6)", pipeline, expect=4)
    pipeline = spend_head + key_line() + b'Content-Length: 12\r\n\r\n{"amount":1}GARBAGE\r\n\r\n' + b"GET /healthz HTTP/1.1\r\n" + host + b"Connection: close\r\n\r\n"
    raw_check(cls, "pipelined: garbage between requests", pipeline, expect=2)
    many = b"".join(b"GET /healthz HTTP/1.1\r\n" + host + b"\r\n" for _ in range(2000)) + b"GET /healthz HTTP/1.1\r\n" + host + b"Connection: close\r\n\r\n"
    responses = raw_check(cls, "2001 pipelined GET /healthz", many, expect=2001, timeout=10.0)
    if len(responses) == 2001:
        R.ok(cls)
    else:
        R.fail(cls, "2001 pipelined GET /healthz", "-", f"{len(responses)} answers", "not every pipelined request was answered")

    # Random framing garbage, each followed by the /healthz check.
    methods = [b"GET", b"POST", b"PUT", b"DELETE", b"FOO", b"G\x00T", b"", b"POST POST"]
    targets = [b"/healthz", b"/v1/wallets/p1/spend", b"/v1/purchases", b"/v1/notifications/apple", b"*", b"", b"/%", b"/\xff", b"//", b"/v1/wallets/%2e%2e/spend"]
    header_pool = [b"Content-Length: 5", b"Content-Length: -5", b"Content-Length: 99999999999", b"Transfer-Encoding: chunked", b"Transfer-Encoding: identity",
                   b"Connection: keep-alive", b"Content-Type: application/json", b"Authorization: Bearer " + SERVICE.encode(), b"X: \xff\xfe", b": empty-name",
                   b"Expect: 100-continue", b"Idempotency-Key: \x7f", b"Host: ", b"Content-Length: 5\r\nContent-Length: 6"]
    count = 0
    while count < 300 and time_left(deadline) > 0:
        count += 1
        head = rng.choice(methods) + b" " + rng.choice(targets) + b" " + rng.choice([b"HTTP/1.1", b"HTTP/1.0", b"HTTP/1.1 x", b"HTP/1.1"]) + b"\r\n" + host
        for _ in range(rng.randint(0, 5)):
            head += rng.choice(header_pool) + b"\r\n"
        body = bytes(rng.getrandbits(8) for _ in range(rng.randint(0, 300)))
        raw = head + b"\r\n" + body
        if rng.random() < 0.2:
            raw = raw[: rng.randrange(len(raw))]
        raw_check(cls, f"random framing {short(raw[:60].decode('latin-1'), 70)}", raw, timeout=2.0)
    return count


# ---------------------------------------------------------------------------------------------
# Class 6: query strings

# The feed's parameters, for its random phase: `wait` stays short (a long poll holds a request
# for up to `wait` seconds when nothing newer exists).
EVENT_NAMES = ["after", "limit", "wait", "types"]
EVENT_VALUES = ["-1", "0", "1", "500", "501", "99999999999999999999", "abc", "", "%00", "%ff", "31", "1.5", "*", "spend.created",
                "spend.created,refund.applied", "*,spend.created", "SPEND.CREATED", "spend.created%00", ",", "%2C%2C", "9223372036854775807"]


def event_query_cases():
    """GET /v1/events: bad cursors, limits, waits and types, duplicates, huge type lists."""
    events = "/v1/events"
    bad = {400}
    every_type = ["purchase.credited", "spend.created", "adjustment.created", "bonus.granted", "lot.expired", "hold.created", "hold.captured",
                  "hold.released", "hold.expired", "refund.applied", "refund.reversed", "entitlement.changed"]
    return [
        (events, SERVICE, "", {200}),
        (events, AUDITOR, "after=0&limit=1", {200}),
        (events, ADMIN, "after=0&limit=500&types=*", {200}),
        (events, SERVICE, "after=-1", bad),
        (events, SERVICE, "after=abc", bad),
        (events, SERVICE, "after=1.5", bad),
        (events, SERVICE, "after=", bad),
        (events, SERVICE, "after=%00", bad),
        (events, SERVICE, "after=9223372036854775807", {200}),
        (events, SERVICE, "after=9223372036854775808", bad),
        (events, SERVICE, "after=-9223372036854775808", bad),
        (events, SERVICE, "limit=0", bad),
        (events, SERVICE, "limit=-1", bad),
        (events, SERVICE, "limit=501", bad),
        (events, SERVICE, "limit=9223372036854775807", bad),
        (events, SERVICE, "limit=1e2", bad),
        (events, SERVICE, "wait=-1", bad),
        (events, SERVICE, "wait=31", bad),
        (events, SERVICE, "wait=99999999999999999999", bad),
        (events, SERVICE, "wait=1.5", bad),
        (events, SERVICE, "wait=abc", bad),
        (events, SERVICE, "after=9223372036854775807&wait=1", {200}),
        (events, SERVICE, "types=", bad),
        (events, SERVICE, "types=bogus", bad),
        (events, SERVICE, "types=SPEND.CREATED", bad),
        (events, SERVICE, "types=spend.created%00", bad),
        (events, SERVICE, "types=*,spend.created", bad),
        (events, SERVICE, "types=,", bad),
        (events, SERVICE, "types=spend.created,refund.applied", {200}),
        (events, SERVICE, "types=" + ",".join(every_type), {200}),
        (events, SERVICE, "types=" + ",".join(every_type + ["spend.created", "spend.created"]), bad),
        (events, SERVICE, "types=" + ",".join(["spend.created"] * 100), bad),
        (events, SERVICE, "types=" + ",".join(["spend.created"] * 5000), None),
        (events, SERVICE, "types=" + "x" * 60000, None),
        (events, SERVICE, "types=%E2%80%AEspend.created", bad),
        (events, SERVICE, "types=%20spend.created", None),
        (events, SERVICE, "after=1&after=-1", None),
        (events, SERVICE, "after=-1&after=1", None),
        (events, SERVICE, "limit=1&limit=0", None),
        (events, SERVICE, "wait=0&wait=31", None),
        (events, SERVICE, "types=*&types=bogus", None),
        (events, SERVICE, "types[]=spend.created", None),
        (events, SERVICE, "&".join(f"types={t}" for t in every_type), None),
        (events, SERVICE, "&".join(f"p{i}=1" for i in range(5000)), None),
    ]


def class_queries(deadline):
    cls = "6-query"
    rng = random.Random(SEED)
    history = "/v1/wallets/p1/transactions"
    statement = "/v1/wallets/p1/statement"
    export = "/v1/ledger/export"
    events = "/v1/events"
    bad = {400}
    cases = [
        (history, SERVICE, "", {200}),
        (history, SERVICE, "limit=-1", bad),
        (history, SERVICE, "limit=0", bad),
        (history, SERVICE, "limit=501", bad),
        (history, SERVICE, "limit=99999999999999999999", bad),
        (history, SERVICE, "limit=9223372036854775807", bad),
        (history, SERVICE, "limit=-9223372036854775808", bad),
        (history, SERVICE, "limit=1.5", bad),
        (history, SERVICE, "limit=1e2", bad),
        (history, SERVICE, "limit=", bad),
        (history, SERVICE, "limit=%00", bad),
        (history, SERVICE, "limit=%EF%BC%91", bad),  # fullwidth 1
        (history, SERVICE, "limit=+5", None),
        (history, SERVICE, "limit=%205", bad),
        (history, SERVICE, "after=0", None),
        (history, SERVICE, "after=-1", bad),
        (history, SERVICE, "after=9223372036854775807", {200}),
        (history, SERVICE, "after=9223372036854775808", bad),
        (history, SERVICE, "after=abc", bad),
        (history, SERVICE, "kind=bogus", bad),
        (history, SERVICE, "kind=SPEND", bad),
        (history, SERVICE, "from=10000-01-01T00:00:00Z", bad),
        (history, SERVICE, "from=2026-02-30T00:00:00Z", bad),
        (history, SERVICE, "to=2026-01-01T24:00:00Z", bad),
        (history, SERVICE, "from=2026-13-01T00:00:00Z", bad),
        (history, SERVICE, "from=2026-01-01T00:00:00%2B25:00", bad),
        (history, SERVICE, "from=2026-01-01", bad),
        (history, SERVICE, "from=-2026-01-01T00:00:00Z", bad),
        (history, SERVICE, "from=0000-01-01T00:00:00Z", None),
        (history, SERVICE, "from=2026-01-01T00:00:60Z", None),
        (history, SERVICE, "from=" + "9" * 70, bad),
        (history, SERVICE, "from=2027-01-01T00:00:00Z&to=2026-01-01T00:00:00Z", None),
        (history, SERVICE, "limit=1&limit=500", None),
        (history, SERVICE, "limit=1&limit=-1", None),
        (history, SERVICE, "limit=-1&limit=1", None),
        (history, SERVICE, "from=2026-01-01T00:00:00Z&from=2026-02-30T00:00:00Z", None),
        (history, SERVICE, "limit[]=1", None),
        (history, SERVICE, "%zz=1&limit=%", None),
        (history, SERVICE, "limit=1;limit=2", None),
        (history, SERVICE, "a=" + "b" * 60000, None),
        (history, SERVICE, "&".join(f"p{i}=1" for i in range(5000)), None),
        (statement, SUPPORT, "from=10000-01-01T00:00:00Z", bad),
        (statement, SUPPORT, "from=2026-02-30T00:00:00Z", bad),
        (statement, SUPPORT, "to=2026-01-01T24:00:00Z", bad),
        (statement, SUPPORT, "from=2026-01-01T00:00:00Z&from=2027-01-01T00:00:00Z", None),
        (statement, SUPPORT, "from=-99999-01-01T00:00:00Z", bad),
        (export, AUDITOR, "format=xml", bad),
        (export, AUDITOR, "format=CSV", None),
        (export, AUDITOR, "format=csv&format=xml", None),
        (export, AUDITOR, "format=", bad),
        (export, AUDITOR, "from=10000-01-01T00:00:00Z", bad),
        (export, AUDITOR, "from=2026-02-30T00:00:00Z", bad),
        (export, AUDITOR, "to=2026-01-01T24:00:00Z", bad),
        (export, AUDITOR, "player=%E2%84%AAate", None),
        (export, AUDITOR, "player=" + "K" * 300, None),
        (export, AUDITOR, "currency=" + "%00", None),
        (export, AUDITOR, "format=jsonl&player=Kate&player=p1", None),
    ] + event_query_cases()
    for path, key, query, allowed in cases:
        if time.monotonic() > HARD_DEADLINE:
            break
        target = path + ("?" + query if query else "")
        response, error = request("GET", target, key=key)
        check(cls, f"GET {path}?{short(query, 60)}", response, error, allowed=allowed)

    for path, key, query, allowed in (
        (events, token_for("p1"), "", {401, 403}),
        (events, SUPPORT, "", {403}),
        (events, None, "", {401}),
        ("/v1/webhooks", SERVICE, "", {403}),
        ("/v1/webhooks", AUDITOR, "", {403}),
        ("/v1/webhooks", ADMIN, "limit=-1&after=x", {200}),
    ):
        response, error = request("GET", path + ("?" + query if query else ""), key=key)
        check(cls, f"GET {path}?{short(query, 60)} as {'no key' if key is None else 'a ' + ('player' if key.count('.') == 2 else 'staff') + ' key'}", response, error, allowed=allowed)

    names = ["limit", "after", "kind", "from", "to", "format", "player", "currency"]
    values = ["-1", "0", "1", "500", "501", "99999999999999999999", "abc", "", "%00", "%ff", "spend", "csv", "jsonl", "xml",
              "10000-01-01T00:00:00Z", "2026-02-30T00:00:00Z", "2026-01-01T24:00:00Z", "2026-11-22T00:00:00Z", "1e3", "%E2%84%AAate"]
    count = 0
    while count < 5000 and time_left(deadline) > 0:
        count += 1
        path, key = rng.choice([(history, SERVICE), (statement, SUPPORT), (export, AUDITOR), (events, SERVICE)])
        if path == events:
            query = "&".join(f"{rng.choice(EVENT_NAMES)}={rng.choice(EVENT_VALUES)}" for _ in range(rng.randint(1, 4)))
        else:
            query = "&".join(f"{rng.choice(names)}={rng.choice(values)}" for _ in range(rng.randint(1, 4)))
        response, error = request("GET", f"{path}?{query}", key=key)
        check(cls, f"random GET {path}?{short(query, 60)}", response, error)
    return count


# ---------------------------------------------------------------------------------------------
# Class 7: Google Play


def class_google(deadline):
    cls = "7-google"
    rng = random.Random(SEED)
    if not GOOGLE:
        print("hostile: Google Play is not configured (no stand-in Google); class 7 is skipped", flush=True)
        return 0
    victim = "g_victim"

    def idem(rng):
        # Class 1 draws its message ids from the same seed: these must not meet them.
        return "hostile-g7-%016x" % rng.getrandbits(64)

    def outcome(response):
        try:
            answer = json.loads(response.body)
        except ValueError:
            return {}
        return answer if isinstance(answer, dict) else {}

    def expect(label, response, key, wanted):
        """The answer's JSON member `key` must be `wanted` (one of them, for a set)."""
        if response is None or response.status >= 300:
            return
        got = outcome(response).get(key)
        if got in (wanted if isinstance(wanted, set) else {wanted}):
            R.ok(cls)
        else:
            R.fail(cls, label, response.status, response.excerpt(), f"expected {key} {wanted!r}, not {got!r}")

    def balance_is(label, player, wanted):
        got = balance_of(player)
        if got == wanted:
            R.ok(cls)
        else:
            R.fail(cls, label, "-", f"balance of {player}: {got}", f"expected {wanted}")

    def unreadable(label, body):
        """Data the wallet cannot read under Google's token: 400, or recorded once as invalid."""
        response, error = push(body)
        check(cls, label, response, error, allowed={200, 400}, why_allowed="400, or 200 with the push recorded invalid")
        expect(label, response, "outcome", "invalid")

    # The purchases a believed forgery would take back: ok-void-1 and ok-void-2 are voided at Google.
    for token in ("ok-void-1", "ok-void-2"):
        response, error = request("POST", "/v1/purchases/google", key=SERVICE, body=google_body(victim, token))
        check(cls, f"control: {token} redeemed for {victim} by the service", response, error, allowed={201})
    held = balance_of(victim)

    # Controls: Google's token, a test notification; the same message id again is a replay,
    # whatever its data says.
    message_id = idem(rng)
    response, error = push(push_body(message_id=message_id))
    check(cls, "control: a test push with Google's token", response, error, allowed={200})
    expect("control: a test push", response, "replayed", False)
    expect("control: a test push", response, "outcome", "recorded")
    response, error = push(push_body(message_id=message_id))
    check(cls, "the same push again", response, error, allowed={200})
    expect("the same push again", response, "replayed", True)
    response, error = push(push_body(rtdn(void_event("ok-void-1")), message_id=message_id))
    check(cls, "a void under the test push's message id", response, error, allowed={200})
    expect("a void under the test push's message id", response, "replayed", True)
    balance_is("after a void sent under a used message id", victim, held)

    # Forged tokens, each on a void that would take 5 credits: 401 `unauthorized`, nothing recorded.
    void_1 = rtdn(void_event("ok-void-1"))
    forged = {forgery: google_push_token(forgery) for forgery in google_standin.FORGERIES}
    valid = google_push_token()
    head, claims, signature = valid.split(".")
    forged.update({
        "no Authorization header": None,
        "Bearer alone": "",
        "garbage": "garbage",
        "three dots": "...",
        "valid token with a space inside": head + "." + claims + " ." + signature,
        "valid token's header and claims, no signature": head + "." + claims,
        "valid token twice": valid + "." + valid,
        "valid token, claims re-encoded with padding": head + "." + claims + "==." + signature,
        "player's wallet JWT": token_for(victim),
        "service key": SERVICE,
        "admin key": ADMIN,
        "9000-byte token": "a" * 9000,
        "claims nested 2000 deep, signed by Google's key": "",
    })
    nested_claims = b'{"aud":' + b"[" * 2000 + b"]" * 2000 + b"}"
    nested_input = b64u(jdump({"alg": "RS256", "kid": google_standin.PUSH_KID, "typ": "JWT"})) + "." + b64u(nested_claims)
    forged["claims nested 2000 deep, signed by Google's key"] = nested_input + "." + b64u(
        GOOGLE_PUSH_KEY.sign(nested_input.encode(), rsa_padding.PKCS1v15(), hashes.SHA256()))
    forged_ids = []
    for label, token in forged.items():
        forged_ids.append(idem(rng))
        response, error = push(push_body(void_1, forged_ids[-1]), token=token)
        check(cls, f"push with a forged token ({label})", response, error, allowed={401}, codes={"unauthorized"})
    response, error = request("POST", "/v1/notifications/google", body=push_body(void_1, idem(rng)), headers=[("Authorization", "Basic " + base64.b64encode(b"pubsub:x").decode())])
    check(cls, "push with Basic credentials", response, error, allowed={401}, codes={"unauthorized"})
    balance_is("after the forged pushes", victim, held)
    # None of them was recorded: their message ids are still free.
    for message_id in forged_ids:
        response, error = push(push_body(message_id=message_id))
        check(cls, "a test push under a forged push's message id", response, error, allowed={200})
        expect("a test push under a forged push's message id", response, "replayed", False)

    # Malformed pushes under Google's token: 400 (413 over 64 KiB); unreadable notification data
    # may also be recorded once as invalid, so that Pub/Sub stops delivering it.
    def message(data=None, message_id=None, **members):
        body = {"data": data if data is not None else base64.b64encode(rtdn()).decode(), "messageId": idem(rng) if message_id is None else message_id}
        body.update(members)
        return body

    envelopes = [
        ("no message", jdump({"subscription": PUSH_SUBSCRIPTION}), {400}),
        ("message a string", jdump({"message": "x"}), {400}),
        ("message an array", jdump({"message": [message()]}), {400}),
        ("no messageId", jdump({"message": {"data": message()["data"]}}), {400}),
        ("messageId a number", jdump({"message": message(message_id=7)}), {400}),
        ("messageId empty", jdump({"message": message(message_id="")}), {400}),
        ("messageId of 65 characters", jdump({"message": message(message_id="m" * 65)}), {400}),
        ("messageId with NUL", jdump({"message": message(message_id="m\u0000")}), {400}),
        ("messageId with a newline", jdump({"message": message(message_id="m\nn")}), {400}),
        ("messageId non-ASCII", jdump({"message": message(message_id="m\u00e9")}), {200, 400}),
        ("no data", jdump({"message": {"messageId": idem(rng)}}), {400}),
        ("data a number", jdump({"message": message(data=1)}), {400}),
        ("data null", jdump({"message": message(data=None) | {"data": None}}), {400}),
        ("data not base64", jdump({"message": message(data="!!!!")}), {400}),
        ("data base64 with a newline", jdump({"message": message(data=base64.encodebytes(rtdn() * 3).decode())}), {200, 400}),
        ("a test notification padded to 16 KiB", jdump({"message": message(data=base64.b64encode(rtdn() + b" " * (16384 - len(rtdn()))).decode())}), {200}),
        ("a test notification padded to 20 KiB", jdump({"message": message(data=base64.b64encode(rtdn() + b" " * (20480 - len(rtdn()))).decode())}), {400}),
        ("data of 40 KiB", jdump({"message": message(data=base64.b64encode(b"x" * 40000).decode())}), {400}),
        ("data of 60 KB of base64", jdump({"message": message(data="A" * 60000)}), {400}),
        ("body of 80 KB", jdump({"message": message(data="A" * 80000)}), {413}),
        ("envelope nested 10,000 deep", b'{"message":' + b"[" * 10000 + b"]" * 10000 + b"}", {400}),
        ("message nested 100 deep in attributes", jdump({"message": message(attributes=json.loads('{"a":' * 100 + "1" + "}" * 100))}), {400}),
        ("duplicate message", b'{"message":' + jdump(message()) + b',"message":' + jdump(message()) + b"}", {400}),
        ("duplicate messageId", b'{"message":{"data":"' + base64.b64encode(rtdn()) + b'","messageId":"a1","messageId":"a2"}}', {400}),
        ("duplicate data (void, then test)", b'{"message":{"messageId":"' + idem(rng).encode() + b'","data":"' + base64.b64encode(void_1) + b'","data":"' + base64.b64encode(rtdn()) + b'"}}', {400}),
        ("body an array", b"[" + push_body() + b"]", {400}),
        ("empty body", b"", {400}),
    ]
    for label, body, allowed in envelopes:
        response, error = push(body)
        check(cls, f"push: {label}", response, error, allowed=allowed, no_answer_ok=len(body) > BODY_MAX)
    for label, data in (
        ("not JSON", b"\xff\xfe not json"),
        ("empty", b""),
        ("a JSON array", b"[]"),
        ("nested 8,000 deep", b'{"packageName":"' + GOOGLE_PACKAGE.encode() + b'","x":' + b"[" * 4000 + b"]" * 4000 + b"}"),
        ("no packageName", jdump({"version": "1.0", "testNotification": {}})),
        ("packageName a number", jdump({"version": "1.0", "packageName": 1, "testNotification": {}})),
        ("duplicate packageName", b'{"packageName":"com.other.game","packageName":"' + GOOGLE_PACKAGE.encode() + b'",' + void_1[1:]),
        ("lone surrogate in packageName", b'{"packageName":"\\ud800","testNotification":{}}'),
        ("void of token ../../voidedpurchases", rtdn(void_event("../../voidedpurchases"))),
        ("void of token ok-void-1/../ok-void-2", rtdn(void_event("ok-void-1/../ok-void-2"))),
        ("void of token ok-void-1%2F..", rtdn(void_event("ok-void-1%2F.."))),
        ("void of token ..", rtdn(void_event(".."))),
        ("void of token ok-void-1:consume", rtdn(void_event("ok-void-1:consume"))),
        ("void of token with a query", rtdn(void_event("ok-void-1?token=x"))),
        ("void of an empty token", rtdn(void_event(""))),
        ("void of a token of 300 bytes", rtdn(void_event("ok-" + "v" * 297))),
        ("void of a token that is a number", rtdn({"voidedPurchaseNotification": {"purchaseToken": 7, "productType": 2, "refundType": 1}})),
        ("purchase of sku ../x", rtdn({"oneTimeProductNotification": {"version": "1.0", "notificationType": 1, "purchaseToken": "ok-" + idem(rng), "sku": "../x"}})),
        ("purchase with no sku", rtdn({"oneTimeProductNotification": {"version": "1.0", "notificationType": 1, "purchaseToken": "ok-" + idem(rng)}})),
    ):
        unreadable(f"push whose data is {label}", push_body(data=base64.b64encode(data).decode()))
    balance_is("after the malformed pushes", victim, held)

    # Readable pushes that move nothing: another app's void, a subscription's, a test.
    for label, data, wanted in (
        ("another package's void of ok-void-1", rtdn(void_event("ok-void-1"), package="com.other.game"), "invalid"),
        ("a look-alike package's void (\u212a)", rtdn(void_event("ok-void-1"), package="com.example.game\u212a"), {"invalid"}),
        ("a subscription's void", rtdn({"voidedPurchaseNotification": {"purchaseToken": "ok-void-1", "productType": 1, "refundType": 1}}), "recorded"),
        ("a subscription notification", rtdn({"subscriptionNotification": {"version": "1.0", "notificationType": 4, "purchaseToken": "ok-sub", "subscriptionId": "s"}}), "recorded"),
        ("a canceled pending purchase", rtdn({"oneTimeProductNotification": {"version": "1.0", "notificationType": 2, "purchaseToken": "ok-void-1", "sku": PRODUCT}}), "recorded"),
        ("a purchase completed, of no bound player", rtdn({"oneTimeProductNotification": {"version": "1.0", "notificationType": 1, "purchaseToken": "ok-" + idem(rng), "sku": PRODUCT}}), "recorded"),
        ("a base64url test notification", None, "recorded"),
    ):
        body = push_body(data=b64u(rtdn() + b"  ") if data is None else base64.b64encode(data).decode())
        response, error = push(body)
        check(cls, f"push: {label}", response, error, allowed={200, 400} if "\u212a" in label else {200})
        expect(f"push: {label}", response, "outcome", wanted)
    balance_is("after pushes that move nothing", victim, held)

    # The void itself, believed: it takes the purchase back once, whatever the redeliveries.
    message_id = idem(rng)
    response, error = push(push_body(void_1, message_id))
    check(cls, "control: the void of ok-void-1 with Google's token", response, error, allowed={200})
    expect("control: the void of ok-void-1", response, "outcome", "refunded")
    balance_is("after the void of ok-void-1", victim, held - 5)
    response, error = push(push_body(void_1, message_id))
    check(cls, "the void of ok-void-1 delivered again", response, error, allowed={200})
    expect("the void of ok-void-1 delivered again", response, "replayed", True)
    response, error = push(push_body(void_1))
    check(cls, "the void of ok-void-1 under another message id", response, error, allowed={200})
    expect("the void of ok-void-1 under another message id", response, "outcome", {"already_applied", "superseded"})
    response, error = push(push_body(rtdn(void_event("ok-void-2", refund_type=2, quantity=1))))
    check(cls, "control: the partial void of ok-void-2 (its one unit)", response, error, allowed={200})
    balance_is("after both voids", victim, held - 10)
    # A purchase voided before anyone redeemed it never credits.
    response, error = push(push_body(rtdn(void_event("ok-void-3"))))
    check(cls, "the void of ok-void-3, never redeemed", response, error, allowed={200})
    expect("the void of ok-void-3, never redeemed", response, "outcome", {"no_purchase", "recorded"})
    response, error = request("POST", "/v1/purchases/google", key=SERVICE, body=google_body("g_late", "ok-void-3"))
    check(cls, "ok-void-3 redeemed after its void", response, error, allowed={409, 422})
    balance_is("after redeeming a voided purchase", "g_late", 0)

    # Redemptions: into another wallet, replays, other players, path-traversal tokens.
    own = "g_own"
    response, error = request("POST", "/v1/purchases/google", key=token_for(own), body=google_body(own))
    check(cls, "control: a player's token redeems into its own wallet", response, error, allowed={201, 429})
    for label, body in (
        ("a fresh purchase into g_victim", google_body(victim)),
        ("g_victim's own ok-void-1 into g_victim", google_body(victim, "ok-void-1")),
        ("a fresh purchase into p1", google_body("p1")),
        ("a fresh purchase into G_own", google_body("G_own")),
        ("a fresh purchase into g_own + ZWSP", google_body(own + "\u200b")),
    ):
        response, error = request("POST", "/v1/purchases/google", key=token_for(own), body=body)
        check(cls, f"g_own's token redeems {label}", response, error, allowed={400, 403}, why_allowed="403 forbidden: a player token redeems into its own wallet only")
    response, error = request("POST", "/v1/purchases/google", key=SERVICE, body=google_body(victim, "ok-void-1"))
    check(cls, "ok-void-1 redeemed again for g_victim", response, error, allowed={201})
    if response is not None and response.status == 201 and (response.header("idempotent-replayed") or "").lower() != "true":
        R.fail(cls, "ok-void-1 redeemed again for g_victim", 201, response.excerpt(), "expected Idempotent-Replayed: true")
    for label, body in (("for p1", google_body("p1", "ok-void-1")), ("as another product", google_body(victim, "ok-void-1", "com.example.game.fuzzproduct"))):
        response, error = request("POST", "/v1/purchases/google", key=SERVICE, body=body)
        check(cls, f"ok-void-1 redeemed {label}", response, error, allowed={409}, codes={"idempotency_key_reused"})
    balance_is("after the replays", victim, held - 10)
    for token, allowed in (
        ("../../voidedpurchases", {400}), ("ok-x/../../ok-void-1", {400}), ("ok-x%2F..%2Fy", {400}), ("..", {400}), (".", {400}),
        ("...", {422}), ("ok-..", {201}), ("ok-x:consume", {400}), ("ok-x?token=1", {400}), ("ok-x#y", {400}), ("ok-x\\..\\y", {400}),
        (" ok-x", {400}), ("ok-x ", {400}), ("ok-\u212a", {400}), ("ok-x\u0000", {400}), ("ok-" + "t" * 253, {400}), ("", {400}),
    ):
        response, error = request("POST", "/v1/purchases/google", key=SERVICE, body=google_body("g_paths", token))
        check(cls, f"purchase token {short(token, 40)!r}", response, error, allowed=allowed)
    for product in ("../x", "com.example.game.consume5credits/../y", "com.example.game.consume5credits%2F..", "..", "", "x" * 256):
        response, error = request("POST", "/v1/purchases/google", key=SERVICE, body=google_body("g_paths", product=product))
        check(cls, f"product id {short(product, 40)!r}", response, error, allowed={400})

    # Six players race one purchase token: exactly one is credited.
    token = "ok-race-" + idem(rng)
    racers = [f"g_race{index}" for index in range(6)]
    answers = {}

    def redeem(player):
        answers[player] = request("POST", "/v1/purchases/google", key=SERVICE, body=google_body(player, token))

    threads = [threading.Thread(target=redeem, args=(player,)) for player in racers]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    for player in racers:
        check(cls, f"race: {player} redeems {token}", *answers[player], allowed={201, 409})
    winners = [player for player in racers if answers[player][0] is not None and answers[player][0].status == 201]
    balances = [balance_of(player) for player in racers]
    if len(winners) == 1 and sorted(balances) == [0] * 5 + [5]:
        R.ok(cls)
    else:
        R.fail(cls, f"6 players race {token}", "-", f"201 for {winners}, balances {balances}", "expected one player credited 5, the others nothing")

    # Support's lookup of an order.
    response, error = request("GET", "/v1/google/orders/GPA.ok-void-1", key=SUPPORT)
    check(cls, "support looks up GPA.ok-void-1", response, error, allowed={200})
    if response is not None and response.status == 200 and victim not in response.body.decode("utf-8", "replace"):
        R.fail(cls, "support looks up GPA.ok-void-1", 200, response.excerpt(), f"the lookup does not name {victim}")
    response, error = request("GET", "/v1/google/orders/GPA.ok-void-1", key=SERVICE)
    check(cls, "a service key looks up an order", response, error, allowed={403})
    for order in ("GPA.ok-void-1%2F..%2F..", "..", "%2e%2e", "GPA.%00", "GPA.%E2%84%AA", "%ff", "G" * 300, "GPA.x%3Ftoken%3D1"):
        response, error = request("GET", "/v1/google/orders/" + order, key=SUPPORT)
        check(cls, f"order lookup {short(order, 40)}", response, error, allowed={200, 400, 404})

    # Random pushes: a random token (Google's or a forgery) around random data.
    datas = [rtdn(), void_1, rtdn(void_event("ok-void-2", refund_type=2, quantity=1)), rtdn(void_event("ok-void-3")),
             rtdn(void_event("ok-unknown-" + idem(rng))), rtdn({"oneTimeProductNotification": {"version": "1.0", "notificationType": 1, "purchaseToken": "ok-" + idem(rng), "sku": PRODUCT}})]
    forgeries = [token for token in forged.values() if token]
    count = 0
    while count < 1500 and time_left(deadline) > 0:
        count += 1
        data = bytearray(rng.choice(datas))
        for _ in range(rng.choice([0, 0, 1, 3])):
            data[rng.randrange(len(data))] = rng.choice(b'{}[]",:\\0a9.\xff')
        genuine = rng.random() < 0.7
        body = push_body(bytes(data), message_id=rng.choice([idem(rng), "hostile-random-1", "hostile-random-2"]))
        if rng.random() < 0.2:
            body = bytearray(body)
            body[rng.randrange(len(body))] = rng.choice(b'{}[]",:\\0a9.\xff')
            body = bytes(body)
        response, error = push(body, token="valid" if genuine else rng.choice(forgeries))
        allowed = {200, 400, 503} if genuine else {401}
        check(cls, f"random push ({'genuine' if genuine else 'forged'}) {short(bytes(data).decode('utf-8', 'replace'), 60)}", response, error, allowed=allowed)
    balance_is("after the random pushes", victim, held - 10)
    return count


def standin_report():
    """What the stand-in Google saw that the wallet should never send it."""
    if not GOOGLE:
        return
    try:
        with urllib.request.urlopen(GOOGLE_URL + "/standin/report", timeout=5) as answer:
            report = json.loads(answer.read())
    except (OSError, ValueError) as error:
        R.fail("7-google", "GET /standin/report", "-", str(error), "the stand-in Google does not answer")
        return
    if report.get("unexpected"):
        for line in report["unexpected"][:10]:
            R.fail("7-google", "the stand-in Google saw", "-", line, "the wallet sent Google what it never should")
    else:
        R.ok("7-google")
    NOTES.setdefault(f"the stand-in Google answered {report.get('counts')}", "the whole run")


# ---------------------------------------------------------------------------------------------
# Class 8: webhook endpoints


def webhook_lookalikes():
    """(label, path segment) of ids that imitate hostile.sh's endpoint without being it."""
    real = WEBHOOK_ID
    uuid_part = real[3:]
    quoted = lambda text: urllib.parse.quote(text, safe="")
    hex_letter = next((i for i, c in enumerate(uuid_part) if c in "abcdef"), 0)
    return [
        ("upper-case UUID", "wh_" + uuid_part.upper()),
        ("upper-case prefix", "WH_" + uuid_part),
        ("braced UUID", quoted("wh_{" + uuid_part + "}")),
        ("UUID without hyphens", "wh_" + uuid_part.replace("-", "")),
        ("no prefix", uuid_part),
        ("one character short", real[:-1]),
        ("one character more", real + "0"),
        ("trailing %00", real + "%00"),
        ("trailing %20", real + "%20"),
        ("trailing %0A", real + "%0A"),
        ("zero-width space inside", quoted(real[:10] + "\u200b" + real[10:])),
        ("Cyrillic a for a hex digit", quoted("wh_" + uuid_part[:hex_letter] + "\u0430" + uuid_part[hex_letter + 1:]) if uuid_part[hex_letter] == "a" else quoted(real[:-1] + "\u0430")),
        ("fullwidth digit", quoted(real[:-1] + "\uff10")),
        ("double-encoded w", "%2577h_" + uuid_part),
        ("invalid UTF-8", real + "%C0%AF"),
        ("..%2F.. to another route", "..%2F..%2Fv1%2Fproducts"),
        ("%2E%2E", "%2E%2E"),
        ("the nil UUID", "wh_00000000-0000-0000-0000-000000000000"),
        ("a random endpoint id", "wh_" + str(uuid.UUID(int=random.Random(SEED).getrandbits(128), version=4))),
        ("1000 bytes", "wh_" + "a" * 997),
    ]


SSRF_URLS = [
    "file:///etc/passwd", "gopher://127.0.0.1:9/", "ftp://game.example.com/", "javascript:alert(1)", "//game.example.com/hook", "game.example.com/hook",
    "http://10.0.0.1/", "https://10.0.0.1/", "https://192.168.1.1/", "https://172.16.0.1/", "https://100.64.0.1/", "https://169.254.169.254/latest/meta-data/",
    "https://localhost/", "https://LOCALHOST/", "https://wallet.localhost/", "https://0.0.0.0/", "https://255.255.255.255/", "https://224.0.0.1/",
    "https://[::1]/", "https://[::ffff:127.0.0.1]/", "https://[::ffff:7f00:1]/", "https://[64:ff9b::a00:1]/", "https://[fe80::1]/", "https://[fd00::1]/",
    "https://[::]/", "https://[::1", "https://0x7f.0.0.1/", "https://0x7f000001/", "https://2130706433/", "https://017700000001/", "https://127.1/",
    "https://0177.0.0.1/", "https://127.0.0.1.nip.io.:443/", "https://%31%32%37.0.0.1/", "https://\uff4c\uff4f\uff43\uff41\uff4c\uff48\uff4f\uff53\uff54/",
    "https://admin:pw@game.example.com/", "https://game.example.com\\@127.0.0.1/", "https://game.example.com#@127.0.0.1/", "https://game.example.com:0/",
    "https://game.example.com:99999/", "https://game.example.com:-1/", "https://game.example.com:/", "https:///hook", "https://", "http://127.0.0.2/",
    "https://game.example.com/\u0000", "https://game.example.com/ hook", "https://game.example.com/\r\nX-Injected: 1", "https://" + "a" * 64 + ".example.com/",
    "https://" + ".".join(["a" * 63] * 5) + "/", "https://game.example.com/" + "a" * 2100, "https://-game.example.com/", "https://game_example.com/",
]


def class_webhooks(deadline):
    cls = "8-webhooks"
    rng = random.Random(SEED)
    real = f"/v1/webhooks/{WEBHOOK_ID}"
    response, error = request("GET", real, key=ADMIN)
    before = check(cls, "control: GET the endpoint hostile.sh added", response, error, allowed={200})
    try:
        before_state = json.loads(before.body) if before is not None else {}
    except ValueError:
        before_state = {}
    response, error = request("GET", "/v1/webhooks/%77h_" + WEBHOOK_ID[3:], key=ADMIN)
    check(cls, "control: %77h_ is the same id", response, error, allowed={200})

    # Roles: only an admin manages endpoints; nothing answers without a key.
    for key, label, allowed in ((None, "no key", {401}), (SERVICE, "service", {403}), (SUPPORT, "support", {403}), (AUDITOR, "auditor", {403}),
                                (token_for("p1"), "player token", {401, 403})):
        for method, path, body in (("GET", "/v1/webhooks", None), ("POST", "/v1/webhooks", {"url": WEBHOOK_URL, "types": ["*"]}), ("GET", real, None),
                                   ("POST", real + "/disable", None), ("POST", real + "/enable", None), ("POST", real + "/rotate-secret", None),
                                   ("POST", real + "/replay", {"from_seq": 1})):
            response, error = request(method, path, key=key, body=body)
            check(cls, f"{label}: {method} {path}", response, error, allowed=allowed)

    # Look-alike ids in the path: none may reach the real endpoint.
    for label, segment in webhook_lookalikes():
        for method, suffix, body in (("GET", "", None), ("POST", "/disable", None), ("POST", "/enable", None), ("POST", "/rotate-secret", None),
                                     ("POST", "/replay", {"from_seq": 1})):
            response, error = request(method, f"/v1/webhooks/{segment}{suffix}", key=ADMIN, body=body)
            check(cls, f"{label}: {method} /v1/webhooks/{short(segment, 50)}{suffix}", response, error, allowed={400, 404})
    response, error = request("GET", real, key=ADMIN)
    after = check(cls, "the real endpoint after the look-alikes", response, error, allowed={200})
    try:
        after_state = json.loads(after.body) if after is not None else {}
    except ValueError:
        after_state = {}
    for field in ("status", "secret_rotated_at", "updated_at"):
        if before_state.get(field) == after_state.get(field):
            R.ok(cls)
        else:
            R.fail(cls, f"GET {real} after the look-alike requests", "-", f"{field}: {before_state.get(field)!r} -> {after_state.get(field)!r}",
                   "a look-alike id changed the real endpoint")

    # URLs a webhook must never be sent to, refused when the endpoint is added.
    for url in SSRF_URLS:
        for body in ({"url": url, "types": ["*"]}, {"url": url, "types": ["refund.applied"], "description": "ssrf"}):
            response, error = request("POST", "/v1/webhooks", key=ADMIN, body=body)
            check(cls, f"POST /v1/webhooks url={short(url, 70)}", response, error, allowed={400})

    # Bodies: types and descriptions out of bounds, wrong shapes, a replay past the cursor.
    every_type = ["purchase.credited", "spend.created", "adjustment.created", "bonus.granted", "lot.expired", "hold.created", "hold.captured",
                  "hold.released", "hold.expired", "refund.applied", "refund.reversed", "entitlement.changed"]
    bodies = [
        ({"url": WEBHOOK_URL, "types": []}, {400}),
        ({"url": WEBHOOK_URL, "types": ["bogus"]}, {400}),
        ({"url": WEBHOOK_URL, "types": ["*", "spend.created"]}, {400}),
        ({"url": WEBHOOK_URL, "types": "*"}, {400}),
        ({"url": WEBHOOK_URL, "types": [["*"]]}, {400}),
        ({"url": WEBHOOK_URL, "types": [None]}, {400}),
        ({"url": WEBHOOK_URL, "types": ["spend.created"] * 10000}, {400, 413}),
        ({"url": WEBHOOK_URL, "types": every_type + ["spend.created", "spend.created"]}, {400}),
        ({"url": WEBHOOK_URL, "types": ["*"], "description": "d" * 201}, {400}),
        ({"url": WEBHOOK_URL, "types": ["*"], "description": "\u00e9" * 101}, {400}),
        ({"url": WEBHOOK_URL, "types": ["*"], "description": "game\u202ebackend"}, {400}),
        ({"url": WEBHOOK_URL, "types": ["*"], "description": "a\u0000b"}, {400}),
        ({"url": WEBHOOK_URL, "types": ["*"], "description": ""}, {400}),
        ({"url": WEBHOOK_URL, "types": ["*"], "description": 5}, {400}),
        ({"url": WEBHOOK_URL, "types": ["*"], "secret": "whsec_mine"}, {400}),
        ({"url": WEBHOOK_URL, "types": ["*"], "status": "active"}, {400}),
        ({"url": [WEBHOOK_URL], "types": ["*"]}, {400}),
        ({"types": ["*"]}, {400}),
        ({"url": WEBHOOK_URL}, {400}),
    ]
    for body, allowed in bodies:
        response, error = request("POST", "/v1/webhooks", key=ADMIN, body=body)
        check(cls, f"POST /v1/webhooks {short(json.dumps(body), 80)}", response, error, allowed=allowed, no_answer_ok=413 in allowed)
    raw_duplicates = [
        b'{"url":"' + WEBHOOK_URL.encode() + b'","url":"https://10.0.0.1/","types":["*"]}',
        b'{"url":"https://10.0.0.1/","url":"' + WEBHOOK_URL.encode() + b'","types":["*"]}',
        b'{"url":"' + WEBHOOK_URL.encode() + b'","\u0075rl":"file:///etc/passwd","types":["*"]}',
        b'{"url":"' + WEBHOOK_URL.encode() + b'","types":["*"],"types":["spend.created"]}',
    ]
    for body in raw_duplicates:
        response, error = request("POST", "/v1/webhooks", key=ADMIN, body=body)
        check(cls, f"POST /v1/webhooks duplicate member {short(body.decode(), 80)}", response, error, allowed={400})
    for from_seq, allowed in ((0, {400}), (-1, {400}), (9223372036854775807, {400}), (10 ** 9, {400}), (1, {200})):
        response, error = request("POST", real + "/replay", key=ADMIN, body={"from_seq": from_seq})
        check(cls, f"POST {real}/replay from_seq={from_seq}", response, error, allowed=allowed)
    response, error = request("POST", real + "/replay", key=ADMIN, body=b'{"from_seq":1,"from_seq":1}')
    check(cls, "replay with from_seq twice", response, error, allowed={400})

    # Random: the refused URLs that are not https://, mutated by inserting separators and escapes.
    # No insertion turns them into https://, so none can become a public name the server would
    # accept and its sender then contact: only 127.0.0.1 is ever contacted.
    bases = [url for url in SSRF_URLS if not url.lower().startswith("https:")]
    count = 0
    while count < 2000 and time_left(deadline) > 0:
        count += 1
        url = bytearray(rng.choice(bases).encode("utf-8", "surrogatepass"))
        for _ in range(rng.randint(1, 3)):
            position = rng.randrange(len(url) + 1)
            url[position:position] = rng.choice([b"/", b"@", b":", b".", b"%", b"[", b"]", b"\\", b"0", b"#", b"?", b"%2e", b"\xff"])
        body = b'{"url":' + json.dumps(url.decode("utf-8", "replace")).encode() + b',"types":["*"]}'
        response, error = request("POST", "/v1/webhooks", key=ADMIN, body=body)
        check(cls, f"random POST /v1/webhooks url={short(url.decode('utf-8', 'replace'), 70)}", response, error, allowed={400})
    return count


# ---------------------------------------------------------------------------------------------
# The end: stop the server, verify the ledger, report.


def stop_server():
    pid = server_pid()
    if not pid:
        return
    try:
        os.kill(pid, signal.SIGTERM)
    except OSError:
        return
    for _ in range(100):
        try:
            with open(f"/proc/{pid}/stat") as handle:
                state = handle.read().rsplit(")", 1)[1].split()[0]
            if state == "Z":
                break
        except OSError:
            break
        time.sleep(0.1)
    else:
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass


def finish(aborted=False):
    standin_report()
    stop_server()
    try:
        result = subprocess.run([WALLET, "verify"], capture_output=True, text=True, timeout=60)
        output = (result.stdout + result.stderr).strip()
        if result.returncode == 0 and output.lower().startswith("ok"):
            R.ok("verify")
        else:
            R.fail("verify", "wallet verify", result.returncode, short(output, 300), "the ledger does not verify")
    except subprocess.TimeoutExpired:
        R.fail("verify", "wallet verify", "-", "", "wallet verify did not finish within 60 s")
    print()
    for cls, (passed, failed) in sorted(R.per_class.items()):
        print(f"  {cls}: {passed} passed, {failed} failed")
    if R.failures:
        print(f"\nFailures ({len(R.failures)}):")
        for cls, sent, status, excerpt, why in R.failures:
            if not sent.startswith("random"):
                print(f"  [{cls}] {why} | sent: {sent} | got: {status} {excerpt[:120]}")
        for (cls, why, status, code, kind), examples in sorted(R.random_groups.items(), key=lambda item: -len(item[1])):
            print(f"  [{cls}] {why} | random phase, {len(examples)}x '{kind} ...' -> {status} {code}")
            for sent, excerpt in examples[:2]:
                print(f"      e.g. sent: {sent} | got: {status} {excerpt[:100]}")
    if NOTES:
        print(f"\nNotes (not failures):")
        for note, example in sorted(NOTES.items()):
            print(f"  {note}, e.g. for: {example}")
    if restarts:
        print(f"\nThe server was restarted {restarts} time(s) after dying.")
    if aborted:
        print("The run was stopped early.")
    print(f"hostile: {R.passed} passed, {len(R.failures)} failed", flush=True)
    sys.exit(1 if R.failures or aborted else 0)


def main():
    if not healthy(10.0):
        print("hostile: the server does not answer /healthz", flush=True)
        R.fail("setup", "GET /healthz", "-", log_tail(), "server not up")
        finish(aborted=True)
    shares = [("1 JSON bodies", class_json, 0.22), ("2 identifiers", class_identifiers, 0.13), ("3 player JWTs", class_jwt, 0.11),
              ("4 Apple JWS", class_apple, 0.12), ("5 HTTP framing", class_framing, 0.16), ("6 query strings", class_queries, 0.11),
              ("7 Google Play", class_google, 0.09), ("8 events and webhooks", class_webhooks, 0.06)]
    spent = 0.0
    for label, function, share in shares:
        spent += share
        deadline = START + BUDGET * spent
        if time.monotonic() > HARD_DEADLINE:
            print(f"hostile: out of time before class {label}", flush=True)
            break
        began = time.monotonic()
        print(f"hostile: class {label}", flush=True)
        function(deadline)
        if not healthy(5.0):
            ensure_alive(label, f"end of class {label}")
        print(f"hostile: class {label} done in {time.monotonic() - began:.1f} s", flush=True)
    finish()


if __name__ == "__main__":
    main()
