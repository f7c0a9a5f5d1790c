"""Starts a real S3 server for the tests: `gantry serve` (the embedded s3s-fs server), built
by `cargo build --release`; GANTRY_TEST_ENDPOINT names a running one instead (with the
credentials gantry / gantry-secret-key)."""

import os
import re
import pathlib
import socket
import subprocess
import tempfile
import time

import pytest

import gantry

REPO = pathlib.Path(__file__).resolve().parents[3]
KEY, SECRET = "gantry", "gantry-secret-key"
RUN = f"{os.getpid() % 100000:05}"


@pytest.fixture(scope="session")
def endpoint():
    if os.environ.get("GANTRY_TEST_ENDPOINT"):
        yield os.environ["GANTRY_TEST_ENDPOINT"]
        return
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    data = tempfile.mkdtemp(prefix="gantry-py-")
    server = subprocess.Popen([str(REPO / "target/release/gantry"), "serve", "--dir", data,
                               "--addr", f"127.0.0.1:{port}"], stderr=subprocess.DEVNULL)
    for _ in range(400):
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.1).close()
            break
        except OSError:
            time.sleep(0.025)
    else:
        raise RuntimeError("gantry serve did not start")
    yield f"http://127.0.0.1:{port}"
    server.kill()
    server.wait()


@pytest.fixture(scope="session")
def client(endpoint):
    return gantry.Client(endpoint_url=endpoint, access_key_id=KEY, secret_access_key=SECRET,
                         part_size="5MiB", max_connections=8, auto_config=False)


@pytest.fixture
def bucket(client, request):
    # A valid bucket name per test: lower-case letters, digits and dashes ("[fork]" and the
    # like from parametrised names become dashes).
    # A run-unique suffix: a server named by GANTRY_TEST_ENDPOINT keeps earlier runs' buckets.
    name = f"py-{RUN}-" + re.sub(r"[^a-z0-9]+", "-", request.node.name.lower()).strip("-")[:50]
    client.create_bucket(name)
    return name
