package gantry

/*
#include <stdint.h>
#include <stdlib.h>
#include "gantry.h"
gantry_result gantry_go_set_credentials_provider(gantry_config *config, uintptr_t handle, gantry_error **out_err);
*/
import "C"

import (
	"context"
	"errors"
	"fmt"
	"runtime/cgo"
	"strings"
	"sync/atomic"
	"time"
	"unsafe"
)

// Credentials are the keys a CredentialsFunc hands to the engine.
type Credentials struct {
	AccessKeyID     string
	SecretAccessKey string
	SessionToken    string    // "" for long-term keys
	Expires         time.Time // when temporary keys stop working; zero for keys that do not expire
}

// CredentialsFunc fetches credentials for a client (see WithCredentialsProvider).
type CredentialsFunc func(ctx context.Context) (Credentials, error)

// Option configures NewClient beyond the string keys of Config.
type Option func(*options)

type options struct {
	credentials CredentialsFunc
}

// WithCredentialsProvider makes the client get its keys from fn, which wins over the
// credential keys of Config (access_key_id, profile, anonymous, ...). The client caches what
// fn returns and calls it again only when needed: on first use, ahead of Expires (5 to 6
// minutes before, or after half of a shorter lifetime; never for keys without an expiry), and
// once when the server refuses the keys as expired. An error fn returns fails the requests
// waiting for the keys with an *Error of CodeCredentials whose message ends in
// "credentials callback: " and the error's text (unless the last good keys are still within
// 10 minutes past their expiry: those stay in use while fn is asked again every 10 s).
//
// fn runs on an engine thread, never concurrently with itself. It may block (a vault, an SDK
// call, a subprocess); requests that need keys wait meanwhile, so bound your own waits. ctx is
// cancelled when the client is closed. fn must not wait for a gantry call on the same client
// (on its own goroutine such calls fail with CodeInvalidState; from other goroutines they
// would deadlock). A panic in fn fails the fetch instead of crashing the program. See
// AWSv2Provider for keys from aws-sdk-go-v2.
func WithCredentialsProvider(fn CredentialsFunc) Option {
	return func(o *options) { o.credentials = fn }
}

// credentialsProvider is what the C callback's user_data (a cgo.Handle) refers to. The
// library owns the handle: it calls goGantryCredentialsRelease exactly once, once the
// configuration and the client are gone, which deletes it.
type credentialsProvider struct {
	fn     CredentialsFunc
	ctx    context.Context
	cancel context.CancelFunc
}

// liveProviders counts providers the library has not released yet (tests check it returns).
var liveProviders atomic.Int64

// setCredentialsProvider hands fn to the configuration cfg.
func setCredentialsProvider(cfg *C.gantry_config, fn CredentialsFunc) (*credentialsProvider, error) {
	ctx, cancel := context.WithCancel(context.Background())
	p := &credentialsProvider{fn: fn, ctx: ctx, cancel: cancel}
	h := cgo.NewHandle(p)
	liveProviders.Add(1)
	var cerr *C.gantry_error
	// The library owns h from here: it releases it exactly once, also when this call fails.
	if err := check(C.gantry_go_set_credentials_provider(cfg, C.uintptr_t(h), &cerr), cerr); err != nil {
		return nil, err
	}
	return p, nil
}

// fetch calls fn, turning a panic into an error: a panic must not unwind into the library.
func (p *credentialsProvider) fetch() (c Credentials, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("the Go credentials provider panicked: %v", r)
		}
	}()
	c, err = p.fn(p.ctx)
	if err == nil && strings.ContainsRune(c.AccessKeyID+c.SecretAccessKey+c.SessionToken, 0) {
		err = errors.New("the Go credentials provider returned keys containing a NUL byte")
	}
	return c, err
}

//export goGantryCredentials
func goGantryCredentials(handle C.uintptr_t, out *C.gantry_credentials_out) C.int32_t {
	p := cgo.Handle(handle).Value().(*credentialsProvider)
	c, err := p.fetch()
	if err != nil {
		msg := C.CString(err.Error())
		defer C.free(unsafe.Pointer(msg))
		C.gantry_credentials_out_fail(out, msg)
		return 1
	}
	var expiry int64
	if !c.Expires.IsZero() {
		expiry = max(c.Expires.Unix(), 1) // at or before 1970: expired, not "never expires"
	}
	s, free := cstrings(c.AccessKeyID, c.SecretAccessKey, c.SessionToken)
	defer free() // the library copied them
	if C.gantry_credentials_out_set(out, s[0], s[1], s[2], C.int64_t(expiry), nil) != C.GANTRY_RESULT_OK {
		return 1 // the reason stays in out and fails the fetch
	}
	return 0
}

//export goGantryCredentialsRelease
func goGantryCredentialsRelease(handle C.uintptr_t) {
	h := cgo.Handle(handle)
	h.Value().(*credentialsProvider).cancel()
	h.Delete()
	liveProviders.Add(-1)
}
