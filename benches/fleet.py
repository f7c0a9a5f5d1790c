#!/usr/bin/env python3
"""The fleet rows: `gantry cp --recursive` against s5cmd 2.3 (`cp` with its worker flags) and
`aws s3 cp --recursive` (awscli 1.x, boto3's transfer manager), side by side on one
gantry-fault-server with the same objects and the same number of requests in flight:

  row 1  10,000 x 64 KiB, first byte 20 ms, local -> s3 and s3 -> local, 64 objects in flight
  row 2  64 x 128 MiB, local -> s3 and s3 -> local, 32 requests in flight (8 MiB parts)
  row 3  prefix -> prefix server-side copy of 100 x 64 MiB: requests sent and wall time

Each client runs as its own process; CPU (user+sys of it and its children) and peak RSS come
from wait4. Clients alternate within a round; ratios are per round.

    benches/run.sh --fleet [--rows 1,2,3] [--rounds N] [--smoke]
"""
import argparse
import importlib.util
import json
import os
import shutil
import statistics as st
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
_spec = importlib.util.spec_from_file_location("harness", os.path.join(HERE, "harness.py"))
harness = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(harness)
MIB = 1 << 20
GANTRY = os.path.join(ROOT, "target", "release", "gantry")
S5CMD = os.path.join(ROOT, "target", "s5cmd-bin", "s5cmd")
AWS = os.path.join(os.path.dirname(sys.executable), "aws")
CLIENTS = ["gantry", "s5cmd", "aws"]


def rows(scale):
    n = lambda x: max(1, x // scale)  # noqa: E731
    return {
        "1": dict(about=f"{n(10000)} x 64 KiB, first byte 20 ms, 64 objects in flight", count=n(10000), size=64 * 1024,
                  shaping={"first_byte_ms": 20}, in_flight=64, per_object=1),
        "2": dict(about=f"{n(64)} x {n(128)} MiB, 32 requests in flight (8 MiB parts)", count=n(64), size=n(128) * MIB,
                  shaping={}, in_flight=8, per_object=4),
        "3": dict(about=f"prefix -> prefix server-side copy of {n(100)} x {n(64)} MiB", count=n(100), size=n(64) * MIB,
                  shaping={}, in_flight=8, per_object=4, copy=True),
    }


def command(client, row, src, dst, endpoint):
    objects, per = row["in_flight"], row["per_object"]
    if client == "gantry":
        return [GANTRY, "cp", "--recursive", "--quiet", "--endpoint-url", endpoint, "--concurrency", str(objects),
                "--max-connections", str(objects * per), "--part-size", "8MiB", src, dst]
    if client == "s5cmd":
        wild = lambda p: p.rstrip("/") + "/*"  # noqa: E731  s5cmd takes a wildcard for a tree
        return [S5CMD, "--endpoint-url", endpoint, "--numworkers", str(objects), "cp", "-c", str(per), "-p", "8",
                wild(src), dst.rstrip("/") + "/"]
    return [AWS, "s3", "cp", "--recursive", "--quiet", "--endpoint-url", endpoint, src, dst]


def aws_config_file(workdir, row):
    path = os.path.join(workdir, f"aws-config-{row['in_flight'] * row['per_object']}")
    with open(path, "w") as f:
        f.write("[default]\nregion = us-east-1\ns3 =\n"
                f"  max_concurrent_requests = {row['in_flight'] * row['per_object']}\n"
                "  multipart_chunksize = 8MB\n  multipart_threshold = 8MB\n")
    return path


def measure(argv, env):
    t0 = time.monotonic()
    p = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, ru = os.wait4(p.pid, 0)
    seconds = time.monotonic() - t0
    err = p.stderr.read().decode(errors="replace")
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"{argv[0]} failed: {err[-2000:]}")
    return {"seconds": seconds, "cpu": ru.ru_utime + ru.ru_stime, "rss_mib": ru.ru_maxrss / 1024}


def make_local(dir_, count, size):
    os.makedirs(dir_, exist_ok=True)
    chunk = os.urandom(min(size, 4 * MIB))
    for i in range(count):
        with open(os.path.join(dir_, f"obj-{i:05}.bin"), "wb") as f:
            left = size
            while left:
                f.write(chunk[: min(left, len(chunk))])
                left -= min(left, len(chunk))


