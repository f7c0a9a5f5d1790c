//! `gantry._gantry`: the engine's client for Python, bound to the Rust crate directly (not
//! through the C ABI), so a call is one Rust future run with the GIL released.
//!
//! - Every I/O call releases the GIL (`Python::detach`) while the engine works; other Python
//!   threads run meanwhile.
//! - Bytes are not copied across the boundary where the buffer protocol allows it: `put` sends
//!   straight from the caller's buffer, `get_into` lands in the caller's buffer, and `get`
//!   returns a [`Buffer`] over the engine's memory.
//! - Errors are `gantry.GantryError` (or its subclasses), defined in Python
//!   (`gantry/_errors.py`) so that `NotFoundError` can also be a `FileNotFoundError`.

use std::ffi::c_int;

use bytes::Bytes;
use gantry::{ClientConfig, ErrorKind, ListOptions};
use pyo3::buffer::PyBuffer;
use pyo3::exceptions::{PyBufferError, PyTypeError};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyString};

/// Turns an engine error into the matching `gantry` exception, with its typed fields.
fn to_py(py: Python<'_>, e: gantry::Error) -> PyErr {
    let class = match e.kind() {
        ErrorKind::NotFound => "NotFoundError",
        ErrorKind::AccessDenied => "AccessDeniedError",
        ErrorKind::InvalidInput => "InvalidInputError",
        ErrorKind::Cancelled => "CancelledError",
        _ => "GantryError",
    };
    let built = (|| -> PyResult<PyErr> {
        let module = py.import("gantry._errors")?;
        let kwargs = PyDict::new(py);
        kwargs.set_item("kind", format!("{:?}", e.kind()))?;
        kwargs.set_item("http_status", e.http_status())?;
        kwargs.set_item("s3_code", e.s3_code())?;
        kwargs.set_item("request_id", e.request_id())?;
        kwargs.set_item("retryable", e.is_retryable())?;
        kwargs.set_item("operation", e.operation().to_string())?;
        let exc = module.getattr(class)?.call((e.to_string(),), Some(&kwargs))?;
        Ok(PyErr::from_value(exc))
    })();
    built.unwrap_or_else(|err| err)
}

/// Caller memory lent to an upload: the buffer stays acquired (so its exporter keeps it
/// alive and in place) until the engine drops its last reference to the bytes.
struct Lent(PyBuffer<u8>);

impl AsRef<[u8]> for Lent {
    fn as_ref(&self) -> &[u8] {
        // SAFETY: a C-contiguous buffer (checked when lent) of item_count bytes, kept acquired
        // for as long as this value lives; the caller promised not to change it meanwhile.
        unsafe { std::slice::from_raw_parts(self.0.buf_ptr().cast::<u8>(), self.0.item_count()) }
    }
}

/// Bytes of a bytes-like object without copying them.
fn lend(data: &Bound<'_, PyAny>) -> PyResult<Bytes> {
    let buf = PyBuffer::<u8>::get(data).map_err(|_| {
        PyTypeError::new_err("data must be a bytes-like object of bytes (bytes, bytearray, memoryview, …)")
    })?;
    if !buf.is_c_contiguous() {
        return Err(PyBufferError::new_err("data must be C-contiguous"));
    }
    if buf.item_count() == 0 {
        return Ok(Bytes::new());
    }
    Ok(Bytes::from_owner(Lent(buf)))
}

/// A downloaded object: read-only bytes in the engine's memory, exposed through the buffer
/// protocol (`memoryview(buf)`, `bytes(buf)`, `numpy.frombuffer(buf, …)`) without a copy.
#[pyclass(frozen, module = "gantry")]
pub struct Buffer {
    data: Bytes,
}

#[pymethods]
impl Buffer {
    fn __len__(&self) -> usize {
        self.data.len()
    }

    fn __repr__(&self) -> String {
        format!("<gantry.Buffer of {} bytes>", self.data.len())
    }

