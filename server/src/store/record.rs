//! One file per object (and per part): the bytes, then a JSON description, then a 16-byte
//! trailer (`u64` little-endian length of the JSON, then the magic `GNTRYRC1`).
//!
//! ```text
//! [ data ... ][ JSON ][ json_len: u64 LE ][ "GNTRYRC1" ]
//! ```
//!
//! Why one file and not data plus a sidecar: an object is replaced by one `rename(2)`, so a
//! reader sees the old object or the new one, never new bytes with old metadata, and a crash
//! leaves at most a temporary file that nothing lists. A reader that opened the file keeps
//! reading that version even if it is replaced meanwhile (the open descriptor pins it), so
//! a GET's ETag always describes the bytes it sends. The description goes after the data
//! because it holds what is only known once the data is in (size, MD5, checksums).
//!
//! Writes go through [`TempFile`]: a file under a `.tmp-` name in the bucket's directory,
//! removed when dropped unless [`TempFile::commit`] renamed it into place, so a cancelled
//! request leaves nothing behind either.

use std::fs::File;
use std::io::{self, Write};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use serde::de::DeserializeOwned;
use serde::Serialize;

const MAGIC: &[u8; 8] = b"GNTRYRC1";
const TRAILER: u64 = 16;
/// Descriptions are small (a key, a few headers, part checksums); anything larger is not ours.
const MAX_JSON: u64 = 16 << 20;

/// Why a file could not be read as a record.
#[derive(Debug, thiserror::Error)]
pub(crate) enum RecordError {
    /// Reading failed (including: the file is not there).
    #[error("reading a record: {0}")]
    Io(#[from] io::Error),
    /// The file does not end with our trailer, or its JSON does not parse.
    #[error("not a gantry record: {0}")]
    Malformed(String),
}

impl RecordError {
    pub(crate) fn is_not_found(&self) -> bool {
        matches!(self, RecordError::Io(e) if e.kind() == io::ErrorKind::NotFound)
    }
}

/// An opened record: the file (positioned reads of the data), the data length, and the
/// description.
#[derive(Debug)]
pub(crate) struct Record<M> {
    pub(crate) file: File,
    pub(crate) data_len: u64,
    pub(crate) meta: M,
    pub(crate) modified: std::time::SystemTime,
}

/// Opens `path` and reads its description (blocking).
pub(crate) fn open<M: DeserializeOwned>(path: &Path) -> Result<Record<M>, RecordError> {
    let file = File::open(path)?;
    let stat = file.metadata()?;
    let len = stat.len();
    if len < TRAILER {
        return Err(RecordError::Malformed(format!("{} bytes", len)));
    }
    let mut trailer = [0u8; TRAILER as usize];
    file.read_exact_at(&mut trailer, len - TRAILER)?;
    if &trailer[8..] != MAGIC {
        return Err(RecordError::Malformed("no trailer".into()));
    }
    let json_len = u64::from_le_bytes(trailer[..8].try_into().expect("8 bytes"));
    if json_len > MAX_JSON || json_len > len - TRAILER {
        return Err(RecordError::Malformed(format!("description length {json_len}")));
    }
    let data_len = len - TRAILER - json_len;
    let mut json = vec![0u8; json_len as usize];
    file.read_exact_at(&mut json, data_len)?;
    let meta = serde_json::from_slice(&json).map_err(|e| RecordError::Malformed(e.to_string()))?;
    Ok(Record { file, data_len, meta, modified: stat.modified()? })
}

/// A file being written under a temporary name; removed on drop unless committed.
#[derive(Debug)]
pub(crate) struct TempFile {
    path: PathBuf,
    file: Option<File>,
}

impl TempFile {
    /// Creates `path` (which must not exist: temporary names are random).
    pub(crate) fn create(path: PathBuf) -> io::Result<TempFile> {
        let file = File::options().write(true).create_new(true).open(&path)?;
        Ok(TempFile { path, file: Some(file) })
    }

