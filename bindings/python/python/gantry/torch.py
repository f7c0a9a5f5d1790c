"""PyTorch on gantry: datasets over S3 shards, and checkpoints streamed straight to and from S3
with no local temporary file.

    import gantry.torch
    gantry.torch.save(model.state_dict(), "s3://bucket/ckpt/step-100.pt")
    state = gantry.torch.load("s3://bucket/ckpt/step-100.pt", map_location="cpu")

`save` writes through the multipart writer (parts upload while torch serialises; an error
aborts the upload, so no partial checkpoint appears), `load` reads through the prefetching
reader. Both take `client=` (a `gantry.Client`); without one, a client from the environment
(AWS_* variables, profile) and `**config` is made once and reused.
"""

import os
import random
import tarfile

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


def _rank_world():
    """This process's rank and the number of ranks: torch.distributed when it is initialised,
    else RANK / WORLD_SIZE (as torchrun sets them), else one rank."""
    dist = _torch.distributed
    if dist.is_available() and dist.is_initialized():
        return dist.get_rank(), dist.get_world_size()
    return int(os.environ.get("RANK", 0)), int(os.environ.get("WORLD_SIZE", 1))


class ShardDataset(_torch.utils.data.IterableDataset):
    """An iterable dataset over shards in S3: every object under a prefix
    (`"s3://bucket/train/"`) or a list of `s3://` URIs.

    Shards are split across ranks (torch.distributed, or RANK / WORLD_SIZE) and then across
    DataLoader workers, so one epoch reads every shard exactly once. `set_epoch(n)` reshuffles
    the shard order (the same on every rank: the seed is `seed + epoch`). Each shard yields
    `transform(reader)`, by default the reader itself: a file object streaming the shard in
    order with bounded memory (`.key` names it), closed when iteration moves on.
    """

    def __init__(self, uri_or_uris, *, shuffle=True, seed=0, transform=None, client=None, **config):
        super().__init__()
        self.source = uri_or_uris
        self.shuffle = shuffle
        self.seed = seed
        self.epoch = 0
        self.transform = transform
        self.client = client if client is not None else Client(**config)

    def set_epoch(self, epoch):
        self.epoch = epoch

    def shards(self):
        """Every shard as (bucket, key), in a stable order before shuffling."""
        if isinstance(self.source, str):
            bucket, _, prefix = self.source[5:].partition("/") if self.source.startswith("s3://") else ("", "", "")
            if not bucket:
                raise ValueError(f"expected an s3://bucket/prefix URI, got {self.source!r}")
            return sorted((bucket, o.key) for o in self.client.list(bucket, prefix=prefix))
        return [_split(u) for u in self.source]

    def __iter__(self):
        shards = self.shards()
        if self.shuffle:
            random.Random(self.seed + self.epoch).shuffle(shards)
        rank, world = _rank_world()
        shards = shards[rank::world]
        worker = _torch.utils.data.get_worker_info()
        if worker is not None:
            shards = shards[worker.id::worker.num_workers]
        for bucket, key in shards:
            reader = self.client.open_read(bucket, key)
            try:
                yield self.transform(reader) if self.transform else reader
            finally:
                reader.close()


def tar_samples(reader):
    """WebDataset-style samples from a tar shard streamed in order: members are grouped by
    their path up to the first dot of the file name (`0001.jpg` and `0001.cls` make one
    sample), and each sample is a dict `{"__key__": "0001", "jpg": bytes, "cls": bytes}`."""
    sample, current = {}, None
    with tarfile.open(fileobj=reader, mode="r|") as tar:
        for member in tar:
            if not member.isfile():
                continue
            directory, _, name = member.name.rpartition("/")
            stem, _, ext = name.partition(".")
            key = f"{directory}/{stem}" if directory else stem
            if key != current and sample:
                yield sample
                sample = {}
            current = key
            sample["__key__"] = key
            sample[ext] = tar.extractfile(member).read()
    if sample:
        yield sample