    /// The bytes as a `bytes` object (a copy).
    fn tobytes<'py>(&self, py: Python<'py>) -> Bound<'py, pyo3::types::PyBytes> {
        pyo3::types::PyBytes::new(py, &self.data)
    }

    /// # Safety
    /// Called by the interpreter with a valid `view`.
    unsafe fn __getbuffer__(slf: Bound<'_, Self>, view: *mut pyo3::ffi::Py_buffer, flags: c_int) -> PyResult<()> {
        if flags & pyo3::ffi::PyBUF_WRITABLE == pyo3::ffi::PyBUF_WRITABLE {
            return Err(PyBufferError::new_err("gantry.Buffer is read-only"));
        }
        let data = &slf.get().data;
        let (ptr, len) = (data.as_ptr(), data.len());
        // SAFETY: the exporter (slf) is stored in view->obj by FillInfo, which keeps the Bytes
        // alive and unmoved until the view is released; readonly = 1.
        let rc = unsafe {
            pyo3::ffi::PyBuffer_FillInfo(view, slf.as_ptr(), ptr as *mut std::ffi::c_void, len as isize, 1, flags)
        };
        if rc == -1 {
            return Err(PyErr::fetch(slf.py()));
        }
        Ok(())
    }
}

/// One object of a listing.
#[pyclass(frozen, get_all, module = "gantry")]
pub struct ObjectSummary {
    key: String,
    size: u64,
    etag: Option<String>,
    last_modified: Option<String>,
}

#[pymethods]
impl ObjectSummary {
    fn __repr__(&self) -> String {
        format!("ObjectSummary(key={:?}, size={})", self.key, self.size)
    }
}

/// Pages through a listing lazily: one ListObjectsV2 request per 1,000 keys, as iteration
/// reaches them.
#[pyclass(module = "gantry")]
pub struct ListIter {
    client: gantry::Client,
    bucket: String,
    prefix: String,
    page: std::vec::IntoIter<gantry::ObjectSummary>,
    token: Option<String>,
    done: bool,
}

#[pymethods]
impl ListIter {
    fn __iter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    fn __next__(&mut self, py: Python<'_>) -> PyResult<Option<ObjectSummary>> {
        loop {
            if let Some(o) = self.page.next() {
                return Ok(Some(ObjectSummary {
                    key: o.key,
                    size: o.size,
                    etag: o.etag,
                    last_modified: o.last_modified,
                }));
            }
            if self.done {
                return Ok(None);
            }
            let mut options = ListOptions::new();
            if !self.prefix.is_empty() {
                options = options.prefix(self.prefix.clone());
            }
            if let Some(t) = self.token.take() {
                options = options.continuation_token(t);
            }
            let (client, bucket) = (&self.client, &self.bucket);
            let page =
                py.detach(|| client.block_on(client.list_objects(bucket, &options))).map_err(|e| to_py(py, e))?;
            self.token = page.next_continuation_token;
            self.done = self.token.is_none();
            self.page = page.objects.into_iter();
        }
    }
}

/// An S3 client: a connection pool, a memory budget and worker threads, shared by every call.
/// Thread-safe: share one client across Python threads.
///
/// Fork-safe: a forked child (a DataLoader worker) has none of the parent's worker threads, so
/// the first call in the child builds a new engine client from the same configuration (the
/// process id tells). The parent's client is left untouched in the child (never dropped
/// there: its runtime's threads and locks belong to the parent).
#[pyclass(frozen, subclass, module = "gantry")]
pub struct Client {
    config: ClientConfig,
    current: std::sync::Mutex<(u32, gantry::Client)>,
}

impl Client {
    /// The engine client of this process.
    fn engine(&self, py: Python<'_>) -> PyResult<gantry::Client> {
        let mut current = self.current.lock().unwrap_or_else(|e| e.into_inner());
        let pid = std::process::id();
        if current.0 != pid {
            let fresh = gantry::Client::new(self.config.clone()).map_err(|e| to_py(py, e))?;
            let inherited = std::mem::replace(&mut *current, (pid, fresh));
            // Its runtime's threads do not exist here; dropping it could wait for them.
            std::mem::forget(inherited);
        }
        Ok(current.1.clone())
    }
}

