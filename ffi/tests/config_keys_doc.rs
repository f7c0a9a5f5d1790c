//! The C header documents the keys `gantry_config_set` accepts by hand; the engine's
//! `CONFIG_KEYS` is the one list the setter is built from. This test keeps the two in step:
//! every key must be named in the header's `gantry_config_set` comment, and every word there
//! that looks like a key (`snake_case` with a known suffix) must be a key.

use std::collections::BTreeSet;

/// The comment cbindgen copied above `gantry_config_set` in `include/gantry.h`.
fn config_set_doc() -> String {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../include/gantry.h");
    let header = std::fs::read_to_string(path).expect("include/gantry.h");
    let end = header.find("gantry_result gantry_config_set(").expect("gantry_config_set in the header");
    let start = header[..end].rfind("/*").expect("a doc comment above gantry_config_set");
    header[start..end].to_string()
}

fn words(text: &str) -> BTreeSet<&str> {
    text.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_')).filter(|w| !w.is_empty()).collect()
}

#[test]
fn header_names_every_config_key() {
    let doc = config_set_doc();
    let named = words(&doc);
    let missing: Vec<_> = gantry::CONFIG_KEYS.iter().map(|(k, _)| *k).filter(|k| !named.contains(k)).collect();
    assert!(missing.is_empty(), "keys missing from gantry_config_set's doc in include/gantry.h: {missing:?}");
}

#[test]
fn header_names_no_unknown_key() {
    let doc = config_set_doc();
    let keys: BTreeSet<&str> = gantry::CONFIG_KEYS.iter().map(|(k, _)| *k).collect();
    let suffixes = ["_ms", "_size", "_limit", "_bytes", "_sec", "_id", "_key", "_token", "_buffer", "_url"];
    let unknown: Vec<_> = words(&doc)
        .into_iter()
        .filter(|w| w.chars().all(|c| c.is_ascii_lowercase() || c == '_' || c.is_ascii_digit()))
        .filter(|w| suffixes.iter().any(|s| w.ends_with(s)) && !keys.contains(w))
        .collect();
    assert!(unknown.is_empty(), "gantry_config_set's doc names keys the engine does not accept: {unknown:?}");
}
