// Package gantry is the Go binding of the gantry S3 transfer engine, over its C ABI.
//
// A Client is safe for concurrent use. Close it when done (Close is idempotent; a finalizer
// frees a forgotten client as a backstop). Errors are *Error values carrying the result code,
// HTTP status, S3 error code and request id; use errors.As.
package gantry

/*
#include <stdlib.h>
#include "gantry.h"
*/
import "C"

import (
	"context"
	"io"
	"runtime"
	"sync"
	"unsafe"
)

// Code is a gantry_result value.
type Code int

// Result codes (see gantry.h).
const (
	CodeOK              Code = C.GANTRY_RESULT_OK
	CodeNullParameter   Code = C.GANTRY_RESULT_NULL_PARAMETER
	CodeInvalidArgument Code = C.GANTRY_RESULT_INVALID_ARGUMENT
	CodeNotFound        Code = C.GANTRY_RESULT_NOT_FOUND
	CodeAccessDenied    Code = C.GANTRY_RESULT_ACCESS_DENIED
	CodeObjectChanged   Code = C.GANTRY_RESULT_OBJECT_CHANGED
	CodeThrottled       Code = C.GANTRY_RESULT_THROTTLED
	CodeServerError     Code = C.GANTRY_RESULT_SERVER_ERROR
	CodeClientError     Code = C.GANTRY_RESULT_CLIENT_ERROR
	CodeNetwork         Code = C.GANTRY_RESULT_NETWORK
	CodeTimeout         Code = C.GANTRY_RESULT_TIMEOUT
	CodeProtocol        Code = C.GANTRY_RESULT_PROTOCOL
	CodeCredentials     Code = C.GANTRY_RESULT_CREDENTIALS
	CodeLocalIO         Code = C.GANTRY_RESULT_LOCAL_IO
	CodeCancelled       Code = C.GANTRY_RESULT_CANCELLED
	CodeForked          Code = C.GANTRY_RESULT_FORKED
	CodePanic           Code = C.GANTRY_RESULT_PANIC
	CodeInternal        Code = C.GANTRY_RESULT_INTERNAL
	CodeInvalidState    Code = C.GANTRY_RESULT_INVALID_STATE
	CodeChecksum        Code = C.GANTRY_RESULT_CHECKSUM_MISMATCH
	// CodePreconditionFailed: the object's ETag is not GetOptions.IfMatch (HTTP 412).
	CodePreconditionFailed Code = C.GANTRY_RESULT_PRECONDITION_FAILED
	// CodeNotModified: the object still has the ETag GetOptions.IfNoneMatch names (HTTP 304).
	CodeNotModified Code = C.GANTRY_RESULT_NOT_MODIFIED
	// CodeWrongWriteOffset: an Append's offset is not the object's size (InvalidWriteOffset).
	CodeWrongWriteOffset Code = C.GANTRY_RESULT_WRONG_WRITE_OFFSET
)

// Error is a failed call with the server's metadata.
type Error struct {
	Code       Code
	Message    string
	HTTPStatus int    // 0 when there was no HTTP answer
	S3Code     string // "NoSuchKey", "SlowDown", ... or ""
	RequestID  string
	Retryable  bool
	cause      error // the context's error when a context cancelled the call
}

func (e *Error) Error() string { return e.Message }

// Unwrap returns the context's error for calls a context cancelled, so
// errors.Is(err, context.Canceled) and errors.Is(err, context.DeadlineExceeded) work.
func (e *Error) Unwrap() error { return e.cause }

// withContext ties a CodeCancelled error to the context that caused it.
func withContext(ctx context.Context, err error) error {
	if e, ok := err.(*Error); ok && e.Code == CodeCancelled && ctx.Err() != nil {
		e.cause = ctx.Err()
	}
	return err
}

// contextDone is the error of a call made with a context that is already done.
func contextDone(ctx context.Context) error {
	return &Error{Code: CodeCancelled, Message: "gantry: " + ctx.Err().Error(), cause: ctx.Err()}
}

// onCancel runs cancel when ctx ends, until the returned release is called; release waits for
// a cancel already running, so the C handle cancel uses may be freed right after it.
func onCancel(ctx context.Context, cancel func()) (release func()) {
	ran := make(chan struct{})
	stop := context.AfterFunc(ctx, func() {
		defer close(ran)
		cancel()
	})
	return func() {
		if !stop() && ctx.Err() != nil {
			<-ran
		}
	}
}

