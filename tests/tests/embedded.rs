//! The conformance suite against the embedded server (`gantry serve`) (in-process, SigV4 verified).

gantry_integration::conformance_tests!(Some(gantry_integration::embedded()));
