"""File objects over gantry's streams: `Client.open_read` and `Client.open_write` return them.

BufferReader: the same file interface over an object already in memory (`Client.get`,
`gantry.torch.ObjectDataset`).

Reader: read / readinto / seek / tell, streaming in order with the engine's prefetching
(parallel parts within the client's read window, so memory stays bounded however large the
object). Writer: write, then close() completes the object; leaving a `with` block by an
exception aborts the upload, so nothing half-written appears and no multipart upload is left.
"""

import io


class Reader(io.BufferedIOBase):
    """A read-only, seekable file object over one object. `.key` names it, `.size` is its size."""

    def __init__(self, raw, bucket, key):
        super().__init__()
        self._raw = raw
        self.bucket = bucket
        self.key = key
        self.size = raw.size

    def readable(self):
        return True

    def seekable(self):
        return True

    def readinto(self, b):
        self._checkClosed()
        return self._raw.readinto(b)

    def readinto1(self, b):
        return self.readinto(b)

    def read(self, size=-1):
        self._checkClosed()
        if size is None or size < 0:
            size = max(0, self.size - self._raw.tell())
        buf = bytearray(size)
        n = self._raw.readinto(buf)
        del buf[n:]
        return bytes(buf)

    def read1(self, size=-1):
        return self.read(size)

    def seek(self, offset, whence=io.SEEK_SET):
        self._checkClosed()
        return self._raw.seek(offset, whence)

    def tell(self):
        self._checkClosed()
        return self._raw.tell()

    def close(self):
        if not self.closed:
            self._raw.close()
        super().close()

    def _checkClosed(self):
        if self.closed:
            raise ValueError("I/O operation on closed file.")


class BufferReader(io.BufferedIOBase):
    """A read-only, seekable file object over bytes already downloaded (a `gantry.Buffer`):
    reads copy out of it, nothing is copied up front. `.bucket` and `.key` name the object,
    `.size` is its length, `getbuffer()` is a memoryview of all of it (no copy)."""

    def __init__(self, buffer, bucket=None, key=None):
        super().__init__()
        self._view = memoryview(buffer).cast("B")
        self._pos = 0
        self.bucket = bucket
        self.key = key
        self.size = len(self._view)

    def readable(self):
        return True

    def seekable(self):
        return True

    def getbuffer(self):
        """The whole object as a read-only memoryview (no copy)."""
        self._checkClosed()
        return self._view

    def readinto(self, b):
        self._checkClosed()
        out = memoryview(b).cast("B")
        n = max(0, min(len(out), self.size - self._pos))
        out[:n] = self._view[self._pos : self._pos + n]
        self._pos += n
        return n

    def readinto1(self, b):
        return self.readinto(b)

    def read(self, size=-1):
        self._checkClosed()
        end = self.size if size is None or size < 0 else min(self.size, self._pos + size)
        start, self._pos = self._pos, max(self._pos, end)
        return bytes(self._view[start:end])

    def read1(self, size=-1):
        return self.read(size)

    def seek(self, offset, whence=io.SEEK_SET):
        self._checkClosed()
        base = {io.SEEK_SET: 0, io.SEEK_CUR: self._pos, io.SEEK_END: self.size}.get(whence)
        if base is None:
            raise ValueError(f"invalid whence {whence}")
        if base + offset < 0:
            raise ValueError(f"negative seek position {base + offset}")
        self._pos = base + offset
        return self._pos

    def tell(self):
        self._checkClosed()
        return self._pos

    def close(self):
        if not self.closed:
            self._view.release()
        super().close()

    def _checkClosed(self):
        if self.closed:
            raise ValueError("I/O operation on closed file.")


class Writer(io.BufferedIOBase):
    """A write-only file object that uploads as it is written (multipart past one part).
    close() completes the object; abort() (or an exception leaving a `with` block) discards
    it, parts already uploaded included. `.etag` is set once completed."""

    def __init__(self, raw, bucket, key):
        super().__init__()
        self._raw = raw
        self.bucket = bucket
        self.key = key
        self.etag = None

    def writable(self):
        return True

    def write(self, b):
        if self.closed:
            raise ValueError("I/O operation on closed file.")
        return self._raw.write(b)

    def tell(self):
        return self._raw.tell()

    def abort(self):
        """Discards the upload; the file is closed."""
        if not self.closed:
            self._raw.abort()
            super().close()

    def close(self):
        if not self.closed:
            try:
                self.etag = self._raw.complete()
            finally:
                super().close()

    def __exit__(self, exc_type, exc, tb):
        if exc_type is not None:
            self.abort()
            return False
        self.close()
        return False
