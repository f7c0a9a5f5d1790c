"""gantry: throughput-tuned S3 transfers (the gantry engine, bound with PyO3).

    import gantry
    c = gantry.Client(endpoint_url="http://127.0.0.1:9000", access_key_id="...", secret_access_key="...")
    c.put("bucket", "key", b"bytes")
    buf = c.get("bucket", "key")          # buffer protocol: memoryview(buf), no copy
"""

from . import io
from ._errors import AccessDeniedError, CancelledError, GantryError, InvalidInputError, NotFoundError
from ._gantry import Buffer, ObjectSummary, __version__
from ._gantry import Client as _EngineClient


def _client_from(endpoint_url, region, config):
    return Client(endpoint_url=endpoint_url, region=region, **config)


class Client(_EngineClient):
    """An S3 client (see the module docs); `open_read` / `open_write` give file objects.

    Picklable: a pickled client is rebuilt from its arguments (a new connection pool), which
    is how DataLoader workers started by spawn get one."""

    def __init__(self, endpoint_url=None, region=None, **config):
        self._args = (endpoint_url, region, dict(config))

    def __reduce__(self):
        return (_client_from, self._args)

    def open_read(self, bucket, key):
        """A seekable file object streaming bucket/key (gantry.io.Reader)."""
        return io.Reader(self._open_read(bucket, key), bucket, key)

    def open_write(self, bucket, key):
        """A file object uploading to bucket/key as it is written (gantry.io.Writer): close()
        completes it; an exception leaving a `with` block aborts it."""
        return io.Writer(self._open_write(bucket, key), bucket, key)

__all__ = [
    "AccessDeniedError",
    "Buffer",
    "CancelledError",
    "Client",
    "GantryError",
    "InvalidInputError",
    "NotFoundError",
    "ObjectSummary",
    "__version__",
]