    pub(crate) fn file(&self) -> &File {
        self.file.as_ref().expect("open until committed")
    }

    /// Appends the description and trailer after the data written so far, then renames the
    /// file over `dest` (atomically replacing what was there). Blocking.
    pub(crate) fn commit<M: Serialize>(mut self, meta: &M, dest: &Path) -> io::Result<()> {
        let json = serde_json::to_vec(meta).map_err(io::Error::other)?;
        let mut file = self.file.take().expect("open until committed");
        let mut tail = json;
        let json_len = tail.len() as u64;
        tail.extend_from_slice(&json_len.to_le_bytes());
        tail.extend_from_slice(MAGIC);
        // Appends: the file was written sequentially (or positionally up to its end).
        let end = file.metadata()?.len();
        file.write_all_at(&tail, end)?;
        file.flush()?;
        drop(file);
        std::fs::rename(&self.path, dest)?;
        self.path = PathBuf::new();
        Ok(())
    }
}

impl Drop for TempFile {
    fn drop(&mut self) {
        if !self.path.as_os_str().is_empty() {
            let _ = std::fs::remove_file(&self.path);
        }
    }
}

/// Copies `len` bytes of `src` from `offset` to the end of `dst` (blocking). Uses the
/// kernel's copy (`copy_file_range`) through `std::io::copy` where it can.
pub(crate) fn copy_range(src: &File, offset: u64, len: u64, dst: &File) -> io::Result<()> {
    use std::io::{Read, Seek, SeekFrom};
    let mut src = src.try_clone()?;
    src.seek(SeekFrom::Start(offset))?;
    let mut dst = dst.try_clone()?;
    dst.seek(SeekFrom::End(0))?;
    let copied = io::copy(&mut (&mut src).take(len), &mut dst)?;
    if copied != len {
        return Err(io::Error::new(io::ErrorKind::UnexpectedEof, format!("copied {copied} of {len} bytes")));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, PartialEq, serde::Serialize, serde::Deserialize)]
    struct Meta {
        key: String,
    }

    #[test]
    fn round_trip_and_atomic_replace() {
        let dir = tempfile::tempdir().unwrap();
        let dest = dir.path().join("obj");
        for (i, data) in [&b"first version"[..], b"second"].into_iter().enumerate() {
            let tmp = TempFile::create(dir.path().join(format!(".tmp-{i}"))).unwrap();
            tmp.file().write_all_at(data, 0).unwrap();
            tmp.commit(&Meta { key: format!("k{i}") }, &dest).unwrap();
            let rec: Record<Meta> = open(&dest).unwrap();
            assert_eq!(rec.data_len, data.len() as u64);
            assert_eq!(rec.meta, Meta { key: format!("k{i}") });
            let mut buf = vec![0u8; data.len()];
            rec.file.read_exact_at(&mut buf, 0).unwrap();
            assert_eq!(buf, data);
        }
        // Only the object is left: temporary files were renamed away.
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
    }

    #[test]
    fn dropped_temp_files_disappear_and_empty_data_works() {
        let dir = tempfile::tempdir().unwrap();
        let tmp = TempFile::create(dir.path().join(".tmp-a")).unwrap();
        tmp.file().write_all_at(b"half", 0).unwrap();
        drop(tmp);
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
        let tmp = TempFile::create(dir.path().join(".tmp-b")).unwrap();
        tmp.commit(&Meta { key: String::new() }, &dir.path().join("empty")).unwrap();
        let rec: Record<Meta> = open(&dir.path().join("empty")).unwrap();
        assert_eq!(rec.data_len, 0);
    }

    #[test]
    fn foreign_files_are_not_records() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("plain"), b"just some bytes, no trailer").unwrap();
        assert!(matches!(open::<Meta>(&dir.path().join("plain")), Err(RecordError::Malformed(_))));
        assert!(open::<Meta>(&dir.path().join("missing")).unwrap_err().is_not_found());
    }
}
