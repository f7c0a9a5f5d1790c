"""gantry.torch.ShardDataset and tar_samples against `gantry serve`: every shard exactly once
per epoch across DataLoader workers (fork and spawn) and ranks."""

import io
import tarfile

import pytest

torch = pytest.importorskip("torch")

import gantry
import gantry.torch

N_SHARDS = 64


def make_tar(samples):
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w") as tar:
        for key, parts in samples:
            for ext, data in parts.items():
                info = tarfile.TarInfo(f"{key}.{ext}")
                info.size = len(data)
                tar.addfile(info, io.BytesIO(data))
    return out.getvalue()


@pytest.fixture
def shards(client, bucket):
    for i in range(N_SHARDS):
        samples = [(f"s{i:03}/{j}", {"txt": f"shard {i} sample {j}".encode(), "cls": str(j).encode()}) for j in range(3)]
        client.put(bucket, f"train/shard-{i:03}.tar", make_tar(samples))
    client.put(bucket, "other/not-a-shard", b"x")
    return bucket


def keys_of(reader):
    return [s["__key__"] for s in gantry.torch.tar_samples(reader)]


@pytest.mark.parametrize("context", ["fork", "spawn"])
def test_every_shard_once_per_epoch_across_workers(client, shards, context, endpoint):
    ds = gantry.torch.ShardDataset(f"s3://{shards}/train/", client=client, transform=keys_of)
    loader = torch.utils.data.DataLoader(ds, batch_size=None, num_workers=4, multiprocessing_context=context)
    for epoch in range(2):
        ds.set_epoch(epoch)
        seen = [k for keys in loader for k in keys]
        assert len(seen) == N_SHARDS * 3 and len(set(seen)) == len(seen), f"epoch {epoch}"
        assert {k.split("/")[0] for k in seen} == {f"s{i:03}" for i in range(N_SHARDS)}


def test_ranks_get_disjoint_complete_shard_sets(client, shards, monkeypatch):
    per_rank = []
    for rank in range(2):
        monkeypatch.setenv("RANK", str(rank))
        monkeypatch.setenv("WORLD_SIZE", "2")
        ds = gantry.torch.ShardDataset(f"s3://{shards}/train/", client=client, transform=lambda r: r.key, seed=3)
        per_rank.append(set(ds))
    assert not (per_rank[0] & per_rank[1])
    assert per_rank[0] | per_rank[1] == {f"train/shard-{i:03}.tar" for i in range(N_SHARDS)}
    assert abs(len(per_rank[0]) - len(per_rank[1])) <= 1


def test_set_epoch_reshuffles_and_a_list_of_uris_works(client, shards):
    uris = [f"s3://{shards}/train/shard-{i:03}.tar" for i in range(8)]
    ds = gantry.torch.ShardDataset(uris, client=client, transform=lambda r: r.key, seed=1)
    first = list(ds)
    ds.set_epoch(1)
    second = list(ds)
    assert sorted(first) == sorted(second) == sorted(u.split("/", 3)[3] for u in uris)
    assert first != second
    default = list(gantry.torch.ShardDataset(uris[:2], client=client, shuffle=False))
    assert [r.key for r in default] == ["train/shard-000.tar", "train/shard-001.tar"]


def test_a_client_pickles_for_spawned_workers(client):
    import pickle

    again = pickle.loads(pickle.dumps(client))
    assert isinstance(again, gantry.Client) and again is not client


def test_a_generator_transform_yields_one_sample_per_item(client, shards):
    ds = gantry.torch.ShardDataset(f"s3://{shards}/train/", client=client, transform=gantry.torch.tar_samples)
    loader = torch.utils.data.DataLoader(ds, batch_size=None, num_workers=2, multiprocessing_context="fork")
    samples = list(loader)
    assert len(samples) == N_SHARDS * 3
    assert {s["__key__"] for s in samples} == {f"s{i:03}/{j}" for i in range(N_SHARDS) for j in range(3)}
    one = next(s for s in samples if s["__key__"] == "s007/2")
    assert one["txt"] == b"shard 7 sample 2" and one["cls"] == b"2"
