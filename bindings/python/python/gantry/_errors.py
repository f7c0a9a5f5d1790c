"""The exceptions gantry raises. Defined in Python so that NotFoundError can also be a
FileNotFoundError (and InvalidInputError a ValueError): code written for files and for
other clients catches them without knowing gantry."""


class GantryError(Exception):
    """A failed call, with what the server said.

    kind: the engine's error kind ("NotFound", "Throttled", "Timeout", ...);
    http_status: the server's HTTP status, None without an answer;
    s3_code: S3's error code ("NoSuchKey", "SlowDown", ...), None if none;
    request_id: S3's request id (quote it to AWS support), None if none;
    retryable: whether trying again may succeed (gantry already retried);
    operation: the S3 operation that failed ("GetObject", "PutObject", ...).
    """

    def __init__(self, message, *, kind="Internal", http_status=None, s3_code=None, request_id=None,
                 retryable=False, operation=None):
        super().__init__(message)
        self.kind = kind
        self.http_status = http_status
        self.s3_code = s3_code
        self.request_id = request_id
        self.retryable = retryable
        self.operation = operation


class NotFoundError(GantryError, FileNotFoundError):
    """The bucket or key does not exist (HTTP 404)."""


class AccessDeniedError(GantryError, PermissionError):
    """The credentials were refused or lack the permission (HTTP 403)."""


class InvalidInputError(GantryError, ValueError):
    """A bad argument or configuration (a buffer too small, an unknown config key)."""


class CancelledError(GantryError):
    """The transfer was cancelled."""
