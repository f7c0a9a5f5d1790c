package gantry

// All cgo flags live here. The library is found in the repository's target/release (built by
// `cargo build --release -p gantry-ffi`); set CGO_LDFLAGS to link another copy.

/*
#cgo CFLAGS: -I${SRCDIR}/../../include
#cgo LDFLAGS: -L${SRCDIR}/../../target/release -lgantry -Wl,-rpath,${SRCDIR}/../../target/release
#include <stdlib.h>
#include "gantry.h"
*/
import "C"
