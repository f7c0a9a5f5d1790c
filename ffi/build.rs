//! Gives libgantry.so a soname carrying the ABI major version, so programs linked against
//! one major version never load an incompatible one.

fn main() {
    let major = env!("CARGO_PKG_VERSION_MAJOR");
    // 0.x: the minor version is the compatibility boundary, as in Cargo's rules.
    let abi = if major == "0" { format!("0.{}", env!("CARGO_PKG_VERSION_MINOR")) } else { major.to_string() };
    if std::env::var("CARGO_CFG_TARGET_OS").as_deref() == Ok("linux") {
        println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,libgantry.so.{abi}");
    }
}
