#!/usr/bin/env python3
"""A minimal stand-in for Apple's App Store Server API, for the fuzz runs: it knows no customer and
no order, so every well-formed request the wallet makes is answered as Apple answers an unknown id
(404 with error 4040010, or an order lookup with status 1), and the wallet's whole path (token,
HTTP client, error mapping) meets fuzzed input. Prints its port, then serves until killed.

Usage: apple_standin.py KEY_FILE   (writes a fresh P-256 .p8 key there for the wallet to sign with)
"""
import http.server
import json
import sys

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec


class Handler(http.server.BaseHTTPRequestHandler):
    def answer(self, status, body):
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        if not self.headers.get("Authorization", "").startswith("Bearer "):
            return self.answer(401, {})
        if self.path.startswith("/inApps/v1/lookup/"):
            return self.answer(200, {"status": 1})
        return self.answer(404, {"errorCode": 4040010, "errorMessage": "Transaction id not found."})

    def do_POST(self):
        length = int(self.headers.get("Content-Length", "0"))
        self.rfile.read(length)
        return self.answer(200, {"notificationHistory": [], "hasMore": False})

    def do_PUT(self):
        self.do_POST()

    def log_message(self, *args):
        pass


def main():
    key = ec.generate_private_key(ec.SECP256R1())
    with open(sys.argv[1], "wb") as file:
        file.write(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    print(server.server_address[1], flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
