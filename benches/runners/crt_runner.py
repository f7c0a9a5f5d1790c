#!/usr/bin/env python3
"""Runs one benchmark spec with the AWS CRT's S3Client (awscrt, aws-c-s3 underneath).

Configured as awscrt documents it for a local endpoint: TLS off for http://, and for https://
TLS on (s2n) with the trust store replaced by the spec's `ca_bundle`; the spec's part size,
a throughput target high enough that the connection cap (max_active_connections_override =
the spec's connections) is what limits it. GETs use the CRT's own file sink on /dev/null
(the cheapest receive path it offers: no Python per chunk). Uploads from a file use
send_filepath (read in C); uploads from memory and the unknown-length stream go through a
Python body stream, the CRT's only way to send bytes it does not read from a file.
See gantry-bench (benches/runner) for the spec.
"""
import concurrent.futures as cf
import io
import os
import threading

from awscrt.auth import AwsCredentialsProvider
from awscrt.http import HttpHeaders, HttpRequest
from awscrt.io import ClientBootstrap, ClientTlsContext, DefaultHostResolver, EventLoopGroup, TlsContextOptions
from awscrt.s3 import S3Client, S3RequestTlsMode, S3RequestType
from urllib.parse import urlparse

import common


class RepeatStream(io.RawIOBase):
    """`total` bytes made of `block` repeated; its length is not announced to the CRT."""

    def __init__(self, block, total):
        self.block = memoryview(block)
        self.left = total
        self.pos = 0

    def readable(self):
        return True

    def readinto(self, b):
        n = min(len(b), self.left, len(self.block) - self.pos)
        if n <= 0:
            return 0
        b[:n] = self.block[self.pos:self.pos + n]
        self.pos = (self.pos + n) % len(self.block)
        self.left -= n
        return n


def main():
    spec = common.load_spec()
    url = urlparse(spec["endpoint"])
    host = url.netloc
    elg = EventLoopGroup()
    bootstrap = ClientBootstrap(elg, DefaultHostResolver(elg))
    ak, sk = common.credentials()
    kwargs = {}
    if spec.get("memory_limit"):
        kwargs["memory_limit"] = spec["memory_limit"]
    if url.scheme == "https":
        tls = TlsContextOptions()
        if spec.get("ca_bundle"):
            tls.override_default_trust_store_from_path(ca_filepath=spec["ca_bundle"])
        kwargs["tls_connection_options"] = ClientTlsContext(tls).new_connection_options()
    client = S3Client(
        bootstrap=bootstrap,
        region="us-east-1",
        credential_provider=AwsCredentialsProvider.new_static(ak, sk),
        tls_mode=S3RequestTlsMode.ENABLED if url.scheme == "https" else S3RequestTlsMode.DISABLED,
        part_size=spec["part_size"],
        throughput_target_gbps=100.0,
        max_active_connections_override=spec["connections"],
        **kwargs,
    )
    bucket = spec["bucket"]
    sources = common.sources(spec)

    def start(w, src, key):
        path = f"/{bucket}/{key}"
        if w["op"] == "get":
            req = HttpRequest("GET", path, HttpHeaders([("Host", host)]))
            return client.make_request(type=S3RequestType.GET_OBJECT, request=req, recv_filepath="/dev/null")
        headers = [("Host", host), ("Content-Type", "application/octet-stream")]
        if w["op"] == "put" and w.get("source", "memory") == "file":
            headers.append(("Content-Length", str(os.path.getsize(w["file"]))))
            req = HttpRequest("PUT", path, HttpHeaders(headers))
            return client.make_request(type=S3RequestType.PUT_OBJECT, request=req, send_filepath=w["file"])
        if w["op"] == "put":
            headers.append(("Content-Length", str(len(src))))
            req = HttpRequest("PUT", path, HttpHeaders(headers), body_stream=io.BytesIO(src))
        else:
            req = HttpRequest("PUT", path, HttpHeaders(headers), body_stream=RepeatStream(src, w["size"]))
        return client.make_request(type=S3RequestType.PUT_OBJECT, request=req)

    def size_of(w):
        if w["op"] == "put" and w.get("source", "memory") == "file":
            return os.path.getsize(w["file"])
        return w["size"]

    done = [None] * len(spec["workloads"])
    errors = []

    def run(i, w, src, clock):
        try:
            keys = iter(w["keys"])
            pending = {}
            while True:
                while len(pending) < w.get("in_flight", 1):
                    key = next(keys, None)
                    if key is None:
                        break
                    r = start(w, src, key)
                    pending[r.finished_future] = r
                if not pending:
                    break
                finished, _ = cf.wait(list(pending), return_when=cf.FIRST_COMPLETED)
                for f in finished:
                    f.result()
                    del pending[f]
            done[i] = {"name": w["name"], "bytes": size_of(w) * len(w["keys"]),
                       "objects": len(w["keys"]), "seconds": clock.elapsed()}
        except Exception as e:  # reported after all threads end
            errors.append(f"{w['name']}: {e!r}")

    clock = common.Clock()
    threads = [threading.Thread(target=run, args=(i, w, src, clock))
               for i, (w, src) in enumerate(zip(spec["workloads"], sources))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise SystemExit("crt_runner: " + "; ".join(errors))
    clock.report("awscrt", done)


if __name__ == "__main__":
    main()
