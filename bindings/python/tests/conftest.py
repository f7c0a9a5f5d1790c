"""Starts the real S3 servers the tests run against, each test once per server:

- `serve`: `gantry serve` (the embedded s3s server), built by `cargo build --release`;
  GANTRY_TEST_ENDPOINT names a running one instead (credentials gantry / gantry-secret-key).
- `minio`: MinIO, an S3 implementation nobody here wrote, built by
  `tests/scripts/minio.sh install` (scripts/test.sh runs it). Without it the MinIO runs are
  skipped, saying so, except under CI=true, where they fail.
"""

import dataclasses
import os
import pathlib
import re
import socket
import subprocess
import tempfile
import time

import pytest

import gantry

REPO = pathlib.Path(__file__).resolve().parents[3]
RUN = f"{os.getpid() % 100000:05}"
MINIO = REPO / "tests/scripts/minio.sh"


@dataclasses.dataclass(frozen=True)
class Server:
    name: str
    url: str
    key: str
    secret: str

    def client(self, **config):
        """A client of this server with its credentials (and no EC2 probing)."""
        config.setdefault("auto_config", False)
        return gantry.Client(endpoint_url=self.url, access_key_id=self.key, secret_access_key=self.secret, **config)

    def env(self):
        """The environment of a child process that should reach this server on its own."""
        return {**os.environ, "AWS_ACCESS_KEY_ID": self.key, "AWS_SECRET_ACCESS_KEY": self.secret,
                "AWS_ENDPOINT_URL": self.url, "AWS_REGION": "us-east-1", "AWS_EC2_METADATA_DISABLED": "true",
                "PYTHONPATH": str(pathlib.Path(__file__).parent)}


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_listening(port, what):
    for _ in range(400):
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.1).close()
            return
        except OSError:
            time.sleep(0.025)
    raise RuntimeError(f"{what} did not start")


def gantry_serve():
    if os.environ.get("GANTRY_TEST_ENDPOINT"):
        yield Server("serve", os.environ["GANTRY_TEST_ENDPOINT"], "gantry", "gantry-secret-key")
        return
    port = free_port()
    data = tempfile.mkdtemp(prefix="gantry-py-")
    server = subprocess.Popen([str(REPO / "target/release/gantry"), "serve", "--dir", data,
                               "--addr", f"127.0.0.1:{port}"], stderr=subprocess.DEVNULL)
    wait_listening(port, "gantry serve")
    yield Server("serve", f"http://127.0.0.1:{port}", "gantry", "gantry-secret-key")
    server.kill()
    server.wait()


def minio():
    binary = REPO / "target/minio-bin/minio"
    if not binary.exists():
        why = "MinIO is not built (tests/scripts/minio.sh install; scripts/test.sh runs it)"
        if os.environ.get("CI"):
            pytest.fail(why)
        pytest.skip(why)
    port, data = free_port(), tempfile.mkdtemp(prefix="gantry-py-minio-")
    # The owner pid makes minio.sh stop MinIO and remove its data if this process dies.
    subprocess.run(["bash", str(MINIO), "start", data, str(port)], check=True,
                   env={**os.environ, "GANTRY_MINIO_OWNER_PID": str(os.getpid())})
    yield Server("minio", f"http://127.0.0.1:{port}", "gantryadmin", "gantrysecret123")
    subprocess.run(["bash", str(MINIO), "stop", data], check=False)


@pytest.fixture(scope="session", params=["serve", "minio"])
def server(request):
    yield from (gantry_serve() if request.param == "serve" else minio())


@pytest.fixture(scope="session")
def endpoint(server):
    return server.url


@pytest.fixture(scope="session")
def client(server):
    return server.client(part_size="5MiB", max_connections=8)


@pytest.fixture
def bucket(client, request):
    # A valid bucket name per test: lower-case letters, digits and dashes ("[fork]" and the
    # like from parametrised names become dashes).
    # A run-unique suffix: a server named by GANTRY_TEST_ENDPOINT keeps earlier runs' buckets.
    name = f"py-{RUN}-" + re.sub(r"[^a-z0-9]+", "-", request.node.originalname.lower()).strip("-")[:40]
    name += "-" + re.sub(r"[^a-z0-9]+", "-", request.node.name[len(request.node.originalname):].lower()).strip("-")[:10]
    client.create_bucket(name.strip("-"))
    return name.strip("-")
