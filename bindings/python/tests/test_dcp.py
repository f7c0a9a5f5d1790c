"""gantry.torch.dcp: torch.distributed.checkpoint saves to and loads from S3 bit-identical, in
DCP's own layout, leaving no temporary object and no multipart upload behind."""

import warnings

import pytest

torch = pytest.importorskip("torch")
dcp = pytest.importorskip("torch.distributed.checkpoint")

from gantry.torch.dcp import StorageReader, StorageWriter


def state():
    g = torch.Generator().manual_seed(11)
    return {
        "layer.weight": torch.randn(1024, 3 * 1024, generator=g),  # 12 MiB: multipart
        "layer.bias": torch.randn(1024, generator=g),
        "ints": torch.arange(100_000, dtype=torch.int64),
        "half": torch.randn(77, 13, generator=g).half(),
        "step": 1234,  # not a tensor: DCP stores it as bytes
    }


def zeros_like(sd):
    return {k: torch.zeros_like(v) if isinstance(v, torch.Tensor) else 0 for k, v in sd.items()}


@pytest.mark.parametrize("read_batch_bytes", [256 << 20, 1 << 20])
def test_save_and_load_round_trip(client, bucket, read_batch_bytes):
    sd = state()
    uri = f"s3://{bucket}/ckpt/step-1234"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # DCP warns that no process group is initialised
        dcp.save(sd, storage_writer=StorageWriter(uri, client=client, thread_count=3))
        back = zeros_like(sd)
        dcp.load(back, storage_reader=StorageReader(uri, client=client, read_batch_bytes=read_batch_bytes))
    for k, v in sd.items():
        if isinstance(v, torch.Tensor):
            assert back[k].dtype == v.dtype and torch.equal(back[k], v), k
        else:
            assert back[k] == v
    keys = sorted(o.key for o in client.list(bucket, prefix="ckpt/"))
    assert "ckpt/step-1234/.metadata" in keys
    assert not any(k.endswith(".tmp") for k in keys), keys
    data_files = [k for k in keys if k.endswith(".distcp")]
    assert 1 < len(data_files) <= 3, "thread_count files of one rank"
    assert client.list_multipart_uploads(bucket) == []


def test_a_failing_save_leaves_no_upload(client, bucket):
    class Exploding:
        def __reduce__(self):
            raise RuntimeError("cannot pickle this")

    sd = {"w": torch.randn(3 << 20), "bad": Exploding()}
    with warnings.catch_warnings(), pytest.raises(BaseException) as e:
        warnings.simplefilter("ignore")
        dcp.save(sd, storage_writer=StorageWriter(f"s3://{bucket}/broken", client=client))
    # DCP wraps what a rank raised in a CheckpointException that lists it per rank.
    failures = getattr(e.value, "failures", {0: e.value})
    assert "cannot pickle" in repr(failures), failures
    assert client.list_multipart_uploads(bucket) == []
    assert not any(o.key.endswith(".metadata") for o in client.list(bucket))


def test_bad_uris_and_a_missing_checkpoint(client, bucket):
    with pytest.raises(ValueError):
        StorageWriter("/local/path", client=client)
    assert StorageReader.validate_checkpoint_id("s3://b/p") and not StorageReader.validate_checkpoint_id("/tmp/x")
    with warnings.catch_warnings(), pytest.raises(BaseException) as e:
        warnings.simplefilter("ignore")
        dcp.load({"w": torch.zeros(3)}, storage_reader=StorageReader(f"s3://{bucket}/nothing-here", client=client))
    # DCP reports the reader's error inside its own exception, with gantry's message.
    assert f"s3://{bucket}/nothing-here/" in str(e.value) and "(NoSuchKey, HTTP 404" in str(e.value)
