//! Builds each C test in `ffi/tests/c/` against `include/gantry.h` and `libgantry.so` with
//! `-Wall -Wextra -Werror -Wpedantic`, and runs it twice against the embedded S3 server:
//!
//! - under valgrind (zero leaks of definitely lost memory, zero invalid accesses; it also sees
//!   uninitialised reads and checks the Rust side, which is not instrumented otherwise);
//! - built with `-fsanitize=address,undefined` (ASan with LeakSanitizer, and UBSan, aborting
//!   on the first report): the C program is the instrumented executable, so its runtime
//!   intercepts every malloc/free, the library's included, without LD_PRELOAD. It catches what
//!   valgrind cannot (out-of-bounds on the stack and in globals, undefined behaviour in the
//!   C code) and runs the threads at close to native speed, where races show up differently.
//!
//! No sanitizer suppressions are needed: the library leaks nothing at exit.

use std::path::{Path, PathBuf};
use std::process::Command;

fn target_dir() -> PathBuf {
    // target/<profile>/deps/c_api-HASH → target/<profile>
    std::env::current_exe().unwrap().parent().unwrap().parent().unwrap().to_path_buf()
}

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap().to_path_buf()
}

/// Compiles `ffi/tests/c/<name>.c` into `exe` with `extra` flags; whether it compiled.
fn compile(name: &str, exe: &Path, extra: &[&str]) -> bool {
    let lib_dir = target_dir();
    Command::new("cc")
        .args(["-std=c11", "-D_DEFAULT_SOURCE", "-Wall", "-Wextra", "-Werror", "-Wpedantic", "-g", "-O1", "-pthread"])
        .args(extra)
        .arg("-o")
        .arg(exe)
        .arg(repo().join(format!("ffi/tests/c/{name}.c")))
        .arg("-I")
        .arg(repo().join("include"))
        .arg("-L")
        .arg(&lib_dir)
        .arg(format!("-Wl,-rpath,{}", lib_dir.display()))
        .arg("-lgantry")
        .status()
        .expect("run cc")
        .success()
}

/// Runs `cmd` (a C test program, possibly under a tool) with GANTRY_TEST_ENDPOINT naming a
/// fresh server that accepts the default keys, and checks that every C check passed.
fn run(mut cmd: Command, work: &Path, what: &str) {
    // Accepts gantry_server::DEFAULT_ACCESS_KEY / DEFAULT_SECRET_KEY.
    let server = gantry_server::start_background(
        gantry_server::ServerConfig::new(work.join("s3"), "127.0.0.1:0".parse().unwrap()),
        2,
    )
    .unwrap();
    let out = cmd.arg(work).env("GANTRY_TEST_ENDPOINT", server.endpoint_url()).output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    eprintln!("{stdout}{stderr}");
    assert!(out.status.success(), "{what} failed ({:?})", out.status.code());
    assert!(stdout.contains(" passed, 0 failed"), "{what}: {stdout}");
}

/// Compiles `ffi/tests/c/<name>.c` and runs it under valgrind (when installed), then again
/// built with ASan and UBSan (when the compiler has them).
fn run_c_test(name: &str) {
    let lib_dir = target_dir();
    assert!(lib_dir.join("libgantry.so").exists(), "libgantry.so not built in {}", lib_dir.display());
    // The loader looks for the soname (scripts/build-ffi.sh makes this link too).
    let soname = format!("libgantry.so.0.{}", env!("CARGO_PKG_VERSION_MINOR"));
    let _ = std::os::unix::fs::symlink("libgantry.so", lib_dir.join(&soname));
    let dump = Command::new("objdump").arg("-p").arg(lib_dir.join("libgantry.so")).output().unwrap();
    assert!(String::from_utf8_lossy(&dump.stdout).contains(&soname), "libgantry.so must carry the soname {soname}");
    let in_ci = std::env::var_os("CI").is_some();

    let work = tempfile::tempdir().unwrap();
    let exe = work.path().join(name);
    assert!(compile(name, &exe, &[]), "the C tests of {name}.c do not compile");
    let valgrind = Command::new("valgrind").arg("--version").output().is_ok();
    assert!(valgrind || !in_ci, "CI runs the C tests under valgrind: install it");
    let cmd = if valgrind {
        let mut c = Command::new("valgrind");
        c.args([
            "--error-exitcode=99",
            "--leak-check=full",
            "--errors-for-leak-kinds=definite",
            "--child-silent-after-fork=yes",
            "--quiet",
        ])
        .arg(format!("--suppressions={}", repo().join("ffi/tests/valgrind.supp").display()))
        .arg(&exe);
        c
    } else {
        eprintln!("valgrind not found: running the C tests without it");
        Command::new(&exe)
    };
    run(cmd, work.path(), &format!("C tests of {name}.c under valgrind"));

    let work = tempfile::tempdir().unwrap();
    let exe = work.path().join(format!("{name}-sanitized"));
    let flags = ["-fsanitize=address,undefined", "-fno-omit-frame-pointer", "-fno-sanitize-recover=all"];
    if !compile(name, &exe, &flags) {
        assert!(!in_ci, "CI runs the C tests under ASan and UBSan: install a compiler with them (libasan, libubsan)");
        eprintln!("cc cannot build with -fsanitize=address,undefined: skipping the sanitizer run of {name}.c");
        return;
    }
    let mut cmd = Command::new(&exe);
    // Leaks are errors (detect_leaks is LeakSanitizer, on by default on Linux: stated here so
    // no environment turns it off); the first UBSan report fails the run, with a stack.
    cmd.env("ASAN_OPTIONS", "detect_leaks=1:abort_on_error=0:strict_string_checks=1:detect_stack_use_after_return=1")
        .env("UBSAN_OPTIONS", "print_stacktrace=1:halt_on_error=1");
    run(cmd, work.path(), &format!("C tests of {name}.c under ASan and UBSan"));
}

#[test]
fn c_tests_pass_under_valgrind_asan_and_ubsan() {
    run_c_test("test_gantry");
}

#[test]
fn c_credentials_provider_tests_pass_under_valgrind_asan_and_ubsan() {
    run_c_test("test_credentials");
}