/// A configuration value as `gantry_config_set` text: `True` → `true`, numbers and strings as
/// written.
fn config_text(value: &Bound<'_, PyAny>) -> PyResult<String> {
    if let Ok(b) = value.extract::<bool>() {
        return Ok(b.to_string());
    }
    if let Ok(s) = value.cast::<PyString>() {
        return Ok(s.to_string());
    }
    Ok(value.str()?.to_string())
}

#[pymethods]
impl Client {
    /// `Client(endpoint_url=None, region=None, **config)`: any configuration key of the C ABI's
    /// `gantry_config_set` (`max_connections=64`, `part_size="16MiB"`, `access_key_id=...`) as
    /// a keyword. Unset values come from the environment and profile, as with the AWS CLI.
    #[new]
    #[pyo3(signature = (endpoint_url=None, region=None, **config))]
    fn new(
        py: Python<'_>,
        endpoint_url: Option<String>,
        region: Option<String>,
        config: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<Self> {
        let mut b = ClientConfig::builder();
        if let Some(url) = endpoint_url {
            b = b.endpoint_url(url);
        }
        if let Some(r) = region {
            b = b.region(r);
        }
        if let Some(config) = config {
            for (k, v) in config.iter() {
                let key: String = k.extract()?;
                b = b.set(&key, &config_text(&v)?).map_err(|e| to_py(py, e))?;
            }
        }
        let config = b.build().map_err(|e| to_py(py, e))?;
        let inner = gantry::Client::new(config.clone()).map_err(|e| to_py(py, e))?;
        Ok(Client { config, current: std::sync::Mutex::new((std::process::id(), inner)) })
    }

    /// Uploads `data` (any bytes-like object: bytes, bytearray, memoryview, a numpy array)
    /// as bucket/key, multipart above the threshold, without copying it. Do not change `data`
    /// until the call returns. Returns the new ETag.
    fn put(&self, py: Python<'_>, bucket: &str, key: &str, data: &Bound<'_, PyAny>) -> PyResult<Option<String>> {
        let body = lend(data)?;
        let c = &self.engine(py)?;
        let out = py.detach(|| c.block_on(c.put(bucket, key, body))).map_err(|e| to_py(py, e))?;
        Ok(out.etag)
    }

    /// Downloads bucket/key whole; returns a read-only `gantry.Buffer` (buffer protocol).
    fn get(&self, py: Python<'_>, bucket: &str, key: &str) -> PyResult<Buffer> {
        let c = &self.engine(py)?;
        let data = py.detach(|| c.block_on(collect(c.get_stream(bucket, key), None))).map_err(|e| to_py(py, e))?;
        Ok(Buffer { data })
    }

    /// Downloads every `(bucket, key)` of `objects` at once, all their GETs in flight together
    /// (within the client's connection limit), and returns their bytes in the same order. The
    /// first failure raises, naming its key; this is how `gantry.torch.ObjectDataset` fetches a
    /// DataLoader batch in one burst instead of one round trip per object.
    fn get_many(&self, py: Python<'_>, objects: Vec<(String, String)>) -> PyResult<Vec<Buffer>> {
        let c = &self.engine(py)?;
        let all = py
            .detach(|| {
                c.block_on(futures::future::try_join_all(
                    objects.iter().map(|(bucket, key)| collect(c.get_stream(bucket, key), None)),
                ))
            })
            .map_err(|e| to_py(py, e))?;
        Ok(all.into_iter().map(|data| Buffer { data }).collect())
    }

    /// `get_range` for every `(bucket, key, offset, length)` of `ranges` at once, all in flight
    /// together; the bytes come back in the same order (empty for a length of 0). The
    /// distributed-checkpoint reader fetches the tensors of a file this way.
    fn get_ranges(&self, py: Python<'_>, ranges: Vec<(String, String, u64, u64)>) -> PyResult<Vec<Buffer>> {
        let c = &self.engine(py)?;
        let all = py
            .detach(|| {
                c.block_on(futures::future::try_join_all(
                    ranges.iter().map(|(bucket, key, offset, length)| range_bytes(c, bucket, key, *offset, *length)),
                ))
            })
            .map_err(|e| to_py(py, e))?;
        Ok(all.into_iter().map(|data| Buffer { data }).collect())
    }

    /// Downloads `length` bytes of bucket/key from `offset` (fewer at the end of the object).
    fn get_range(&self, py: Python<'_>, bucket: &str, key: &str, offset: u64, length: u64) -> PyResult<Buffer> {
        let c = &self.engine(py)?;
        let data = py.detach(|| c.block_on(range_bytes(c, bucket, key, offset, length))).map_err(|e| to_py(py, e))?;
        Ok(Buffer { data })
    }

    /// Downloads bucket/key into `buffer` (any writable buffer: bytearray, a numpy array, a
    /// memoryview of one), with parallel ranged GETs straight into it; returns the object's
    /// size. A buffer smaller than the object raises `InvalidInputError` before any byte.
    fn get_into(&self, py: Python<'_>, bucket: &str, key: &str, buffer: &Bound<'_, PyAny>) -> PyResult<u64> {
        let buf = PyBuffer::<u8>::get(buffer)
            .map_err(|_| PyTypeError::new_err("buffer must support the buffer protocol with byte items"))?;
        if buf.readonly() {
            return Err(PyTypeError::new_err(
                "buffer is read-only: get_into needs a writable buffer (bytearray, numpy array)",
            ));
        }
        if !buf.is_c_contiguous() {
            return Err(PyBufferError::new_err("buffer must be C-contiguous"));
        }
        let (ptr, len) = (buf.buf_ptr() as usize, buf.item_count());
        let c = &self.engine(py)?;
        let info = py
            .detach(|| {
                // SAFETY: a writable, C-contiguous buffer of len bytes, held acquired (buf) for
                // the whole call; the GIL is released but the exporter cannot move or free it.
                let slice = unsafe { std::slice::from_raw_parts_mut(ptr as *mut u8, len) };
                c.block_on(c.get_into(bucket, key, slice))
            })
            .map_err(|e| to_py(py, e))?;
        drop(buf);
        Ok(info.size)
    }

    /// A streaming upload of unknown length (multipart past one part). Use
    /// `gantry.Client.open_write`, which wraps this in a file object.
    fn _open_write(&self, py: Python<'_>, bucket: &str, key: &str) -> PyResult<RawWriter> {
        let client = self.engine(py)?;
        let upload = client.upload(bucket, key);
        Ok(RawWriter { client, upload: Some(upload) })
    }

    /// Opens bucket/key for reading: the first GET goes out now (a missing key raises here),
    /// and later reads continue its stream. Use `gantry.Client.open_read`, which wraps this in
    /// a file object.
    fn _open_read(&self, py: Python<'_>, bucket: &str, key: &str) -> PyResult<RawReader> {
        let client = self.engine(py)?;
        let stream = py.detach(|| client.block_on(client.get_stream(bucket, key))).map_err(|e| to_py(py, e))?;
        let size = stream.info().size;
        Ok(RawReader {
            client,
            bucket: bucket.to_string(),
            key: key.to_string(),
            size,
            pos: 0,
            stream: Some(stream),
            pending: Bytes::new(),
        })
    }

    /// Uploads the file at `path` as bucket/key (parts read in parallel).
    fn upload_file(&self, py: Python<'_>, path: std::path::PathBuf, bucket: &str, key: &str) -> PyResult<u64> {
        let c = &self.engine(py)?;
        let out = py.detach(|| c.block_on(c.put_file(bucket, key, &path))).map_err(|e| to_py(py, e))?;
        Ok(out.size)
    }

    /// Downloads bucket/key into the file at `path` (renamed into place on success); returns
    /// its size.
    fn download_file(&self, py: Python<'_>, bucket: &str, key: &str, path: std::path::PathBuf) -> PyResult<u64> {
        let c = &self.engine(py)?;
        let info = py.detach(|| c.block_on(c.download_to_file(bucket, key, &path))).map_err(|e| to_py(py, e))?;
        Ok(info.size)
    }

    /// HeadObject: a dict with size, etag, last_modified, content_type, version_id.
    fn head<'py>(&self, py: Python<'py>, bucket: &str, key: &str) -> PyResult<Bound<'py, PyDict>> {
        let c = &self.engine(py)?;
        let info = py.detach(|| c.block_on(c.head_object(bucket, key))).map_err(|e| to_py(py, e))?;
        let d = PyDict::new(py);
        d.set_item("size", info.size)?;
        d.set_item("etag", info.etag)?;
        d.set_item("last_modified", info.last_modified)?;
        d.set_item("content_type", info.content_type)?;
        d.set_item("version_id", info.version_id)?;
        Ok(d)
    }

    /// DeleteObject.
    fn delete(&self, py: Python<'_>, bucket: &str, key: &str) -> PyResult<()> {
        let c = &self.engine(py)?;
        py.detach(|| c.block_on(c.delete_object(bucket, key))).map_err(|e| to_py(py, e))
    }

    /// Creates a bucket (mostly for tests and local servers).
    fn create_bucket(&self, py: Python<'_>, bucket: &str) -> PyResult<()> {
        let c = &self.engine(py)?;
        py.detach(|| c.block_on(c.create_bucket(bucket))).map_err(|e| to_py(py, e))
    }

    /// Iterates over the objects of `bucket` under `prefix` (`.key`, `.size`, `.etag`,
    /// `.last_modified`), fetching pages as iteration reaches them.
    #[pyo3(signature = (bucket, prefix=""))]
    fn list(&self, py: Python<'_>, bucket: &str, prefix: &str) -> PyResult<ListIter> {
        Ok(ListIter {
            client: self.engine(py)?,
            bucket: bucket.to_string(),
            prefix: prefix.to_string(),
            page: Vec::new().into_iter(),
            token: None,
            done: false,
        })
    }

    /// The in-progress multipart uploads of `bucket` (under `prefix`) as `(key, upload_id)`
    /// pairs: what an interrupted writer may have left behind.
    #[pyo3(signature = (bucket, prefix=None))]
    fn list_multipart_uploads(
        &self,
        py: Python<'_>,
        bucket: &str,
        prefix: Option<&str>,
    ) -> PyResult<Vec<(String, String)>> {
        let c = &self.engine(py)?;
        let list = py.detach(|| c.block_on(c.list_multipart_uploads(bucket, prefix))).map_err(|e| to_py(py, e))?;
        Ok(list.into_iter().map(|u| (u.key, u.upload_id)).collect())
    }

    /// The client's counters as a dict.
    fn metrics<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let m = self.engine(py)?.metrics();
        let d = PyDict::new(py);
        d.set_item("bytes_downloaded", m.bytes_downloaded)?;
        d.set_item("bytes_uploaded", m.bytes_uploaded)?;
        d.set_item("requests", m.requests)?;
        d.set_item("retries", m.retries)?;
        d.set_item("errors", m.errors)?;
        d.set_item("timeouts", m.timeouts)?;
        d.set_item("connections_opened", m.connections_opened)?;
        d.set_item("checksum_failures", m.checksum_failures)?;
        d.set_item("downloads_not_verified", m.downloads_not_verified)?;
        d.set_item("memory_in_use_bytes", m.memory_in_use_bytes)?;
        d.set_item("memory_peak_bytes", m.memory_peak_bytes)?;
        d.set_item("express_sessions_created", m.express_sessions_created)?;
        Ok(d)
    }
}

