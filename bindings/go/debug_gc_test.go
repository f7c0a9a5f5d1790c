//go:build debug

package gantry

import (
	"bytes"
	"context"
	"io"
	"runtime"
	"testing"
	"time"
)

// TestFinalizersUnderForcedGC drops clients (with Go credentials providers), uploads and
// readers without closing them while the collector runs constantly: finalizers must free them
// safely, every provider must be released, and nothing may crash or hang. Run with
// `go test -tags debug -race`.
func TestFinalizersUnderForcedGC(t *testing.T) {
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		for {
			select {
			case <-stop:
				return
			default:
				runtime.GC()
			}
		}
	}()
	data := pattern(6<<20+1, 99)
	for i := 0; i < 5; i++ {
		// Keys from a Go provider: its cgo.Handle must be released after the finalizer ran.
		c, err := NewClient(Config{"endpoint_url": endpoint, "part_size": "5MiB"},
			WithCredentialsProvider(func(context.Context) (Credentials, error) {
				return Credentials{AccessKeyID: "gantry", SecretAccessKey: "gantry-secret-key"}, nil
			}))
		if err != nil {
			t.Fatal(err)
		}
		if err := c.PutBytes(context.Background(), bucket, "gc", data); err != nil {
			t.Fatal(err)
		}
		r, err := c.GetReader(context.Background(), bucket, "gc")
		if err != nil {
			t.Fatal(err)
		}
		got, err := io.ReadAll(r)
		if err != nil || !bytes.Equal(got, data) {
			t.Fatalf("round %d: %v", i, err)
		}
		r.Close()
		u, err := c.Upload(context.Background(), bucket, "gc-abandoned")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := u.Write(data[:1<<20]); err != nil {
			t.Fatal(err)
		}
		// Neither u nor c is closed: the finalizers are the backstop.
	}
	for i := 0; i < 5; i++ {
		runtime.GC()
	}
	for i := 0; i < 500 && liveProviders.Load() != 0; i++ {
		runtime.GC()
		time.Sleep(10 * time.Millisecond)
	}
	if n := liveProviders.Load(); n != 0 {
		t.Fatalf("%d credentials providers of finalized clients were not released", n)
	}
}
