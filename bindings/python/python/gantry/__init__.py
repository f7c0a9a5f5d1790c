"""gantry: throughput-tuned S3 transfers (the gantry engine, bound with PyO3).

    import gantry
    c = gantry.Client(endpoint_url="http://127.0.0.1:9000", access_key_id="...", secret_access_key="...")
    c.put("bucket", "key", b"bytes")
    buf = c.get("bucket", "key")          # buffer protocol: memoryview(buf), no copy
"""

from ._errors import AccessDeniedError, CancelledError, GantryError, InvalidInputError, NotFoundError
from ._gantry import Buffer, Client, ObjectSummary, __version__

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