def preload(server, keys, size):
    spec = {"endpoint": server.endpoint, "bucket": "bench", "connections": 32, "part_size": 8 * MIB,
            "workloads": [dict(name="preload", op="put", source="memory", keys=keys, size=size, in_flight=64)],
            "gantry_settings": {}}
    harness.run_measured(harness.RUNNERS["gantry"] + [json.dumps(spec)])


def memory_ceiling(server, row):
    """The same GETs as a row's downloads, by gantry-bench into memory (no files, no listing, same
    objects and requests in flight): what the server and loopback allow, the ceiling every
    client's download is measured against. Returns seconds."""
    keys = [f"up/obj-{i:05}.bin" for i in range(row["count"])]
    spec = {"endpoint": server.endpoint, "bucket": "bench", "connections": row["in_flight"] * row["per_object"],
            "part_size": 8 * MIB, "gantry_settings": {},
            "workloads": [dict(name="ceiling", op="get", keys=keys, size=row["size"], in_flight=row["in_flight"])]}
    out, _ = harness.run_measured(harness.RUNNERS["gantry"] + [json.dumps(spec)])
    return {"seconds": json.loads(out.strip().splitlines()[-1])["seconds"]}


def run_copy_row(name, row, rounds, workdir, env):
    """Row 3: a fresh server per client and round, so its closing summary counts exactly that
    client's requests."""
    results, summaries = [], {}
    keys = [f"src/obj-{i:05}.bin" for i in range(row["count"])]
    for r in range(rounds):
        got = {}
        for c in CLIENTS if r % 2 == 0 else CLIENTS[::-1]:
            server = harness.Server(row["shaping"], workdir, name=f"fleet-{name}-{c}")
            try:
                preload(server, keys, row["size"])
                got[(c, "copy")] = measure(command(c, row, "s3://bench/src/", "s3://bench/copy/", server.endpoint), env)
            finally:
                summary = server.stop()
            summaries[c] = {op: n for op, n in summary.get("by_op", {}).items() if n}
        results.append(got)
    return results, summaries


def run_row(name, row, rounds, workdir, env):
    """Rows 1 and 2: each client uploads the local tree to `up/` (replacing the previous
    client's copy, so the in-memory server holds one tree, not one per client: 64 x 128 MiB
    per client would not fit), then downloads `up/` into a fresh directory."""
    if row.get("copy"):
        return run_copy_row(name, row, rounds, workdir, dict(env, AWS_CONFIG_FILE=aws_config_file(workdir, row)))
    server = harness.Server(row["shaping"], workdir, name=f"fleet-{name}")
    e = dict(env, AWS_CONFIG_FILE=aws_config_file(workdir, row))
    results = []  # per round: {(client, direction): measurement}
    # Small-object downloads are kept until the row ends: on this ext4 (no journal) creating
    # files within a minute of deleting thousands makes every create scan for recently
    # deleted inodes under the directory lock, which costs the next client several times its
    # own CPU. Deleting between clients penalised whoever came second.
    kept = []
    try:
        local = os.path.join(workdir, f"local-{name}")
        make_local(local, row["count"], row["size"])
        for r in range(rounds):
            order = CLIENTS if r % 2 == 0 else CLIENTS[::-1]
            got = {}
            for c in order:
                got[(c, "up")] = measure(command(c, row, local, "s3://bench/up/", server.endpoint), e)
                down = os.path.join(workdir, f"down-{c}")
                got[(c, "down")] = measure(command(c, row, "s3://bench/up/", down, server.endpoint), e)
                if len(os.listdir(down)) != row["count"]:
                    raise SystemExit(f"{c}: {len(os.listdir(down))} files downloaded, expected {row['count']}")
                if row["size"] < MIB:
                    kept.append(down + f"-r{r}")
                    os.rename(down, kept[-1])
                else:
                    shutil.rmtree(down)
            got[("ceiling", "down")] = memory_ceiling(server, row)
            results.append(got)
    finally:
        summary = server.stop()
        for d in kept:
            shutil.rmtree(d, ignore_errors=True)
    return results, summary


