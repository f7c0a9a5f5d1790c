"""Storage for torch.distributed.checkpoint (DCP) in S3.

    import torch.distributed.checkpoint as dcp
    from gantry.torch.dcp import StorageReader, StorageWriter
    dcp.save(state_dict, storage_writer=StorageWriter("s3://bucket/ckpt/step-100"))
    dcp.load(state_dict, storage_reader=StorageReader("s3://bucket/ckpt/step-100"))

A checkpoint is a prefix: one object per file DCP writes (`__<rank>_<n>.distcp`) and
`.metadata`. The layout is DCP's own FileSystemWriter / FileSystemReader layout, so the same
checkpoint can be copied to a local directory and read with `FileSystemReader`.

- Writing: every rank writes its own files, `thread_count` of them at once (default 8), each
  a multipart upload whose parts go out while torch serialises. An exception aborts the
  upload (no half-written object) and fails the save, also when it happens on one of DCP's
  writer threads (which DCP itself would let pass, committing a checkpoint without that
  thread's items). Files that other threads completed stay, without `.metadata`.
- Reading: the tensors a rank needs are fetched as ranged GETs, all in flight together in
  batches of about `read_batch_bytes` (default 256 MiB), the next batch downloading while
  DCP decodes the current one (so about two batches in memory), instead of DCP's one read
  after another.
- `.metadata` is written last, as DCP does, so a checkpoint without it is incomplete.
"""

import dataclasses
import io
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager

from torch.distributed.checkpoint.filesystem import FileSystemBase, FileSystemReader, FileSystemWriter

from .. import NotFoundError
from ..io import BufferReader
from ._common import default_client, split_prefix, split_uri


def _checkpoint_uri(uri):
    uri = str(uri)
    split_prefix(uri)  # a ValueError names anything but s3://bucket[/prefix]
    return uri.rstrip("/")


class _ObjectRef(io.RawIOBase):
    """What DCP's reader opens: an object not fetched until read. The reader slices the tensors
    it needs out of it by range (`StorageReader._slice_file`); a plain read (of `.metadata`)
    streams the object."""

    def __init__(self, client, bucket, key):
        super().__init__()
        self.client, self.bucket, self.key = client, bucket, key
        self._reader = None

    def readable(self):
        return True

    def readinto(self, b):
        if self._reader is None:
            self._reader = self.client.open_read(self.bucket, self.key)
        return self._reader.readinto(b)

    def close(self):
        if self._reader is not None:
            self._reader.close()
        super().close()


class S3FileSystem(FileSystemBase):
    """DCP's file-system seam over a gantry client: paths are `s3://bucket/prefix/...` strings."""

    def __init__(self, client):
        self.client = client
        # Exceptions raised while a file was open for writing. DCP's writer threads die with
        # them unreported; StorageWriter.write_data raises them.
        self.write_failures = []

    @contextmanager
    def create_stream(self, path, mode):
        bucket, key = split_uri(str(path))
        if mode == "wb":
            writer = self.client.open_write(bucket, key)
            try:
                yield writer
            except BaseException as e:
                writer.abort()
                self.write_failures.append(e)
                raise
            writer.close()  # completes the upload; DCP may have closed it already
        elif mode == "rb":
            ref = _ObjectRef(self.client, bucket, key)
            try:
                yield ref
            finally:
                ref.close()
        else:
            raise ValueError(f"unsupported mode {mode!r} (DCP opens with 'rb' and 'wb')")

    def concat_path(self, path, suffix):
        return f"{str(path).rstrip('/')}/{suffix}"

    def init_path(self, path):
        return _checkpoint_uri(path)

    def rename(self, path, new_path):
        # S3 has no rename; DCP renames only `.metadata.tmp`, which is small.
        bucket, key = split_uri(str(path))
        new_bucket, new_key = split_uri(str(new_path))
        self.client.put(new_bucket, new_key, self.client.get(bucket, key))
        self.client.delete(bucket, key)

    def mkdir(self, path):
        pass  # prefixes need no creating

    @classmethod
    def validate_checkpoint_id(cls, checkpoint_id):
        return isinstance(checkpoint_id, str) and checkpoint_id.startswith("s3://")

    def exists(self, path):
        bucket, key = split_uri(str(path))
        try:
            self.client.head(bucket, key)
            return True
        except NotFoundError:
            return False

    def rm_file(self, path):
        self.client.delete(*split_uri(str(path)))


