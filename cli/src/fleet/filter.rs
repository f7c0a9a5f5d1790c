//! `--include` / `--exclude`, with the AWS CLI's rule: everything is selected to begin with,
//! then each filter that matches a name decides, in the order given, so a later filter wins.
//! Patterns are globs matched against the name relative to the source root, where `*` also
//! matches `/` (as in `aws s3`), `?` one character and `[...]` a class.

use std::ffi::OsString;

use globset::{Glob, GlobMatcher};

use crate::CliResult;

/// The filters of one command, in command-line order.
#[derive(Debug, Default)]
pub(crate) struct Filters {
    rules: Vec<(bool, GlobMatcher)>,
}

impl Filters {
    /// Compiles `(include?, pattern)` pairs, in the order they were given.
    pub(crate) fn new(ordered: &[(bool, String)]) -> CliResult<Filters> {
        let mut rules = Vec::new();
        for (include, pattern) in ordered {
            let glob = Glob::new(pattern).map_err(|e| format!("bad pattern {pattern:?}: {e}"))?;
            rules.push((*include, glob.compile_matcher()));
        }
        Ok(Filters { rules })
    }

    /// Whether `name` is selected.
    pub(crate) fn selects(&self, name: &str) -> bool {
        self.rules.iter().fold(true, |selected, (include, m)| if m.is_match(name) { *include } else { selected })
    }

    /// The `--include` / `--exclude` pairs of a command line, in their order (clap keeps each
    /// flag's values but not how the two flags interleave, which decides the result).
    pub(crate) fn ordered_from(args: impl IntoIterator<Item = OsString>) -> Vec<(bool, String)> {
        let mut out = Vec::new();
        let mut pending: Option<bool> = None;
        for arg in args {
            let arg = arg.to_string_lossy().into_owned();
            if let Some(include) = pending.take() {
                out.push((include, arg));
                continue;
            }
            if arg == "--" {
                break;
            }
            match arg.as_str() {
                "--include" => pending = Some(true),
                "--exclude" => pending = Some(false),
                _ => {
                    if let Some(p) = arg.strip_prefix("--include=") {
                        out.push((true, p.to_string()));
                    } else if let Some(p) = arg.strip_prefix("--exclude=") {
                        out.push((false, p.to_string()));
                    }
                }
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn filters(args: &[&str]) -> Filters {
        Filters::new(&Filters::ordered_from(args.iter().map(OsString::from))).unwrap()
    }

    #[test]
    fn later_filters_win() {
        let f = filters(&["cp", "--exclude", "*", "--include=*.tar", "src", "dst"]);
        assert!(f.selects("train/shard-1.tar") && !f.selects("train/readme.md"));
        let f = filters(&["--include", "*.tar", "--exclude", "logs/*"]);
        assert!(f.selects("a.tar") && !f.selects("logs/a.tar") && f.selects("x.md"));
        assert!(filters(&[]).selects("anything"));
        assert!(Filters::new(&[(true, "[".into())]).is_err());
    }
}
