#!/usr/bin/env python3
"""The security suites' HTTP server (Tests/EndToEndTests/VenueSecurityTests.swift,
DocumentSecurityTests.swift): a "secret" page nothing on a guest's side may reach through a box,
redirects, a cookie, and (with a root) the files of a directory, over http or https.

usage: http_server.py PORT LOGFILE [ROOT [CERT KEY]]
  GET /secret.html        200, body "SECRET-PAGE"
  GET /302?to=URL         302 to URL (absolute or relative)
  GET /cookie             200 with Set-Cookie: session=guest-a (cacheable)
  GET /PATH               with ROOT: the file ROOT/PATH (application/json), else 404;
                          without: 200, "ok"
With CERT and KEY (PEM) it speaks TLS. Every request line is appended to LOGFILE (what was
reached, counted by the tests).
"""
import http.server
import os
import ssl
import sys
import urllib.parse

PORT, LOG = int(sys.argv[1]), sys.argv[2]
ROOT = sys.argv[3] if len(sys.argv) > 3 else None


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def send(self, status, body, headers=()):
        self.send_response(status)
        for k, v in headers:
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        with open(LOG, "a") as f:
            f.write(self.requestline + "\n")
        url = urllib.parse.urlsplit(self.path)
        if url.path == "/secret.html":
            self.send(200, b"SECRET-PAGE")
        elif url.path == "/302":
            to = urllib.parse.parse_qs(url.query).get("to", ["/"])[0]
            self.send(302, b"moved", [("Location", to)])
        elif url.path.startswith("/cookie"):
            self.send(200, b"x" * 1000, [("Set-Cookie", "session=guest-a"), ("Cache-Control", "max-age=60")])
        elif ROOT is None:
            self.send(200, b"ok")
        else:
            path = os.path.join(ROOT, url.path.lstrip("/"))
            if os.path.isfile(path):
                with open(path, "rb") as f:
                    self.send(200, f.read(), [("Content-Type", "application/json")])
            else:
                self.send(404, b"not found")


server = http.server.ThreadingHTTPServer(("127.0.0.1", PORT), Handler)
if len(sys.argv) > 5:
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(sys.argv[4], sys.argv[5])
    server.socket = context.wrap_socket(server.socket, server_side=True)
server.serve_forever()
