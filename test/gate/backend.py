#!/usr/bin/env python3
"""The gate tests' backend and map endpoint: an HTTP/1.1 keep-alive server (Python's http.server).

  backend.py PORT

Every request is recorded (method, path, headers, body length and SHA-256); GET /_stats returns the record,
/_reset clears it, /_control?map=ok|fail|slow sets how /limits answers. Paths:
  /big?n=N       N bytes (a fixed pattern), with Content-Length
  /chunked?n=N   N bytes, Transfer-Encoding: chunked
  /slow?ms=M     answers after M milliseconds
  /limits        the map endpoint: limits for the X-Forwarded-Uri and X-User of the request
  anything else  200, a JSON body describing the request as received (body length and SHA-256 included)
Request bodies are read whole, chunked ones decoded.
"""
import hashlib
import json
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

LOCK = threading.Lock()
RECORD = []
MAP = {"mode": "ok", "calls": 0}


def pattern(n):
    block = bytes(range(256))
    return (block * (n // 256 + 1))[:n]


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):  # quiet
        pass

    def read_body(self):
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            out = bytearray()
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip(), 16)
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass
                    return bytes(out)
                out += self.rfile.read(size)
                self.rfile.readline()
        length = int(self.headers.get("Content-Length", "0") or 0)
        return self.rfile.read(length) if length else b""

    def send(self, status, body, content_type="application/json", headers=None):
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def handle_any(self):
        url = urlsplit(self.path)
        query = parse_qs(url.query)
        body = self.read_body()
        if url.path == "/_stats":
            with LOCK:
                data = {"count": len(RECORD), "requests": RECORD[-2000:], "map_calls": MAP["calls"]}
            return self.send(200, json.dumps(data).encode())
        if url.path == "/_reset":
            with LOCK:
                RECORD.clear()
                MAP["calls"] = 0
            return self.send(200, b"{}")
        if url.path == "/_control":
            MAP["mode"] = query.get("map", ["ok"])[0]
            return self.send(200, b"{}")
        if url.path == "/limits":
            return self.map_endpoint()
        entry = {
            "method": self.command,
            "path": self.path,
            "headers": {k.lower(): v for k, v in self.headers.items()},
            "body_length": len(body),
            "body_sha256": hashlib.sha256(body).hexdigest(),
            "at": time.time(),
        }
        with LOCK:
            RECORD.append(entry)
        if url.path == "/big":
            return self.send(200, pattern(int(query["n"][0])), "application/octet-stream")
        if url.path == "/chunked":
            n = int(query["n"][0])
            self.send_response(200)
            self.send_header("Content-Type", "application/octet-stream")
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            data = pattern(n)
            for i in range(0, n, 10000):
                piece = data[i:i + 10000]
                self.wfile.write(b"%x\r\n%s\r\n" % (len(piece), piece))
            self.wfile.write(b"0\r\n\r\n")
            return None
        if url.path == "/slow":
            time.sleep(int(query.get("ms", ["1000"])[0]) / 1000)
        return self.send(200, json.dumps(entry).encode())

    def map_endpoint(self):
        with LOCK:
            MAP["calls"] += 1
        mode = MAP["mode"]
        if mode == "fail":
            return self.send(500, b'{"error": "down"}')
        if mode == "garbage":
            return self.send(200, b"not json")
        user = self.headers.get("X-User")
        uri = self.headers.get("X-Forwarded-Uri", "")
        limits = []
        if user:
            # The seed's example: one request per 0.5 s for this user, 2 per window of 1 s.
            limits.append({"key": "users/" + user, "comment": "user", "interval": 0.5, "window": 1, "max_throttle": 0})
        if "expensive" in uri:
            limits.append({"key": "expensive", "burst": 3, "window": "1m"})
        return self.send(200, json.dumps({"limits": limits}).encode())

    do_GET = do_POST = do_PUT = do_DELETE = do_HEAD = do_PATCH = handle_any


class Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 256


if __name__ == "__main__":
    Server(("127.0.0.1", int(sys.argv[1])), Handler).serve_forever()
