"""Shared by the peer runners: spec parsing, the CPU clock and the JSON result line.

A runner prepares its client and source data, then measures wall time and the process's CPU
time (user+sys over all threads, getrusage) around the workloads only, like gantry-bench.
"""
import json
import os
import resource
import sys
import time


def load_spec():
    """The spec is the argument, or with `@PATH` the file's contents (a spec naming 50,000
    keys is longer than Linux lets one argument be)."""
    if len(sys.argv) != 2:
        sys.exit(f"usage: {os.path.basename(sys.argv[0])} SPEC_JSON | @SPEC_FILE")
    arg = sys.argv[1]
    if arg.startswith("@"):
        with open(arg[1:]) as f:
            return json.load(f)
    return json.loads(arg)


def cpu_seconds():
    ru = resource.getrusage(resource.RUSAGE_SELF)
    return ru.ru_utime + ru.ru_stime


def pseudo_random(n):
    """Incompressible bytes, the same kind gantry-bench uploads."""
    return os.urandom(n)


def sources(spec):
    """Per workload, the bytes it uploads from memory (made before the clock starts): a
    whole object for puts from memory, one write's worth for streams; None otherwise."""
    out = []
    for w in spec["workloads"]:
        if w["op"] == "put" and w.get("source", "memory") == "memory":
            out.append(pseudo_random(w["size"]))
        elif w["op"] == "stream-put":
            out.append(pseudo_random(w.get("write_size", 8 << 20)))
        else:
            out.append(None)
    return out


def credentials():
    return os.environ.get("AWS_ACCESS_KEY_ID", "bench"), os.environ.get("AWS_SECRET_ACCESS_KEY", "bench-secret")


class Clock:
    """Wall and CPU clocks started together."""

    def __init__(self):
        self.cpu0 = cpu_seconds()
        self.t0 = time.monotonic()

    def elapsed(self):
        return time.monotonic() - self.t0

    def report(self, client, done):
        seconds = self.elapsed()
        print(json.dumps({
            "client": client,
            "bytes": sum(d["bytes"] for d in done),
            "seconds": seconds,
            "cpu_s": cpu_seconds() - self.cpu0,
            "workloads": done,
        }))
