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
)

// Error is a failed call with the server's metadata.
type Error struct {
	Code       Code
	Message    string
	HTTPStatus int    // 0 when there was no HTTP answer
	S3Code     string // "NoSuchKey", "SlowDown", ... or ""
	RequestID  string
	Retryable  bool
}

func (e *Error) Error() string { return e.Message }

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
	mu  sync.RWMutex
	ptr *C.gantry_client
}

// NewClient creates a client from cfg (see gantry_config_set for the keys).
func NewClient(cfg Config) (*Client, error) {
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

// Close frees the client; calls after Close fail with CodeInvalidState. Idempotent.
func (c *Client) Close() error {
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

// GetInto downloads bucket/key into buf with parallel ranged GETs and returns the object's
// size. A buffer smaller than the object fails with CodeInvalidArgument.
func (c *Client) GetInto(bucket, key string, buf []byte) (int64, error) {
	var size C.uint64_t
	err := c.with(func(p *C.gantry_client) error {
		s, free := cstrings(bucket, key)
		defer free()
		var ptr *C.uint8_t
		if len(buf) > 0 {
			ptr = (*C.uint8_t)(unsafe.Pointer(&buf[0]))
		}
		var cerr *C.gantry_error
		return check(C.gantry_get_into(p, s[0], s[1], ptr, C.size_t(len(buf)), &size, &cerr), cerr)
	})
	return int64(size), err
}

// Get downloads the whole object into memory.
func (c *Client) Get(bucket, key string) ([]byte, error) {
	size, err := c.Head(bucket, key)
	if err != nil {
		return nil, err
	}
	buf := make([]byte, size)
	n, err := c.GetInto(bucket, key, buf)
	if err != nil {
		return nil, err
	}
	return buf[:n], nil
}

// GetToFile downloads bucket/key into the file at path (atomically renamed on success).
func (c *Client) GetToFile(bucket, key, path string) (int64, error) {
	var size C.uint64_t
	err := c.with(func(p *C.gantry_client) error {
		s, free := cstrings(bucket, key, path)
		defer free()
		var cerr *C.gantry_error
		return check(C.gantry_get_to_file(p, s[0], s[1], s[2], &size, &cerr), cerr)
	})
	return int64(size), err
}

// PutBytes uploads data as bucket/key.
func (c *Client) PutBytes(bucket, key string, data []byte) error {
	return c.with(func(p *C.gantry_client) error {
		s, free := cstrings(bucket, key)
		defer free()
		var ptr *C.uint8_t
		if len(data) > 0 {
			ptr = (*C.uint8_t)(unsafe.Pointer(&data[0]))
		}
		var cerr *C.gantry_error
		return check(C.gantry_put_buffer(p, s[0], s[1], ptr, C.size_t(len(data)), &cerr), cerr)
	})
}

// PutFile uploads the file at path as bucket/key.
func (c *Client) PutFile(bucket, key, path string) error {
	return c.with(func(p *C.gantry_client) error {
		s, free := cstrings(bucket, key, path)
		defer free()
		var cerr *C.gantry_error
		return check(C.gantry_put_file(p, s[0], s[1], s[2], &cerr), cerr)
	})
}

// Put uploads everything r yields (length unknown) as bucket/key.
func (c *Client) Put(bucket, key string, r io.Reader) error {
	w, err := c.Upload(bucket, key)
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
func (c *Client) Head(bucket, key string) (int64, error) {
	var size C.uint64_t
	err := c.with(func(p *C.gantry_client) error {
		s, free := cstrings(bucket, key)
		defer free()
		var cerr *C.gantry_error
		return check(C.gantry_head_object(p, s[0], s[1], &size, &cerr), cerr)
	})
	return int64(size), err
}

// Delete deletes bucket/key.
func (c *Client) Delete(bucket, key string) error {
	return c.with(func(p *C.gantry_client) error {
		s, free := cstrings(bucket, key)
		defer free()
		var cerr *C.gantry_error
		return check(C.gantry_delete_object(p, s[0], s[1], &cerr), cerr)
	})
}

// CreateBucket creates a bucket (S3-compatible stores, tests).
func (c *Client) CreateBucket(bucket string) error {
	return c.with(func(p *C.gantry_client) error {
		s, free := cstrings(bucket)
		defer free()
		var cerr *C.gantry_error
		return check(C.gantry_create_bucket(p, s[0], &cerr), cerr)
	})
}

// Upload is an io.WriteCloser that streams an object of unknown length; Close completes it,
// Abort discards it. Not safe for concurrent use.
type Upload struct {
	client *Client
	ptr    *C.gantry_upload
}

// Upload starts a streaming upload to bucket/key.
func (c *Client) Upload(bucket, key string) (*Upload, error) {
	u := &Upload{client: c}
	err := c.with(func(p *C.gantry_client) error {
		s, free := cstrings(bucket, key)
		defer free()
		var cerr *C.gantry_error
		return check(C.gantry_upload_new(p, s[0], s[1], &u.ptr, &cerr), cerr)
	})
	if err != nil {
		return nil, err
	}
	runtime.SetFinalizer(u, (*Upload).free)
	return u, nil
}

func (u *Upload) free() {
	if u.ptr != nil {
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
		return check(C.gantry_upload_write(u.ptr, (*C.uint8_t)(unsafe.Pointer(&p[0])), C.size_t(len(p)), &cerr), cerr)
	})
	if err != nil {
		return 0, err
	}
	return len(p), nil
}

// Close completes the upload. Idempotent: later calls return nil.
func (u *Upload) Close() error {
	if u.ptr == nil {
		return nil
	}
	defer u.free()
	return u.client.with(func(*C.gantry_client) error {
		var cerr *C.gantry_error
		return check(C.gantry_upload_complete(u.ptr, &cerr), cerr)
	})
}

// Abort discards the upload (no parts are left on the server).
func (u *Upload) Abort() error {
	if u.ptr == nil {
		return nil
	}
	defer u.free()
	return u.client.with(func(*C.gantry_client) error {
		var cerr *C.gantry_error
		return check(C.gantry_upload_abort(u.ptr, &cerr), cerr)
	})
}

// Version is the library's version.
func Version() string { return C.GoString(C.gantry_version()) }
