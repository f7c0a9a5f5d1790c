package gantry

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

var endpoint string

// TestMain starts a real S3 server (`gantry serve`, the embedded s3s-fs server) for the tests.
// GANTRY_TEST_ENDPOINT names a running server instead (with a bucket "gotests"), so the
// benchmark can run side by side with the CLI against one server.
func TestMain(m *testing.M) {
	if e := os.Getenv("GANTRY_TEST_ENDPOINT"); e != "" {
		endpoint = e
		os.Exit(m.Run())
	}
	dir, err := os.MkdirTemp("", "gantry-go")
	if err != nil {
		panic(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	addr := l.Addr().String()
	l.Close()
	bin, _ := filepath.Abs("../../target/release/gantry")
	srv := exec.Command(bin, "serve", "--dir", dir, "--addr", addr, "--bucket", "gotests")
	if err := srv.Start(); err != nil {
		panic(fmt.Sprintf("start %s: %v (build it with cargo build --release)", bin, err))
	}
	for i := 0; ; i++ {
		if c, err := net.Dial("tcp", addr); err == nil {
			c.Close()
			break
		}
		if i > 200 {
			panic("gantry serve did not start")
		}
		time.Sleep(25 * time.Millisecond)
	}
	endpoint = "http://" + addr
	code := m.Run()
	_ = srv.Process.Kill()
	_ = srv.Wait()
	os.RemoveAll(dir)
	os.Exit(code)
}

func newClient(t *testing.T, secret string) *Client {
	t.Helper()
	c, err := NewClient(Config{
		"endpoint_url": endpoint, "access_key_id": "gantry", "secret_access_key": secret,
		"part_size": "5MiB", "max_connections": "4", "memory_limit": "64MiB",
		// Copies above one part go multipart, so the tests see UploadPartCopy.
		"copy_threshold": "5MiB", "copy_part_size": "5MiB",
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func pattern(n int, seed int64) []byte {
	b := make([]byte, n)
	rand.New(rand.NewSource(seed)).Read(b)
	return b
}

const bucket = "gotests"

func TestRoundTrip(t *testing.T) {
	c := newClient(t, "gantry-secret-key")
	for _, n := range []int{0, 1, 3*(5<<20) + 7} {
		data := pattern(n, int64(n))
		key := fmt.Sprintf("obj-%d", n)
		if err := c.PutBytes(context.Background(), bucket, key, data); err != nil {
			t.Fatal(err)
		}
		got, err := c.Get(context.Background(), bucket, key)
		if err != nil || !bytes.Equal(got, data) {
			t.Fatalf("size %d: err %v, equal %v", n, err, bytes.Equal(got, data))
		}
		// Streamed upload from an io.Reader of unknown length.
		if err := c.Put(context.Background(), bucket, key+"-r", bytes.NewReader(data)); err != nil {
			t.Fatal(err)
		}
		buf := make([]byte, n)
		if size, err := c.GetInto(context.Background(), bucket, key+"-r", buf); err != nil || size != int64(n) || !bytes.Equal(buf, data) {
			t.Fatalf("reader upload %d: %v", n, err)
		}
	}
}

func TestCopyObjectAndDeleteObjects(t *testing.T) {
	c := newClient(t, "gantry-secret-key")
	ctx := context.Background()
	data := pattern(2*(5<<20)+9, 31)
	if err := c.PutBytes(ctx, bucket, "cp-src", data); err != nil {
		t.Fatal(err)
	}
	parts, err := c.CopyObject(ctx, bucket, "cp-src", bucket, "cp dst+1")
	if err != nil || parts != 3 {
		t.Fatalf("copy: %d parts, %v", parts, err)
	}
	if got, err := c.Get(ctx, bucket, "cp dst+1"); err != nil || !bytes.Equal(got, data) {
		t.Fatalf("copied bytes: %v", err)
	}
	if _, err := c.CopyObject(ctx, bucket, "no-such-source", bucket, "x"); err == nil {
		t.Fatal("a missing source copied")
	}
	deleted, failed, err := c.DeleteObjects(ctx, bucket, []string{"cp-src", "cp dst+1", "never-existed"})
	if err != nil || deleted != 3 || len(failed) != 0 {
		t.Fatalf("delete: %d deleted, %v failed, %v", deleted, failed, err)
	}
	if _, err := c.Head(ctx, bucket, "cp dst+1"); err == nil {
		t.Fatal("still there after delete")
	}
	if deleted, _, err := c.DeleteObjects(ctx, bucket, nil); err != nil || deleted != 0 {
		t.Fatalf("no keys: %d, %v", deleted, err)
	}
}

func TestFiles(t *testing.T) {
	c := newClient(t, "gantry-secret-key")
	data := pattern(11<<20+5, 7)
	src := filepath.Join(t.TempDir(), "src")
	if err := os.WriteFile(src, data, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := c.PutFile(context.Background(), bucket, "file", src); err != nil {
		t.Fatal(err)
	}
	dst := filepath.Join(t.TempDir(), "dst")
	if _, err := c.DownloadToFile(context.Background(), bucket, "file", dst); err != nil {
		t.Fatal(err)
	}
	got, _ := os.ReadFile(dst)
	if !bytes.Equal(got, data) {
		t.Fatal("file bytes differ")
	}
}

func TestGetOptions(t *testing.T) {
	c := newClient(t, "gantry-secret-key")
	ctx := context.Background()
	data := pattern(2*(5<<20)+9, 11)
	if err := c.PutBytes(ctx, bucket, "with", data); err != nil {
		t.Fatal(err)
	}
	// A range over a part boundary with 1 MiB parts, into the start of buf.
	buf := make([]byte, 3<<20)
	start := int64(5<<20 - 5)
	opts := &GetOptions{Range: &ByteRange{Start: start, End: start + int64(len(buf))}, PartSizeBytes: 1 << 20}
	if n, err := c.GetIntoWith(ctx, bucket, "with", opts, buf); err != nil || n != int64(len(buf)) || !bytes.Equal(buf, data[start:start+int64(len(buf))]) {
		t.Fatalf("range: %d, %v", n, err)
	}
	// If-Match that does not match: 412 before any byte.
	var e *Error
	opts = &GetOptions{Range: &ByteRange{Start: 0, End: 10}, IfMatch: `"0123456789abcdef"`}
	if _, err := c.GetIntoWith(ctx, bucket, "with", opts, buf); !errors.As(err, &e) || e.Code != CodePreconditionFailed || e.HTTPStatus != 412 {
		t.Fatalf("If-Match mismatch: %v", err)
	}
	if _, err := c.GetIntoWith(ctx, bucket, "with", &GetOptions{IfNoneMatch: "*"}, make([]byte, len(data))); !errors.As(err, &e) || e.Code != CodeNotModified {
		t.Fatalf("If-None-Match: %v", err)
	}
	// nil options are the plain call; a range into a file with verification off.
	if n, err := c.GetIntoWith(ctx, bucket, "with", nil, make([]byte, len(data))); err != nil || n != int64(len(data)) {
		t.Fatalf("nil options: %d, %v", n, err)
	}
	dst := filepath.Join(t.TempDir(), "with")
	opts = &GetOptions{Range: &ByteRange{Start: 7, End: 1007}, Checksum: DownloadChecksumSkip}
	if n, err := c.DownloadToFileWith(ctx, bucket, "with", opts, dst); err != nil || n != 1000 {
		t.Fatalf("file range: %d, %v", n, err)
	}
	if got, _ := os.ReadFile(dst); !bytes.Equal(got, data[7:1007]) {
		t.Fatal("file range bytes differ")
	}
}

func TestTypedErrors(t *testing.T) {
	c := newClient(t, "gantry-secret-key")
	// Get reports a missing key exactly as GetInto does (it once sent a HEAD first, whose
	// 404 has no S3 code).
	if _, err := c.Get(context.Background(), bucket, "missing"); true {
		var e *Error
		if !errors.As(err, &e) || e.Code != CodeNotFound || e.HTTPStatus != 404 || e.S3Code != "NoSuchKey" {
			t.Fatalf("Get of a missing key: %#v", err)
		}
	}
	_, err := c.GetInto(context.Background(), bucket, "missing", nil)
	var e *Error
	if !errors.As(err, &e) || e.Code != CodeNotFound || e.HTTPStatus != 404 || e.S3Code != "NoSuchKey" || e.Retryable {
		t.Fatalf("missing key: %#v", err)
	}
	bad := newClient(t, "wrong")
	if err := bad.PutBytes(context.Background(), bucket, "k", []byte("x")); !errors.As(err, &e) || e.Code != CodeAccessDenied || e.HTTPStatus != 403 {
		t.Fatalf("bad secret: %#v", err)
	}
	if _, err := NewClient(Config{"no_such_key": "1"}); !errors.As(err, &e) || e.Code != CodeInvalidArgument {
		t.Fatalf("unknown key: %#v", err)
	}
}

func TestAbortAndClose(t *testing.T) {
	c := newClient(t, "gantry-secret-key")
	u, err := c.Upload(context.Background(), bucket, "aborted")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := u.Write(pattern(11<<20, 1)); err != nil {
		t.Fatal(err)
	}
	if err := u.Abort(); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Head(context.Background(), bucket, "aborted"); err == nil {
		t.Fatal("an aborted upload must leave no object")
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if err := c.Close(); err != nil {
		t.Fatal("Close is idempotent")
	}
	var e *Error
	if _, err := c.Head(context.Background(), bucket, "x"); !errors.As(err, &e) || e.Code != CodeInvalidState {
		t.Fatalf("use after close: %v", err)
	}
}

func TestConcurrentUse(t *testing.T) {
	c := newClient(t, "gantry-secret-key")
	data := pattern(6<<20, 11)
	if err := c.PutBytes(context.Background(), bucket, "shared", data); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			got, err := c.Get(context.Background(), bucket, "shared")
			if err == nil && !bytes.Equal(got, data) {
				err = errors.New("bytes differ")
			}
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
}

func TestGetReaderStreamsInOrder(t *testing.T) {
	c := newClient(t, "gantry-secret-key")
	data := pattern(17<<20+9, 21)
	if err := c.PutBytes(context.Background(), bucket, "streamed-get", data); err != nil {
		t.Fatal(err)
	}
	r, err := c.GetReader(context.Background(), bucket, "streamed-get")
	if err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(r)
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("err %v, %d of %d bytes, equal %v", err, len(got), len(data), bytes.Equal(got, data))
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	r.Close()

	// Missing key: the error arrives through Read.
	r, err = c.GetReader(context.Background(), bucket, "missing")
	if err != nil {
		t.Fatal(err)
	}
	_, err = io.ReadAll(r)
	var e *Error
	if !errors.As(err, &e) || e.Code != CodeNotFound || e.HTTPStatus != 404 {
		t.Fatalf("missing: %#v", err)
	}
	r.Close()
}

func TestGetReaderCancelAndEarlyClose(t *testing.T) {
	c := newClient(t, "gantry-secret-key")
	if err := c.PutBytes(context.Background(), bucket, "big", pattern(40<<20, 22)); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	r, err := c.GetReader(ctx, bucket, "big")
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 1<<20)
	if _, err := io.ReadFull(r, buf); err != nil {
		t.Fatal(err)
	}
	cancel()
	_, err = io.Copy(io.Discard, r)
	var e *Error
	if !errors.As(err, &e) || e.Code != CodeCancelled || !errors.Is(err, context.Canceled) {
		t.Fatalf("after cancel: %#v", err)
	}
	r.Close()

	// Closing early, without reading to the end, must not hang.
	r, err = c.GetReader(context.Background(), bucket, "big")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.ReadFull(r, buf); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { r.Close(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Close hung")
	}
}

// BenchmarkGetInto measures a 1 GiB download into Go memory through the binding (compare with
// `gantry cp s3://... -` on the same server). Run: go test -run XXX -bench GetInto -benchtime 3x
func BenchmarkGetInto(b *testing.B) {
	c, err := NewClient(Config{"endpoint_url": endpoint, "access_key_id": "gantry", "secret_access_key": "gantry-secret-key"})
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	data := pattern(1<<30, 3)
	if err := c.PutBytes(context.Background(), bucket, "bench-1g", data); err != nil {
		b.Fatal(err)
	}
	buf := make([]byte, len(data))
	b.SetBytes(int64(len(data)))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := c.GetInto(context.Background(), bucket, "bench-1g", buf); err != nil {
			b.Fatal(err)
		}
	}
}

func TestListAndMetrics(t *testing.T) {
	c := newClient(t, "gantry-secret-key")
	for i := 0; i < 1005; i++ {
		if err := c.PutBytes(context.Background(), bucket, fmt.Sprintf("list/%04d", i), []byte{byte(i)}); err != nil {
			t.Fatal(err)
		}
	}
	objs, err := c.List(context.Background(), bucket, "list/")
	if err != nil {
		t.Fatal(err)
	}
	if len(objs) != 1005 || objs[0].Key != "list/0000" || objs[1004].Key != "list/1004" || objs[7].Size != 1 {
		t.Fatalf("listing: %d objects", len(objs))
	}
	m, err := c.Metrics()
	if err != nil || m.Requests < 1005 || m.BytesUploaded < 1005 {
		t.Fatalf("metrics %+v, %v", m, err)
	}
	if len(m.Lanes) != 1 || m.Lanes[0].Name != "default" || m.Lanes[0].BytesUploaded != m.BytesUploaded {
		t.Fatalf("lanes and memory: %+v", m)
	}
}

// slowClient reads through one connection so a large download takes long enough to cancel.
func slowClient(t *testing.T) *Client {
	t.Helper()
	c, err := NewClient(Config{
		"endpoint_url": endpoint, "access_key_id": "gantry", "secret_access_key": "gantry-secret-key",
		"part_size": "5MiB", "max_connections": "1", "memory_limit": "16MiB",
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func TestContextCancelsDataCalls(t *testing.T) {
	c := newClient(t, "gantry-secret-key")
	data := pattern(96<<20, 31)
	if err := c.PutBytes(context.Background(), bucket, "cancel-me", data); err != nil {
		t.Fatal(err)
	}
	slow := slowClient(t)
	isCancel := func(err error) bool {
		var e *Error
		return errors.As(err, &e) && e.Code == CodeCancelled && errors.Is(err, context.Canceled)
	}

	// A context already done: nothing starts.
	done, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := slow.GetInto(done, bucket, "cancel-me", make([]byte, 1)); !isCancel(err) {
		t.Fatalf("done context: %v", err)
	}
	if _, err := slow.Upload(done, bucket, "x"); !isCancel(err) {
		t.Fatalf("done context upload: %v", err)
	}

	// Mid-download: GetInto returns early, and buf is not written after it returned.
	buf := make([]byte, len(data))
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(20*time.Millisecond, cancel)
	start := time.Now()
	_, err := slow.GetInto(ctx, bucket, "cancel-me", buf)
	if !isCancel(err) {
		t.Fatalf("GetInto after cancel: %v (took %v)", err, time.Since(start))
	}
	snapshot := append([]byte(nil), buf...)
	time.Sleep(100 * time.Millisecond)
	if !bytes.Equal(snapshot, buf) {
		t.Fatal("buf was written after GetInto returned")
	}

	// GetToFile (the deprecated name, kept working): a cancelled download leaves no file.
	dst := filepath.Join(t.TempDir(), "dst")
	ctx, cancel = context.WithCancel(context.Background())
	time.AfterFunc(20*time.Millisecond, cancel)
	if _, err := slow.GetToFile(ctx, bucket, "cancel-me", dst); !isCancel(err) {
		t.Fatalf("GetToFile after cancel: %v", err)
	}
	if _, err := os.Stat(dst); !os.IsNotExist(err) {
		t.Fatalf("a cancelled download left %s: %v", dst, err)
	}

	// PutBytes of caller memory: cancelled, nothing stored.
	ctx, cancel = context.WithCancel(context.Background())
	time.AfterFunc(20*time.Millisecond, cancel)
	if err := slow.PutBytes(ctx, bucket, "cancelled-put", data); !isCancel(err) {
		t.Fatalf("PutBytes after cancel: %v", err)
	}
	if _, err := c.Head(context.Background(), bucket, "cancelled-put"); err == nil {
		t.Fatal("a cancelled put stored an object")
	}
}

func TestContextCancelsUpload(t *testing.T) {
	c := slowClient(t)
	ctx, cancel := context.WithCancel(context.Background())
	u, err := c.Upload(ctx, bucket, "cancelled-upload")
	if err != nil {
		t.Fatal(err)
	}
	time.AfterFunc(30*time.Millisecond, cancel)
	chunk := pattern(1<<20, 5)
	for i := 0; i < 100000; i++ {
		if _, err = u.Write(chunk); err != nil {
			break
		}
	}
	var e *Error
	if !errors.As(err, &e) || e.Code != CodeCancelled || !errors.Is(err, context.Canceled) {
		t.Fatalf("Write after cancel: %v", err)
	}
	if err := u.Close(); !errors.Is(err, context.Canceled) {
		t.Fatalf("Close after cancel: %v", err)
	}
	if _, err := c.Head(context.Background(), bucket, "cancelled-upload"); err == nil {
		t.Fatal("a cancelled upload stored an object")
	}
}

func TestRanges(t *testing.T) {
	c := newClient(t, "gantry-secret-key")
	data := pattern(12<<20+3, 41)
	if err := c.PutBytes(context.Background(), bucket, "ranges", data); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 6<<20)
	n, err := c.GetRange(context.Background(), bucket, "ranges", 5<<20-7, buf)
	if err != nil || n != int64(len(buf)) || !bytes.Equal(buf, data[5<<20-7:11<<20-7]) {
		t.Fatalf("GetRange: %d, %v", n, err)
	}
	n, err = c.GetRange(context.Background(), bucket, "ranges", int64(len(data))-2, buf)
	if err != nil || n != 2 || !bytes.Equal(buf[:2], data[len(data)-2:]) {
		t.Fatalf("GetRange at the end: %d, %v", n, err)
	}
	var e *Error
	if _, err := c.GetRange(context.Background(), bucket, "ranges", int64(len(data)), buf); !errors.As(err, &e) ||
		e.HTTPStatus != 416 {
		t.Fatalf("past the end: %v", err)
	}
	r, err := c.GetRangeReader(context.Background(), bucket, "ranges", 3, 7<<20)
	if err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(r)
	r.Close()
	if err != nil || !bytes.Equal(got, data[3:3+7<<20]) {
		t.Fatalf("GetRangeReader: %d bytes, %v", len(got), err)
	}
}

// A reader that is not read holds at most its window: the engine stops fetching.
func TestGetReaderWindowBoundsMemory(t *testing.T) {
	c, err := NewClient(Config{
		"endpoint_url": endpoint, "access_key_id": "gantry", "secret_access_key": "gantry-secret-key",
		"part_size": "5MiB", "max_connections": "4", "read_window": "10MiB",
	})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.PutBytes(context.Background(), bucket, "window", pattern(64<<20, 51)); err != nil {
		t.Fatal(err)
	}
	before, _ := c.Metrics()
	r, err := c.GetReader(context.Background(), bucket, "window")
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	time.Sleep(500 * time.Millisecond)
	after, _ := c.Metrics()
	got := after.BytesDownloaded - before.BytesDownloaded
	// The reader's 16 MiB window, the engine's 10 MiB read window, and the parts in flight.
	if got > 40<<20 {
		t.Fatalf("an unread reader downloaded the whole object (%d bytes)", got)
	}
	if _, err := io.Copy(io.Discard, r); err != nil {
		t.Fatal(err)
	}
}
