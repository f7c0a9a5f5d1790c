//! The conformance suite against MinIO, an independent S3 implementation run as a process
//! (installed by `tests/scripts/minio.sh install`, which the test script runs).

gantry_integration::conformance_tests!(gantry_integration::minio());
