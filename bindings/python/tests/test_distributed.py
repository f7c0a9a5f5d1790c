"""Two ranks under torchrun (gloo, CPU), each its own process reaching the server through the
environment: ShardDataset splits shards across ranks and workers with nothing read twice or
missed, and a DCP checkpoint saved by both ranks loads back on both, bit-identical."""

import json
import pathlib
import subprocess
import sys

import pytest

pytest.importorskip("torch")

from conftest import free_port
from test_shards import N_SHARDS, shards  # noqa: F401  (the fixture)

HERE = pathlib.Path(__file__).parent


def torchrun(server, mode, bucket, out):
    cmd = [sys.executable, "-m", "torch.distributed.run", "--nproc_per_node=2", "--master_addr=127.0.0.1",
           f"--master_port={free_port()}", str(HERE / "dist_worker.py"), mode, bucket, str(out)]
    run = subprocess.run(cmd, env=server.env(), capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-5000:]
    return [json.loads((out / f"rank-{r}.json").read_text()) for r in range(2)]


def test_two_ranks_read_every_shard_once_per_epoch(server, shards, tmp_path):  # noqa: F811
    ranks = torchrun(server, "shards", shards, tmp_path)
    assert [r["world"] for r in ranks] == [2, 2]
    every = {f"s{i:03}/{j}" for i in range(N_SHARDS) for j in range(3)}
    for epoch in range(2):
        seen = [set(r["epochs"][epoch]) for r in ranks]
        assert not (seen[0] & seen[1]), "a sample read by both ranks"
        assert seen[0] | seen[1] == every, "a sample read by neither rank"
        assert all(len(r["epochs"][epoch]) == len(set(r["epochs"][epoch])) for r in ranks), "a sample read twice"
    assert ranks[0]["epochs"][0] != ranks[0]["epochs"][1], "set_epoch reshuffles"


def test_two_ranks_save_and_load_a_dcp_checkpoint(server, client, bucket, tmp_path):
    ranks = torchrun(server, "dcp", bucket, tmp_path)
    for r in ranks:
        assert all(r["same"].values()), r
    keys = {o.key for o in client.list(bucket, prefix="ckpt/step-42/")}
    assert "ckpt/step-42/.metadata" in keys
    assert any(k.startswith("ckpt/step-42/__0_") for k in keys) and any(k.startswith("ckpt/step-42/__1_") for k in keys), keys
    assert client.list_multipart_uploads(bucket) == []
