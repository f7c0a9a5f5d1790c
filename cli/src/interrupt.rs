//! Ctrl-C and SIGTERM for transfers: the first signal cancels the transfer and waits, for a
//! bounded time, for its clean-up (AbortMultipartUpload answered, the partial download
//! removed), then the process exits 130 (SIGINT) or 143 (SIGTERM), as shells expect. A second
//! signal exits at once.
//!
//! Without this, the default action killed the process like `kill -9`: a half-done multipart
//! upload stayed on the server with its billed parts, and a download left its hidden
//! temporary file behind.

use std::future::Future;
use std::time::Duration;

use gantry::Client;
use tokio::sync::watch;

/// How long the clean-up may take after a signal.
const CLEANUP_LIMIT: Duration = Duration::from_secs(10);

/// Listens for SIGINT and SIGTERM on the client's runtime.
pub(crate) struct Interrupt {
    signalled: watch::Receiver<Option<i32>>,
}

/// A transfer ended by a signal: the exit status to use.
#[derive(Debug)]
pub(crate) struct Interrupted {
    pub(crate) status: u8,
    pub(crate) cleaned_up: bool,
}

impl std::fmt::Display for Interrupted {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.cleaned_up {
            true => write!(f, "interrupted; the transfer was cancelled and cleaned up"),
            false => write!(
                f,
                "interrupted; the clean-up did not finish within {CLEANUP_LIMIT:?} (a multipart upload may be left: \
                 see `gantry uploads ls`)"
            ),
        }
    }
}

impl std::error::Error for Interrupted {}

impl Interrupt {
    /// Installs the handlers (they replace the default action for the rest of the process).
    pub(crate) fn install(client: &Client) -> std::io::Result<Interrupt> {
        use tokio::signal::unix::{signal, SignalKind};
        let (tx, rx) = watch::channel(None);
        let _guard = client.runtime_handle().enter();
        let mut int = signal(SignalKind::interrupt())?;
        let mut term = signal(SignalKind::terminate())?;
        client.runtime_handle().spawn(async move {
            let mut seen = false;
            loop {
                let sig = tokio::select! {
                    Some(()) = int.recv() => libc_sig::SIGINT,
                    Some(()) = term.recv() => libc_sig::SIGTERM,
                    else => return,
                };
                if seen {
                    eprintln!("gantry: interrupted again; exiting without cleaning up");
                    std::process::exit(128 + sig);
                }
                seen = true;
                eprintln!("gantry: interrupted; cancelling (press Ctrl-C again to exit at once)");
                let _ = tx.send(Some(sig));
            }
        });
        Ok(Interrupt { signalled: rx })
    }

    /// Runs `transfer` on `client` until it ends or a signal arrives; on a signal the transfer
    /// is dropped (cancelled) and its clean-up awaited.
    pub(crate) fn run<T>(&self, client: &Client, transfer: impl Future<Output = T>) -> Result<T, Interrupted> {
        let mut signalled = self.signalled.clone();
        let outcome = client.block_on(async {
            // The signal first: a stdin upload whose producer died on the same Ctrl-C sees
            // EOF, and must be cancelled rather than completed with what arrived.
            tokio::select! {
                biased;
                sig = async { signalled.wait_for(Option::is_some).await.map(|s| s.unwrap_or(2)).unwrap_or(2) } => Err(sig),
                out = transfer => Ok(out),
            }
        });
        outcome.map_err(|sig| {
            let cleaned_up = client.block_on(client.wait_for_background(CLEANUP_LIMIT));
            Interrupted { status: (128 + sig) as u8, cleaned_up }
        })
    }
}

/// The two signal numbers we handle (Linux values; POSIX fixes both).
mod libc_sig {
    pub(super) const SIGINT: i32 = 2;
    pub(super) const SIGTERM: i32 = 15;
}