// check turns a result and its C error object into a Go error, freeing the C object.
func check(r C.gantry_result, err *C.gantry_error) error {
	if r == C.GANTRY_RESULT_OK {
		return nil
	}
	defer C.gantry_error_free(err)
	e := &Error{
		Code:       Code(r),
		Message:    C.GoString(C.gantry_error_message(err)),
		HTTPStatus: int(C.gantry_error_http_status(err)),
		Retryable:  bool(C.gantry_error_retryable(err)),
	}
	if s := C.gantry_error_s3_code(err); s != nil {
		e.S3Code = C.GoString(s)
	}
	if s := C.gantry_error_request_id(err); s != nil {
		e.RequestID = C.GoString(s)
	}
	return e
}

// Config maps gantry_config keys ("endpoint_url", "part_size", "nic", ...) to values; keys
// that may repeat (nic, bind) take comma-separated lists here.
type Config map[string]string

// Client is a gantry client: connection pool, memory budget and worker threads.
type Client struct {
	mu    sync.RWMutex
	ptr   *C.gantry_client
	creds *credentialsProvider // WithCredentialsProvider's, or nil
}

// NewClient creates a client from cfg (see gantry_config_set for the keys) and opts
// (WithCredentialsProvider).
func NewClient(cfg Config, opts ...Option) (*Client, error) {
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	var ccfg *C.gantry_config
	var cerr *C.gantry_error
	if err := check(C.gantry_config_new(&ccfg, &cerr), cerr); err != nil {
		return nil, err
	}
	defer C.gantry_config_free(ccfg)
	for k, v := range cfg {
		values := []string{v}
		if k == "nic" || k == "bind" {
			values = splitComma(v)
		}
		for _, one := range values {
			ck, cv := C.CString(k), C.CString(one)
			r := C.gantry_config_set(ccfg, ck, cv, &cerr)
			C.free(unsafe.Pointer(ck))
			C.free(unsafe.Pointer(cv))
			if err := check(r, cerr); err != nil {
				return nil, err
			}
		}
	}
	c := &Client{}
	if o.credentials != nil {
		p, err := setCredentialsProvider(ccfg, o.credentials)
		if err != nil {
			return nil, err
		}
		c.creds = p
	}
	if err := check(C.gantry_client_new(ccfg, &c.ptr, &cerr), cerr); err != nil {
		return nil, err
	}
	runtime.SetFinalizer(c, (*Client).Close)
	return c, nil
}

func splitComma(s string) []string {
	var out []string
	start := 0
	for i := 0; i <= len(s); i++ {
		if i == len(s) || s[i] == ',' {
			if i > start {
				out = append(out, s[start:i])
			}
			start = i + 1
		}
	}
	return out
}

