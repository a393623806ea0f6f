#!/usr/bin/env python3
"""Load figures of `oe serve` (docs/performance.md, "oe serve"), on loopback, bounded in time.

  serve_load.py [--build build/release] [--clients 64] [--seconds 10] [--subscribers 1000]
                [--sse-nodes 10000] [--burst 100] [--only list,start,sse,burst]

Starts `oe serve --listen 127.0.0.1:0` on a temporary project and measures, with a client of
its own (asyncio, raw HTTP/1.1 keep-alive sockets, so it needs nothing beyond Python):

  (The experiences are bench/gen_experience.py's native chains: `small`, 3 nodes, and `big`.)
  list   GET /api/runs from --clients connections for --seconds: requests/s, p50, p99
  start  POST /api/runs (a 3-node experience) from --clients connections, at most
         --start-requests of them within --seconds: requests/s, p50, p99 of the 202; what is
         still queued is then cancelled (through the API) before the next figure
  sse    one run of --sse-nodes nodes, timed alone, then again with --subscribers SSE
         subscribers on its stream: both times, and whether every subscriber got every line
  burst  --burst runs started at once: the time until all are accepted, and until all finished

The client runs in one Python process, so its own cost is in the latency figures: they are an
upper bound for the server's. Each figure prints one line; nothing is asserted.
"""
import argparse
import asyncio
import json
import os
import re
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))



def percentile(values, p):
    if not values:
        return float("nan")
    s = sorted(values)
    return s[min(len(s) - 1, int(round(p / 100.0 * (len(s) - 1))))]


class Conn:
    """One keep-alive HTTP/1.1 connection: request(), then the whole response."""

    def __init__(self, reader, writer):
        self.reader, self.writer = reader, writer

    @classmethod
    async def open(cls, port):
        r, w = await asyncio.open_connection("127.0.0.1", port)
        return cls(r, w)

    async def request(self, method, path, body=None):
        data = b"" if body is None else json.dumps(body).encode()
        head = "%s %s HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: %d\r\n" % (
            method, path, len(data))
        if body is not None:
            head += "Content-Type: application/json\r\n"
        self.writer.write(head.encode() + b"\r\n" + data)
        await self.writer.drain()
        status_line = await self.reader.readline()
        status = int(status_line.split()[1])
        length = 0
        chunked = False
        while True:
            line = await self.reader.readline()
            if line in (b"\r\n", b""):
                break
            k, _, v = line.decode().partition(":")
            if k.lower() == "content-length":
                length = int(v)
            elif k.lower() == "transfer-encoding" and "chunked" in v.lower():
                chunked = True
        if chunked:
            payload = b""
            while True:
                size = int((await self.reader.readline()).strip(), 16)
                chunk = await self.reader.readexactly(size + 2)
                if size == 0:
                    break
                payload += chunk[:-2]
        else:
            payload = await self.reader.readexactly(length)
        return status, payload

    def close(self):
        self.writer.close()


async def hammer(port, clients, seconds, make_request, max_requests=None):
    latencies = []
    errors = [0]
    deadline = time.monotonic() + seconds
    budget = [max_requests if max_requests is not None else float("inf")]

    async def one():
        c = await Conn.open(port)
        try:
            while time.monotonic() < deadline and budget[0] > 0:
                budget[0] -= 1
                method, path, body = make_request()
                t = time.monotonic()
                status, _ = await c.request(method, path, body)
                latencies.append(time.monotonic() - t)
                if status >= 400:
                    errors[0] += 1
        finally:
            c.close()

    t0 = time.monotonic()
    await asyncio.gather(*(one() for _ in range(clients)))
    return len(latencies) / (time.monotonic() - t0), latencies, errors[0]


async def get_json(port, path):
    c = await Conn.open(port)
    try:
        status, payload = await c.request("GET", path)
        return status, json.loads(payload) if payload else None
    finally:
        c.close()


async def post_json(port, path, body):
    c = await Conn.open(port)
    try:
        status, payload = await c.request("POST", path, body)
        return status, json.loads(payload) if payload else None
    finally:
        c.close()


