package gantry

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
)

// providerClient is a client whose keys come from fn (Config carries a wrong secret: the
// provider must win over it).
func providerClient(t *testing.T, fn CredentialsFunc) *Client {
	t.Helper()
	c, err := NewClient(Config{
		"endpoint_url": endpoint, "access_key_id": "gantry", "secret_access_key": "wrong",
		"part_size": "5MiB", "max_connections": "4", "memory_limit": "64MiB",
	}, WithCredentialsProvider(fn))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// waitReleased waits until the library released every provider (the engine's threads end
// shortly after Close) and fails if one is still held.
func waitReleased(t *testing.T) {
	t.Helper()
	for i := 0; i < 500 && liveProviders.Load() != 0; i++ {
		time.Sleep(10 * time.Millisecond)
	}
	if n := liveProviders.Load(); n != 0 {
		t.Fatalf("%d credentials providers were not released", n)
	}
}

func TestCredentialsProviderFetchesOnce(t *testing.T) {
	var calls atomic.Int32
	var seen atomic.Pointer[context.Context]
	c := providerClient(t, func(ctx context.Context) (Credentials, error) {
		calls.Add(1)
		seen.Store(&ctx)
		if ctx.Err() != nil {
			return Credentials{}, ctx.Err()
		}
		return Credentials{AccessKeyID: "gantry", SecretAccessKey: "gantry-secret-key", SessionToken: "session",
			Expires: time.Now().Add(time.Hour)}, nil
	})
	data := pattern(6<<20+3, 5)
	for i := 0; i < 10; i++ {
		if err := c.PutBytes(context.Background(), bucket, "provided", data); err != nil {
			t.Fatal(err)
		}
		if n, err := c.Head(context.Background(), bucket, "provided"); err != nil || n != int64(len(data)) {
			t.Fatalf("head: %d, %v", n, err)
		}
	}
	if n := calls.Load(); n != 1 {
		t.Fatalf("%d fetches for 20 requests, want 1 (the keys expire in an hour)", n)
	}
	c.Close()
	select {
	case <-(*seen.Load()).Done():
	case <-time.After(5 * time.Second):
		t.Fatal("the provider's context was not cancelled by Close")
	}
	waitReleased(t)
}

func TestCredentialsProviderError(t *testing.T) {
	sealed := providerClient(t, func(context.Context) (Credentials, error) {
		return Credentials{}, errors.New("vault is sealed")
	})
	_, err := sealed.Head(context.Background(), bucket, "provided")
	var e *Error
	if !errors.As(err, &e) || e.Code != CodeCredentials || e.Retryable {
		t.Fatalf("want a final CodeCredentials error, got %#v", err)
	}
	if !strings.Contains(e.Message, "credentials callback: vault is sealed") {
		t.Fatalf("the message must name the callback and carry its error: %q", e.Message)
	}
	// A panic fails the fetch instead of crashing the program; so do keys the library refuses.
	panicking := providerClient(t, func(context.Context) (Credentials, error) { panic("boom") })
	if _, err := panicking.Head(context.Background(), bucket, "provided"); !errors.As(err, &e) ||
		e.Code != CodeCredentials || !strings.Contains(e.Message, "panicked: boom") {
		t.Fatalf("panic: %v", err)
	}
	empty := providerClient(t, func(context.Context) (Credentials, error) { return Credentials{}, nil })
	if _, err := empty.Head(context.Background(), bucket, "provided"); !errors.As(err, &e) ||
		e.Code != CodeCredentials || !strings.Contains(e.Message, "must not be empty") {
		t.Fatalf("empty keys: %v", err)
	}
	sealed.Close()
	panicking.Close()
	empty.Close()
	waitReleased(t)
}

// TestCredentialsProviderReentrancy: a gantry call on the same client from the provider's own
// goroutine fails at once instead of deadlocking.
func TestCredentialsProviderReentrancy(t *testing.T) {
	var self atomic.Pointer[Client]
	var inner atomic.Value
	c := providerClient(t, func(ctx context.Context) (Credentials, error) {
		if c := self.Load(); c != nil {
			_, err := c.Head(ctx, bucket, "provided")
			inner.Store(err)
		}
		return Credentials{AccessKeyID: "gantry", SecretAccessKey: "gantry-secret-key"}, nil
	})
	self.Store(c)
	if err := c.PutBytes(context.Background(), bucket, "reentrant", []byte("x")); err != nil {
		t.Fatal(err)
	}
	var e *Error
	if err, _ := inner.Load().(error); !errors.As(err, &e) || e.Code != CodeInvalidState {
		t.Fatalf("the nested call must fail with CodeInvalidState, got %v", inner.Load())
	}
}

// TestAWSv2Provider proves the adapter with aws-sdk-go-v2's own cache over its static provider,
// and passes an expiry through.
func TestAWSv2Provider(t *testing.T) {
	cached := aws.NewCredentialsCache(credentials.NewStaticCredentialsProvider("gantry", "gantry-secret-key", ""))
	c := providerClient(t, AWSv2Provider(cached))
	data := pattern(11<<20+1, 6)
	if err := c.PutBytes(context.Background(), bucket, "awsv2", data); err != nil {
		t.Fatal(err)
	}
	if got, err := c.Get(context.Background(), bucket, "awsv2"); err != nil || string(got) != string(data) {
		t.Fatalf("round trip through the aws-sdk-go-v2 provider: %v", err)
	}

	var calls atomic.Int32
	expires := time.Now().Add(time.Hour).Truncate(time.Second)
	temporary := aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) {
		calls.Add(1)
		return aws.Credentials{AccessKeyID: "gantry", SecretAccessKey: "gantry-secret-key", SessionToken: "session",
			CanExpire: true, Expires: expires}, nil
	})
	got, err := AWSv2Provider(temporary)(context.Background())
	if err != nil || got.SessionToken != "session" || !got.Expires.Equal(expires) {
		t.Fatalf("adapted: %+v, %v", got, err)
	}
	t2 := providerClient(t, AWSv2Provider(temporary))
	for i := 0; i < 5; i++ {
		if _, err := t2.Head(context.Background(), bucket, "awsv2"); err != nil {
			t.Fatal(err)
		}
	}
	if n := calls.Load(); n != 2 {
		t.Fatalf("%d calls, want 2 (one direct, one fetch for five requests)", n)
	}

	anonymous := aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) {
		return aws.Credentials{}, nil
	})
	if _, err := AWSv2Provider(anonymous)(context.Background()); err == nil {
		t.Fatal("anonymous credentials must be refused")
	}
	failing := aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) {
		return aws.Credentials{}, errors.New("sso session expired")
	})
	_, err = providerClient(t, AWSv2Provider(failing)).Head(context.Background(), bucket, "awsv2")
	var e *Error
	if !errors.As(err, &e) || e.Code != CodeCredentials || !strings.Contains(e.Message, "sso session expired") {
		t.Fatalf("a failing aws provider: %v", err)
	}
}
