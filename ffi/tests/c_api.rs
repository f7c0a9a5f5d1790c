//! Builds each C test in `ffi/tests/c/` against `include/gantry.h` and `libgantry.so` with
//! `-Wall -Wextra -Werror -Wpedantic`, and runs it under valgrind (zero leaks of definitely
//! lost memory, zero invalid accesses) against the embedded S3 server.

use std::path::{Path, PathBuf};
use std::process::Command;

fn target_dir() -> PathBuf {
    // target/<profile>/deps/c_api-HASH → target/<profile>
    std::env::current_exe().unwrap().parent().unwrap().parent().unwrap().to_path_buf()
}

/// Compiles `ffi/tests/c/<name>.c` and runs it (under valgrind when installed) with
/// GANTRY_TEST_ENDPOINT naming a server that accepts the default keys.
fn run_c_test(name: &str) {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap().to_path_buf();
    let lib_dir = target_dir();
    assert!(lib_dir.join("libgantry.so").exists(), "libgantry.so not built in {}", lib_dir.display());
    // The loader looks for the soname (scripts/build-ffi.sh makes this link too).
    let soname = format!("libgantry.so.0.{}", env!("CARGO_PKG_VERSION_MINOR"));
    let _ = std::os::unix::fs::symlink("libgantry.so", lib_dir.join(&soname));
    let dump = Command::new("objdump").arg("-p").arg(lib_dir.join("libgantry.so")).output().unwrap();
    assert!(String::from_utf8_lossy(&dump.stdout).contains(&soname), "libgantry.so must carry the soname {soname}");
    let work = tempfile::tempdir().unwrap();
    let exe = work.path().join(name);
    let status = Command::new("cc")
        .args([
            "-std=c11",
            "-D_DEFAULT_SOURCE",
            "-Wall",
            "-Wextra",
            "-Werror",
            "-Wpedantic",
            "-g",
            "-O1",
            "-pthread",
            "-o",
        ])
        .arg(&exe)
        .arg(repo.join(format!("ffi/tests/c/{name}.c")))
        .arg("-I")
        .arg(repo.join("include"))
        .arg("-L")
        .arg(&lib_dir)
        .arg(format!("-Wl,-rpath,{}", lib_dir.display()))
        .arg("-lgantry")
        .status()
        .expect("run cc");
    assert!(status.success(), "the C tests of {name}.c do not compile");

    // Accepts gantry_server::DEFAULT_ACCESS_KEY / DEFAULT_SECRET_KEY.
    let server = gantry_server::start_background(
        gantry_server::ServerConfig::new(work.path().join("s3"), "127.0.0.1:0".parse().unwrap()),
        2,
    )
    .unwrap();
    let valgrind = Command::new("valgrind").arg("--version").output().is_ok();
    assert!(valgrind || std::env::var_os("CI").is_none(), "CI runs the C tests under valgrind: install it");
    let mut cmd = if valgrind {
        let mut c = Command::new("valgrind");
        c.args([
            "--error-exitcode=99",
            "--leak-check=full",
            "--errors-for-leak-kinds=definite",
            "--child-silent-after-fork=yes",
            "--quiet",
        ])
        .arg(format!("--suppressions={}", repo.join("ffi/tests/valgrind.supp").display()))
        .arg(&exe);
        c
    } else {
        eprintln!("valgrind not found: running the C tests without it");
        Command::new(&exe)
    };
    let out = cmd.arg(work.path()).env("GANTRY_TEST_ENDPOINT", server.endpoint_url()).output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    eprintln!("{stdout}{stderr}");
    assert!(out.status.success(), "C tests of {name}.c failed ({:?})", out.status.code());
    assert!(stdout.contains(" passed, 0 failed"), "{stdout}");
}

#[test]
fn c_tests_pass_under_valgrind() {
    run_c_test("test_gantry");
}

#[test]
fn c_credentials_provider_tests_pass_under_valgrind() {
    run_c_test("test_credentials");
}
