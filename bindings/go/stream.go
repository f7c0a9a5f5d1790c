package gantry

/*
#include <stdint.h>
#include "gantry.h"
gantry_result gantry_go_get_async(const gantry_client *client, const char *bucket, const char *key, uintptr_t handle,
                                  gantry_request **out_request, gantry_error **out_err);
*/
import "C"

import (
	"context"
	"io"
	"runtime/cgo"
	"sync"
	"unsafe"
)

// objectReader streams an object in order. Chunks are copied out of the engine's buffers in the
// body callback (on the request's thread) into a small channel: when the reader falls behind,
// the callback blocks, and the engine stops fetching parts beyond its read window.
type objectReader struct {
	client *Client
	req    *C.gantry_request
	handle cgo.Handle
	chunks chan []byte
	closed chan struct{}
	cur    []byte

	mu       sync.Mutex
	err      error // final error, set by the done callback
	finished chan struct{}
	once     sync.Once
	stop     context.CancelFunc
}

//export goGantryBody
func goGantryBody(handle C.uintptr_t, data *C.uint8_t, n C.size_t, _ C.uint64_t) C.int {
	r := cgo.Handle(handle).Value().(*objectReader)
	chunk := C.GoBytes(unsafe.Pointer(data), C.int(n))
	select {
	case r.chunks <- chunk:
		return 0
	case <-r.closed:
		return 1
	}
}

//export goGantryDone
func goGantryDone(handle C.uintptr_t, result C.gantry_result, err *C.gantry_error) {
	r := cgo.Handle(handle).Value().(*objectReader)
	if result != C.GANTRY_RESULT_OK {
		r.mu.Lock()
		r.err = lentError(result, err)
		r.mu.Unlock()
	}
	close(r.chunks)
	close(r.finished)
}

// lentError copies an error the library only lends (the done callback's argument).
func lentError(result C.gantry_result, err *C.gantry_error) error {
	e := &Error{Code: Code(result), Message: "gantry: request failed"}
	if err != nil {
		e.Message = C.GoString(C.gantry_error_message(err))
		e.HTTPStatus = int(C.gantry_error_http_status(err))
		e.Retryable = bool(C.gantry_error_retryable(err))
		if s := C.gantry_error_s3_code(err); s != nil {
			e.S3Code = C.GoString(s)
		}
		if s := C.gantry_error_request_id(err); s != nil {
			e.RequestID = C.GoString(s)
		}
	}
	return e
}

// GetReader streams bucket/key in order as an io.ReadCloser. Cancelling ctx stops the
// download; Read then returns an *Error with CodeCancelled. Close it when done (also early: the
// rest of the download is cancelled).
func (c *Client) GetReader(ctx context.Context, bucket, key string) (io.ReadCloser, error) {
	r := &objectReader{client: c, chunks: make(chan []byte, 4), closed: make(chan struct{}), finished: make(chan struct{})}
	r.handle = cgo.NewHandle(r)
	err := c.with(func(p *C.gantry_client) error {
		s, free := cstrings(bucket, key)
		defer free()
		var cerr *C.gantry_error
		return check(C.gantry_go_get_async(p, s[0], s[1], C.uintptr_t(r.handle), &r.req, &cerr), cerr)
	})
	if err != nil {
		r.handle.Delete()
		return nil, err
	}
	watch, stop := context.WithCancel(ctx)
	r.stop = stop
	go func() {
		select {
		case <-watch.Done():
			if ctx.Err() != nil {
				C.gantry_request_cancel(r.req)
			}
		case <-r.finished:
		}
	}()
	return r, nil
}

func (r *objectReader) Read(p []byte) (int, error) {
	for len(r.cur) == 0 {
		chunk, ok := <-r.chunks
		if !ok {
			r.mu.Lock()
			defer r.mu.Unlock()
			if r.err != nil {
				return 0, r.err
			}
			return 0, io.EOF
		}
		r.cur = chunk
	}
	n := copy(p, r.cur)
	r.cur = r.cur[n:]
	return n, nil
}

// Close cancels what is left of the download and releases the request. Idempotent.
func (r *objectReader) Close() error {
	r.once.Do(func() {
		close(r.closed)
		r.stop()
		C.gantry_request_free(r.req) // cancels and waits for the request thread
		r.handle.Delete()
	})
	return nil
}
