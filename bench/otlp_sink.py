#!/usr/bin/env python3
"""An OTLP/HTTP receiver for benchmarks (docs/performance.md): accepts POST /v1/traces, answers
200 {}, and counts the spans it got. Prints its port on the first line, then after every request
the totals so far: "<requests> requests, <spans> spans".

  otlp_sink.py &   # then OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:<port> oe run ...
"""
import json
import signal
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

counts = {"requests": 0, "spans": 0}


class Sink(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        counts["requests"] += 1
        for rs in json.loads(body).get("resourceSpans", []):
            for ss in rs.get("scopeSpans", []):
                counts["spans"] += len(ss.get("spans", []))
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", "2")
        self.end_headers()
        self.wfile.write(b"{}")
        print("%d requests, %d spans" % (counts["requests"], counts["spans"]), flush=True)

    def log_message(self, *args):
        pass


def main():
    server = ThreadingHTTPServer(("127.0.0.1", 0), Sink)
    print(server.server_address[1], flush=True)

    def stop(*_):
        sys.exit(0)

    signal.signal(signal.SIGINT, stop)
    signal.signal(signal.SIGTERM, stop)
    server.serve_forever()


if __name__ == "__main__":
    main()
