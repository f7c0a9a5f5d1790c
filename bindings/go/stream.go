package gantry

/*
#include <stdint.h>
#include "gantry.h"
gantry_result gantry_go_stream_start(const gantry_client *client, const char *bucket, const char *key, uint64_t offset,
                                     uint64_t length, uint64_t window, uintptr_t handle, gantry_request **out_request,
                                     gantry_error **out_err);
*/
import "C"

import (
	"context"
	"io"
	"math"
	"runtime/cgo"
	"sync"
	"unsafe"
)

// readerWindow is how far a GetReader's stream may run ahead of Read: the bytes the engine
// hands over (and the reader holds) before Read consumed them.
const readerWindow = 16 << 20

// heldChunk is a chunk of the engine's network buffer the reader retained (no copy yet).
type heldChunk struct {
	chunk *C.gantry_chunk
	data  unsafe.Pointer
	n     int
}

// objectReader streams an object in order over gantry_get_stream_start. The chunk callback
// (on an engine worker thread; it must not block) retains each chunk and queues it; Read
// copies straight from the engine's buffer into the caller's slice (the only copy), releases
// the chunk and opens the stream's window by its size. A reader that stops reading stops the
// stream once readerWindow bytes are queued: memory stays bounded.
type objectReader struct {
	client *Client
	ctx    context.Context
	req    *C.gantry_request
	handle cgo.Handle
	ready  chan struct{} // a chunk was queued or the stream ended
	closed chan struct{}

	mu     sync.Mutex
	queue  []heldChunk
	ended  bool
	err    error // final error, set by the done callback
	cur    heldChunk
	curOff int

	once    sync.Once
	release func()
}

//export goGantryChunk
func goGantryChunk(handle C.uintptr_t, data *C.uint8_t, n C.size_t, _ C.uint64_t, chunk *C.gantry_chunk) C.int {
	r := cgo.Handle(handle).Value().(*objectReader)
	select {
	case <-r.closed:
		return 1
	default:
	}
	held := heldChunk{chunk: C.gantry_chunk_retain(chunk), data: unsafe.Pointer(data), n: int(n)}
	r.mu.Lock()
	r.queue = append(r.queue, held)
	r.mu.Unlock()
	r.signal()
	return 0
}

//export goGantryDone
func goGantryDone(handle C.uintptr_t, result C.gantry_result, err *C.gantry_error) {
	r := cgo.Handle(handle).Value().(*objectReader)
	r.mu.Lock()
	r.ended = true
	if result != C.GANTRY_RESULT_OK {
		r.err = lentError(result, err)
	}
	r.mu.Unlock()
	r.signal()
}

func (r *objectReader) signal() {
	select {
	case r.ready <- struct{}{}:
	default:
	}
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

// GetReader streams bucket/key in order as an io.ReadCloser, fetching parts in parallel up
// to 16 MiB ahead of Read. Cancelling ctx stops the download; Read then returns an *Error
// with CodeCancelled wrapping ctx.Err(). Close it when done (also early: the rest of the
// download is cancelled).
func (c *Client) GetReader(ctx context.Context, bucket, key string) (io.ReadCloser, error) {
	return c.GetRangeReader(ctx, bucket, key, 0, -1)
}

// GetRangeReader streams length bytes of bucket/key from offset (length < 0: to the end) like
// GetReader. A range past the end is cut there; one starting past the end fails on the first
// Read with HTTP 416.
func (c *Client) GetRangeReader(ctx context.Context, bucket, key string, offset, length int64) (io.ReadCloser, error) {
	if ctx.Err() != nil {
		return nil, contextDone(ctx)
	}
	if length == 0 {
		return io.NopCloser(eofReader{}), nil
	}
	span := uint64(math.MaxUint64)
	if length > 0 {
		span = uint64(length)
	}
	r := &objectReader{client: c, ctx: ctx, ready: make(chan struct{}, 1), closed: make(chan struct{})}
	r.handle = cgo.NewHandle(r)
	err := c.with(func(p *C.gantry_client) error {
		s, free := cstrings(bucket, key)
		defer free()
		var cerr *C.gantry_error
		return check(C.gantry_go_stream_start(p, s[0], s[1], C.uint64_t(offset), C.uint64_t(span), readerWindow,
			C.uintptr_t(r.handle), &r.req, &cerr), cerr)
	})
	if err != nil {
		r.handle.Delete()
		return nil, err
	}
	req := r.req
	r.release = onCancel(ctx, func() { C.gantry_request_cancel(req) })
	return r, nil
}

type eofReader struct{}

func (eofReader) Read([]byte) (int, error) { return 0, io.EOF }

func (r *objectReader) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	for r.cur.chunk == nil {
		r.mu.Lock()
		if len(r.queue) > 0 {
			r.cur, r.curOff = r.queue[0], 0
			r.queue[0] = heldChunk{}
			r.queue = r.queue[1:]
			r.mu.Unlock()
			break
		}
		ended, err := r.ended, r.err
		r.mu.Unlock()
		if ended {
			if err != nil {
				return 0, withContext(r.ctx, err)
			}
			return 0, io.EOF
		}
		select {
		case <-r.ready:
		case <-r.closed:
			return 0, errClosed
		}
	}
	src := unsafe.Slice((*byte)(r.cur.data), r.cur.n)
	n := copy(p, src[r.curOff:])
	r.curOff += n
	if r.curOff == r.cur.n {
		C.gantry_chunk_release(r.cur.chunk)
		C.gantry_request_open_window(r.req, C.uint64_t(r.cur.n))
		r.cur = heldChunk{}
	}
	return n, nil
}

// Close cancels what is left of the download and releases the request and every chunk it
// still holds. Idempotent.
func (r *objectReader) Close() error {
	r.once.Do(func() {
		close(r.closed)
		r.release()
		C.gantry_request_free(r.req) // cancels and waits until the done callback returned
		r.handle.Delete()
		if r.cur.chunk != nil {
			C.gantry_chunk_release(r.cur.chunk)
			r.cur = heldChunk{}
		}
		for _, h := range r.queue {
			C.gantry_chunk_release(h.chunk)
		}
		r.queue = nil
	})
	return nil
}
