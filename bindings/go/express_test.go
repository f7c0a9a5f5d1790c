package gantry

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// startExpressServer runs gantry-fault-server with its S3 Express double on: directory
// buckets (<base>--<az-id>--x-s3) answer CreateSession for the base key AKIDBASE and refuse
// requests not signed with a live session, as a zonal endpoint does; appends work there.
func startExpressServer(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	bin, _ := filepath.Abs("../../target/release/gantry-fault-server")
	srv := exec.Command(bin, "--port", fmt.Sprint(port), "--express-base-key", "AKIDBASE:base-secret")
	if err := srv.Start(); err != nil {
		t.Fatalf("start %s: %v (build it with cargo build --release -p gantry-faults)", bin, err)
	}
	t.Cleanup(func() { _ = srv.Process.Kill(); _ = srv.Wait() })
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	for i := 0; ; i++ {
		if c, err := net.Dial("tcp", addr); err == nil {
			c.Close()
			break
		}
		if i > 200 {
			t.Fatal("gantry-fault-server did not start")
		}
		time.Sleep(25 * time.Millisecond)
	}
	return "http://" + addr
}

// A directory bucket needs no new call (sessions are automatic), and Append extends an
// object at its size; a stale offset is CodeWrongWriteOffset.
func TestAppendOnADirectoryBucket(t *testing.T) {
	ep := startExpressServer(t)
	c, err := NewClient(Config{"endpoint_url": ep, "access_key_id": "AKIDBASE", "secret_access_key": "base-secret"})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx := context.Background()
	const dir = "gologs--use1-az4--x-s3"
	if err := c.CreateBucket(ctx, dir); err != nil {
		t.Fatal(err)
	}
	n, err := c.Append(ctx, dir, "log", 0, []byte("first\n"))
	if err != nil || n != 6 {
		t.Fatalf("first append: %d, %v", n, err)
	}
	if n, err = c.Append(ctx, dir, "log", n, []byte("second\n")); err != nil || n != 13 {
		t.Fatalf("second append: %d, %v", n, err)
	}
	_, err = c.Append(ctx, dir, "log", 6, []byte("stale\n"))
	var e *Error
	if !errors.As(err, &e) || e.Code != CodeWrongWriteOffset || e.HTTPStatus != 400 || e.S3Code != "InvalidWriteOffset" {
		t.Fatalf("stale offset: %v", err)
	}
	got, err := c.Get(ctx, dir, "log")
	if err != nil || string(got) != "first\nsecond\n" {
		t.Fatalf("read back %q, %v", got, err)
	}
}
