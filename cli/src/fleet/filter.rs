//! `--include` / `--exclude`, with the AWS CLI's rule: everything is selected to begin with,
//! then each filter that matches a name decides, in the order given, so a later filter wins.
//! Patterns are globs matched against the name relative to the source root, where `*` also
//! matches `/` (as in `aws s3`), `?` one character and `[...]` a class.

use clap::ArgMatches;
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

    /// The `--include` / `--exclude` pairs of a parsed command line, in the order given: clap
    /// keeps each flag's values apart, and their interleaving decides the result, so the pairs
    /// are put back in order by their argument positions.
    pub(crate) fn ordered_from(matches: &ArgMatches) -> Vec<(bool, String)> {
        let mut placed = Vec::new();
        for (id, include) in [("include", true), ("exclude", false)] {
            if let (Some(at), Some(values)) = (matches.indices_of(id), matches.get_many::<String>(id)) {
                placed.extend(at.zip(values).map(|(i, v)| (i, include, v.clone())));
            }
        }
        placed.sort_by_key(|(i, ..)| *i);
        placed.into_iter().map(|(_, include, v)| (include, v)).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The filters of `gantry cp ARGS...`, parsed by the real command line.
    fn filters(args: &[&str]) -> Filters {
        use clap::CommandFactory;
        let argv = ["gantry", "cp", "-r"].iter().chain(args).chain(&["src", "s3://b/dst"]);
        let matches = crate::Cli::command().get_matches_from(argv);
        let (_, cp) = matches.subcommand().unwrap();
        Filters::new(&Filters::ordered_from(cp)).unwrap()
    }

    #[test]
    fn later_filters_win() {
        let f = filters(&["--exclude", "*", "--quiet", "--include=*.tar"]);
        assert!(f.selects("train/shard-1.tar") && !f.selects("train/readme.md"));
        let f = filters(&["--include", "*.tar", "--exclude", "logs/*"]);
        assert!(f.selects("a.tar") && !f.selects("logs/a.tar") && f.selects("x.md"));
        assert!(filters(&[]).selects("anything"));
        assert!(Filters::new(&[(true, "[".into())]).is_err());
    }
}