// Close frees the client; calls after Close fail with CodeInvalidState. Idempotent. The
// context of a credentials provider is cancelled; the provider itself is released once the
// engine's threads let go of it, shortly after.
func (c *Client) Close() error {
	if c.creds != nil {
		c.creds.cancel() // first: a provider blocked on ctx lets requests Close waits for end
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ptr != nil {
		C.gantry_client_free(c.ptr)
		c.ptr = nil
	}
	runtime.SetFinalizer(c, nil)
	return nil
}

var errClosed = &Error{Code: CodeInvalidState, Message: "gantry: the client is closed"}

// with runs f with the live client pointer, holding a read lock so Close waits for it.
func (c *Client) with(f func(p *C.gantry_client) error) error {
	c.mu.RLock()
	defer c.mu.RUnlock()
	if c.ptr == nil {
		return errClosed
	}
	err := f(c.ptr)
	runtime.KeepAlive(c)
	return err
}

func cstrings(ss ...string) ([]*C.char, func()) {
	out := make([]*C.char, len(ss))
	for i, s := range ss {
		out[i] = C.CString(s)
	}
	return out, func() {
		for _, p := range out {
			C.free(unsafe.Pointer(p))
		}
	}
}

// startFn starts one asynchronous C request (a gantry_*_start call) on the client p.
type startFn func(p *C.gantry_client, req **C.gantry_request, cerr **C.gantry_error) C.gantry_result

// request runs one *_start call and waits for it; cancelling ctx cancels the request. The
// Go memory in pin (a buffer the request reads or writes) is pinned until the request ended,
// as cgo requires of Go memory that C keeps using after a call returns. Returns the
// request's size result.
func (c *Client) request(ctx context.Context, pin []byte, start startFn) (int64, error) {
	if ctx.Err() != nil {
		return 0, contextDone(ctx)
	}
	var size C.uint64_t
	err := c.with(func(p *C.gantry_client) error {
		var pinner runtime.Pinner
		defer pinner.Unpin()
		if len(pin) > 0 {
			pinner.Pin(&pin[0])
		}
		var req *C.gantry_request
		var cerr *C.gantry_error
		if err := check(start(p, &req, &cerr), cerr); err != nil {
			return err
		}
		defer C.gantry_request_free(req)
		release := onCancel(ctx, func() { C.gantry_request_cancel(req) })
		defer release()
		if err := check(C.gantry_request_wait(req, &cerr), cerr); err != nil {
			return withContext(ctx, err)
		}
		C.gantry_request_size(req, &size, nil)
		return nil
	})
	return int64(size), err
}

// bytePtr is the C view of b's first byte (NULL for an empty slice).
func bytePtr(b []byte) *C.uint8_t {
	if len(b) == 0 {
		return nil
	}
	return (*C.uint8_t)(unsafe.Pointer(&b[0]))
}

// GetInto downloads bucket/key into buf with parallel ranged GETs and returns the object's
// size. A buffer smaller than the object fails with CodeInvalidArgument. Cancelling ctx
// stops the download (an *Error with CodeCancelled that wraps ctx.Err()); buf is not written
// after GetInto returned.
func (c *Client) GetInto(ctx context.Context, bucket, key string, buf []byte) (int64, error) {
	return c.get(ctx, bucket, key, nil, buf, nil)
}

// GetIntoWith downloads what opts select of bucket/key (nil: as GetInto) into the start of
// buf and returns the bytes written: the object's size, or with a range
// min(Range.End, size) - Range.Start. buf must hold the whole object or the whole range.
func (c *Client) GetIntoWith(ctx context.Context, bucket, key string, opts *GetOptions, buf []byte) (int64, error) {
	return c.get(ctx, bucket, key, opts, buf, nil)
}

// GetRange downloads up to len(buf) bytes of bucket/key starting at offset into buf and
// returns how many it wrote (fewer at the end of the object). An offset at or past the end
// fails with HTTP 416 (S3Code "InvalidRange").
func (c *Client) GetRange(ctx context.Context, bucket, key string, offset int64, buf []byte) (int64, error) {
	if len(buf) == 0 {
		return 0, nil
	}
	opts := &GetOptions{Range: &ByteRange{Start: offset, End: offset + int64(len(buf))}}
	return c.get(ctx, bucket, key, opts, buf, nil)
}

// Get downloads the whole object into memory with GET requests only: a missing key is
// CodeNotFound with S3Code "NoSuchKey", as from GetInto (a HEAD's 404 carries no S3 code).
// For large objects of known size, GetInto into a preallocated buffer saves the copies of
// growing the slice.
func (c *Client) Get(ctx context.Context, bucket, key string) ([]byte, error) {
	r, err := c.GetReader(ctx, bucket, key)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	return io.ReadAll(r)
}

// DownloadToFile downloads bucket/key into the file at path (atomically renamed on success; a
// cancelled or failed download leaves no file at path).
func (c *Client) DownloadToFile(ctx context.Context, bucket, key, path string) (int64, error) {
	return c.get(ctx, bucket, key, nil, nil, &path)
}

// DownloadToFileWith downloads what opts select of bucket/key (nil: as DownloadToFile) into the
// file at path (a range is written at the start of the file) and returns the bytes written.
func (c *Client) DownloadToFileWith(ctx context.Context, bucket, key string, opts *GetOptions, path string) (int64, error) {
	return c.get(ctx, bucket, key, opts, nil, &path)
}

// GetToFile is DownloadToFile's 0.2 name.
//
// Deprecated: use DownloadToFile, the name the other languages use.
func (c *Client) GetToFile(ctx context.Context, bucket, key, path string) (int64, error) {
	return c.DownloadToFile(ctx, bucket, key, path)
}

// GetToFileWith is DownloadToFileWith's first name.
//
// Deprecated: use DownloadToFileWith.
func (c *Client) GetToFileWith(ctx context.Context, bucket, key string, opts *GetOptions, path string) (int64, error) {
	return c.DownloadToFileWith(ctx, bucket, key, opts, path)
}

// DownloadChecksum says whether a download checks its bytes against the object's stored
// checksum (gantry_download_checksum).
type DownloadChecksum int

// Checksum modes of GetOptions.
const (
	// DownloadChecksumFromConfig follows the client's verify_downloads setting (the default).
	DownloadChecksumFromConfig DownloadChecksum = C.GANTRY_DOWNLOAD_CHECKSUM_FROM_CONFIG
	// DownloadChecksumVerify verifies whatever the client's setting.
	DownloadChecksumVerify DownloadChecksum = C.GANTRY_DOWNLOAD_CHECKSUM_VERIFY
	// DownloadChecksumSkip neither asks for the checksum nor checks it.
	DownloadChecksumSkip DownloadChecksum = C.GANTRY_DOWNLOAD_CHECKSUM_SKIP
)

// ByteRange is bytes [Start, End) of an object (End exclusive; a range reaching past the end
// of the object is cut there).
type ByteRange struct {
	Start, End int64
}

// GetOptions are the settings of one download (gantry_get_options); the zero value reads the
// whole current object with the client's settings.
type GetOptions struct {
	// Range reads only these bytes; nil reads the whole object.
	Range *ByteRange
	// IfMatch reads only if the object's ETag is this one (with its quotes); otherwise the
	// download fails with CodePreconditionFailed (HTTP 412) before any byte. "": no condition.
	IfMatch string
	// IfNoneMatch reads only if the object's ETag is not this one; a match fails with
	// CodeNotModified (HTTP 304). "": no condition.
	IfNoneMatch string
	// VersionID reads this version of a versioned object; "": the current one.
	VersionID string
	// Checksum says whether the bytes are verified.
	Checksum DownloadChecksum
	// PartSizeBytes is the size of the part requests; 0 uses the client's part_size.
	PartSizeBytes int64
}

// get runs gantry_get_start with opts (nil: defaults) into buf, or into the file at *path
// when path is not nil.
func (c *Client) get(ctx context.Context, bucket, key string, opts *GetOptions, buf []byte, path *string) (int64, error) {
	strs := []string{bucket, key, "", "", "", ""}
	if path != nil {
		strs[2] = *path
	}
	if opts != nil {
		strs[3], strs[4], strs[5] = opts.IfMatch, opts.IfNoneMatch, opts.VersionID
	}
	s, free := cstrings(strs...)
	defer free()
	// C memory: the structs hold a pinned Go pointer (buf) only for the call.
	copts := (*C.gantry_get_options)(C.calloc(1, C.sizeof_gantry_get_options))
	defer C.free(unsafe.Pointer(copts))
	dest := (*C.gantry_get_destination)(C.calloc(1, C.sizeof_gantry_get_destination))
	defer C.free(unsafe.Pointer(dest))
	var optsArg *C.gantry_get_options
	if opts != nil {
		C.gantry_get_options_init(copts)
		if r := opts.Range; r != nil {
			copts.has_range = true
			copts.range_start = C.uint64_t(r.Start)
			copts.range_end = C.uint64_t(r.End)
		}
		for i, field := range []**C.char{&copts.if_match, &copts.if_none_match, &copts.version_id} {
			if strs[3+i] != "" {
				*field = s[3+i]
			}
		}
		copts.checksum = C.gantry_download_checksum(opts.Checksum)
		copts.part_size_bytes = C.uint64_t(opts.PartSizeBytes)
		optsArg = copts
	}
	if path != nil {
		dest.kind = C.GANTRY_GET_DESTINATION_FILE
		dest.path = s[2]
	} else {
		dest.kind = C.GANTRY_GET_DESTINATION_BUFFER
		dest.buf_len = C.size_t(len(buf))
	}
	return c.request(ctx, buf, func(p *C.gantry_client, req **C.gantry_request, cerr **C.gantry_error) C.gantry_result {
		if path == nil {
			dest.buf = unsafe.Pointer(bytePtr(buf))
		}
		return C.gantry_get_start(p, s[0], s[1], optsArg, dest, nil, nil, req, cerr)
	})
}

// PutBytes uploads data as bucket/key without copying it (parts are sent from data, which
// must not change until PutBytes returns).
func (c *Client) PutBytes(ctx context.Context, bucket, key string, data []byte) error {
	s, free := cstrings(bucket, key)
	defer free()
	_, err := c.request(ctx, data, func(p *C.gantry_client, req **C.gantry_request, cerr **C.gantry_error) C.gantry_result {
		return C.gantry_put_buffer_start(p, s[0], s[1], bytePtr(data), C.size_t(len(data)), nil, nil, req, cerr)
	})
	return err
}

// Append appends data to bucket/key in a directory bucket (S3 Express One Zone) at offset,
// which must be the object's current size (0 creates it), without copying data (pinned until
// Append returns). It returns the object's new size, the offset of the next append. A stale
// offset fails with CodeWrongWriteOffset: read the size again (Head) and append there.
func (c *Client) Append(ctx context.Context, bucket, key string, offset int64, data []byte) (int64, error) {
	if offset < 0 {
		return 0, &Error{Code: CodeInvalidArgument, Message: "offset must not be negative"}
	}
	s, free := cstrings(bucket, key)
	defer free()
	return c.request(ctx, data, func(p *C.gantry_client, req **C.gantry_request, cerr **C.gantry_error) C.gantry_result {
		return C.gantry_append_start(p, s[0], s[1], C.uint64_t(offset), bytePtr(data), C.size_t(len(data)), nil, nil, req, cerr)
	})
}

// PutFile uploads the file at path as bucket/key.
func (c *Client) PutFile(ctx context.Context, bucket, key, path string) error {
	s, free := cstrings(bucket, key, path)
	defer free()
	_, err := c.request(ctx, nil, func(p *C.gantry_client, req **C.gantry_request, cerr **C.gantry_error) C.gantry_result {
		return C.gantry_put_file_start(p, s[0], s[1], s[2], nil, nil, req, cerr)
	})
	return err
}

// Put uploads everything r yields (length unknown) as bucket/key. On any failure, or when
// ctx is cancelled, the multipart upload is aborted.
func (c *Client) Put(ctx context.Context, bucket, key string, r io.Reader) error {
	w, err := c.Upload(ctx, bucket, key)
	if err != nil {
		return err
	}
	if _, err := io.Copy(w, r); err != nil {
		_ = w.Abort()
		return err
	}
	return w.Close()
}

// Head returns the object's size.
func (c *Client) Head(ctx context.Context, bucket, key string) (int64, error) {
	s, free := cstrings(bucket, key)
	defer free()
	return c.request(ctx, nil, func(p *C.gantry_client, req **C.gantry_request, cerr **C.gantry_error) C.gantry_result {
		return C.gantry_head_object_start(p, s[0], s[1], nil, nil, req, cerr)
	})
}

// Delete deletes bucket/key.
func (c *Client) Delete(ctx context.Context, bucket, key string) error {
	s, free := cstrings(bucket, key)
	defer free()
	_, err := c.request(ctx, nil, func(p *C.gantry_client, req **C.gantry_request, cerr **C.gantry_error) C.gantry_result {
		return C.gantry_delete_object_start(p, s[0], s[1], nil, nil, req, cerr)
	})
	return err
}

// CreateBucket creates a bucket (S3-compatible stores, tests). ctx is checked before the
// call; the call itself is bounded by the client's timeouts.
func (c *Client) CreateBucket(ctx context.Context, bucket string) error {
	if ctx.Err() != nil {
		return contextDone(ctx)
	}
	return c.with(func(p *C.gantry_client) error {
		s, free := cstrings(bucket)
		defer free()
		var cerr *C.gantry_error
		return check(C.gantry_create_bucket(p, s[0], &cerr), cerr)
	})
}

// CopyObject copies srcBucket/srcKey to bucket/key on the server (CopyObject, or parallel
// UploadPartCopy parts above the copy_threshold key, 1 GiB by default, aborted on failure) and returns the
// number of parts (1 for a single CopyObject). ctx is checked before the call; the call itself
// is bounded by the client's timeouts.
func (c *Client) CopyObject(ctx context.Context, srcBucket, srcKey, bucket, key string) (int, error) {
	if ctx.Err() != nil {
		return 0, contextDone(ctx)
	}
	var parts C.uint32_t
	err := c.with(func(p *C.gantry_client) error {
		s, free := cstrings(srcBucket, srcKey, bucket, key)
		defer free()
		var cerr *C.gantry_error
		return check(C.gantry_copy_object(p, s[0], s[1], s[2], s[3], &parts, &cerr), cerr)
	})
	return int(parts), err
}

// DeleteFailure is one key a batch delete could not remove, with the server's S3 error code.
type DeleteFailure struct {
	Key  string
	Code string
}

// DeleteObjects deletes keys from bucket with DeleteObjects, 1,000 keys a request, and returns
// how many were deleted (a missing key counts) and the keys the server refused. A batch that
// fails as a whole lists its keys among the refused; an error is returned only when every
// batch failed (nothing was deleted). ctx is checked before the call.
func (c *Client) DeleteObjects(ctx context.Context, bucket string, keys []string) (uint64, []DeleteFailure, error) {
	if ctx.Err() != nil {
		return 0, nil, contextDone(ctx)
	}
	var deleted uint64
	var failed []DeleteFailure
	err := c.with(func(p *C.gantry_client) error {
		s, free := cstrings(append([]string{bucket}, keys...)...)
		defer free()
		var arr **C.char
		if len(keys) > 0 {
			// The C strings live in C memory; the array of their pointers is C memory too, so
			// no Go pointer is passed to C.
			arr = (**C.char)(C.malloc(C.size_t(len(keys)) * C.size_t(unsafe.Sizeof(uintptr(0)))))
			defer C.free(unsafe.Pointer(arr))
			view := unsafe.Slice(arr, len(keys))
			copy(view, s[1:])
		}
		var report *C.gantry_delete_report
		var cerr *C.gantry_error
		if err := check(C.gantry_delete_objects(p, s[0], arr, C.size_t(len(keys)), &report, &cerr), cerr); err != nil {
			return err
		}
		defer C.gantry_delete_report_free(report)
		deleted = uint64(C.gantry_delete_report_deleted(report))
		n := int(C.gantry_delete_report_failed_count(report))
		for i := 0; i < n; i++ {
			f := DeleteFailure{Key: C.GoString(C.gantry_delete_report_failed_key(report, C.size_t(i)))}
			if code := C.gantry_delete_report_failed_code(report, C.size_t(i)); code != nil {
				f.Code = C.GoString(code)
			}
			failed = append(failed, f)
		}
		return nil
	})
	return deleted, failed, err
}

// Upload is an io.WriteCloser that streams an object of unknown length; Close completes it,
// Abort discards it. Not safe for concurrent use. Cancelling the context given to
// Client.Upload aborts the upload: the Write or Close in progress (and every later one)
// returns an *Error with CodeCancelled that wraps ctx.Err().
type Upload struct {
	client  *Client
	ctx     context.Context
	ptr     *C.gantry_upload
	release func()
}

// Upload starts a streaming upload to bucket/key.
func (c *Client) Upload(ctx context.Context, bucket, key string) (*Upload, error) {
	if ctx.Err() != nil {
		return nil, contextDone(ctx)
	}
	u := &Upload{client: c, ctx: ctx}
	err := c.with(func(p *C.gantry_client) error {
		s, free := cstrings(bucket, key)
		defer free()
		var cerr *C.gantry_error
		return check(C.gantry_upload_new(p, s[0], s[1], &u.ptr, &cerr), cerr)
	})
	if err != nil {
		return nil, err
	}
	ptr := u.ptr
	u.release = onCancel(ctx, func() { C.gantry_upload_cancel(ptr) })
	runtime.SetFinalizer(u, (*Upload).free)
	return u, nil
}

func (u *Upload) free() {
	if u.ptr != nil {
		u.release() // no cancel may touch the handle after this
		C.gantry_upload_free(u.ptr)
		u.ptr = nil
	}
	runtime.SetFinalizer(u, nil)
}

// Write appends p (copied); it blocks while the memory limit is reached.
func (u *Upload) Write(p []byte) (int, error) {
	if u.ptr == nil {
		return 0, errClosed
	}
	if len(p) == 0 {
		return 0, nil
	}
	err := u.client.with(func(*C.gantry_client) error {
		var cerr *C.gantry_error
		return check(C.gantry_upload_write(u.ptr, bytePtr(p), C.size_t(len(p)), &cerr), cerr)
	})
	if err != nil {
		return 0, withContext(u.ctx, err)
	}
	return len(p), nil
}

// Close completes the upload. Idempotent: later calls return nil.
func (u *Upload) Close() error {
	if u.ptr == nil {
		return nil
	}
	defer u.free()
	return withContext(u.ctx, u.client.with(func(*C.gantry_client) error {
		var cerr *C.gantry_error
		return check(C.gantry_upload_complete(u.ptr, &cerr), cerr)
	}))
}

// Abort discards the upload (no parts are left on the server).
func (u *Upload) Abort() error {
	if u.ptr == nil {
		return nil
	}
	defer u.free()
	err := u.client.with(func(*C.gantry_client) error {
		var cerr *C.gantry_error
		return check(C.gantry_upload_abort(u.ptr, &cerr), cerr)
	})
	if e, ok := err.(*Error); ok && e.Code == CodeCancelled {
		return nil // a cancel already aborted it
	}
	return err
}

// Version is the library's version.
func Version() string { return C.GoString(C.gantry_version()) }
