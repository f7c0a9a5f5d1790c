#!/usr/bin/env python3
"""gantry.torch against the S3 Connector for PyTorch (s3torchconnector 1.5.0, on the CRT),
side by side on one gantry-fault-server, the same objects, part size (8 MiB) and throughput
target (10 Gbit/s, the connector's default, which sizes both clients' connection pools):

  (a) shards      ShardDataset vs S3IterableDataset: 16 x 256 MiB shards, DataLoader with 4
                  workers (fork), each shard read to its end in 1 MiB readinto calls
  (b) objects     ObjectDataset vs S3MapDataset: 20,000 x 128 KiB objects, first byte 20 ms,
                  batch_size 64, 4 workers; every sample read whole
  (c) checkpoint  gantry.torch.save/load vs S3Checkpoint: a 2 GiB state_dict (32 x 64 MiB)
  (d) dcp         gantry.torch.dcp vs s3torchconnector.dcp: 2 ranks (torchrun, gloo), 1 GiB
                  each, 8 writer threads each; on `gantry serve` (files on disk), since the
                  connector renames `.metadata` with CopyObject, which the fault server lacks

Each client runs in a process of its own (benches/runners/torch_runner.py); the harness adds
its peak RSS (wait4: the largest of the process and its waited-for children). The server's CPU
per GiB is reported too: client and server share the machine's two cores, so once both are
busy, a client's throughput can only grow by what it saves in CPU. Clients
alternate within a round; the order flips every round; ratios are taken within one round.

    benches/run.sh --torch [--cases shards,objects,checkpoint,dcp] [--rounds N] [--smoke]
"""
import os
import sys

# This file is named torch.py: its own directory must not be on the path, or `import torch`
# would find this file.
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path = [p for p in sys.path if os.path.abspath(p or ".") != HERE]

import argparse  # noqa: E402
import importlib.util  # noqa: E402
import json  # noqa: E402
import socket  # noqa: E402
import statistics as st  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402

_spec = importlib.util.spec_from_file_location("harness", os.path.join(HERE, "harness.py"))
harness = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(harness)
RUNNERS, Server, run_measured = harness.RUNNERS, harness.Server, harness.run_measured

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RUNNER = os.path.join(ROOT, "benches", "runners", "torch_runner.py")
MIB = 1 << 20
CLIENTS = ["gantry", "connector"]


