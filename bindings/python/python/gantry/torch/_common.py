"""What every part of gantry.torch shares: s3:// URIs, the default client, and this process's
rank."""

import os

import torch as _torch

from .. import Client

_clients = {}


def split_uri(uri):
    """(bucket, key) of an `s3://bucket/key` URI; a ValueError names anything else."""
    if not isinstance(uri, str) or not uri.startswith("s3://"):
        raise ValueError(f"expected an s3://bucket/key URI, got {uri!r}")
    bucket, _, key = uri[5:].partition("/")
    if not bucket or not key:
        raise ValueError(f"expected an s3://bucket/key URI, got {uri!r}")
    return bucket, key


def split_prefix(uri):
    """(bucket, prefix) of an `s3://bucket[/prefix]` URI; the prefix may be empty."""
    if not isinstance(uri, str) or not uri.startswith("s3://"):
        raise ValueError(f"expected an s3://bucket/prefix URI, got {uri!r}")
    bucket, _, prefix = uri[5:].partition("/")
    if not bucket:
        raise ValueError(f"expected an s3://bucket/prefix URI, got {uri!r}")
    return bucket, prefix


def default_client(client, config):
    """`client` when given, else one client per distinct `config`, made once per process and
    reused (a client holds a connection pool: making one per call would waste it)."""
    if client is not None:
        return client
    key = tuple(sorted(config.items()))
    if key not in _clients:
        _clients[key] = Client(**config)
    return _clients[key]


def rank_world():
    """This process's rank and the number of ranks: torch.distributed when it is initialised,
    else RANK / WORLD_SIZE (as torchrun sets them), else one rank."""
    dist = _torch.distributed
    if dist.is_available() and dist.is_initialized():
        return dist.get_rank(), dist.get_world_size()
    return int(os.environ.get("RANK", 0)), int(os.environ.get("WORLD_SIZE", 1))


def worker_slice(items):
    """The share of `items` of this rank and, inside it, of this DataLoader worker: every item
    goes to exactly one (rank, worker)."""
    rank, world = rank_world()
    items = items[rank::world]
    worker = _torch.utils.data.get_worker_info()
    if worker is not None:
        items = items[worker.id :: worker.num_workers]
    return items