def rng(xs, fmt):
    xs = sorted(xs)
    m = fmt.format(st.median(xs))
    return m if len(xs) == 1 else f"{m} ({fmt.format(xs[0])}–{fmt.format(xs[-1])})"


def report(name, row, results, summary):
    gib = row["count"] * row["size"] / (1 << 30)
    small = row["size"] < MIB
    unit = "objects/s" if small else "MiB/s"
    rate = lambda m: row["count"] / m["seconds"] if small else row["count"] * row["size"] / MIB / m["seconds"]  # noqa: E731
    out = [f"### row {name}: {row['about']}", "",
           f"| direction | client | {unit} | wall s | CPU s | CPU s/GiB | peak RSS MiB | gantry / client {unit} | gantry / client CPU |",
           "|---|---|---|---|---|---|---|---|---|"]
    for d in sorted({d for (_, d) in results[0]}, key=["up", "down", "copy"].index):
        for c in CLIENTS:
            ms = [r[(c, d)] for r in results]
            ratio_t = "" if c == "gantry" else rng([rate(r[("gantry", d)]) / rate(r[(c, d)]) for r in results], "{:.2f}")
            ratio_c = "" if c == "gantry" else rng([r[("gantry", d)]["cpu"] / r[(c, d)]["cpu"] for r in results], "{:.2f}")
            out.append(f"| {d} | {c} | {rng([rate(m) for m in ms], '{:.0f}')} | {rng([m['seconds'] for m in ms], '{:.2f}')} | "
                       f"{rng([m['cpu'] for m in ms], '{:.2f}')} | {rng([m['cpu'] / gib for m in ms], '{:.3f}')} | "
                       f"{max(m['rss_mib'] for m in ms):.0f} | {ratio_t} | {ratio_c} |")
    if ("ceiling", "down") in results[0]:
        ms = [r[("ceiling", "down")] for r in results]
        share = rng([rate(r[("gantry", "down")]) / rate(r[("ceiling", "down")]) for r in results], "{:.2f}")
        out += ["", f"Ceiling: the same GETs into memory (gantry-bench: no files, no listing, same requests in "
                    f"flight) reach {rng([rate(m) for m in ms], '{:.0f}')} {unit}; gantry's download is {share} of it."]
    if summary and row.get("copy"):
        # Each client against a server of its own: what it sent, preload included (the
        # preload is PutObject / multipart uploads and one CreateBucket, the same for all).
        for c, ops in summary.items():
            copy_ops = {k: v for k, v in ops.items() if k in ("HeadObject", "CopyObject", "UploadPartCopy",
                        "CreateMultipartUpload", "CompleteMultipartUpload", "ListObjectsV2", "GetObject")}
            out.append(f"\n{c}: {json.dumps(copy_ops)}")
    elif summary:
        out += ["", f"server: {json.dumps(summary)}"]
    return "\n".join(out) + "\n"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", default="1,2,3")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--smoke", action="store_true")
    ap.add_argument("--out")
    a = ap.parse_args()
    env = dict(os.environ, AWS_ACCESS_KEY_ID="bench", AWS_SECRET_ACCESS_KEY="bench-secret", AWS_REGION="us-east-1",
               AWS_EC2_METADATA_DISABLED="true", AWS_REQUEST_CHECKSUM_CALCULATION="when_required",
               AWS_RESPONSE_CHECKSUM_VALIDATION="when_required")
    table = rows(100 if a.smoke else 1)
    rounds = 1 if a.smoke else a.rounds
    version = lambda argv: subprocess.run(argv, capture_output=True, text=True).stdout.strip() or "?"  # noqa: E731
    md = [f"machine: {os.cpu_count()} CPUs; {version([S5CMD, 'version'])} (s5cmd); "
          f"{subprocess.run([AWS, '--version'], capture_output=True, text=True).stdout.strip()}; "
          f"gantry-fault-server on loopback; {rounds} round(s); {time.strftime('%Y-%m-%d')}", ""]
    with tempfile.TemporaryDirectory() as workdir:
        for name in a.rows.split(","):
            results, summary = run_row(name, table[name], rounds, workdir, env)
            md.append(report(name, table[name], results, summary))
            print(md[-1], flush=True)
    if a.out:
        with open(a.out, "w") as f:
            f.write("\n".join(md))


if __name__ == "__main__":
    main()
