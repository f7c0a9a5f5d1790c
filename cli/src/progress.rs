//! A progress bar fed from the client's byte counters (only on a terminal, never with --quiet).

use std::io::IsTerminal;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use gantry::Client;
use indicatif::{ProgressBar, ProgressStyle};

/// A running progress display; stops when dropped.
pub(crate) struct Progress {
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Progress {
    /// Shows progress of `client`'s downloaded (or uploaded) bytes towards `total`, if stderr
    /// is a terminal and `quiet` is off.
    pub(crate) fn start(client: &Client, total: Option<u64>, upload: bool, quiet: bool) -> Progress {
        let stop = Arc::new(AtomicBool::new(false));
        if quiet || !std::io::stderr().is_terminal() {
            return Progress { stop, thread: None };
        }
        let bar = match total {
            Some(n) => ProgressBar::new(n),
            None => ProgressBar::new_spinner(),
        };
        bar.set_style(
            ProgressStyle::with_template("{bar:40} {bytes}/{total_bytes} {binary_bytes_per_sec} eta {eta}")
                .unwrap_or_else(|_| ProgressStyle::default_bar()),
        );
        let (client, flag) = (client.clone(), stop.clone());
        let thread = std::thread::spawn(move || {
            let base = client.metrics();
            while !flag.load(Ordering::Relaxed) {
                let m = client.metrics().since(&base);
                bar.set_position(if upload { m.bytes_uploaded } else { m.bytes_downloaded });
                std::thread::sleep(Duration::from_millis(100));
            }
            bar.finish_and_clear();
        });
        Progress { stop, thread: Some(thread) }
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}
