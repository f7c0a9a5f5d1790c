#!/usr/bin/env python3
"""Side-by-side throughput and CPU benchmark: gantry against awscrt's S3Client and obstore.

Every scenario starts a fresh gantry-fault-server (an in-memory S3 server; its shaping gives
S3's time to first byte and per-connection rate), preloads the objects it reads, then runs
each client's runner on the same spec (same objects, part size and connection count) in
alternation for a warm-up round plus ROUNDS counted rounds; the order of clients rotates
every round. A runner reports bytes, wall seconds and CPU seconds of its transfer phase; the
harness adds the runner's peak RSS (wait4). Output: a Markdown table per scenario and the
gantry/peer ratios, min-median-max over rounds, each ratio taken within one round.

The faults-get scenario measures recovery: the bulk-get downloads from two servers side by
side, a clean one and one that answers every 50th GET with 503 SlowDown and resets every 40th
GET body midway (the profile of benches/faults_1gib.sh). In every round each client runs
against both, one after the other; its figure is its *slowdown*, faulty wall time / its own
clean wall time in that round, so a client is judged against itself, not against the others'
speed. faults-s3like-get is the same with S3-like shaping: unshaped, the loopback run is
bound by CPU and a recovery's latency mostly hides behind the other connections' work;
shaped, every wait a recovery adds shows.

The tls-* scenarios serve HTTPS with a throwaway CA (gantry-fault-server --tls-self-signed);
every client trusts that CA (gantry's ca_bundle, the CRT's trust store override, obstore's
root_certificate, curl --cacert) and none turns verification off.

    benches/run.sh [--scenarios bulk-get,s3like-get,faults-get,...] [--rounds N] [--clients gantry,crt,obstore] [--smoke]
    benches/run.sh --runner gantry-b=/path/to/other/gantry-bench --clients gantry,gantry-b --base gantry-b

Run it through benches/run.sh, which builds the binaries and installs the peers first.
"""
import argparse
import json
import os
import ssl
import statistics as st
import subprocess
import sys
import tempfile
import time
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BIN = os.path.join(ROOT, "target", "release")
RUNNERS = {
    "gantry": [os.path.join(BIN, "gantry-bench")],
    "crt": [sys.executable, os.path.join(ROOT, "benches", "runners", "crt_runner.py")],
    "obstore": [sys.executable, os.path.join(ROOT, "benches", "runners", "obstore_runner.py")],
}
MIB = 1 << 20
EXPRESS_BUCKET = "bench--use1-az4--x-s3"
PART = 8 * MIB
S3_TTFB_MS = 20
S3_CONN_MBPS = 25.0  # MB/s (10^6) per connection
# The fault profile of faults-get (and benches/faults_1gib.sh): gantry-fault-server --fault specs.
FAULT_PROFILE = ["503,op=GetObject,every=50", "reset-mid,op=GetObject,every=40"]


