"""One client of benches/torch.py on one case, in a process of its own (its peak RSS and CPU
are its own, DataLoader workers included):

    torch_runner.py CASE CLIENT SPEC_JSON      CASE: shards | objects | checkpoint | dcp
                                               CLIENT: gantry | connector

Prints one JSON line per phase: {"phase", "bytes", "samples", "seconds", "cpu"}, where cpu is
user+sys of this process and of its waited-for children (DataLoader workers; for dcp, the
ranks report their own and rank 0 sums them). Setup (imports, clients, listing, building the
state_dict) happens before the clocks start.
"""

import json
import os
import resource
import sys
import time

import torch

MIB = 1 << 20


def cpu():
    s, c = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return s.ru_utime + s.ru_stime + c.ru_utime + c.ru_stime


SERVER_PID = None


def server_cpu():
    """The server's CPU seconds so far (/proc/PID/stat): with both on two cores, what the
    server spends is what the client cannot."""
    if SERVER_PID is None:
        return 0.0
    with open(f"/proc/{SERVER_PID}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def report(phase, nbytes, samples, t0, c0, s0):
    print(json.dumps({"phase": phase, "bytes": nbytes, "samples": samples, "seconds": time.monotonic() - t0,
                      "cpu": cpu() - c0, "server_cpu": server_cpu() - s0}), flush=True)


def drain(reader):
    """Reads a shard to its end, as a training step that consumes every byte would."""
    buf, n = bytearray(MIB), 0
    while k := reader.readinto(buf):
        n += k
    return n


def read_all(obj):
    return len(obj.read())


def clients(spec, client):
    if client == "gantry":
        import gantry

        return gantry.Client(endpoint_url=spec["endpoint"], region=spec["region"], part_size=spec["part_size"],
                             target_gbps=spec["target_gbps"], auto_config=False)
    from s3torchconnector import S3ClientConfig

    return S3ClientConfig(throughput_target_gbps=spec["target_gbps"], part_size=spec["part_size"],
                          force_path_style=True)


def shards(spec, client):
    uris = [f"s3://{spec['bucket']}/{k}" for k in spec["keys"]]
    if client == "gantry":
        import gantry.torch

        ds = gantry.torch.ShardDataset(uris, shuffle=False, transform=drain, client=clients(spec, client))
    else:
        from s3torchconnector import S3IterableDataset

        ds = S3IterableDataset.from_objects(uris, region=spec["region"], endpoint=spec["endpoint"], transform=drain,
                                            s3client_config=clients(spec, client), enable_sharding=True)
    loader = torch.utils.data.DataLoader(ds, batch_size=None, num_workers=spec["workers"],
                                         multiprocessing_context="fork")
    t0, c0, s0 = time.monotonic(), cpu(), server_cpu()
    total = sum(loader)
    del loader
    report("read", total, len(uris), t0, c0, s0)


def objects(spec, client):
    prefix = f"s3://{spec['bucket']}/{spec['prefix']}"
    if client == "gantry":
        import gantry.torch

        ds = gantry.torch.ObjectDataset.from_prefix(prefix, transform=read_all, client=clients(spec, client))
    else:
        from s3torchconnector import S3MapDataset

        ds = S3MapDataset.from_prefix(prefix, region=spec["region"], endpoint=spec["endpoint"], transform=read_all,
                                      s3client_config=clients(spec, client))
    n = len(ds)  # lists the prefix: before the clock, for both
    loader = torch.utils.data.DataLoader(ds, batch_size=spec["batch_size"], num_workers=spec["workers"],
                                         multiprocessing_context="fork", collate_fn=sum)
    t0, c0, s0 = time.monotonic(), cpu(), server_cpu()
    total = sum(loader)
    del loader
    report("read", total, n, t0, c0, s0)


def state_dict(spec, seed=0):
    g = torch.Generator().manual_seed(seed)
    each = spec["tensor_bytes"] // 4
    return {f"layer{i}.weight": torch.randn(each, generator=g) for i in range(spec["tensors"])}


def checkpoint(spec, client):
    sd = state_dict(spec)
    nbytes = sum(t.numel() * t.element_size() for t in sd.values())
    uri = f"s3://{spec['bucket']}/ckpt-{client}.pt"
    if client == "gantry":
        import gantry.torch

        c = clients(spec, client)
        save = lambda: gantry.torch.save(sd, uri, client=c)  # noqa: E731
        load = lambda: gantry.torch.load(uri, client=c)  # noqa: E731
    else:
        from s3torchconnector import S3Checkpoint

        ck = S3Checkpoint(region=spec["region"], endpoint=spec["endpoint"], s3client_config=clients(spec, client))

        def save():
            with ck.writer(uri) as w:
                torch.save(sd, w)

        def load():
            with ck.reader(uri) as r:
                return torch.load(r, weights_only=True)

    t0, c0, s0 = time.monotonic(), cpu(), server_cpu()
    save()
    report("save", nbytes, 1, t0, c0, s0)
    t0, c0, s0 = time.monotonic(), cpu(), server_cpu()
    back = load()
    report("load", nbytes, 1, t0, c0, s0)
    bad = [k for k in sd if not torch.equal(sd[k], back[k])]
    if bad:
        raise SystemExit(f"{client}: tensors differ after the round trip: {bad[:3]}")


def dcp_rank(spec, client):
    """One rank under torchrun: save then load its half, timed between barriers."""
    import warnings

    import torch.distributed as dist
    import torch.distributed.checkpoint as dcp

    warnings.simplefilter("ignore")
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    sd = state_dict(spec, seed=rank)
    sd = {f"rank{rank}.{k}": v for k, v in sd.items()}
    nbytes = sum(t.numel() * t.element_size() for t in sd.values())
    uri = f"s3://{spec['bucket']}/dcp-{client}"
    if client == "gantry":
        from gantry.torch.dcp import StorageReader, StorageWriter

        c = clients(spec, client)
        writer = StorageWriter(uri, client=c, thread_count=spec["dcp_threads"])
        reader = StorageReader(uri, client=c)
    else:
        from s3torchconnector._s3client import S3Client
        from s3torchconnector.dcp import S3StorageReader, S3StorageWriter

        # The connector's DCP classes take no endpoint: hand them a client that has one.
        config = clients(spec, client)
        writer = S3StorageWriter(spec["region"], uri, s3client_config=config, thread_count=spec["dcp_threads"])
        reader = S3StorageReader(spec["region"], uri, s3client_config=config)
        for fs in (writer.fs, reader.fs):
            fs._client = S3Client(spec["region"], endpoint=spec["endpoint"], s3client_config=config)
    back = {k: torch.zeros_like(v) for k, v in sd.items()}
    out = []
    # GANTRY_BENCH_PHASES=load times a load alone (of a checkpoint an earlier run saved),
    # e.g. under `perf record`.
    phases = os.environ.get("GANTRY_BENCH_PHASES", "save,load").split(",")
    for phase, run in (("save", lambda: dcp.save(sd, storage_writer=writer)),
                       ("load", lambda: dcp.load(back, storage_reader=reader))):
        if phase not in phases:
            continue
        dist.barrier()
        t0, c0, s0 = time.monotonic(), cpu(), server_cpu()
        run()
        mine = cpu() - c0
        dist.barrier()
        seconds, served = time.monotonic() - t0, server_cpu() - s0
        totals = torch.tensor([nbytes, mine], dtype=torch.float64)
        dist.all_reduce(totals)
        out.append({"phase": phase, "bytes": int(totals[0]), "samples": 1, "seconds": seconds,
                    "cpu": float(totals[1]), "server_cpu": served})
    if not all(torch.equal(sd[k], back[k]) for k in sd):
        raise SystemExit(f"{client}: rank {rank}: tensors differ after the DCP round trip")
    if rank == 0:
        for line in out:
            print(json.dumps(line), flush=True)
    dist.destroy_process_group()


def main():
    global SERVER_PID
    case, client, spec = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
    SERVER_PID = spec.get("server_pid")
    {"shards": shards, "objects": objects, "checkpoint": checkpoint, "dcp": dcp_rank}[case](spec, client)


if __name__ == "__main__":
    main()
