package gantry

/*
#include <stdlib.h>
#include "gantry.h"
*/
import "C"

import "unsafe"

// Object is one entry of a listing.
type Object struct {
	Key  string
	Size int64
}

// List returns every object under prefix, following continuation tokens.
func (c *Client) List(bucket, prefix string) ([]Object, error) {
	var out []Object
	token := ""
	for {
		var page *C.gantry_list_page
		err := c.with(func(p *C.gantry_client) error {
			cb := C.CString(bucket)
			defer C.free(unsafe.Pointer(cb))
			var cp, ct *C.char
			if prefix != "" {
				cp = C.CString(prefix)
				defer C.free(unsafe.Pointer(cp))
			}
			if token != "" {
				ct = C.CString(token)
				defer C.free(unsafe.Pointer(ct))
			}
			var cerr *C.gantry_error
			return check(C.gantry_list_objects(p, cb, cp, ct, 0, &page, &cerr), cerr)
		})
		if err != nil {
			return nil, err
		}
		n := int(C.gantry_list_page_count(page))
		for i := 0; i < n; i++ {
			out = append(out, Object{
				Key:  C.GoString(C.gantry_list_page_key(page, C.size_t(i))),
				Size: int64(C.gantry_list_page_size(page, C.size_t(i))),
			})
		}
		next := C.gantry_list_page_next_token(page)
		token = ""
		if next != nil {
			token = C.GoString(next)
		}
		C.gantry_list_page_free(page)
		if token == "" {
			return out, nil
		}
	}
}

// Metrics are a client's counters since it was created.
type Metrics struct {
	BytesDownloaded, BytesUploaded, Requests, Retries, ConnectionsOpened, Errors uint64
}

// Metrics returns a copy of the client's counters.
func (c *Client) Metrics() (Metrics, error) {
	var m C.gantry_metrics
	err := c.with(func(p *C.gantry_client) error {
		var cerr *C.gantry_error
		return check(C.gantry_client_metrics(p, &m, &cerr), cerr)
	})
	return Metrics{
		BytesDownloaded: uint64(m.bytes_downloaded), BytesUploaded: uint64(m.bytes_uploaded),
		Requests: uint64(m.requests), Retries: uint64(m.retries),
		ConnectionsOpened: uint64(m.connections_opened), Errors: uint64(m.errors),
	}, err
}
