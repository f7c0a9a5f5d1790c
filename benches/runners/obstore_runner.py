#!/usr/bin/env python3
"""Runs one benchmark spec with obstore (Python bindings of Rust's object_store).

object_store has no parallel ranged download of its own, so GETs are split here the way
its users do it: the first part is fetched with a ranged GET that also reports the object's
size, the remaining parts with get_range_async; one semaphore of `connections` permits
bounds the requests in flight across all objects (its connection pool grows to match).
Uploads use obstore's put with the spec's part size as chunk_size and the connections
divided among the objects in flight as max_concurrency. Payloads are sent unsigned
(`unsigned_payload`, as gantry and the CRT do) so nobody hashes bodies for SigV4. Over
https:// it trusts the spec's `ca_bundle` through `client_options["root_certificate"]` (added to
its roots; verification stays on).
See gantry-bench (benches/runner) for the spec.
"""
import asyncio
import os
import sys
from pathlib import Path

import obstore
from obstore.store import S3Store

import common


async def main():
    spec = common.load_spec()
    ak, sk = common.credentials()
    options = {"allow_http": True}
    if spec.get("ca_bundle"):
        with open(spec["ca_bundle"]) as f:
            options["root_certificate"] = f.read()
    store = S3Store(
        spec["bucket"],
        endpoint=spec["endpoint"],
        access_key_id=ak,
        secret_access_key=sk,
        region="us-east-1",
        virtual_hosted_style_request=False,
        unsigned_payload=True,
        client_options=options,
    )
    part = spec["part_size"]
    conns = spec["connections"]
    permits = asyncio.Semaphore(conns)

    async def get_part(key, start, end):
        async with permits:
            return len(await obstore.get_range_async(store, key, start=start, end=end))

    async def get_object(w, key):
        async with permits:
            r = await obstore.get_async(store, key, options={"range": (0, part)})
            size = r.meta["size"]
            n = len(await r.bytes_async())
        rest = [get_part(key, o, min(o + part, size)) for o in range(part, size, part)]
        n += sum(await asyncio.gather(*rest))
        if w.get("size") and n != w["size"]:
            raise RuntimeError(f"{key}: got {n} bytes, expected {w['size']}")
        return n

    async def put_object(w, src, key):
        share = max(1, conns // max(1, min(w.get("in_flight", 1), len(w["keys"]))))
        if w["op"] == "stream-put":
            async def chunks():
                left = w["size"]
                view = memoryview(src)
                while left > 0:
                    n = min(left, len(view))
                    yield view[:n]
                    left -= n
            await obstore.put_async(store, key, chunks(), chunk_size=part, max_concurrency=conns)
            return w["size"]
        if w.get("source", "memory") == "file":
            await obstore.put_async(store, key, Path(w["file"]), chunk_size=part, max_concurrency=share)
            return os.path.getsize(w["file"])
        await obstore.put_async(store, key, src, chunk_size=part, max_concurrency=share)
        return len(src)

    async def run(w, src, clock):
        slots = asyncio.Semaphore(w.get("in_flight", 1))

        async def one(key):
            async with slots:
                if w["op"] == "get":
                    return await get_object(w, key)
                return await put_object(w, src, key)

        n = sum(await asyncio.gather(*[one(k) for k in w["keys"]]))
        return {"name": w["name"], "bytes": n, "objects": len(w["keys"]), "seconds": clock.elapsed()}

    sources = common.sources(spec)
    clock = common.Clock()
    done = await asyncio.gather(*[run(w, src, clock) for w, src in zip(spec["workloads"], sources)])
    clock.report("obstore", list(done))


if __name__ == "__main__":
    asyncio.run(main())
    # obstore 0.12 sometimes aborts (SIGABRT) while the interpreter tears its runtime down,
    # after the work is done and reported; leave without that teardown.
    sys.stdout.flush()
    os._exit(0)
