//! Download into a file: parallel positional writes into a temporary file next to the
//! destination, renamed over it only when every byte arrived and checked out, so a failure
//! never leaves a partial file under the final name.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use tokio::sync::{mpsc, oneshot};

use super::{Chunk, Delivery, Download};
use crate::context::Context;
use crate::error::{Error, Operation, Result};
use crate::object_client::ObjectClient;
use crate::types::ObjectInfo;

/// A download into a temporary file next to `path`, renamed over it on success.
pub(crate) async fn download_file<C: ObjectClient>(
    ctx: Arc<Context<C>>,
    job: Arc<Download>,
    path: &Path,
) -> Result<ObjectInfo> {
    let temp = TempFile::create(path)?;
    let (tx, rx) = mpsc::unbounded_channel();
    // One blocking thread per download does the positional writes: page-cache writes
    // can stall on dirty-page throttling and must not block a network worker.
    let (file, dest) = (temp.file.clone(), path.to_path_buf());
    // A range lands at the start of the file.
    let base = job.options.range.as_ref().map_or(0, |r| r.start);
    let writer = tokio::task::spawn_blocking(move || write_chunks(&file, &dest, base, rx));
    let (head_tx, mut head_rx) = oneshot::channel();
    let downloaded = super::run(ctx, job, Delivery::Copy(tx), head_tx).await;
    super::to_writer::join_writer(writer).await?;
    let verification = downloaded?;
    let info = head_rx.try_recv().map_err(|_| Error::cancelled(Operation::GetObject))?;
    temp.persist(path)?;
    Ok(ObjectInfo { verification: Some(verification), ..info })
}

/// Writes chunks at their offsets, less `base` (the first byte asked for), into `file`, the
/// temporary file of `dest` (the path errors name: the one the user gave).
fn write_chunks(file: &std::fs::File, dest: &Path, base: u64, mut rx: mpsc::UnboundedReceiver<Chunk>) -> Result<()> {
    use std::os::unix::fs::FileExt;
    while let Some(chunk) = rx.blocking_recv() {
        file.write_all_at(&chunk.data, chunk.offset - base)
            .map_err(|e| Error::local_io(format!("cannot write {}", dest.display()), e))?;
    }
    Ok(())
}

/// A download's temporary file: removed on drop unless persisted.
struct TempFile {
    path: PathBuf,
    file: Arc<std::fs::File>,
    keep: bool,
}

impl TempFile {
    fn create(dest: &Path) -> Result<TempFile> {
        let dir = match dest.parent() {
            Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
            _ => PathBuf::from("."),
        };
        let name = dest
            .file_name()
            .ok_or_else(|| Error::invalid(Operation::LocalIo, format!("{} is not a file path", dest.display())))?;
        let path = dir.join(format!(".{}.gantry-{:016x}", name.to_string_lossy(), rand::random::<u64>()));
        let file = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&path)
            // The user's path, not the temporary name they never typed.
            .map_err(|e| Error::local_io(format!("cannot create {}", dest.display()), e))?;
        Ok(TempFile { path, file: Arc::new(file), keep: false })
    }

    fn persist(mut self, dest: &Path) -> Result<()> {
        std::fs::rename(&self.path, dest)
            .map_err(|e| Error::local_io(format!("cannot rename onto {}", dest.display()), e))?;
        self.keep = true;
        Ok(())
    }
}

impl Drop for TempFile {
    fn drop(&mut self) {
        if !self.keep {
            let _ = std::fs::remove_file(&self.path);
        }
    }
}
