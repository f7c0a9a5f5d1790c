"""gantry.torch.ObjectDataset and the batch calls under it (get_many, get_ranges): a
DataLoader batch is one burst of GETs, every sample arrives once, errors name the key."""

import threading
import time

import pytest

torch = pytest.importorskip("torch")

import gantry
import gantry.torch

N = 96


@pytest.fixture
def objects(client, bucket):
    for i in range(N):
        client.put(bucket, f"img/{i:04}.bin", f"object {i} ".encode() * (i + 1))
    client.put(bucket, "labels.json", b"{}")
    return bucket


def test_get_many_and_get_ranges_keep_order(client, objects):
    want = [(objects, f"img/{i:04}.bin") for i in (5, 0, 77, 5)]
    got = client.get_many(want)
    assert [bytes(b) for b in got] == [f"object {i} ".encode() * (i + 1) for i in (5, 0, 77, 5)]
    assert client.get_many([]) == []
    ranges = client.get_ranges([(objects, "img/0003.bin", 2, 5), (objects, "img/0001.bin", 0, 0),
                                (objects, "img/0000.bin", 5, 100)])
    assert [bytes(b) for b in ranges] == [b"ject ", b"", b"t 0 "]


def test_get_many_raises_the_missing_key(client, objects):
    with pytest.raises(gantry.NotFoundError) as e:
        client.get_many([(objects, "img/0001.bin"), (objects, "img/nope")])
    assert "img/nope" in str(e.value)
    with pytest.raises(TypeError):
        client.get_many([objects])


def test_a_batch_is_one_burst_of_concurrent_gets(server, objects):
    # 32 GETs in flight together need many connections; one after another would reuse one.
    c = server.client(max_connections=32)
    ds = gantry.torch.ObjectDataset.from_prefix(f"s3://{objects}/img/", client=c)
    before = c.metrics()["requests"]
    batch = ds.__getitems__(list(range(32)))
    assert [o.key for o in batch] == [f"img/{i:04}.bin" for i in range(32)]
    assert c.metrics()["requests"] - before == 32
    # Concurrency shows in the connections: a sequential fetch would reuse one.
    assert c.metrics()["connections_opened"] > 4, c.metrics()


def test_dataloader_reads_every_object_once(client, objects):
    ds = gantry.torch.ObjectDataset.from_prefix(f"s3://{objects}/img/", client=client,
                                                transform=lambda o: (o.key, o.read()))
    assert len(ds) == N and ds.object(3) == (objects, "img/0003.bin")
    loader = torch.utils.data.DataLoader(ds, batch_size=16, num_workers=2, shuffle=True,
                                         collate_fn=list, multiprocessing_context="fork")
    for _ in range(2):
        seen = [item for batch in loader for item in batch]
        assert sorted(k for k, _ in seen) == [f"img/{i:04}.bin" for i in range(N)]
        for key, data in seen:
            i = int(key[4:8])
            assert data == f"object {i} ".encode() * (i + 1)


def test_the_default_sample_is_a_file_over_the_bytes(client, objects):
    ds = gantry.torch.ObjectDataset.from_uris([f"s3://{objects}/img/0002.bin", f"s3://{objects}/labels.json"],
                                              client=client)
    obj = ds[0]
    assert (obj.bucket, obj.key, obj.size) == (objects, "img/0002.bin", 27)
    assert obj.read(6) == b"object" and obj.tell() == 6
    obj.seek(-3, 2)
    assert obj.read() == b" 2 " == obj.getbuffer()[-3:].tobytes()
    assert obj.read() == b""
    buf = bytearray(4)
    obj.seek(0)
    assert obj.readinto(buf) == 4 and buf == b"obje"
    assert bytes(ds[1].getbuffer()) == b"{}"
    with pytest.raises(ValueError):
        gantry.torch.ObjectDataset.from_uris(["not-a-uri"], client=client)
    with pytest.raises(gantry.NotFoundError):
        gantry.torch.ObjectDataset.from_uris([f"s3://{objects}/missing"], client=client)[0]


def test_the_batch_call_releases_the_gil(client, objects):
    ticks = []
    stop = threading.Event()

    def tick():
        while not stop.is_set():
            ticks.append(time.perf_counter())
            time.sleep(0.001)

    t = threading.Thread(target=tick)
    t.start()
    start = time.perf_counter()
    for _ in range(5):
        client.get_many([(objects, f"img/{i:04}.bin") for i in range(N)])
    end = time.perf_counter()
    stop.set()
    t.join()
    assert any(start < x < end for x in ticks)


def test_ranges_longer_than_a_part_land_whole(client, bucket):
    # Longer than the part size (5 MiB here): parallel ranged GETs straight into one buffer.
    data = bytes(range(251)) * (11 * 2**20 // 251)
    client.put(bucket, "big", data)
    whole, tail, mid = client.get_ranges([(bucket, "big", 0, len(data)), (bucket, "big", 2**20, 64 * 2**20),
                                          (bucket, "big", 3, 7 * 2**20)])
    assert bytes(whole) == data
    assert bytes(tail) == data[2**20:], "a range past the end is cut at the end"
    assert bytes(mid) == data[3:3 + 7 * 2**20]
    assert bytes(client.get_range(bucket, "big", 5, 6 * 2**20)) == data[5:5 + 6 * 2**20]
