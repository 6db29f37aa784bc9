#!/usr/bin/env python3
"""A lying venue peer, for tests: it answers /venue/hello like a Marquee proxy and every
/p/<scheme>/<authority>/<path> with the real segment (fetched from upstream) with bytes
flipped near its end: same length, same ETag and headers, whole boxes, wrong pictures.
Only a hash check catches it. Each /p/ request is appended to the log file.

usage: liar_peer.py PORT LOGFILE [BOX [SOURCE]]
SOURCE (host:port): where the real bytes are fetched instead of the URL's host (a copy of the
origin beside the liar, so that its lies do not load the CDN's uplink).
"""
import http.server
import sys
import time
import urllib.request

PORT, LOG = int(sys.argv[1]), sys.argv[2]
BOX = sys.argv[3] if len(sys.argv) > 3 else "liar"
SOURCE = sys.argv[4] if len(sys.argv) > 4 else None


class Liar(http.server.BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def do_GET(self):
        if self.path == "/venue/hello":
            body = ('{"box":"%s","sharing":"always"}' % BOX).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
            return
        if not self.path.startswith("/p/"):
            self.send_error(404)
            return
        scheme, rest = self.path[3:].split("/", 1)
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
        for i in range(max(0, len(body) - 2000), len(body) - 16, 7):
            body[i] ^= 0x5A
        self.send_response(200)
        self.send_header("Content-Type", ctype)
        if etag:
            self.send_header("ETag", etag)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(bytes(body))


http.server.ThreadingHTTPServer(("", PORT), Liar).serve_forever()
