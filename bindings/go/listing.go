package gantry

/*
#include <stdlib.h>
#include "gantry.h"
*/
import "C"

import (
	"context"
	"unsafe"
)

// Object is one entry of a listing.
type Object struct {
	Key  string
	Size int64
}

// List returns every object under prefix, following continuation tokens. ctx is checked
// before each page; each page's request is bounded by the client's timeouts.
func (c *Client) List(ctx context.Context, bucket, prefix string) ([]Object, error) {
	var out []Object
	token := ""
	for {
		if ctx.Err() != nil {
			return nil, contextDone(ctx)
		}
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
	Timeouts, ChecksumFailures, ChecksumsVerified                                uint64
	// Retries by the class of error that caused them.
	RetriesThrottled, RetriesServerError, RetriesConnect, RetriesTransport uint64
	RetriesTimeout, RetriesProtocol, RetriesChecksum                       uint64
	RetryBudgetExhausted, HedgesSent, HedgesWon                            uint64
	MemoryInUseBytes, MemoryPeakBytes                                      uint64
	// Lanes: one per NIC or source address the client binds to ("default" when none).
	Lanes []LaneMetrics
}

// LaneMetrics are the counters of one NIC or source address.
type LaneMetrics struct {
	Name                                                             string
	BytesDownloaded, BytesUploaded, ConnectionsOpened, ConnectErrors uint64
}

// Metrics returns a copy of the client's counters.
func (c *Client) Metrics() (Metrics, error) {
	var out Metrics
	err := c.with(func(p *C.gantry_client) error {
		var m C.gantry_metrics_ex
		m.struct_size = C.uint64_t(unsafe.Sizeof(m))
		var cerr *C.gantry_error
		if err := check(C.gantry_client_metrics_ex(p, &m, &cerr), cerr); err != nil {
			return err
		}
		out = Metrics{
			BytesDownloaded: uint64(m.bytes_downloaded), BytesUploaded: uint64(m.bytes_uploaded),
			Requests: uint64(m.requests), Retries: uint64(m.retries),
			ConnectionsOpened: uint64(m.connections_opened), Errors: uint64(m.errors),
			Timeouts: uint64(m.timeouts), ChecksumFailures: uint64(m.checksum_failures),
			ChecksumsVerified: uint64(m.checksums_verified),
			RetriesThrottled:  uint64(m.retries_throttled), RetriesServerError: uint64(m.retries_server_error),
			RetriesConnect: uint64(m.retries_connect), RetriesTransport: uint64(m.retries_transport),
			RetriesTimeout: uint64(m.retries_timeout), RetriesProtocol: uint64(m.retries_protocol),
			RetriesChecksum: uint64(m.retries_checksum), RetryBudgetExhausted: uint64(m.retry_budget_exhausted),
			HedgesSent: uint64(m.hedges_sent), HedgesWon: uint64(m.hedges_won),
			MemoryInUseBytes: uint64(m.memory_in_use_bytes), MemoryPeakBytes: uint64(m.memory_peak_bytes),
		}
		for i := C.uint64_t(0); i < m.lane_count; i++ {
			var l C.gantry_lane_metrics
			l.struct_size = C.uint64_t(unsafe.Sizeof(l))
			if err := check(C.gantry_client_lane_metrics(p, i, &l, &cerr), cerr); err != nil {
				return err
			}
			out.Lanes = append(out.Lanes, LaneMetrics{
				Name: C.GoString(&l.name[0]), BytesDownloaded: uint64(l.bytes_downloaded),
				BytesUploaded: uint64(l.bytes_uploaded), ConnectionsOpened: uint64(l.connections_opened),
				ConnectErrors: uint64(l.connect_errors),
			})
		}
		return nil
	})
	return out, err
}