/// A streaming upload of unknown length (`Client.open_write`; `gantry.io.Writer` wraps it as
/// a file object). Bytes are copied into part buffers from the memory budget, and parts
/// upload while later bytes are written. Dropped without `complete`, the upload is aborted.
#[pyclass(module = "gantry")]
pub struct RawWriter {
    client: gantry::Client,
    upload: Option<gantry::Upload>,
}

impl RawWriter {
    fn open(&mut self) -> PyResult<&mut gantry::Upload> {
        self.upload
            .as_mut()
            .ok_or_else(|| pyo3::exceptions::PyValueError::new_err("I/O operation on a finished upload"))
    }
}

#[pymethods]
impl RawWriter {
    /// Appends a copy of `data` (any bytes-like); waits while the memory budget is spent.
    fn write(&mut self, py: Python<'_>, data: &Bound<'_, PyAny>) -> PyResult<usize> {
        let buf = PyBuffer::<u8>::get(data).map_err(|_| PyTypeError::new_err("data must be a bytes-like object"))?;
        if !buf.is_c_contiguous() {
            return Err(PyBufferError::new_err("data must be C-contiguous"));
        }
        let (ptr, len) = (buf.buf_ptr() as usize, buf.item_count());
        let client = self.client.clone();
        let upload = self.open()?;
        py.detach(|| {
            // SAFETY: len readable bytes, the buffer held acquired (buf) through the call.
            let slice = unsafe { std::slice::from_raw_parts(ptr as *const u8, len) };
            client.block_on(upload.write(slice))
        })
        .map_err(|e| to_py(py, e))?;
        drop(buf);
        Ok(len)
    }

