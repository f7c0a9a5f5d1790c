//! The conformance suite against the embedded s3s-fs server (in-process, SigV4 verified).

gantry_integration::conformance_tests!(Some(gantry_integration::s3s_fs()));
