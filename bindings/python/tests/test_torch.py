"""gantry.torch.save / load against `gantry serve`: a state_dict round-trips bit-identical."""

import pytest

torch = pytest.importorskip("torch")  # in requirements-dev.txt: CI always has it

import gantry
import gantry.torch


def state_dict():
    g = torch.Generator().manual_seed(7)
    model = torch.nn.Sequential(torch.nn.Linear(1024, 2048), torch.nn.ReLU(), torch.nn.Linear(2048, 1024))
    with torch.no_grad():
        for p in model.parameters():
            p.copy_(torch.randn(p.shape, generator=g))
    sd = model.state_dict()
    sd["big"] = torch.randn(3 * 1024 * 1024, generator=g)  # 12 MiB: a multipart upload
    sd["ints"] = torch.arange(1000, dtype=torch.int64)
    return sd


def test_save_and_load_are_bit_identical(client, bucket):
    sd = state_dict()
    uri = f"s3://{bucket}/ckpt/step-100.pt"
    gantry.torch.save(sd, uri, client=client)
    assert client.head(bucket, "ckpt/step-100.pt")["size"] > 20 * 1024 * 1024
    back = gantry.torch.load(uri, map_location="cpu", client=client)
    assert back.keys() == sd.keys()
    for k in sd:
        assert back[k].dtype == sd[k].dtype and torch.equal(back[k], sd[k]), k


def test_a_failing_save_leaves_nothing(client, bucket):
    class Unpicklable:
        def __reduce__(self):
            raise RuntimeError("cannot pickle this")

    with pytest.raises(RuntimeError, match="cannot pickle"):
        gantry.torch.save({"w": torch.randn(4 * 1024 * 1024), "bad": Unpicklable()}, f"s3://{bucket}/broken.pt",
                          client=client)
    with pytest.raises(gantry.NotFoundError):
        client.head(bucket, "broken.pt")
    assert client.list_multipart_uploads(bucket) == []


def test_bad_uris_and_missing_checkpoints(client, bucket):
    with pytest.raises(ValueError):
        gantry.torch.save({}, "/local/path.pt", client=client)
    with pytest.raises(ValueError):
        gantry.torch.load("s3://only-bucket", client=client)
    with pytest.raises(FileNotFoundError):
        gantry.torch.load(f"s3://{bucket}/missing.pt", client=client)