def scenarios(scale, workdir):
    """Scenario name -> dict(shaping, connections, preload, workloads, ideal). `scale` shrinks
    sizes and counts for a smoke run."""
    def n(x):
        return max(1, x // scale)

    big = n(256) * MIB
    s3 = {"first_byte_ms": S3_TTFB_MS, "conn_rate_mbps": S3_CONN_MBPS}
    bulk_keys = [f"bulk-{i}" for i in range(8)]
    s3like_size = n(512) * MIB
    small_keys = [f"small-{i:05}" for i in range(n(2000))]
    src_file = os.path.join(workdir, "put-src.bin")
    per_part = S3_TTFB_MS / 1000 + PART / (S3_CONN_MBPS * 1e6)
    small_each = S3_TTFB_MS / 1000 + 128 * 1024 / (S3_CONN_MBPS * 1e6)
    return {
        "bulk-get": dict(
            about=f"8 x {big // MIB} MiB GETs, no shaping, 16 connections",
            shaping={}, connections=16, preload=[(bulk_keys, big)],
            workloads=[dict(name="get", op="get", keys=bulk_keys, size=big, in_flight=8)],
            floor=bulk_keys[0]),
        "faults-get": dict(
            about=f"bulk-get (8 x {big // MIB} MiB GETs, no shaping, 16 connections) from a clean server and "
                  "from one with a 503 SlowDown every 50 GETs and a reset mid-body every 40 GETs",
            shaping={}, connections=16, preload=[(bulk_keys, big)], faults=FAULT_PROFILE,
            workloads=[dict(name="get", op="get", keys=bulk_keys, size=big, in_flight=8)]),
        "faults-s3like-get": dict(
            about=f"faults-get with S3-like shaping (first byte 20 ms, 25 MB/s per connection): the same "
                  f"8 x {big // MIB} MiB GETs and faults, bound by latency instead of CPU",
            shaping=s3, connections=16, preload=[(bulk_keys, big)], faults=FAULT_PROFILE,
            workloads=[dict(name="get", op="get", keys=bulk_keys, size=big, in_flight=8)]),
        "tls-bulk-get": dict(
            about=f"bulk-get over HTTPS: 8 x {big // MIB} MiB GETs, no shaping, 16 connections",
            tls=True, shaping={}, connections=16, preload=[(bulk_keys, big)],
            workloads=[dict(name="get", op="get", keys=bulk_keys, size=big, in_flight=8)],
            floor=bulk_keys[0]),
        "tls-bulk-put": dict(
            about=f"bulk-put-mem over HTTPS: 4 x {big // MIB} MiB multipart uploads from memory, 16 connections",
            tls=True, shaping={}, connections=16, preload=[], src_file=(src_file, big),
            workloads=[dict(name="put", op="put", source="memory", keys=[f"put-{i}" for i in range(4)], size=big, in_flight=4)],
            floor_put=src_file),
        "s3like-get": dict(
            about=f"4 x {s3like_size // MIB} MiB GETs, first byte 20 ms, 25 MB/s per connection, 32 connections",
            shaping=s3, connections=32, preload=[([f"s3like-{i}" for i in range(4)], s3like_size)],
            workloads=[dict(name="get", op="get", keys=[f"s3like-{i}" for i in range(4)], size=s3like_size, in_flight=4)],
            # every connection fetches 8 MiB parts back to back, each paying the first-byte delay
            ideal_bps=32 * PART / per_part),
        "small-get": dict(
            about=f"{len(small_keys)} x 128 KiB GETs, first byte 20 ms, 25 MB/s per connection, 64 in flight",
            shaping=s3, connections=64, preload=[(small_keys, 128 * 1024)],
            workloads=[dict(name="get", op="get", keys=small_keys, size=128 * 1024, in_flight=64)],
            ideal_objps=64 / small_each, floor_parallel=64),
        # How cost grows with work: the same workload at two sizes, gantry builds only (the
        # peers are compared in the rows above). CPU per GiB (or per object) and peak RSS
        # should stay flat. The large runs repeat the keys, so the server's memory stays that
        # of the small set.
        "scale-bulk-get": dict(
            about=f"bulk-get at {n(1024)} MiB and {n(16384)} MiB: 4 vs 64 GETs of {big // MIB} MiB objects "
                  f"(scaled {scale}x down in smoke runs), no shaping, 16 connections, 8 in flight",
            shaping={}, connections=16, preload=[(bulk_keys[:4], big)],
            scale=[(f"{4 * big // MIB} MiB", [dict(name="get", op="get", keys=bulk_keys[:4], size=big, in_flight=8)]),
                   (f"{64 * big // MIB} MiB", [dict(name="get", op="get", keys=bulk_keys[:4] * 16, size=big, in_flight=8)])]),
        "scale-small-get": dict(
            about=f"small-get at {n(2000)} and {n(50000)} x 128 KiB GETs (the large run reads the "
                  f"{n(2000)} keys 25 times), first byte 20 ms, 25 MB/s per connection, 64 in flight",
            shaping=s3, connections=64, preload=[(small_keys, 128 * 1024)],
            scale=[(f"{len(small_keys):,}", [dict(name="get", op="get", keys=small_keys, size=128 * 1024, in_flight=64)]),
                   (f"{25 * len(small_keys):,}", [dict(name="get", op="get", keys=small_keys * 25, size=128 * 1024, in_flight=64)])]),
        # S3 Express One Zone: the same transfers on a directory bucket behind a 2 ms first
        # byte and on a general-purpose bucket behind 20 ms, gantry builds only (the peers'
        # runners know no sessions). What the session costs: CreateSession requests per GiB
        # and CPU per request.
        "express-checkpoint-put": dict(
            about=f"one {n(1024)} MiB stream of unknown length (8 MiB writes), 16 connections, on a directory "
                  "bucket (first byte 2 ms) and on a general-purpose bucket (first byte 20 ms)",
            connections=16, preload=[],
            variants=[("directory bucket, 2 ms", EXPRESS_BUCKET, {"first_byte_ms": 2}),
                      ("general-purpose, 20 ms", "bench", {"first_byte_ms": 20})],
            workloads=[dict(name="stream", op="stream-put", keys=["checkpoint"], size=n(1024) * MIB, write_size=PART)]),
        "express-bulk-get": dict(
            about=f"8 x {big // MIB} MiB GETs, 16 connections, on a directory bucket (first byte 2 ms) and on a "
                  "general-purpose bucket (first byte 20 ms)",
            connections=16, preload=[(bulk_keys, big)],
            variants=[("directory bucket, 2 ms", EXPRESS_BUCKET, {"first_byte_ms": 2}),
                      ("general-purpose, 20 ms", "bench", {"first_byte_ms": 20})],
            workloads=[dict(name="get", op="get", keys=bulk_keys, size=big, in_flight=8)]),
        "bulk-put-mem": dict(
            about=f"4 x {big // MIB} MiB multipart uploads from memory, 16 connections",
            shaping={}, connections=16, preload=[],
            workloads=[dict(name="put", op="put", source="memory", keys=[f"put-{i}" for i in range(4)], size=big, in_flight=4)]),
        "bulk-put-file": dict(
            about=f"4 x {big // MIB} MiB multipart uploads from a file, 16 connections",
            shaping={}, connections=16, preload=[], src_file=(src_file, big),
            workloads=[dict(name="put", op="put", source="file", file=src_file, keys=[f"put-{i}" for i in range(4)], size=big, in_flight=4)]),
        "checkpoint-put": dict(
            about=f"one {n(2048)} MiB stream of unknown length (8 MiB writes), 16 connections",
            shaping={}, connections=16, preload=[],
            workloads=[dict(name="stream", op="stream-put", keys=["checkpoint"], size=n(2048) * MIB, write_size=PART)]),
        "mixed": dict(
            about="at once, S3-like shaping, 32 connections: 2 x 256 MiB GETs, 500 x 128 KiB GETs (16 in flight), "
                  "2 x 256 MiB uploads from memory, one 512 MiB stream (sizes / scale)",
            shaping=s3, connections=32,
            preload=[(bulk_keys[:2], big), (small_keys[:n(500)], 128 * 1024)],
            workloads=[
                dict(name="big-get", op="get", keys=bulk_keys[:2], size=big, in_flight=2),
                dict(name="small-get", op="get", keys=small_keys[:n(500)], size=128 * 1024, in_flight=16),
                dict(name="put", op="put", source="memory", keys=["mixed-put-0", "mixed-put-1"], size=big, in_flight=2),
                dict(name="stream", op="stream-put", keys=["mixed-stream"], size=n(512) * MIB, write_size=PART),
            ]),
    }


class Server:
    """A gantry-fault-server process with the scenario's shaping; over HTTPS with a fresh CA
    (`self.ca`, else None) when `tls`."""

    def __init__(self, shaping, workdir, tls=False, faults=(), name="server", express_bucket=None):
        args = [os.path.join(BIN, "gantry-fault-server"), "--port", "0"]
        if express_bucket:
            # S3 Express double: sessions for the runners' keys, the directory bucket made.
            args += ["--express-base-key", "bench:bench-secret", "--bucket", express_bucket]
        for f in faults:
            args += ["--fault", f]
        self.ca, self.ssl = None, None
        if tls:
            args += ["--tls-self-signed", os.path.join(workdir, "tls")]
            self.ca = os.path.join(workdir, "tls", "ca.pem")
        if shaping.get("first_byte_ms"):
            args += ["--first-byte-ms", str(shaping["first_byte_ms"])]
        if shaping.get("conn_rate_mbps"):
            args += ["--conn-rate-mbps", str(shaping["conn_rate_mbps"])]
        self.log = open(os.path.join(workdir, f"{name}.out"), "w+")
        self.proc = subprocess.Popen(args, stdout=self.log, stderr=subprocess.STDOUT)
        for _ in range(100):
            self.log.seek(0)
            line = self.log.readline()
            if line.startswith("listening on "):
                self.endpoint = line.split()[-1]
                break
            time.sleep(0.05)
        else:
            raise SystemExit("gantry-fault-server did not start")
        if self.ca:
            self.ssl = ssl.create_default_context(cafile=self.ca)
        if not express_bucket:
            self.urlopen(urllib.request.Request(f"{self.endpoint}/bench", method="PUT")).close()

    def urlopen(self, req):
        return urllib.request.urlopen(req, context=self.ssl)

    def curl(self):
        """curl's command line for this server (trusting its CA)."""
        return ["curl", "-sf", "-o", "/dev/null"] + (["--cacert", self.ca] if self.ca else [])

    def size_of(self, key):
        with self.urlopen(urllib.request.Request(f"{self.endpoint}/bench/{key}", method="HEAD")) as r:
            return int(r.headers["Content-Length"])

    def stop(self):
        """Stops the server; returns its closing summary (requests and faults fired), if any."""
        self.proc.terminate()
        self.proc.wait()
        self.log.seek(0)
        lines = [l for l in self.log.read().splitlines() if l.startswith("{")]
        self.log.close()
        return json.loads(lines[-1]) if lines else {}


# Linux caps one command-line argument at 128 KiB (MAX_ARG_STRLEN); a longer spec (50,000
# keys) goes to the runner as `@file`, which every runner reads.
LONGEST_INLINE_SPEC = 100_000


def run_measured(argv, env=None):
    """Runs a process to its end; returns (stdout, rusage). wait4 gives the child's peak RSS
    and CPU, which subprocess would otherwise reap and discard. The last argument is the spec."""
    spec_file = None
    if len(argv[-1]) > LONGEST_INLINE_SPEC:
        fd, spec_file = tempfile.mkstemp(prefix="gantry-spec-", suffix=".json")
        with os.fdopen(fd, "w") as f:
            f.write(argv[-1])
        argv = argv[:-1] + ["@" + spec_file]
    try:
        p = subprocess.Popen(argv, stdout=subprocess.PIPE, env=env)
        out = p.stdout.read()
        _, status, ru = os.wait4(p.pid, 0)
    finally:
        if spec_file:
            os.unlink(spec_file)
    p.returncode = os.waitstatus_to_exitcode(status)
    if p.returncode != 0:
        raise SystemExit(f"{argv[0]} failed with {p.returncode}")
    return out.decode(), ru


def spec_for(sc, server, settings):
    """The spec every runner gets. Over HTTPS, `ca_bundle` names the CA to trust: the peer
    runners read that key, gantry-bench gets it as gantry's own `ca_bundle` setting."""
    spec = {"endpoint": server.endpoint, "bucket": sc.get("bucket", "bench"), "connections": sc["connections"],
            "part_size": PART, "workloads": sc.get("workloads", []), "gantry_settings": dict(settings)}
    if server.ca:
        spec["ca_bundle"] = server.ca
        spec["gantry_settings"]["ca_bundle"] = server.ca
    return spec


def preload(sc, server):
    for keys, size in sc["preload"]:
        spec = dict(spec_for(sc, server, {}), connections=16,
                    workloads=[dict(name="preload", op="put", source="memory", keys=keys, size=size, in_flight=16)])
        run_measured(RUNNERS["gantry"] + [json.dumps(spec)])


def check_uploads(sc, server):
    """Uploads must have landed whole: the server's size of every key written."""
    for w in sc["workloads"]:
        if w["op"] == "get":
            continue
        want = w["size"] if w["op"] == "stream-put" or w.get("source") != "file" else os.path.getsize(w["file"])
        for k in w["keys"]:
            got = server.size_of(k)
            if got != want:
                raise SystemExit(f"{k}: server holds {got} bytes, expected {want}")


def run_paired(name, sc, clients, rounds, workdir, settings):
    """faults-get: every client against a clean and a faulty server in each round, the two
    runs back to back (which goes first alternates by round, the order of clients rotates);
    rows carry `mode` clean/faulty."""
    clean = Server(sc["shaping"], workdir, name="clean")
    faulty = None
    rows = []
    try:
        faulty = Server(sc["shaping"], workdir, faults=sc["faults"], name="faulty")
        for server in (clean, faulty):
            preload(sc, server)
        specs = {m: json.dumps(spec_for(sc, srv, settings)) for m, srv in (("clean", clean), ("faulty", faulty))}
        for r in range(rounds + 1):  # round 0 warms up and is not counted
            order = clients[r % len(clients):] + clients[:r % len(clients)]
            for c in order:
                for mode in ("clean", "faulty") if r % 2 else ("faulty", "clean"):
                    out, ru = run_measured(RUNNERS[c] + [specs[mode]])
                    res = json.loads(out.strip().splitlines()[-1])
                    res.update(who=c, round=r, mode=mode, max_rss_kib=ru.ru_maxrss)
                    if r > 0:
                        rows.append(res)
                    print(f"  {name} round {r} {c} {mode}: {res['bytes'] / MIB / res['seconds']:.0f} MiB/s, "
                          f"{res['cpu_s'] / (res['bytes'] / (1 << 30)):.3f} CPU s/GiB", file=sys.stderr)
    finally:
        clean.stop()
        summary = faulty.stop() if faulty else {}
    sc["fault_summary"] = summary
    return rows


def report_paired(name, sc, rows, clients):
    gib = lambda r: r["bytes"] / (1 << 30)
    out = [f"### {name}", "", sc["about"], "",
           "| client | clean s (median) | faulty s (median) | slowdown faulty/clean (min – median – max) "
           "| s added by faults (median) | CPU s/GiB clean | CPU s/GiB faulty | peak RSS MiB (max) |",
           "|---|---|---|---|---|---|---|---|"]
    for c in clients:
        rs = {m: [r for r in rows if r["who"] == c and r["mode"] == m] for m in ("clean", "faulty")}
        if not rs["clean"] or not rs["faulty"]:
            continue
        slow, added = [], []
        for rnd in sorted({r["round"] for r in rs["clean"]}):
            cl = next(r for r in rs["clean"] if r["round"] == rnd)
            fa = next((r for r in rs["faulty"] if r["round"] == rnd), None)
            if fa:
                slow.append(fa["seconds"] / cl["seconds"])
                added.append(fa["seconds"] - cl["seconds"])
        cells = [c, f"{st.median(r['seconds'] for r in rs['clean']):.2f}",
                 f"{st.median(r['seconds'] for r in rs['faulty']):.2f}", rng(slow), f"{st.median(added):+.2f}",
                 f"{st.median(r['cpu_s'] / gib(r) for r in rs['clean']):.3f}",
                 f"{st.median(r['cpu_s'] / gib(r) for r in rs['faulty']):.3f}",
                 f"{max(r['max_rss_kib'] for r in rs['clean'] + rs['faulty']) / 1024:.0f}"]
        out.append("| " + " | ".join(cells) + " |")
    s = sc.get("fault_summary") or {}
    if s:
        out += ["", f"faulty server, all runs: {s.get('by_op', {}).get('GetObject', 0)} GETs, "
                    f"{s.get('faults_fired', 0)} faults fired"]
    return "\n".join(out) + "\n"


def gantry_builds(clients):
    """The clients that are gantry-bench binaries (gantry, and any --runner NAME=PATH)."""
    return [c for c in clients if c not in ("crt", "obstore")]


def run_scale(name, sc, clients, rounds, workdir, settings):
    """Each gantry build at each size of the scenario, sizes and builds alternating per round."""
    server = Server(sc["shaping"], workdir)
    rows = []
    try:
        preload(sc, server)
        for r in range(rounds + 1):  # round 0 warms up and is not counted
            for label, workloads in sc["scale"]:
                spec = json.dumps(dict(spec_for(sc, server, settings), workloads=workloads))
                for c in gantry_builds(clients):
                    out, ru = run_measured(RUNNERS[c] + [spec])
                    res = json.loads(out.strip().splitlines()[-1])
                    res.update(who=c, round=r, size=label, max_rss_kib=ru.ru_maxrss)
                    if r > 0:
                        rows.append(res)
                    objects = res["workloads"][0]["objects"]
                    print(f"  {name} round {r} {c} {label}: {res['bytes'] / MIB / res['seconds']:.0f} MiB/s, "
                          f"{res['cpu_s'] / objects * 1e6:.0f} CPU us/object, {ru.ru_maxrss // 1024} MiB RSS",
                          file=sys.stderr)
    finally:
        server.stop()
    return rows


def report_scale(name, sc, rows, clients):
    out = [f"### {name}", "", sc["about"], "",
           "| client | size | MiB/s | objects/s | CPU s/GiB | CPU µs/object | peak RSS MiB |",
           "|---|---|---|---|---|---|---|"]
    per = {}
    for c in gantry_builds(clients):
        for label, _ in sc["scale"]:
            rs = [r for r in rows if r["who"] == c and r["size"] == label]
            if not rs:
                continue
            cpg = st.median(r["cpu_s"] / (r["bytes"] / (1 << 30)) for r in rs)
            cpo = st.median(r["cpu_s"] / r["workloads"][0]["objects"] * 1e6 for r in rs)
            rss = max(r["max_rss_kib"] for r in rs) / 1024
            per[(c, label)] = (cpg, rss)
            out.append(f"| {c} | {label} | {st.median(r['bytes'] / MIB / r['seconds'] for r in rs):.0f} | "
                       f"{st.median(r['workloads'][0]['objects'] / r['seconds'] for r in rs):.0f} | {cpg:.3f} | "
                       f"{cpo:.1f} | {rss:.0f} |")
    (small, _), (large, _) = sc["scale"]
    out += ["", f"| client | CPU per unit, {large} / {small} | peak RSS, {large} / {small} |", "|---|---|---|"]
    for c in gantry_builds(clients):
        if (c, small) in per and (c, large) in per:
            (a, ra), (b, rb) = per[(c, small)], per[(c, large)]
            out.append(f"| {c} | {b / a:.2f} | {rb / ra:.2f} |")
    return "\n".join(out) + "\n"


def run_express(name, sc, clients, rounds, workdir, settings):
    """Each gantry build on each variant (bucket kind and first-byte delay), one server per
    variant; the server's closing summary gives the requests and CreateSessions of all runs."""
    rows = []
    for label, bucket, shaping in sc["variants"]:
        server = Server(shaping, workdir, name=f"express-{len(rows)}",
                        express_bucket=bucket if bucket == EXPRESS_BUCKET else None)
        variant = dict(sc, bucket=bucket)
        moved, summary = 0, {}
        try:
            preload(variant, server)
            moved += sum(len(keys) * size for keys, size in variant["preload"])
            spec = json.dumps(spec_for(variant, server, settings))
            for r in range(rounds + 1):
                for c in gantry_builds(clients):
                    out, ru = run_measured(RUNNERS[c] + [spec])
                    res = json.loads(out.strip().splitlines()[-1])
                    moved += res["bytes"]
                    res.update(who=c, round=r, variant=label, max_rss_kib=ru.ru_maxrss)
                    if r > 0:
                        rows.append(res)
                    print(f"  {name} round {r} {c} {label}: {res['bytes'] / MIB / res['seconds']:.0f} MiB/s, "
                          f"{res['cpu_s'] / (res['bytes'] / (1 << 30)):.3f} CPU s/GiB", file=sys.stderr)
        finally:
            summary = server.stop()
        sessions = summary.get("by_op", {}).get("CreateSession", 0)
        requests = summary.get("requests", 0)
        for row in rows:
            if row["variant"] == label:
                row.update(sessions_per_gib=sessions / (moved / (1 << 30)), requests_per_gib=requests / (moved / (1 << 30)))
    return rows


def report_express(name, sc, rows, clients):
    out = [f"### {name}", "", sc["about"], "",
           "| client | bucket, first byte | MiB/s | CPU s/GiB | requests per GiB | CreateSession per GiB | CPU µs per request | peak RSS MiB |",
           "|---|---|---|---|---|---|---|---|"]
    for c in gantry_builds(clients):
        for label, _, _ in sc["variants"]:
            rs = [r for r in rows if r["who"] == c and r["variant"] == label]
            if not rs:
                continue
            mibs = st.median(r["bytes"] / MIB / r["seconds"] for r in rs)
            cpg = st.median(r["cpu_s"] / (r["bytes"] / (1 << 30)) for r in rs)
            rpg = rs[0]["requests_per_gib"]
            cells = [c, label, f"{mibs:.0f}", f"{cpg:.3f}", f"{rpg:.0f}", f"{rs[0]['sessions_per_gib']:.2f}",
                     f"{1e6 * cpg / rpg:.0f}" if rpg else "–", f"{max(r['max_rss_kib'] for r in rs) / 1024:.0f}"]
            out.append("| " + " | ".join(cells) + " |")
    out += ["", "requests and CreateSessions per GiB count every run on that server (preload and warm-up included); "
                "each gantry-bench run is a new process, so it makes its own session"]
    return "\n".join(out) + "\n"


def run_scenario(name, sc, clients, rounds, workdir, settings):
    if "variants" in sc:
        return run_express(name, sc, clients, rounds, workdir, settings)
    if "scale" in sc:
        return run_scale(name, sc, clients, rounds, workdir, settings)
    if "faults" in sc:
        return run_paired(name, sc, clients, rounds, workdir, settings)
    if "src_file" in sc:
        path, size = sc["src_file"]
        if not os.path.exists(path) or os.path.getsize(path) != size:
            # In 8 MiB pieces: the harness's own RSS must stay small, because a child's peak
            # RSS (wait4) starts from the parent's at fork.
            with open(path, "wb") as f:
                for _ in range(0, size, 8 * MIB):
                    f.write(os.urandom(min(8 * MIB, size)))
    server = Server(sc["shaping"], workdir, tls=sc.get("tls", False))
    rows = []
    try:
        preload(sc, server)
        if "ideal_objps" in sc:
            sc["one_object_s"] = one_object_seconds(server, sc["workloads"][0]["keys"][0])
        spec = json.dumps(spec_for(sc, server, settings))
        for r in range(rounds + 1):  # round 0 warms up and is not counted
            order = clients[r % len(clients):] + clients[:r % len(clients)]
            for c in order:
                out, ru = run_measured(RUNNERS[c] + [spec])
                res = json.loads(out.strip().splitlines()[-1])
                check_uploads(sc, server)
                res.update(who=c, round=r, max_rss_kib=ru.ru_maxrss)
                if r > 0:
                    rows.append(res)
                print(f"  {name} round {r} {c}: {res['bytes'] / MIB / res['seconds']:.0f} MiB/s, "
                      f"{res['cpu_s'] / (res['bytes'] / (1 << 30)):.3f} CPU s/GiB", file=sys.stderr)
            # The floor: curl, one plain request for one object (a GET to /dev/null, or a PUT
            # of the source file with -T), on one connection.
            floor = None
            if sc.get("floor"):
                floor = server.curl() + [f"{server.endpoint}/bench/{sc['floor']}"]
            elif sc.get("floor_put"):
                floor = server.curl() + ["-T", sc["floor_put"], f"{server.endpoint}/bench/curl-floor"]
            if sc.get("floor_parallel"):
                # Many objects: one curl process, every key, as many at once as the clients
                # have in flight (curl's own event loop, one GET per object, no signing).
                w = sc["workloads"][0]
                conf = os.path.join(workdir, "curl-floor.conf")
                with open(conf, "w") as f:
                    f.writelines(f'url = "{server.endpoint}/bench/{k}"\noutput = "/dev/null"\n' for k in w["keys"])
                t0 = time.monotonic()
                _, ru = run_measured(server.curl()[:2] + (["--cacert", server.ca] if server.ca else []) +
                                     ["--no-progress-meter", "--parallel", "--parallel-max", str(sc["floor_parallel"]), "-K", conf])
                if r > 0:
                    rows.append(dict(who="curl", round=r, bytes=w["size"] * len(w["keys"]),
                                     seconds=time.monotonic() - t0, cpu_s=ru.ru_utime + ru.ru_stime,
                                     max_rss_kib=ru.ru_maxrss, workloads=[dict(objects=len(w["keys"]))]))
            if floor:
                _, ru = run_measured(floor)
                if r > 0:
                    size = sc["workloads"][0]["size"]
                    rows.append(dict(who="curl", round=r, bytes=size, seconds=None, cpu_s=ru.ru_utime + ru.ru_stime,
                                     max_rss_kib=ru.ru_maxrss, workloads=[]))
    finally:
        server.stop()
    return rows


def one_object_seconds(server, key):
    """What one GET of one object takes on this server when nothing else runs (median of 9
    curl GETs on fresh connections): the server's own delays are not exactly the configured
    ones (timer granularity), so the ideal built from them is a bound no client reaches."""
    times = []
    for _ in range(9):
        out = subprocess.run(server.curl() + ["-w", "%{time_total}", f"{server.endpoint}/bench/{key}"],
                             check=True, capture_output=True, text=True).stdout
        times.append(float(out))
    return st.median(times)


def rng(xs, fmt="{:.2f}"):
    xs = sorted(xs)
    return f"{fmt.format(xs[0])} – {fmt.format(st.median(xs))} – {fmt.format(xs[-1])}"


def report(name, sc, rows, clients, base="gantry"):
    if "variants" in sc:
        return report_express(name, sc, rows, clients)
    if "scale" in sc:
        return report_scale(name, sc, rows, clients)
    if "faults" in sc:
        return report_paired(name, sc, rows, clients)
    gib = lambda r: r["bytes"] / (1 << 30)
    mibs = lambda r: r["bytes"] / MIB / r["seconds"]
    cpg = lambda r: r["cpu_s"] / gib(r)
    out = [f"### {name}", "", sc["about"], ""]
    extra = ""
    if "ideal_bps" in sc:
        extra = " | % of ideal"
    if "ideal_objps" in sc:
        extra = " | objects/s | % of ideal"
    out += [f"| client | MiB/s (median) | CPU s/GiB (median) | peak RSS MiB (max){extra} |",
            "|---|---|---|---" + "|---" * extra.count("|") + "|"]
    for c in clients + ["curl"]:
        rs = [r for r in rows if r["who"] == c]
        if not rs:
            continue
        timed = all(r["seconds"] is not None for r in rs)
        speed = f"{st.median(mibs(r) for r in rs):.0f}" if timed else "(1 connection)"
        curl = "curl -T file" if sc.get("floor_put") else "curl -o /dev/null"
        if sc.get("floor_parallel"):
            curl = f"curl --parallel-max {sc['floor_parallel']}"
        cells = [c if c != "curl" else curl, speed, f"{st.median(cpg(r) for r in rs):.3f}",
                 f"{max(r['max_rss_kib'] for r in rs) / 1024:.0f}"]
        if "ideal_bps" in sc and c != "curl":
            cells.append(f"{100 * st.median(r['bytes'] / r['seconds'] for r in rs) / sc['ideal_bps']:.1f}%")
        if "ideal_objps" in sc and timed:
            objps = st.median(r["workloads"][0]["objects"] / r["seconds"] for r in rs)
            cells += [f"{objps:.0f}", f"{100 * objps / sc['ideal_objps']:.1f}%"]
        out.append("| " + " | ".join(cells) + " |")
    if "ideal_bps" in sc:
        out += ["", f"ideal: {sc['ideal_bps'] / MIB:.0f} MiB/s (32 connections x 8 MiB parts, each 20 ms + 8 MiB at 25 MB/s)"]
    if "ideal_objps" in sc:
        out += ["", f"ideal: {sc['ideal_objps']:.0f} objects/s (64 in flight, each 20 ms + 128 KiB at 25 MB/s)"]
        if sc.get("one_object_s"):
            out[-1] += (f"; one GET alone takes {1000 * sc['one_object_s']:.1f} ms on this server, so 64 in flight "
                        f"can reach at most {64 / sc['one_object_s']:.0f} objects/s "
                        f"({100 * 64 / sc['one_object_s'] / sc['ideal_objps']:.1f}% of ideal)")
    if len(sc["workloads"]) > 1:
        out += ["", "per workload, seconds to finish (median): " + "; ".join(
            f"{c}: " + ", ".join(f"{w['name']} {st.median(r['workloads'][i]['seconds'] for r in rows if r['who'] == c):.2f}"
                                 for i, w in enumerate(sc["workloads"]))
            for c in clients if any(r["who"] == c for r in rows))]
    if base in clients:
        out += ["", f"| {base} / peer (min – median – max over rounds) | throughput | CPU per GiB |", "|---|---|---|"]
        for c in [p for p in clients if p != base] + (["curl"] if any(r["who"] == "curl" for r in rows) else []):
            tp, cpu = [], []
            for rnd in sorted({r["round"] for r in rows}):
                g = next(r for r in rows if r["who"] == base and r["round"] == rnd)
                p = next((r for r in rows if r["who"] == c and r["round"] == rnd), None)
                if p is None:
                    continue
                if p["seconds"] is not None:
                    tp.append(mibs(g) / mibs(p))
                cpu.append(cpg(g) / cpg(p))
            out.append(f"| vs {c} | {rng(tp) if tp else '–'} | {rng(cpu)} |")
    return "\n".join(out) + "\n"


def machine():
    cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), "?")
    mem = next((int(l.split()[1]) // (1 << 20) for l in open("/proc/meminfo") if l.startswith("MemTotal")), 0)
    import awscrt
    import obstore
    curl = subprocess.run(["curl", "--version"], capture_output=True, text=True).stdout.split()
    curl = f"curl {curl[1]} ({next((w for w in curl if w.startswith('OpenSSL/')), 'TLS library unknown')})"
    return (f"machine: {os.cpu_count()} x {cpu}, {mem} GiB RAM, kernel {os.uname().release}; "
            f"awscrt {awscrt.__version__}, obstore {obstore.__version__}, {curl}; "
            "server: gantry-fault-server on loopback")


def main():
    ap = argparse.ArgumentParser()
    all_names = list(scenarios(1, "/tmp"))
    ap.add_argument("--scenarios", default=",".join(all_names))
    ap.add_argument("--clients", default="gantry,crt,obstore")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--smoke", action="store_true", help="sizes / 16, one round: checks the harness, not speed")
    ap.add_argument("--out", help="also write the Markdown to this file")
    ap.add_argument("--gantry-set", action="append", default=[], metavar="KEY=VALUE",
                    help="a gantry config key (as gantry_config_set takes it) for gantry's runs, e.g. checksum_upload=none")
    ap.add_argument("--runner", action="append", default=[], metavar="NAME=PATH",
                    help="another gantry-bench binary (e.g. a build with other features) as client NAME")
    ap.add_argument("--base", default="gantry", help="the client the ratio table divides by its peers")
    a = ap.parse_args()
    for kv in a.runner:
        who, path = kv.split("=", 1)
        RUNNERS[who] = [os.path.abspath(path)]
    settings = dict(kv.split("=", 1) for kv in a.gantry_set)
    clients = a.clients.split(",")
    unknown = [c for c in clients if c not in RUNNERS]
    if unknown:
        raise SystemExit(f"unknown client {', '.join(unknown)}; known: {', '.join(RUNNERS)} (add one with --runner)")
    rounds = 1 if a.smoke else a.rounds
    os.environ.setdefault("AWS_ACCESS_KEY_ID", "bench")
    os.environ.setdefault("AWS_SECRET_ACCESS_KEY", "bench-secret")
    md = [f"{machine()}; rounds: {rounds} after a warm-up; part size 8 MiB; "
          + (f"gantry settings: {settings}; " if settings else "gantry at its defaults (CRC64NVME on uploads, verified downloads); ")
          + time.strftime("%Y-%m-%d"), ""]
    with tempfile.TemporaryDirectory() as workdir:
        table = scenarios(16 if a.smoke else 1, workdir)
        for name in a.scenarios.split(","):
            if name not in table:
                raise SystemExit(f"unknown scenario {name}; known: {', '.join(all_names)}")
            rows = run_scenario(name, table[name], clients, rounds, workdir, settings)
            md.append(report(name, table[name], rows, clients, a.base))
            print(md[-1], flush=True)
    if a.out:
        with open(a.out, "w") as f:
            f.write("\n".join(md))


if __name__ == "__main__":
    main()
