"""Datasets over S3 for torch.utils.data.DataLoader.

- `ShardDataset`: iterable, for large shards (tar files, WebDataset): each shard streamed in
  order with bounded memory, the shards split across ranks and DataLoader workers.
- `ObjectDataset`: map-style, for many small objects (images, JSON records): a DataLoader
  batch is fetched as one burst of concurrent GETs (`__getitems__`), so 64 samples cost about
  one round trip, not 64.

How work is split: the list of shards (or objects) is made once, sorted, and (for shards)
shuffled with `seed + epoch`, identically on every rank. Rank r of W takes every W-th item
from r; inside a rank, DataLoader worker w of N takes every N-th of those from w. So an epoch
reads each shard exactly once across all ranks and workers, with no coordination between them.
`ObjectDataset` leaves the split to the DataLoader's sampler (DistributedSampler across ranks),
as any map-style dataset does.
"""

import inspect
import random
import tarfile

import torch as _torch

from ..io import BufferReader
from ._common import default_client, split_prefix, split_uri, worker_slice


class ShardDataset(_torch.utils.data.IterableDataset):
    """An iterable dataset over shards in S3: every object under a prefix
    (`"s3://bucket/train/"`) or a list of `s3://` URIs.

    Shards are split across ranks (torch.distributed, or RANK / WORLD_SIZE) and then across
    DataLoader workers, so one epoch reads every shard exactly once. `set_epoch(n)` reshuffles
    the shard order (the same on every rank: the seed is `seed + epoch`). Each shard yields
    `transform(reader)`, by default the reader itself: a file object streaming the shard in
    order with bounded memory (`.key` names it), closed when iteration moves on. A transform
    that is a generator (`tar_samples`) yields its items one by one: one sample per item.
    """

    def __init__(self, uri_or_uris, *, shuffle=True, seed=0, transform=None, client=None, **config):
        super().__init__()
        self.source = uri_or_uris
        self.shuffle = shuffle
        self.seed = seed
        self.epoch = 0
        self.transform = transform
        self.client = default_client(client, config)

    def set_epoch(self, epoch):
        """Reshuffles the shard order for `epoch` (call it before each epoch, on every rank)."""
        self.epoch = epoch

    def shards(self):
        """Every shard as (bucket, key), in a stable order before shuffling."""
        if isinstance(self.source, str):
            bucket, prefix = split_prefix(self.source)
            return sorted((bucket, o.key) for o in self.client.list(bucket, prefix=prefix))
        return [split_uri(u) for u in self.source]

    def __iter__(self):
        shards = self.shards()
        if self.shuffle:
            random.Random(self.seed + self.epoch).shuffle(shards)
        for bucket, key in worker_slice(shards):
            reader = self.client.open_read(bucket, key)
            try:
                out = self.transform(reader) if self.transform else reader
                if inspect.isgenerator(out):
                    yield from out  # e.g. tar_samples: one item per sample, streamed
                else:
                    yield out
            finally:
                reader.close()


class ObjectDataset(_torch.utils.data.Dataset):
    """A map-style dataset of objects in S3, one sample per object, made with `from_prefix` or
    `from_uris`. `dataset[i]` is `transform(obj)`, by default `obj` itself: a
    `gantry.io.BufferReader` (a file object over the downloaded bytes, with `.bucket`, `.key`,
    `.size` and `getbuffer()`).

    `__getitems__` (which DataLoader calls with a whole batch of indices) downloads the batch
    with all its GETs in flight at once through the engine. Nothing is cached between calls:
    memory does not grow from epoch to epoch.
    """

    def __init__(self, objects, *, transform=None, client=None, **config):
        # One string per distinct bucket, shared by every entry.
        buckets = {}
        self._objects = [(buckets.setdefault(b, b), k) for b, k in objects]
        self.transform = transform
        self.client = default_client(client, config)

    @classmethod
    def from_prefix(cls, uri, *, transform=None, client=None, **config):
        """Every object under `s3://bucket/prefix`, in key order (listed once, here)."""
        bucket, prefix = split_prefix(uri)
        client = default_client(client, config)
        return cls(((bucket, o.key) for o in client.list(bucket, prefix=prefix)), transform=transform, client=client)

    @classmethod
    def from_uris(cls, uris, *, transform=None, client=None, **config):
        """The objects `s3://bucket/key` of `uris`, in that order."""
        return cls([split_uri(u) for u in uris], transform=transform, client=default_client(client, config))

    def __len__(self):
        return len(self._objects)

    def object(self, index):
        """(bucket, key) of sample `index`."""
        return self._objects[index]

    def __getitem__(self, index):
        return self.__getitems__([index])[0]

    def __getitems__(self, indices):
        wanted = [self._objects[i] for i in indices]
        buffers = self.client.get_many(wanted)
        out = []
        for (bucket, key), buf in zip(wanted, buffers):
            obj = BufferReader(buf, bucket, key)
            out.append(self.transform(obj) if self.transform else obj)
        return out


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
