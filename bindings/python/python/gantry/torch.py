"""PyTorch on gantry: checkpoints streamed straight to and from S3, no local temporary file.

    import gantry.torch
    gantry.torch.save(model.state_dict(), "s3://bucket/ckpt/step-100.pt")
    state = gantry.torch.load("s3://bucket/ckpt/step-100.pt", map_location="cpu")

`save` writes through the multipart writer (parts upload while torch serialises; an error
aborts the upload, so no partial checkpoint appears), `load` reads through the prefetching
reader. Both take `client=` (a `gantry.Client`); without one, a client from the environment
(AWS_* variables, profile) and `**config` is made once and reused.
"""

import torch as _torch

from . import Client

_clients = {}


def _split(uri):
    if not uri.startswith("s3://"):
        raise ValueError(f"expected an s3://bucket/key URI, got {uri!r}")
    bucket, _, key = uri[5:].partition("/")
    if not bucket or not key:
        raise ValueError(f"expected an s3://bucket/key URI, got {uri!r}")
    return bucket, key


def _client(client, config):
    if client is not None:
        return client
    key = tuple(sorted(config.items()))
    if key not in _clients:
        _clients[key] = Client(**config)
    return _clients[key]


def save(obj, uri, *, client=None, **config):
    """torch.save(obj) to `uri` (s3://bucket/key), streamed as a multipart upload."""
    bucket, key = _split(uri)
    with _client(client, config).open_write(bucket, key) as w:
        _torch.save(obj, w)


def load(uri, map_location=None, *, client=None, weights_only=True, **config):
    """torch.load from `uri` (s3://bucket/key), streamed with prefetching."""
    bucket, key = _split(uri)
    with _client(client, config).open_read(bucket, key) as r:
        return _torch.load(r, map_location=map_location, weights_only=weights_only)
