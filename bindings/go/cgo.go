package gantry

// All cgo flags live here: they come from pkg-config's gantry.pc, so the library and headers are
// those of an install prefix (scripts/install.sh --prefix DIR; PKG_CONFIG_PATH=DIR/lib/pkgconfig
// when DIR is not a system prefix) and no path is fixed at compile time. The binary then loads
// libgantry.so.<ABI> through the dynamic loader's usual search (ldconfig, LD_LIBRARY_PATH, or a
// RUNPATH you add with CGO_LDFLAGS=-Wl,-rpath,DIR/lib). CGO_CPPFLAGS and CGO_LDFLAGS come before
// pkg-config's flags, so an -I or -L in them wins over the prefix's. Go's build cache does not
// see pkg-config's answers (golang/go#24544): after switching prefixes, build once with -a.
// Inside the gantry checkout, scripts/build-ffi.sh writes target/release/pkgconfig/gantry.pc
// for this package's own tests.

/*
#cgo pkg-config: gantry
#include <stdlib.h>
#include "gantry.h"
*/
import "C"