class StorageWriter(FileSystemWriter):
    """Writes a DCP checkpoint under `uri` (s3://bucket/prefix). Keywords are
    FileSystemWriter's (`thread_count`, `single_file_per_rank`, `overwrite`, ...), plus
    `client=` and any gantry configuration key."""

    def __init__(self, uri, *, client=None, thread_count=8, single_file_per_rank=True, overwrite=True, **config):
        fs_keys = {k: config.pop(k) for k in ("per_thread_copy_ahead", "_extensions", "serialization_format") if k in config}
        # sync_files asks for an fsync, which an upload has no use for: close() completes it.
        super().__init__(uri, single_file_per_rank=single_file_per_rank, sync_files=False,
                         thread_count=thread_count, overwrite=overwrite, **fs_keys)
        self.fs = S3FileSystem(default_client(client, config))
        self.path = self.fs.init_path(uri)

    @classmethod
    def validate_checkpoint_id(cls, checkpoint_id):
        return S3FileSystem.validate_checkpoint_id(checkpoint_id)

    def write_data(self, plan, planner):
        # With thread_count > 1, DCP runs writers on threads and loses what kills one: the
        # checkpoint would then commit without that thread's items. Fail instead.
        self.fs.write_failures.clear()
        done = super().write_data(plan, planner)
        results = done.wait()
        if self.fs.write_failures:
            raise self.fs.write_failures[0]
        if len(results) != len(plan.items):
            raise RuntimeError(
                f"DCP wrote {len(results)} of {len(plan.items)} items of this rank: a writer thread "
                "failed (its traceback is above); the checkpoint was not committed"
            )
        return done


class StorageReader(FileSystemReader):
    """Reads a DCP checkpoint from `uri` (s3://bucket/prefix), fetching the tensors this rank
    needs concurrently. `client=` and any gantry configuration key as keywords;
    `read_batch_bytes` sizes a batch (two are in memory at once: one decoding, one arriving)."""

    def __init__(self, uri, *, client=None, read_batch_bytes=256 * 1024 * 1024, **config):
        super().__init__(uri)
        self.fs = S3FileSystem(default_client(client, config))
        self.path = self.fs.init_path(uri)
        self.read_batch_bytes = read_batch_bytes
        self._fetched = {}

    @classmethod
    def validate_checkpoint_id(cls, checkpoint_id):
        return S3FileSystem.validate_checkpoint_id(checkpoint_id)

    def _slice_file(self, file, sinfo):
        fetched = self._fetched.pop((file.key, sinfo.offset, sinfo.length), None)
        if fetched is None:
            fetched = self.fs.client.get_range(file.bucket, file.key, sinfo.offset, sinfo.length)
        return BufferReader(fetched, file.bucket, file.key)

    def read_data(self, plan, planner):
        # DCP reads item after item, each a round trip. Instead: the items' byte ranges in
        # batches of read_batch_bytes, each batch's GETs all in flight at once, the next batch
        # downloading (on a thread; the engine releases the GIL) while DCP decodes this one.
        batches, batch, batch_bytes = [], [], 0
        for item in plan.items:
            batch.append(item)
            batch_bytes += self.storage_data[item.storage_index].length
            if batch_bytes >= self.read_batch_bytes:
                batches.append(batch)
                batch, batch_bytes = [], 0
        if batch or not batches:
            batches.append(batch)
        with ThreadPoolExecutor(max_workers=1, thread_name_prefix="gantry-dcp-fetch") as pool:
            ahead = pool.submit(self._fetch, batches[0])
            for i, items in enumerate(batches):
                fetched = ahead.result()
                if i + 1 < len(batches):
                    ahead = pool.submit(self._fetch, batches[i + 1])
                self._fetched = fetched
                try:
                    done = super().read_data(dataclasses.replace(plan, items=items), planner)
                finally:
                    self._fetched = {}
        return done

    def _fetch(self, items):
        """The bytes of every item, keyed as _slice_file looks them up."""
        wanted = []
        for item in items:
            info = self.storage_data[item.storage_index]
            bucket, key = split_uri(self.fs.concat_path(self.path, info.relative_path))
            wanted.append((bucket, key, info.offset, info.length))
        return {(key, offset, length): buf
                for (_, key, offset, length), buf in zip(wanted, self.fs.client.get_ranges(wanted))}
