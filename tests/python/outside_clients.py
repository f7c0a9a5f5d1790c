"""boto3 against an S3 endpoint: the AWS behaviours gantry's server must show an outside client.

    python outside_clients.py write ENDPOINT ACCESS SECRET BUCKET KEYS_JSON
        Puts every key of KEYS_JSON (a JSON list) with boto3's default CRC32 checksums, a
        multipart object with a FULL_OBJECT CRC32 and one with a COMPOSITE SHA256, and checks
        listings (decoded by botocore and raw encoding-type=url), GETs with ChecksumMode
        ENABLED (botocore validates the bytes), GetObjectAttributes, ListMultipartUploads
        pages, DeleteObjects, BadDigest and NoSuchBucket. Prints {key: sha256 hex} of what it
        left in BUCKET, for gantry's client to read back.

    python outside_clients.py read ENDPOINT ACCESS SECRET BUCKET MANIFEST_JSON
        Lists BUCKET and GETs every object of MANIFEST_JSON ({key: sha256 hex}, written by
        gantry's client) with ChecksumMode ENABLED; the listing must be exactly the manifest.

Exits non-zero with the failed check on stderr.
"""

import base64
import hashlib
import json
import sys
import urllib.parse
import zlib

import boto3
import botocore.config
import botocore.exceptions


def client(endpoint, access, secret):
    config = botocore.config.Config(
        s3={"addressing_style": "path"},
        retries={"max_attempts": 1},
        request_checksum_calculation="when_supported",
        response_checksum_validation="when_supported",
    )
    return boto3.client(
        "s3",
        endpoint_url=endpoint,
        aws_access_key_id=access,
        aws_secret_access_key=secret,
        region_name="us-east-1",
        config=config,
    )


def data_for(key, size=None):
    """Deterministic bytes for a key (sha256 chain), 1-4 KiB unless a size is given."""
    seed = hashlib.sha256(key.encode()).digest()
    size = size if size is not None else 1024 + seed[0] * 12
    out = bytearray()
    block = seed
    while len(out) < size:
        block = hashlib.sha256(block).digest()
        out += block
    return bytes(out[:size])


def sha(data):
    return hashlib.sha256(data).hexdigest()


def check(cond, what):
    if not cond:
        raise AssertionError(what)


def error_code(fn):
    try:
        fn()
    except botocore.exceptions.ClientError as e:
        return e.response["Error"]["Code"]
    return None


def list_keys(s3, bucket, **kw):
    keys = []
    for page in s3.get_paginator("list_objects_v2").paginate(Bucket=bucket, PaginationConfig={"PageSize": 5}, **kw):
        keys += [o["Key"] for o in page.get("Contents", [])]
    return keys


def get_checked(s3, bucket, key, want_sha, **kw):
    r = s3.get_object(Bucket=bucket, Key=key, ChecksumMode="ENABLED", **kw)
    body = r["Body"].read()  # botocore raises FlexibleChecksumError on a mismatch
    check(sha(body) == want_sha, f"GET {key!r}: bytes differ")
    return r


def crc32_b64(data):
    return base64.b64encode(zlib.crc32(data).to_bytes(4, "big")).decode()


def multipart(s3, bucket, key, parts, algorithm, kind, full_checksum=None):
    up = s3.create_multipart_upload(Bucket=bucket, Key=key, ChecksumAlgorithm=algorithm, ChecksumType=kind)
    check(up.get("ChecksumType") == kind, f"CreateMultipartUpload answers {up.get('ChecksumType')}, not {kind}")
    done = []
    for n, part in enumerate(parts, 1):
        r = s3.upload_part(
            Bucket=bucket, Key=key, UploadId=up["UploadId"], PartNumber=n, Body=part, ChecksumAlgorithm=algorithm
        )
        field = "Checksum" + algorithm
        check(field in r, f"UploadPart answers no {field}")
        done.append({"PartNumber": n, "ETag": r["ETag"], field: r[field]})
    extra = {"ChecksumType": kind}
    if full_checksum:
        extra["Checksum" + algorithm] = full_checksum
    return s3.complete_multipart_upload(
        Bucket=bucket, Key=key, UploadId=up["UploadId"], MultipartUpload={"Parts": done}, **extra
    )