async def wait_finished(port, ids, timeout):
    deadline = time.monotonic() + timeout
    pending = set(ids)
    while pending and time.monotonic() < deadline:
        for rid in list(pending):
            status, run = await get_json(port, "/api/runs/" + rid)
            if status == 200 and run.get("status") not in ("queued", "running"):
                pending.discard(rid)
        if pending:
            await asyncio.sleep(0.2)
    return not pending


async def start_and_wait(port, experience, timeout):
    t = time.monotonic()
    status, body = await post_json(port, "/api/runs", {"experience": experience})
    if status != 202:
        sys.exit("POST /api/runs answered %d: %s" % (status, body))
    if not await wait_finished(port, [body["id"]], timeout):
        sys.exit("run %s did not finish in %d s" % (body["id"], timeout))
    return body["id"], time.monotonic() - t


def run_seconds(root, experience, run_id):
    """The run's own duration: its log's first line (run.started) to its last (run.finished)."""
    with open(os.path.join(root, experience, ".openexpertise", "runs", run_id + ".jsonl")) as f:
        lines = f.read().splitlines()
    ts = [json.loads(lines[0])["ts"], json.loads(lines[-1])["ts"]]
    secs = [time.mktime(time.strptime(t[:19], "%Y-%m-%dT%H:%M:%S")) + float("0" + t[19:-1])
            for t in ts]
    return secs[1] - secs[0]


async def subscriber(port, run_id, counts, index, ready):
    """Follows the run's stream to run.finished. A server drops a subscriber that falls more than
    its queue behind; like a browser's EventSource, this one then reconnects with Last-Event-ID.
    counts[index] = (lines received once each and in order, reconnects, finished)."""
    last = 0
    reconnects = -1
    in_order = True
    finished = False
    first = True
    while not finished and reconnects < 1000:
        reconnects += 1
        r, w = await asyncio.open_connection("127.0.0.1", port, limit=1 << 20)
        w.write(("GET /api/runs/%s/events/stream HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                 "Accept: text/event-stream\r\n%s\r\n" % (
                     run_id, "Last-Event-ID: %d\r\n" % last if last else "")).encode())
        await w.drain()
        if first:
            ready.release()
            first = False
        try:
            while True:
                line = await r.readline()
                if not line:
                    break
                if line.startswith(b"id:"):
                    seq = int(line[3:].strip())
                    in_order = in_order and seq == last + 1
                    last = seq
                elif line.startswith(b"data:") and b'"run.finished"' in line:
                    finished = True
                    break
        except (ConnectionError, ValueError):
            pass
        finally:
            w.close()
    counts[index] = (last if in_order else -1, reconnects, finished)


