"""One rank of the two-rank runs in test_distributed.py, started by torchrun with the gloo
backend on CPU. It reaches the server through the environment (AWS_ENDPOINT_URL and keys),
as a training job would, and writes what it saw to OUT/rank-N.json for the test to check.

    python -m torch.distributed.run --nproc_per_node=2 dist_worker.py shards|dcp BUCKET OUT
"""

import json
import os
import sys
import warnings

import torch
import torch.distributed as dist

import gantry.torch
from gantry.torch.dcp import StorageReader, StorageWriter


def sample_keys(reader):
    return [s["__key__"] for s in gantry.torch.tar_samples(reader)]


def shards(bucket):
    ds = gantry.torch.ShardDataset(f"s3://{bucket}/train/", transform=sample_keys, seed=5)
    epochs = []
    # Epoch 0 with workers started by fork, epoch 1 by spawn (the dataset and its client
    # pickled into each worker).
    for epoch, context in enumerate(("fork", "spawn")):
        ds.set_epoch(epoch)
        loader = torch.utils.data.DataLoader(ds, batch_size=None, num_workers=4, multiprocessing_context=context)
        epochs.append([k for batch in loader for k in batch])
    return {"epochs": epochs}


def dcp(bucket):
    rank = dist.get_rank()
    g = torch.Generator().manual_seed(100 + rank)
    shared = torch.Generator().manual_seed(1)
    sd = {
        "shared.weight": torch.randn(512, 2048, generator=shared),  # the same on both ranks
        f"rank{rank}.weight": torch.randn(1024, 1536 + rank, generator=g),  # 6 MiB, this rank's own
        "step": 42,
    }
    uri = f"s3://{bucket}/ckpt/step-42"
    import torch.distributed.checkpoint as dcp

    dcp.save(sd, storage_writer=StorageWriter(uri, thread_count=2))
    dist.barrier()
    back = {k: torch.zeros_like(v) if isinstance(v, torch.Tensor) else 0 for k, v in sd.items()}
    dcp.load(back, storage_reader=StorageReader(uri))
    same = {k: (torch.equal(back[k], v) if isinstance(v, torch.Tensor) else back[k] == v) for k, v in sd.items()}
    return {"same": same}


def main():
    mode, bucket, out = sys.argv[1:4]
    warnings.simplefilter("ignore")
    dist.init_process_group("gloo")
    result = {"shards": shards, "dcp": dcp}[mode](bucket)
    result["rank"], result["world"] = dist.get_rank(), dist.get_world_size()
    with open(os.path.join(out, f"rank-{dist.get_rank()}.json"), "w") as f:
        json.dump(result, f)
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
