"""open_read / open_write file objects and fork safety, against `gantry serve`."""

import io
import os

import pytest

import gantry


def pattern(n, seed=1):
    return bytes((i * 131 + seed * 7) % 256 for i in range(n))


def test_open_write_streams_and_completes(client, bucket):
    data = pattern(13 * 1024 * 1024 + 3)
    with client.open_write(bucket, "stream") as w:
        assert isinstance(w, io.BufferedIOBase) and w.writable()
        for i in range(0, len(data), 1 << 20):
            assert w.write(data[i:i + (1 << 20)]) == len(data[i:i + (1 << 20)])
        w.write(memoryview(b""))
        assert w.tell() == len(data)
    assert w.closed and w.etag
    assert bytes(client.get(bucket, "stream")) == data
    # Small totals become one PutObject.
    with client.open_write(bucket, "small") as w:
        w.write(b"tiny")
    assert bytes(client.get(bucket, "small")) == b"tiny"


def test_an_exception_in_open_write_leaves_nothing(client, bucket):
    data = pattern(12 * 1024 * 1024)
    with pytest.raises(RuntimeError, match="boom"):
        with client.open_write(bucket, "half") as w:
            w.write(data)  # past two 5 MiB parts: a multipart upload is under way
            raise RuntimeError("boom")
    with pytest.raises(gantry.NotFoundError):
        client.head(bucket, "half")
    assert client.list_multipart_uploads(bucket) == [], "the multipart upload was aborted"
    # The check sees an upload that is in progress.
    w = client.open_write(bucket, "open")
    w.write(data)
    assert [k for k, _ in client.list_multipart_uploads(bucket)] == ["open"]
    w.abort()
    # And explicitly aborted: same.
    w = client.open_write(bucket, "aborted")
    w.write(data)
    w.abort()
    assert w.closed
    with pytest.raises(FileNotFoundError):
        client.head(bucket, "aborted")
    assert client.list_multipart_uploads(bucket) == []
    with pytest.raises(ValueError):
        w.write(b"more")


def test_open_read_reads_seeks_and_tells(client, bucket):
    data = pattern(11 * 1024 * 1024 + 17, 2)
    client.put(bucket, "obj", data)
    r = client.open_read(bucket, "obj")
    assert isinstance(r, io.BufferedIOBase) and r.readable() and r.seekable()
    assert r.key == "obj" and r.size == len(data)
    assert r.read(10) == data[:10]
    buf = bytearray(1 << 20)
    assert r.readinto(buf) == len(buf) and bytes(buf) == data[10:10 + len(buf)]
    assert r.tell() == 10 + len(buf)
    r.seek(5 * 1024 * 1024)
    assert r.read(100) == data[5 * 1024 * 1024:5 * 1024 * 1024 + 100]
    r.seek(-50, io.SEEK_END)
    assert r.read() == data[-50:]
    assert r.read(10) == b""
    r.seek(3)
    r.seek(4, io.SEEK_CUR)
    assert r.read(5) == data[7:12]
    r.seek(0)
    assert r.read() == data
    r.close()
    with pytest.raises(ValueError):
        r.read(1)
    with pytest.raises(gantry.NotFoundError):
        client.open_read(bucket, "missing")
    # Works where file objects are expected.
    with client.open_read(bucket, "obj") as f:
        assert f.read(4) == data[:4]


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_a_client_made_before_fork_works_in_the_child(client, bucket):
    client.put(bucket, "before-fork", b"parent wrote this")
    assert bytes(client.get(bucket, "before-fork")) == b"parent wrote this"
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            ok = bytes(client.get(bucket, "before-fork")) == b"parent wrote this"
            client.put(bucket, "from-child", b"child")
            code = 0 if ok else 2
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    assert bytes(client.get(bucket, "from-child")) == b"child"
    # The parent's client still works.
    assert bytes(client.get(bucket, "before-fork")) == b"parent wrote this"
