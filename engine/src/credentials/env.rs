//! The environment the credential providers read: the process's, or a fixed map in tests,
//! so a test can describe a whole machine (variables, home directory) without touching the
//! process environment that other tests share.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;

use super::Credentials;

/// Environment variables, read through one door.
#[derive(Debug, Clone, Default)]
pub(crate) struct Env {
    fixed: Option<Arc<HashMap<String, String>>>,
}

impl Env {
    /// The process environment.
    pub(crate) fn process() -> Env {
        Env { fixed: None }
    }

    /// Exactly these variables and no others.
    #[cfg(test)]
    pub(crate) fn from_pairs<'a>(pairs: impl IntoIterator<Item = (&'a str, &'a str)>) -> Env {
        Env { fixed: Some(Arc::new(pairs.into_iter().map(|(k, v)| (k.to_string(), v.to_string())).collect())) }
    }

    /// The variable's value; unset and empty are the same (as in the AWS SDKs).
    pub(crate) fn get(&self, key: &str) -> Option<String> {
        let value = match &self.fixed {
            Some(map) => map.get(key).cloned(),
            None => std::env::var(key).ok(),
        };
        value.filter(|v| !v.trim().is_empty())
    }

    /// Whether the variable is set to `true` (any case).
    pub(crate) fn is_true(&self, key: &str) -> bool {
        self.get(key).is_some_and(|v| v.trim().eq_ignore_ascii_case("true"))
    }

    /// `~/.aws/<name>`, or the file named by `override_key`.
    pub(crate) fn aws_file(&self, override_key: &str, name: &str) -> Option<PathBuf> {
        if let Some(p) = self.get(override_key) {
            return Some(expand_home(&p, self));
        }
        self.home().map(|h| h.join(".aws").join(name))
    }

    pub(crate) fn home(&self) -> Option<PathBuf> {
        self.get("HOME").or_else(|| self.get("USERPROFILE")).map(PathBuf::from)
    }
}

/// `~/x` → `$HOME/x`, as the AWS tools expand paths in their variables and files.
pub(crate) fn expand_home(path: &str, env: &Env) -> PathBuf {
    match (path.strip_prefix("~/"), env.home()) {
        (Some(rest), Some(home)) => home.join(rest),
        _ => PathBuf::from(path),
    }
}

/// `AWS_ACCESS_KEY_ID` / `AWS_SECRET_ACCESS_KEY` / `AWS_SESSION_TOKEN`, when both keys are set.
pub(crate) fn keys_from_env(env: &Env) -> Option<Credentials> {
    let mut c = Credentials::new(env.get("AWS_ACCESS_KEY_ID")?, env.get("AWS_SECRET_ACCESS_KEY")?);
    c.session_token = env.get("AWS_SESSION_TOKEN");
    Some(c)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_need_both_halves_and_empty_is_unset() {
        assert!(keys_from_env(&Env::from_pairs([("AWS_ACCESS_KEY_ID", "A")])).is_none());
        let e =
            Env::from_pairs([("AWS_ACCESS_KEY_ID", "A"), ("AWS_SECRET_ACCESS_KEY", "S"), ("AWS_SESSION_TOKEN", "")]);
        let c = keys_from_env(&e).unwrap();
        assert_eq!((c.access_key_id.as_str(), c.session_token), ("A", None));
        let e = Env::from_pairs([("HOME", "/h")]);
        assert_eq!(expand_home("~/t", &e), PathBuf::from("/h/t"));
        assert_eq!(e.aws_file("AWS_CONFIG_FILE", "config"), Some(PathBuf::from("/h/.aws/config")));
    }
}
