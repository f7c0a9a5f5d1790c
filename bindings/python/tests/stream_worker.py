"""The consumer of test_memory.py, in a process of its own so its peak RSS is its own:
streams URIS through ShardDataset at most RATE MiB/s (a slow training step), checks every
shard's CRC-32 and prints a JSON line: bytes read, peak RSS before and after streaming.

    python stream_worker.py RATE_MIB_S CRC URI [URI ...]
"""

import json
import sys
import time
import zlib

import gantry.torch


def peak_rss():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    raise RuntimeError("no VmHWM")


def main():
    rate, crc, uris = float(sys.argv[1]) * 2**20, int(sys.argv[2]), sys.argv[3:]
    ds = gantry.torch.ShardDataset(uris, shuffle=False)
    buf = bytearray(1 << 20)
    before = peak_rss()
    total, start = 0, time.perf_counter()
    for reader in ds:
        shard_crc = 0
        while n := reader.readinto(buf):
            shard_crc = zlib.crc32(memoryview(buf)[:n], shard_crc)
            total += n
            ahead = total / rate - (time.perf_counter() - start)
            if ahead > 0:
                time.sleep(ahead)
        if shard_crc != crc:
            raise SystemExit(f"{reader.key}: CRC-32 {shard_crc:#x}, expected {crc:#x}")
    print(json.dumps({"bytes": total, "peak_before": before, "peak_after": peak_rss(),
                      "seconds": time.perf_counter() - start}))


if __name__ == "__main__":
    main()