async def figures(a, port, root):
    only = set(a.only.split(","))
    if "list" in only:
        # A few finished runs so that the list has something to read.
        for _ in range(5):
            await start_and_wait(port, "small", 120)
        rate, lat, errors = await hammer(port, a.clients, a.seconds,
                                         lambda: ("GET", "/api/runs?limit=50", None))
        print("GET /api/runs    %d clients: %8.0f req/s  p50 %6.2f ms  p99 %6.2f ms  errors %d" % (
            a.clients, rate, percentile(lat, 50) * 1e3, percentile(lat, 99) * 1e3, errors))
    if "start" in only:
        # At most --start-requests runs queued (each one a real run the server then owes), at
        # priority 1 so that what follows is not queued behind them.
        rate, lat, errors = await hammer(
            port, a.clients, a.seconds,
            lambda: ("POST", "/api/runs", {"experience": "small", "priority": 1}),
            a.start_requests)
        print("POST /api/runs   %d clients: %8.0f req/s  p50 %6.2f ms  p99 %6.2f ms  errors %d "
              "(%d requests)" % (a.clients, rate, percentile(lat, 50) * 1e3,
                                 percentile(lat, 99) * 1e3, errors, len(lat)))
        # Cancel what is still queued (through the API too), then wait for the running ones.
        while True:
            _, body = await get_json(port, "/api/runs?status=queued&limit=500")
            if not body["runs"]:
                break
            for run in body["runs"]:
                await post_json(port, "/api/runs/%s/cancel" % run["id"], {})
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline:
            _, body = await get_json(port, "/api/runs?status=running&limit=1")
            if not body["runs"]:
                break
            await asyncio.sleep(0.5)
    if "sse" in only:
        alone_id, _ = await start_and_wait(port, "big", 1800)
        alone = run_seconds(root, "big", alone_id)
        status, body = await post_json(port, "/api/runs", {"experience": "big"})
        run_id = body["id"]
        counts = [None] * a.subscribers
        ready = asyncio.Semaphore(0)
        t = time.monotonic()
        tasks = [asyncio.ensure_future(subscriber(port, run_id, counts, i, ready))
                 for i in range(a.subscribers)]
        for _ in range(a.subscribers):
            await ready.acquire()
        await asyncio.wait_for(asyncio.gather(*tasks), 1800)
        await wait_finished(port, [run_id], 1800)
        delivered = time.monotonic() - t
        watched = run_seconds(root, "big", run_id)
        lines = sum(1 for _ in open(os.path.join(root, "big", ".openexpertise", "runs",
                                                 run_id + ".jsonl")))
        complete = sum(1 for c in counts if c and c[2] and c[0] == lines)
        reconnects = sum(c[1] for c in counts if c)
        print("SSE %d subscribers, %d-node run (%d lines): the run took %.2f s alone, %.2f s "
              "watched (%.2fx; its log's first to last line); %d/%d subscribers got every line "
              "once and in order, the last of them %.2f s after subscribing (%d reconnects with "
              "Last-Event-ID)" % (a.subscribers, a.sse_nodes, lines, alone, watched,
                                  watched / alone, complete, a.subscribers, delivered, reconnects))
    if "burst" in only:
        t = time.monotonic()
        answers = await asyncio.gather(*(post_json(port, "/api/runs", {"experience": "small"})
                                         for _ in range(a.burst)))
        accepted = time.monotonic() - t
        ids = [b["id"] for s, b in answers if s == 202]
        done = await wait_finished(port, ids, 1800)
        print("burst of %d runs: %d accepted in %.2f s, all finished %s in %.2f s" % (
            a.burst, len(ids), accepted, "" if done else "(NOT all)", time.monotonic() - t))


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--build", default=os.path.join(HERE, "..", "build", "release"))
    p.add_argument("--clients", type=int, default=64)
    p.add_argument("--seconds", type=float, default=10)
    p.add_argument("--subscribers", type=int, default=1000)
    p.add_argument("--sse-nodes", type=int, default=10000)
    p.add_argument("--burst", type=int, default=100)
    p.add_argument("--start-requests", type=int, default=2000)
    p.add_argument("--only", default="list,start,sse,burst")
    a = p.parse_args()
    oe = os.path.join(a.build, "bin", "oe")
    native = os.path.join(a.build, "bench", "bench_native_tool.so")
    for f in (oe, native):
        if not os.path.exists(f):
            sys.exit("missing %s: build the release preset with -DOE_BUILD_BENCH=ON first" % f)
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))

    root = tempfile.mkdtemp(prefix="oe-serve-bench-")
    server = None
    try:
        for name, nodes in (("small", 3), ("big", a.sse_nodes)):
            subprocess.check_call([sys.executable, os.path.join(HERE, "gen_experience.py"),
                                   os.path.join(root, name), "--nodes", str(nodes),
                                   "--shape", "chain", "--flavour", "native",
                                   "--native-lib", native], stdout=subprocess.DEVNULL)
        server = subprocess.Popen([oe, "serve", "--listen", "127.0.0.1:0", "--root", root,
                                   "--max-concurrent-runs", "2"],
                                  cwd=root, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                  text=True)
        port = None
        for line in server.stdout:
            m = re.search(r"http://127\.0\.0\.1:(\d+)", line)
            if m:
                port = int(m.group(1))
                break
        if port is None:
            sys.exit("oe serve printed no URL")
        asyncio.run(figures(a, port, root))
    finally:
        if server:
            server.send_signal(signal.SIGTERM)
            try:
                server.wait(60)
            except subprocess.TimeoutExpired:
                server.kill()
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
