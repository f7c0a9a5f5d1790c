//! What `gantry cp` shows on a terminal: a progress display fed from the client's byte
//! counters while the transfer runs, and one summary line when it succeeded. Nothing when
//! stderr is not a terminal or with `--quiet`/`--json`, so scripts and logs get only errors.

use std::io::IsTerminal;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use gantry::Client;
use indicatif::{HumanBytes, ProgressBar, ProgressStyle};

/// Which way the bytes go: picks the counter to follow and the words to show.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Direction {
    Download,
    Upload,
}

/// A running progress display; stops when dropped (or at [`Progress::finish`]).
pub(crate) struct Progress {
    bar: Option<ProgressBar>,
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
    started: Instant,
    direction: Direction,
}

/// A bar towards a known total.
const BAR: &str = "{bar:40} {bytes}/{total_bytes} {binary_bytes_per_sec} eta {eta}";
/// A byte counter with no total (stdin, or before the size is known): a bar full from the
/// start would read as done.
const COUNTER: &str = "{spinner} {bytes} {binary_bytes_per_sec}";
/// Every byte is sent and the server is assembling the object (CompleteMultipartUpload can
/// take seconds for a large object): a rate would only fall, so say what is happening.
const COMPLETING: &str = "{spinner} {bytes} sent; {msg} ({elapsed})";

impl Progress {
    /// Shows `client`'s downloaded (or uploaded) bytes, towards `total` when it is known,
    /// if `show` and stderr is a terminal. A download's total comes from the engine as soon as
    /// the first answer gives the object's size (no HEAD request is spent on a display).
    pub(crate) fn start(client: &Client, total: Option<u64>, direction: Direction, show: bool) -> Progress {
        let stop = Arc::new(AtomicBool::new(false));
        let started = Instant::now();
        if !show || !std::io::stderr().is_terminal() {
            return Progress { bar: None, stop, thread: None, started, direction };
        }
        let bar = ProgressBar::no_length();
        set_template(&bar, COUNTER);
        if let Some(n) = total {
            bar.set_length(n);
            set_template(&bar, BAR);
        }
        let (client, flag, shown) = (client.clone(), stop.clone(), bar.clone());
        let thread = std::thread::spawn(move || {
            let base = client.metrics();
            let mut completing = false;
            while !flag.load(Ordering::Relaxed) {
                let m = client.metrics().since(&base);
                let done = match direction {
                    Direction::Upload => m.bytes_uploaded,
                    Direction::Download => m.bytes_downloaded,
                };
                if direction == Direction::Download && m.download_bytes_expected > 0 && shown.length().is_none() {
                    shown.set_length(m.download_bytes_expected);
                    set_template(&shown, BAR);
                }
                shown.set_position(shown.length().map_or(done, |n| done.min(n)));
                if direction == Direction::Upload && !completing && shown.length().is_some_and(|n| done >= n && n > 0) {
                    completing = true;
                    shown.set_message("completing the upload");
                    set_template(&shown, COMPLETING);
                }
                shown.tick();
                std::thread::sleep(Duration::from_millis(100));
            }
        });
        Progress { bar: Some(bar), stop, thread: Some(thread), started, direction }
    }

    /// Stops the display and, when it was shown, prints one summary line: bytes, time, rate.
    pub(crate) fn finish(mut self, bytes: u64) {
        let shown = self.bar.is_some();
        self.stop_display();
        if shown {
            let seconds = self.started.elapsed().as_secs_f64();
            let verb = match self.direction {
                Direction::Download => "downloaded",
                Direction::Upload => "uploaded",
            };
            eprintln!("{}", summary(verb, bytes, seconds));
        }
    }

    fn stop_display(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
        if let Some(bar) = self.bar.take() {
            bar.finish_and_clear();
        }
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        self.stop_display();
    }
}

fn set_template(bar: &ProgressBar, template: &str) {
    bar.set_style(ProgressStyle::with_template(template).unwrap_or_else(|_| ProgressStyle::default_bar()));
}

/// `downloaded 1.00 GiB in 2.3 s (445.2 MiB/s)`.
fn summary(verb: &str, bytes: u64, seconds: f64) -> String {
    let rate = bytes as f64 / seconds.max(1e-3);
    format!("{verb} {} in {seconds:.1} s ({}/s)", HumanBytes(bytes), HumanBytes(rate as u64))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn summary_names_bytes_time_and_rate() {
        assert_eq!(summary("uploaded", 3 << 30, 2.0), "uploaded 3.00 GiB in 2.0 s (1.50 GiB/s)");
        assert_eq!(summary("downloaded", 0, 0.0), "downloaded 0 B in 0.0 s (0 B/s)");
    }
}