def write(s3, bucket, keys):
    manifest = {}
    for key in keys:
        data = data_for(key)
        r = s3.put_object(Bucket=bucket, Key=key, Body=data)
        check(r["ETag"].strip('"') == hashlib.md5(data).hexdigest(), f"PUT {key!r}: ETag is not the MD5")
        # boto3 sends CRC32 by default; the store keeps it and answers it.
        check(r.get("ChecksumCRC32") == crc32_b64(data), f"PUT {key!r}: CRC32 not kept: {r.get('ChecksumCRC32')}")
        manifest[key] = sha(data)

    # Listing: botocore asks for encoding-type=url and decodes; raw, we decode ourselves.
    listed = list_keys(s3, bucket)
    check(sorted(listed) == sorted(manifest), f"listing differs: {sorted(set(listed) ^ set(manifest))}")
    check(listed == sorted(listed, key=lambda k: k.encode()), "listing is not in byte order")
    raw = s3.list_objects_v2(Bucket=bucket, EncodingType="url")
    check(raw.get("EncodingType") == "url", "EncodingType not echoed")
    decoded = [urllib.parse.unquote_plus(o["Key"]) for o in raw["Contents"]]
    check(sorted(decoded) == sorted(manifest), "url-encoded listing does not decode to the keys")
    check(all(" " not in o["Key"] and "\x01" not in o["Key"] for o in raw["Contents"]), "keys not url-encoded")
    # CommonPrefixes with a delimiter.
    r = s3.list_objects_v2(Bucket=bucket, Delimiter="/")
    prefixes = sorted(p["Prefix"] for p in r.get("CommonPrefixes", []))
    want = sorted({k[: k.index("/") + 1] for k in manifest if "/" in k})
    check(prefixes == want, f"CommonPrefixes {prefixes} != {want}")
    direct = sorted(o["Key"] for o in r.get("Contents", []))
    check(direct == sorted(k for k in manifest if "/" not in k), "keys without a delimiter differ")

    for key, digest in manifest.items():
        r = get_checked(s3, bucket, key, digest)
        check(r.get("ChecksumCRC32") is not None, f"GET {key!r} answers no CRC32 with ChecksumMode ENABLED")
        h = s3.head_object(Bucket=bucket, Key=key, ChecksumMode="ENABLED")
        check(h["ContentLength"] == len(data_for(key)), f"HEAD {key!r}: size")

    # Multipart, FULL_OBJECT CRC32: the checksum of all the bytes, checked by botocore on GET.
    parts = [data_for("full-1", 300_000), data_for("full-2", 123_457)]
    whole = b"".join(parts)
    key = "mp/full object ü+%41"
    r = multipart(s3, bucket, key, parts, "CRC32", "FULL_OBJECT", crc32_b64(whole))
    check(r.get("ChecksumCRC32") == crc32_b64(whole), f"Complete answers CRC32 {r.get('ChecksumCRC32')}")
    g = get_checked(s3, bucket, key, sha(whole))
    check(g.get("ChecksumCRC32") == crc32_b64(whole) and g.get("ChecksumType") == "FULL_OBJECT", "FULL_OBJECT on GET")
    check(g["ETag"].strip('"').endswith("-2"), f"multipart ETag {g['ETag']}")
    md5s = b"".join(hashlib.md5(p).digest() for p in parts)
    check(g["ETag"].strip('"') == hashlib.md5(md5s).hexdigest() + "-2", "multipart ETag is not md5-of-md5s-N")
    manifest[key] = sha(whole)
    # A wrong full-object checksum on Complete is refused.
    code = error_code(lambda: multipart(s3, bucket, "mp/bad", parts, "CRC32", "FULL_OBJECT", crc32_b64(b"other")))
    check(code == "BadDigest", f"wrong FULL_OBJECT checksum answered {code}")
    # The refused Complete leaves the upload in place, as S3 does; abort it.
    left = s3.list_multipart_uploads(Bucket=bucket, Prefix="mp/bad").get("Uploads", [])
    check(len(left) == 1, f"uploads after a refused Complete: {left}")
    s3.abort_multipart_upload(Bucket=bucket, Key="mp/bad", UploadId=left[0]["UploadId"])

    # Multipart, COMPOSITE SHA256: checksum of the part checksums, -N.
    parts = [data_for("comp-1", 200_000), data_for("comp-2", 99_999)]
    whole = b"".join(parts)
    key = "mp/composite"
    multipart(s3, bucket, key, parts, "SHA256", "COMPOSITE")
    raw_parts = b"".join(hashlib.sha256(p).digest() for p in parts)
    want = base64.b64encode(hashlib.sha256(raw_parts).digest()).decode() + "-2"
    g = get_checked(s3, bucket, key, sha(whole))
    check(g.get("ChecksumSHA256") == want, f"COMPOSITE SHA256 {g.get('ChecksumSHA256')} != {want}")
    check(g.get("ChecksumType") == "COMPOSITE", f"ChecksumType {g.get('ChecksumType')}")
    # A part GET answers that part's checksum (botocore validates it) and the part count.
    p = get_checked(s3, bucket, key, sha(parts[1]), PartNumber=2)
    check(p.get("PartsCount") == 2, f"PartsCount {p.get('PartsCount')}")
    check(p.get("ChecksumSHA256") == base64.b64encode(hashlib.sha256(parts[1]).digest()).decode(), "part checksum")
    # A ranged GET carries no full-object checksum.
    r = s3.get_object(Bucket=bucket, Key=key, Range="bytes=10-99", ChecksumMode="ENABLED")
    check(r["Body"].read() == whole[10:100] and "ChecksumSHA256" not in r, "ranged GET")
    check(error_code(lambda: s3.get_object(Bucket=bucket, Key=key, Range="bytes=999999999-")) == "InvalidRange", "416")
    manifest[key] = sha(whole)

    a = s3.get_object_attributes(
        Bucket=bucket, Key=key, ObjectAttributes=["ETag", "Checksum", "ObjectParts", "ObjectSize"]
    )
    check(a["ObjectSize"] == len(whole), f"ObjectSize {a.get('ObjectSize')}")
    check(a["ETag"].strip('"') == g["ETag"].strip('"'), "GetObjectAttributes ETag")
    check(a["Checksum"].get("ChecksumSHA256") == want, f"GetObjectAttributes Checksum {a.get('Checksum')}")
    check(a["Checksum"].get("ChecksumType") == "COMPOSITE", "GetObjectAttributes ChecksumType")
    op = a["ObjectParts"]
    check(op["TotalPartsCount"] == 2, f"TotalPartsCount {op}")
    sizes = [x["Size"] for x in op["Parts"]]
    check(sizes == [len(x) for x in parts], f"part sizes {sizes}")
    check(
        [x["ChecksumSHA256"] for x in op["Parts"]]
        == [base64.b64encode(hashlib.sha256(x).digest()).decode() for x in parts],
        "per-part checksums",
    )

    # ListMultipartUploads: pages of two, Initiated, the awkward key decoded.
    ids = []
    upkeys = ["up/a ü", "up/b+%41", "up/c"]
    for k in upkeys:
        ids.append(s3.create_multipart_upload(Bucket=bucket, Key=k)["UploadId"])
    seen = []
    page = s3.list_multipart_uploads(Bucket=bucket, Prefix="up/", MaxUploads=2)
    check(page["IsTruncated"], "first page of two uploads is truncated")
    seen += page["Uploads"]
    page = s3.list_multipart_uploads(
        Bucket=bucket,
        Prefix="up/",
        MaxUploads=2,
        KeyMarker=page["NextKeyMarker"],
        UploadIdMarker=page["NextUploadIdMarker"],
    )
    check(not page["IsTruncated"], "second page is the last")
    seen += page["Uploads"]
    check([u["Key"] for u in seen] == upkeys, f"uploads listed {[u['Key'] for u in seen]}")
    check(all("Initiated" in u for u in seen), "Initiated missing")
    for k, i in zip(upkeys, ids):
        s3.abort_multipart_upload(Bucket=bucket, Key=k, UploadId=i)
    check(not s3.list_multipart_uploads(Bucket=bucket).get("Uploads"), "aborted uploads still listed")
    code = error_code(lambda: s3.list_parts(Bucket=bucket, Key=upkeys[0], UploadId=ids[0]))
    check(code == "NoSuchUpload", f"ListParts of an aborted upload answered {code}")

    # DeleteObjects.
    for k in ["del/1", "del/ü x"]:
        s3.put_object(Bucket=bucket, Key=k, Body=b"x")
    r = s3.delete_objects(Bucket=bucket, Delete={"Objects": [{"Key": "del/1"}, {"Key": "del/ü x"}]})
    check(sorted(d["Key"] for d in r["Deleted"]) == ["del/1", "del/ü x"], f"Deleted {r.get('Deleted')}")
    check(not list_keys(s3, bucket, Prefix="del/"), "deleted keys still listed")

    # Refusals S3 makes.
    code = error_code(lambda: s3.put_object(Bucket=bucket, Key="bad", Body=b"abc", ChecksumCRC32="AAAAAA=="))
    check(code == "BadDigest", f"a wrong CRC32 answered {code}")
    code = error_code(lambda: s3.put_object(Bucket=bucket + "-missing", Key="k", Body=b"abc"))
    check(code == "NoSuchBucket", f"PUT to a missing bucket answered {code}")
    check(error_code(lambda: s3.head_bucket(Bucket=bucket + "-missing")) in ("404", "NoSuchBucket"), "HeadBucket")
    check(error_code(lambda: s3.get_object(Bucket=bucket, Key="missing")) == "NoSuchKey", "NoSuchKey")
    return manifest


def read(s3, bucket, manifest):
    listed = list_keys(s3, bucket)
    check(sorted(listed) == sorted(manifest), f"listing differs: {sorted(set(listed) ^ set(manifest))}")
    for key, digest in manifest.items():
        get_checked(s3, bucket, key, digest)
    return {"read": len(manifest)}


def main():
    mode, endpoint, access, secret, bucket, path = sys.argv[1:7]
    s3 = client(endpoint, access, secret)
    with open(path, encoding="utf-8") as f:
        arg = json.load(f)
    out = write(s3, bucket, arg) if mode == "write" else read(s3, bucket, arg)
    json.dump(out, sys.stdout)


if __name__ == "__main__":
    main()
