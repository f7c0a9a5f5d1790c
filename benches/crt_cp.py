#!/usr/bin/env python3
"""Download or upload one object with the AWS CRT's S3Client (awscrt), for side-by-side runs
against `gantry cp` on the same server. Prints one JSON line like `gantry cp --json`, with the
client process's CPU seconds (user+sys from getrusage).

    crt_cp.py get  ENDPOINT BUCKET KEY DEST_FILE  [--part-size BYTES] [--gbps N]
    crt_cp.py put  ENDPOINT BUCKET KEY SRC_FILE   [--part-size BYTES] [--gbps N]

Credentials come from AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY; the endpoint is plain http
with path-style addressing (as for a local S3-compatible server).
"""
import argparse
import json
import os
import resource
import time
from urllib.parse import urlparse

from awscrt.auth import AwsCredentialsProvider
from awscrt.http import HttpHeaders, HttpRequest
from awscrt.io import ClientBootstrap, DefaultHostResolver, EventLoopGroup
from awscrt.s3 import S3Client, S3RequestTlsMode, S3RequestType


def main():
    p = argparse.ArgumentParser()
    p.add_argument("op", choices=["get", "put"])
    p.add_argument("endpoint")
    p.add_argument("bucket")
    p.add_argument("key")
    p.add_argument("path")
    p.add_argument("--part-size", type=int, default=8 << 20)
    p.add_argument("--gbps", type=float, default=10.0)
    p.add_argument("--nic", action="append", default=None, help="network interface (repeatable)")
    p.add_argument("--max-connections", type=int, default=None)
    a = p.parse_args()

    host = urlparse(a.endpoint).netloc
    elg = EventLoopGroup()
    bootstrap = ClientBootstrap(elg, DefaultHostResolver(elg))
    creds = AwsCredentialsProvider.new_static(os.environ["AWS_ACCESS_KEY_ID"], os.environ["AWS_SECRET_ACCESS_KEY"])
    client = S3Client(
        bootstrap=bootstrap,
        region=os.environ.get("AWS_REGION", "us-east-1"),
        credential_provider=creds,
        tls_mode=S3RequestTlsMode.DISABLED,
        part_size=a.part_size,
        throughput_target_gbps=a.gbps,
        network_interface_names=a.nic,
        max_active_connections_override=a.max_connections,
    )
    path = f"/{a.bucket}/{a.key}"
    received = [0]

    def on_progress(n):
        received[0] += n

    start = time.monotonic()
    if a.op == "get":
        req = HttpRequest("GET", path, HttpHeaders([("Host", host)]))
        r = client.make_request(type=S3RequestType.GET_OBJECT, request=req, recv_filepath=a.path,
                                on_progress=on_progress)
    else:
        size = os.path.getsize(a.path)
        headers = HttpHeaders([("Host", host), ("Content-Length", str(size)), ("Content-Type", "application/octet-stream")])
        req = HttpRequest("PUT", path, headers)
        r = client.make_request(type=S3RequestType.PUT_OBJECT, request=req, send_filepath=a.path)
    r.finished_future.result()
    seconds = time.monotonic() - start
    # Bytes received, not the file's size: the destination may be a device such as /dev/null.
    size = received[0] if a.op == "get" else os.path.getsize(a.path)
    ru = resource.getrusage(resource.RUSAGE_SELF)
    print(json.dumps({
        "client": "awscrt", "direction": "download" if a.op == "get" else "upload", "bytes": size,
        "seconds": seconds, "mib_per_s": size / (1 << 20) / seconds,
        "cpu_user_s": ru.ru_utime, "cpu_sys_s": ru.ru_stime, "max_rss_kib": ru.ru_maxrss,
    }))


if __name__ == "__main__":
    main()