def cases(scale):
    def n(x):
        return max(1, x // scale)

    common = {"region": "us-east-1", "part_size": 8 * MIB, "target_gbps": 10.0, "workers": 4}
    return {
        "shards": dict(about=f"(a) {n(16)} x {n(256)} MiB shards, DataLoader 4 workers, each shard read to the end",
                       shaping={}, preload=[([f"shard-{i:03}.tar" for i in range(n(16))], n(256) * MIB)],
                       spec=dict(common, keys=[f"shard-{i:03}.tar" for i in range(n(16))]), unit="MiB/s"),
        "objects": dict(about=f"(b) {n(20000)} x 128 KiB objects, first byte 20 ms, batch_size 64, 4 workers",
                        shaping={"first_byte_ms": 20},
                        preload=[([f"img/{i:05}.jpg" for i in range(n(20000))], 128 * 1024)],
                        spec=dict(common, prefix="img/", batch_size=64), unit="samples/s"),
        "checkpoint": dict(about=f"(c) a {n(32) * 64} MiB state_dict ({n(32)} x 64 MiB tensors), save then load",
                           shaping={}, preload=[],
                           spec=dict(common, tensors=n(32), tensor_bytes=64 * MIB), unit="MiB/s"),
        "dcp": dict(about=f"(d) DCP on 2 ranks (torchrun, gloo), {n(16)} x 64 MiB per rank, 8 writer threads, save then load",
                    shaping={}, preload=[], serve=True,
                    spec=dict(common, tensors=n(16), tensor_bytes=64 * MIB, dcp_threads=8), unit="MiB/s"),
    }


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run_client(case, client, spec):
    argv = [sys.executable, RUNNER, case, client, json.dumps(spec)]
    if case == "dcp":
        argv = [sys.executable, "-m", "torch.distributed.run", "--nproc_per_node=2", "--master_addr=127.0.0.1",
                f"--master_port={free_port()}"] + argv[1:]
    out, ru = run_measured(argv)
    phases = [json.loads(line) for line in out.splitlines() if line.startswith("{")]
    for p in phases:
        p["peak_rss_mib"] = ru.ru_maxrss / 1024
    return phases


def preload(sc, server, spec):
    for keys, size in sc["preload"]:
        s = {"endpoint": server.endpoint, "bucket": spec["bucket"], "connections": 16, "part_size": 8 * MIB,
             "workloads": [dict(name="preload", op="put", source="memory", keys=keys, size=size, in_flight=64)],
             "gantry_settings": {}}
        run_measured(RUNNERS["gantry"] + [json.dumps(s)])


def rate(p, unit):
    return p["samples"] / p["seconds"] if unit == "samples/s" else p["bytes"] / MIB / p["seconds"]


def cpu_per_gib(p):
    return p["cpu"] / (p["bytes"] / (1 << 30))


def rng(xs, fmt="{:.2f}"):
    xs = sorted(xs)
    return fmt.format(st.median(xs)) if len(xs) == 1 else f"{fmt.format(st.median(xs))} ({fmt.format(xs[0])}–{fmt.format(xs[-1])})"


class Serve:
    """`gantry serve` (s3s over a directory) for the dcp case: the connector renames DCP's
    metadata with CopyObject, which gantry-fault-server does not implement."""

    def __init__(self, workdir):
        import subprocess

        port = free_port()
        self.endpoint = f"http://127.0.0.1:{port}"
        self.proc = subprocess.Popen([os.path.join(ROOT, "target", "release", "gantry"), "serve", "--dir",
                                      os.path.join(workdir, "serve"), "--addr", f"127.0.0.1:{port}", "--bucket", "bench",
                                      "--access-key", "bench", "--secret-key", "bench-secret"],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        for _ in range(200):
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.1).close()
                return
            except OSError:
                time.sleep(0.05)
        raise SystemExit("gantry serve did not start")

    def stop(self):
        self.proc.kill()
        self.proc.wait()


def run_case(name, sc, rounds, workdir):
    server = Serve(workdir) if sc.get("serve") else Server(sc["shaping"], workdir, name=name)
    spec = dict(sc["spec"], endpoint=server.endpoint, bucket="bench", server_pid=server.proc.pid)
    try:
        preload(sc, server, spec)
        rows = []  # per round: {client: [phases]}
        for r in range(rounds):
            order = CLIENTS if r % 2 == 0 else CLIENTS[::-1]
            rows.append({c: run_client(name, c, spec) for c in order})
    finally:
        server.stop()
    return rows


def report(name, sc, rows):
    unit = sc["unit"]
    out = [f"### {name}: {sc['about']}", "",
           f"| phase | client | {unit} | CPU s/GiB | server CPU s/GiB | peak RSS MiB | gantry / connector {unit} | gantry / connector CPU per GiB |",
           "|---|---|---|---|---|---|---|---|"]
    for i, phase in enumerate(p["phase"] for p in rows[0]["gantry"]):
        for c in CLIENTS:
            ps = [r[c][i] for r in rows]
            ratio_t = rng([rate(r["gantry"][i], unit) / rate(r["connector"][i], unit) for r in rows]) if c == "gantry" else ""
            ratio_c = rng([cpu_per_gib(r["gantry"][i]) / cpu_per_gib(r["connector"][i]) for r in rows]) if c == "gantry" else ""
            out.append(f"| {phase} | {c} | {rng([rate(p, unit) for p in ps], '{:.0f}')} | "
                       f"{rng([cpu_per_gib(p) for p in ps], '{:.3f}')} | "
                       f"{rng([p['server_cpu'] / (p['bytes'] / (1 << 30)) for p in ps], '{:.3f}')} | "
                       f"{max(p['peak_rss_mib'] for p in ps):.0f} | "
                       f"{ratio_t} | {ratio_c} |")
    return "\n".join(out) + "\n"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cases", default="shards,objects,checkpoint,dcp")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--smoke", action="store_true", help="sizes / 16, one round: checks the harness, not speed")
    ap.add_argument("--out", help="also write the Markdown to this file")
    a = ap.parse_args()
    os.environ.setdefault("AWS_ACCESS_KEY_ID", "bench")
    os.environ.setdefault("AWS_SECRET_ACCESS_KEY", "bench-secret")
    os.environ["AWS_EC2_METADATA_DISABLED"] = "true"
    import s3torchconnector
    import torch

    rounds = 1 if a.smoke else a.rounds
    md = [f"machine: {os.cpu_count()} CPUs; torch {torch.__version__}, s3torchconnector {s3torchconnector.__version__}; "
          f"gantry-fault-server on loopback (gantry serve for dcp); {rounds} round(s); {time.strftime('%Y-%m-%d')}", ""]
    table = cases(16 if a.smoke else 1)
    with tempfile.TemporaryDirectory() as workdir:
        for name in a.cases.split(","):
            if name not in table:
                raise SystemExit(f"unknown case {name}; known: {', '.join(table)}")
            md.append(report(name, table[name], run_case(name, table[name], rounds, workdir)))
            print(md[-1], flush=True)
    if a.out:
        with open(a.out, "w") as f:
            f.write("\n".join(md))


if __name__ == "__main__":
    main()