    /// Bytes written so far.
    fn tell(&self) -> u64 {
        self.upload.as_ref().map_or(0, |u| u.bytes_written())
    }

    /// Uploads the rest and completes the object; returns its ETag.
    fn complete(&mut self, py: Python<'_>) -> PyResult<Option<String>> {
        self.open()?;
        let (client, upload) = (self.client.clone(), self.upload.take().expect("checked"));
        let out = py.detach(|| client.block_on(upload.complete())).map_err(|e| to_py(py, e))?;
        Ok(out.etag)
    }

    /// Discards everything written, parts already on the server included. Idempotent.
    fn abort(&mut self, py: Python<'_>) -> PyResult<()> {
        let Some(upload) = self.upload.take() else { return Ok(()) };
        let client = self.client.clone();
        py.detach(|| client.block_on(upload.abort())).map_err(|e| to_py(py, e))
    }
}

/// A seekable, in-order reader of one object (`Client.open_read`; `gantry.io.Reader` wraps it
/// as a file object). Sequential reads stream with the engine's prefetching (parallel parts
/// within the client's read window); a seek outside the bytes at hand reopens the stream at
/// the new position on the next read.
#[pyclass(module = "gantry")]
pub struct RawReader {
    client: gantry::Client,
    bucket: String,
    key: String,
    /// The object's size, from the first answer.
    #[pyo3(get)]
    size: u64,
    /// The next byte a read returns.
    pos: u64,
    stream: Option<gantry::GetStream>,
    /// Bytes of the stream not yet read; they start at `pos`.
    pending: Bytes,
}

