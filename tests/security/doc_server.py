#!/usr/bin/env python3
"""A document server for the document-security suite (Tests/EndToEndTests/DocumentSecurityTests.swift):
the files of a directory over http, or over https with a certificate, and redirects.

usage: doc_server.py PORT DIR LOGFILE [CERT KEY]
  GET /302?to=URL     302 to URL
  GET /PATH           the file DIR/PATH, else 404
With CERT and KEY (PEM) it speaks TLS. Every request line is appended to LOGFILE.
"""
import http.server
import os
import ssl
import sys
import urllib.parse

PORT, ROOT, LOG = int(sys.argv[1]), sys.argv[2], sys.argv[3]


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
        if url.path == "/302":
            self.send(302, b"moved", [("Location", urllib.parse.parse_qs(url.query)["to"][0])])
            return
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
