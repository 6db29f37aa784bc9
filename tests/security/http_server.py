#!/usr/bin/env python3
"""A small HTTP server for the security suite (Tests/EndToEndTests/VenueSecurityTests.swift):
a "secret" page that nothing on a guest's side may reach through a box, and redirects.

usage: http_server.py PORT LOGFILE
  GET /secret.html        200, body "SECRET-PAGE"
  GET /302?to=URL         302 to URL (absolute or relative)
  GET /cookie             200 with Set-Cookie: session=guest-a (cacheable)
  GET /anything-else      200, "ok"
Every request line is appended to LOGFILE (what the attacker reached, counted by the test).
"""
import http.server
import sys
import urllib.parse

PORT, LOG = int(sys.argv[1]), sys.argv[2]


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
        else:
            self.send(200, b"ok")


http.server.ThreadingHTTPServer(("127.0.0.1", PORT), Handler).serve_forever()