#[pymethods]
impl RawReader {
    /// Reads into `buffer` (any writable buffer) until it is full or the object ends; returns
    /// the bytes read (0 at the end).
    fn readinto(&mut self, py: Python<'_>, buffer: &Bound<'_, PyAny>) -> PyResult<usize> {
        let buf = PyBuffer::<u8>::get(buffer)
            .map_err(|_| PyTypeError::new_err("buffer must be a writable bytes-like object"))?;
        if buf.readonly() || !buf.is_c_contiguous() {
            return Err(PyTypeError::new_err("buffer must be writable and C-contiguous"));
        }
        let (ptr, len) = (buf.buf_ptr() as usize, buf.item_count());
        let n = py
            .detach(|| {
                // SAFETY: a writable buffer of len bytes held acquired (buf) through the call.
                let out = unsafe { std::slice::from_raw_parts_mut(ptr as *mut u8, len) };
                self.client.clone().block_on(self.fill(out))
            })
            .map_err(|e| to_py(py, e))?;
        drop(buf);
        Ok(n)
    }

    /// Moves to `offset` relative to the start (0), the current position (1) or the end (2);
    /// returns the new position.
    #[pyo3(signature = (offset, whence=0))]
    fn seek(&mut self, offset: i64, whence: i32) -> PyResult<u64> {
        let base = match whence {
            0 => 0i128,
            1 => self.pos as i128,
            2 => self.size as i128,
            _ => return Err(pyo3::exceptions::PyValueError::new_err(format!("invalid whence {whence}"))),
        };
        let target = base + offset as i128;
        if target < 0 {
            return Err(pyo3::exceptions::PyValueError::new_err(format!("negative seek position {target}")));
        }
        let target = target as u64;
        if target >= self.pos && target - self.pos < self.pending.len() as u64 {
            // Within the bytes at hand: skip, keep the stream.
            let _ = self.pending.split_to((target - self.pos) as usize);
        } else if target != self.pos {
            self.stream = None;
            self.pending = Bytes::new();
        }
        self.pos = target;
        Ok(target)
    }

