//! Bytes between HTTP bodies and files, in 1 MiB blocks on tokio's blocking pool.
//!
//! Receiving: request chunks are gathered into 1 MiB blocks; each block is hashed (MD5 and
//! the checksums asked for) and written with one positional write on the blocking pool, so
//! hashing never holds up the runtime's workers and a fast client pays one thread hop per
//! MiB, not per network chunk.
//!
//! Sending: the GET body is a stream of 1 MiB positional reads of the open file. s3s-fs read
//! 4 KiB per hop, which capped a download near 120 MiB/s on this machine and made `gantry
//! demo` measure the server rather than the client.

use std::fs::File;
use std::os::unix::fs::FileExt;
use std::sync::Arc;

use bytes::Bytes;
use futures::StreamExt;
use s3s::dto::StreamingBlob;
use s3s::{s3_error, S3Error, S3Result};

use super::checksum::{Algorithm, Hashes, Sums};
use super::internal;

const BLOCK: usize = 1 << 20;

/// Writes `body` from offset 0 of `file`, hashing as it goes; returns the sums and the length.
pub(crate) async fn receive(body: StreamingBlob, file: File, algorithms: &[Algorithm]) -> S3Result<(Sums, u64)> {
    let file = Arc::new(file);
    let mut body = body;
    let mut hashes = Hashes::new(algorithms);
    let mut block: Vec<u8> = Vec::with_capacity(BLOCK);
    let mut offset = 0u64;
    loop {
        let chunk = match body.next().await {
            Some(Ok(chunk)) => Some(chunk),
            Some(Err(e)) => return Err(body_error(e)),
            None => None,
        };
        let done = chunk.is_none();
        if let Some(chunk) = chunk {
            block.extend_from_slice(&chunk);
        }
        if block.len() >= BLOCK || (done && !block.is_empty()) {
            let (f, data, mut h) = (file.clone(), std::mem::take(&mut block), hashes);
            let (h, mut data) = tokio::task::spawn_blocking(move || {
                h.update(&data);
                f.write_all_at(&data, offset).map(|()| (h, data))
            })
            .await
            .map_err(internal)?
            .map_err(internal)?;
            offset += data.len() as u64;
            hashes = h;
            data.clear();
            block = data;
        }
        if done {
            return Ok((hashes.finish(), offset));
        }
    }
}

/// A body stream error: s3s's own (a bad chunk signature) as it is, anything else (the
/// client went away, a short body) as `IncompleteBody`.
fn body_error(e: s3s::StdError) -> S3Error {
    match e.downcast::<S3Error>() {
        Ok(e) => *e,
        Err(e) => {
            let mut err = s3_error!(IncompleteBody, "reading the request body failed: {e}");
            err.set_source(e);
            err
        }
    }
}

/// The bytes `start..start + len` of `file`, as a response body.
pub(crate) fn send(file: File, start: u64, len: u64) -> StreamingBlob {
    let file = Arc::new(file);
    let end = start + len;
    let stream = futures::stream::try_unfold(start, move |pos| {
        let file = file.clone();
        async move {
            if pos >= end {
                return Ok(None);
            }
            let n = (BLOCK as u64).min(end - pos) as usize;
            let chunk = tokio::task::spawn_blocking(move || {
                let mut buf = vec![0u8; n];
                file.read_exact_at(&mut buf, pos).map(|()| Bytes::from(buf))
            })
            .await
            .map_err(std::io::Error::other)??;
            Ok::<_, std::io::Error>(Some((chunk, pos + n as u64)))
        }
    });
    StreamingBlob::wrap(stream)
}

/// Reads `len` bytes of `src` from `offset`, hashing them and appending them to `dst`
/// (blocking; CopyObject and UploadPartCopy, which need the sums of what they copy).
pub(crate) fn copy_hashed(
    src: &File,
    offset: u64,
    len: u64,
    dst: &File,
    algorithms: &[Algorithm],
) -> std::io::Result<Sums> {
    let mut hashes = Hashes::new(algorithms);
    let mut buf = vec![0u8; BLOCK.min(len as usize)];
    let mut done = 0u64;
    while done < len {
        let n = (BLOCK as u64).min(len - done) as usize;
        src.read_exact_at(&mut buf[..n], offset + done)?;
        hashes.update(&buf[..n]);
        dst.write_all_at(&buf[..n], done)?;
        done += n as u64;
    }
    Ok(hashes.finish())
}
