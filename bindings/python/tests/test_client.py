"""The Client API against a real S3 server (`gantry serve`), bad input included."""

import os

import pytest

import gantry



def pattern(n, seed=1):
    return bytes((i * 31 + seed) % 251 for i in range(n))


def test_put_and_get_without_copies(client, bucket):
    data = pattern(12 * 1024 * 1024 + 5)  # multipart at 5 MiB parts
    etag = client.put(bucket, "big", data)
    assert etag
    buf = client.get(bucket, "big")
    assert isinstance(buf, gantry.Buffer) and len(buf) == len(data)
    view = memoryview(buf)
    assert view.readonly and view.nbytes == len(data)
    assert bytes(view) == data
    # Any bytes-like source: bytearray, memoryview of part of one.
    client.put(bucket, "ba", bytearray(b"from a bytearray"))
    client.put(bucket, "mv", memoryview(b"..middle..")[2:8])
    assert bytes(client.get(bucket, "ba")) == b"from a bytearray"
    assert bytes(client.get(bucket, "mv")) == b"middle"
    client.put(bucket, "empty", b"")
    assert len(client.get(bucket, "empty")) == 0


def test_get_into_any_writable_buffer(client, bucket):
    data = pattern(7 * 1024 * 1024, 3)
    client.put(bucket, "obj", data)
    out = bytearray(len(data) + 10)
    assert client.get_into(bucket, "obj", out) == len(data)
    assert out[: len(data)] == data
    np = pytest.importorskip("numpy")
    arr = np.zeros(len(data), dtype=np.uint8)
    assert client.get_into(bucket, "obj", arr) == len(data)
    assert arr.tobytes() == data


def test_get_into_refuses_bad_buffers(client, bucket):
    client.put(bucket, "obj", b"0123456789")
    with pytest.raises(TypeError, match="read-only"):
        client.get_into(bucket, "obj", b"immutable!")
    with pytest.raises(gantry.InvalidInputError) as e:
        client.get_into(bucket, "obj", bytearray(3))
    assert isinstance(e.value, ValueError) and e.value.kind == "InvalidInput"
    with pytest.raises(TypeError):
        client.get_into(bucket, "obj", 42)


def test_ranges(client, bucket):
    data = pattern(6 * 1024 * 1024, 5)
    client.put(bucket, "obj", data)
    assert bytes(client.get_range(bucket, "obj", 1000, 5000)) == data[1000:6000]
    assert bytes(client.get_range(bucket, "obj", len(data) - 10, 100)) == data[-10:]
    assert len(client.get_range(bucket, "obj", 0, 0)) == 0


def test_files(client, bucket, tmp_path):
    src = tmp_path / "src.bin"
    data = pattern(11 * 1024 * 1024, 7)
    src.write_bytes(data)
    assert client.upload_file(src, bucket, "f") == len(data)
    dst = tmp_path / "dst.bin"
    assert client.download_file(bucket, "f", str(dst)) == len(data)
    assert dst.read_bytes() == data


def test_head_list_delete_and_metrics(client, bucket):
    for i in range(5):
        client.put(bucket, f"dir/{i}", b"x" * i)
    client.put(bucket, "other", b"y")
    head = client.head(bucket, "dir/3")
    assert head["size"] == 3 and head["etag"]
    listed = list(client.list(bucket, prefix="dir/"))
    assert sorted(o.key for o in listed) == [f"dir/{i}" for i in range(5)]
    assert {o.key: o.size for o in listed}["dir/4"] == 4
    assert len(list(client.list(bucket))) == 6
    client.delete(bucket, "dir/0")
    assert len(list(client.list(bucket, prefix="dir/"))) == 4
    m = client.metrics()
    assert m["requests"] > 0 and m["bytes_uploaded"] > 0


def test_listing_pages_lazily(client, bucket):
    for i in range(1005):
        client.put(bucket, f"k{i:05}", b"")
    before = client.metrics()["requests"]
    it = client.list(bucket)
    first = next(it)
    assert first.key.startswith("k")
    assert client.metrics()["requests"] == before + 1, "one page fetched for the first item"
    assert 1 + sum(1 for _ in it) == 1005


def test_errors_are_typed(client, bucket, server):
    with pytest.raises(gantry.NotFoundError) as e:
        client.get(bucket, "missing")
    assert isinstance(e.value, FileNotFoundError) and isinstance(e.value, gantry.GantryError)
    assert e.value.http_status == 404 and e.value.s3_code == "NoSuchKey" and not e.value.retryable
    assert e.value.kind == "NotFound" and e.value.operation == "GetObject"
    with pytest.raises(gantry.NotFoundError):
        client.get("no-such-bucket-here", "k")
    with pytest.raises(FileNotFoundError):
        client.head(bucket, "missing")
    wrong = gantry.Client(endpoint_url=server.url, access_key_id=server.key, secret_access_key="wrong",
                          auto_config=False, max_attempts=1)
    with pytest.raises(gantry.AccessDeniedError) as e:
        wrong.put(bucket, "k", b"x")
    assert isinstance(e.value, PermissionError) and e.value.http_status == 403
    with pytest.raises(gantry.InvalidInputError):
        gantry.Client(endpoint_url=server.url, no_such_setting=1)
    with pytest.raises(TypeError):
        client.put(bucket, "k", "a str is not bytes")


def test_the_gil_is_released(client, bucket):
    # A Python thread keeps running while a download is in progress: if the call held the
    # GIL, no tick could land strictly inside the call.
    import threading
    import time

    data = pattern(32 * 1024 * 1024, 9)
    client.put(bucket, "obj", data)
    ticks = []
    stop = threading.Event()

    def ticker():
        while not stop.is_set():
            ticks.append(time.monotonic())
            time.sleep(0.0005)

    t = threading.Thread(target=ticker)
    t.start()
    time.sleep(0.01)
    start = time.monotonic()
    for _ in range(3):
        client.get(bucket, "obj")
    end = time.monotonic()
    stop.set()
    t.join()
    inside = [x for x in ticks if start < x < end]
    assert len(inside) >= 3, f"{len(inside)} ticks during {end - start:.3f} s of downloads"
