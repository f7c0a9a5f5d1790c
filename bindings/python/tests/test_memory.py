"""Memory stays bounded while 4 GiB of shards stream through a consumer slower than the
network: the reader's prefetching stops at its read window (128 MiB by default) instead of
buffering what the consumer has not reached."""

import json
import pathlib
import subprocess
import sys
import zlib

import pytest

pytest.importorskip("torch")

HERE = pathlib.Path(__file__).parent
SHARD = 256 << 20
SHARDS = 16  # the same object 16 times: 4 GiB streamed, 256 MiB stored
RATE_MIB_S = 400


def test_streaming_4_gib_through_a_slow_consumer_stays_bounded(server, client, bucket):
    data = bytes(range(256)) * (SHARD // 256)
    data = data[:-1] + b"!"  # not a pure cycle: an offset mix-up changes the CRC
    client.put(bucket, "big.tar", data)
    crc = zlib.crc32(data)
    del data
    uris = [f"s3://{bucket}/big.tar"] * SHARDS
    run = subprocess.run([sys.executable, str(HERE / "stream_worker.py"), str(RATE_MIB_S), str(crc), *uris],
                         env=server.env(), capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr[-3000:]
    got = json.loads(run.stdout)
    assert got["bytes"] == SHARD * SHARDS
    grew = got["peak_after"] - got["peak_before"]
    print(f"{server.name}: 4 GiB in {got['seconds']:.1f} s, peak RSS grew by {grew / 2**20:.0f} MiB")
    # The read window (128 MiB) plus the consumer's buffer and allocator slack; an unbounded
    # reader would grow toward the 3.75 GiB the consumer is behind by the end.
    assert grew < 384 << 20, f"peak RSS grew by {grew / 2**20:.0f} MiB"
