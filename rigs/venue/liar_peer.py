#!/usr/bin/env python3
"""A lying venue peer, for tests: it answers /venue/hello like a Marquee proxy and every
/p/<scheme>/<authority>/<path> with the real segment (fetched from upstream) with bytes
flipped near its end: same length, same ETag and headers, whole boxes, wrong pictures.
Only a hash check catches it. Each /p/ request is appended to the log file.

usage: liar_peer.py PORT LOGFILE [BOX [SOURCE]]
SOURCE (host:port): where the real bytes are fetched instead of the URL's host (a copy of the
origin beside the liar, so that its lies do not load the CDN's uplink).

Environment:
  LIAR_KEY_FILE  the venue key: the liar proves it in hellos and vouches (/v/...) with it, as a
                 box that holds the key would; without it, it answers as an old or foreign box.
  LIAR_VOUCH     "original" (default): it vouches for the real bytes' SHA-256 (not what it sent);
                 "own": for the bytes it sent (a keyed box that lies is trusted: not caught).
  LIAR_MODE      "tail" (default): bytes flipped near the end (TS sync bytes broken);
                 "payload": only TS payload bytes flipped (every packet stays well formed).
"""
import hashlib
import hmac
import http.server
import json
import os
import sys
import time
import urllib.parse
import urllib.request

PORT, LOG = int(sys.argv[1]), sys.argv[2]
BOX = sys.argv[3] if len(sys.argv) > 3 else "liar"
SOURCE = sys.argv[4] if len(sys.argv) > 4 else None
KEY = open(os.environ["LIAR_KEY_FILE"], "rb").read().strip() if os.environ.get("LIAR_KEY_FILE") else None
VOUCH = os.environ.get("LIAR_VOUCH", "original")
MODE = os.environ.get("LIAR_MODE", "tail")
DIGESTS = {}  # url -> (sha256 of the real bytes, of the bytes sent)


def mac(*parts):
    return hmac.new(KEY, "\n".join(parts).encode(), hashlib.sha256).hexdigest()


class Liar(http.server.BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def send_json(self, obj):
        body = json.dumps(obj).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        url = urllib.parse.urlsplit(self.path)
        if url.path == "/venue/hello":
            hello = {"box": BOX, "sharing": "always"}
            nonce = urllib.parse.parse_qs(url.query).get("nonce", [""])[0]
            if KEY and nonce:
                hello["proof"] = mac("marquee-hello", nonce, BOX)
            self.send_json(hello)
            return
        if self.path.startswith("/v/") and KEY:
            scheme, rest = self.path[3:].split("/", 1)
            real = "%s://%s" % (scheme, rest)
            if real not in DIGESTS:
                self.send_error(404)
                return
            digest = DIGESTS[real][0 if VOUCH == "original" else 1]
            self.send_json({"sha256": digest, "mac": mac("marquee-vouch", self.headers.get("Marquee-Nonce", ""), real, digest)})
            return
        if not self.path.startswith("/p/"):
            self.send_error(404)
            return
        scheme, rest = self.path[3:].split("/", 1)
        asked = "%s://%s" % (scheme, rest)
        if SOURCE:
            rest = SOURCE + "/" + rest.split("/", 1)[1]
        with open(LOG, "a") as log:
            log.write(f"{time.time():.3f}\t{self.client_address[0]}\t{self.path}\n")
        try:
            with urllib.request.urlopen(f"{scheme}://{rest}", timeout=5) as answer:
                body = bytearray(answer.read())
                etag = answer.headers.get("ETag")
                ctype = answer.headers.get("Content-Type", "application/octet-stream")
        except Exception:
            self.send_error(502)
            return
        real_digest = hashlib.sha256(body).hexdigest()
        if MODE == "payload":
            for i in range(0, len(body), 97):
                if i % 188 >= 4:
                    body[i] ^= 0x5A
        else:
            for i in range(max(0, len(body) - 2000), len(body) - 16, 7):
                body[i] ^= 0x5A
        DIGESTS[asked] = (real_digest, hashlib.sha256(body).hexdigest())
        self.send_response(200)
        self.send_header("Content-Type", ctype)
        if etag:
            self.send_header("ETag", etag)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(bytes(body))


http.server.ThreadingHTTPServer(("", PORT), Liar).serve_forever()