    fn tell(&self) -> u64 {
        self.pos
    }

    /// Drops the stream (its connections go back to the pool or close).
    fn close(&mut self) {
        self.stream = None;
        self.pending = Bytes::new();
    }
}

impl RawReader {
    async fn fill(&mut self, out: &mut [u8]) -> gantry::Result<usize> {
        let mut n = 0;
        while n < out.len() && self.pos < self.size {
            if self.pending.is_empty() {
                if self.stream.is_none() {
                    let opened = if self.pos == 0 {
                        self.client.get_stream(&self.bucket, &self.key).await?
                    } else {
                        self.client.get_range_stream(&self.bucket, &self.key, self.pos..self.size).await?
                    };
                    self.stream = Some(opened);
                }
                match self.stream.as_mut().expect("opened").next_chunk().await {
                    Some(chunk) => self.pending = chunk?,
                    None => {
                        self.stream = None;
                        break;
                    }
                }
            }
            let take = self.pending.len().min(out.len() - n);
            out[n..n + take].copy_from_slice(&self.pending[..take]);
            let _ = self.pending.split_to(take);
            n += take;
            self.pos += take as u64;
        }
        Ok(n)
    }
}

/// `length` bytes of bucket/key from `offset` (fewer at the end of the object; none for 0).
///
/// A range of one part arrives as one chunk, handed over as it is. A longer one is fetched
/// with parallel ranged GETs straight into one allocation: collecting its chunks would copy
/// every byte once more (measured on DCP loads, where the tensors are such ranges).
async fn range_bytes(c: &gantry::Client, bucket: &str, key: &str, offset: u64, length: u64) -> gantry::Result<Bytes> {
    if length == 0 {
        return Ok(Bytes::new());
    }
    let range = offset..offset.saturating_add(length);
    if length <= c.config().part_size_bytes() {
        return collect(c.get_range_stream(bucket, key, range), Some(length)).await;
    }
    let mut buf = vec![0u8; usize::try_from(length).unwrap_or(usize::MAX)];
    let info = c.get_range_into(bucket, key, range, &mut buf).await?;
    buf.truncate(info.size.saturating_sub(offset).min(length) as usize);
    Ok(Bytes::from(buf))
}

/// A whole stream in one `Bytes`: the single chunk itself when there is one, else one copy
/// into a buffer of `expected` bytes (at most; the object's size or the range's length).
async fn collect(
    opened: impl std::future::Future<Output = gantry::Result<gantry::GetStream>>,
    expected: Option<u64>,
) -> gantry::Result<Bytes> {
    let mut stream = opened.await?;
    let expected = expected.unwrap_or(u64::MAX).min(stream.info().size) as usize;
    let mut first: Option<Bytes> = None;
    let mut all: Option<Vec<u8>> = None;
    while let Some(chunk) = stream.next_chunk().await {
        let chunk = chunk?;
        if let Some(v) = all.as_mut() {
            v.extend_from_slice(&chunk);
            continue;
        }
        match first.take() {
            None => first = Some(chunk),
            Some(f) => {
                let mut v = Vec::with_capacity(expected.max(f.len() + chunk.len()));
                v.extend_from_slice(&f);
                v.extend_from_slice(&chunk);
                all = Some(v);
            }
        }
    }
    Ok(match (all, first) {
        (Some(v), _) => Bytes::from(v),
        (None, Some(only)) => only,
        (None, None) => Bytes::new(),
    })
}

/// The extension module.
#[pymodule]
fn _gantry(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<Client>()?;
    m.add_class::<Buffer>()?;
    m.add_class::<ObjectSummary>()?;
    m.add_class::<ListIter>()?;
    m.add_class::<RawReader>()?;
    m.add_class::<RawWriter>()?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
