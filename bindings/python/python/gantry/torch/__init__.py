"""PyTorch on gantry: datasets over S3, and checkpoints streamed straight to and from S3 with
no local temporary file.

    import gantry.torch
    gantry.torch.save(model.state_dict(), "s3://bucket/ckpt/step-100.pt")
    state = gantry.torch.load("s3://bucket/ckpt/step-100.pt", map_location="cpu")

- `ShardDataset`, `ObjectDataset`, `tar_samples`: datasets (see `gantry.torch.datasets`).
- `save` / `load`: `save` writes through the multipart writer (parts upload while torch
  serialises; an error aborts the upload, so no partial checkpoint appears), `load` reads
  through the prefetching reader.
- `gantry.torch.dcp`: `StorageWriter` / `StorageReader` for torch.distributed.checkpoint.

Every entry point takes `client=` (a `gantry.Client`); without one, a client from the
environment (AWS_* variables, profile) and `**config` is made once per process and reused.
"""

import torch as _torch

from ._common import default_client, split_uri
from .datasets import ObjectDataset, ShardDataset, tar_samples


def save(obj, uri, *, client=None, **config):
    """torch.save(obj) to `uri` (s3://bucket/key), streamed as a multipart upload."""
    bucket, key = split_uri(uri)
    with default_client(client, config).open_write(bucket, key) as w:
        _torch.save(obj, w)


def load(uri, map_location=None, *, client=None, weights_only=True, **config):
    """torch.load from `uri` (s3://bucket/key), streamed with prefetching."""
    bucket, key = split_uri(uri)
    with default_client(client, config).open_read(bucket, key) as r:
        return _torch.load(r, map_location=map_location, weights_only=weights_only)


__all__ = ["ObjectDataset", "ShardDataset", "load", "save", "tar_samples"]
