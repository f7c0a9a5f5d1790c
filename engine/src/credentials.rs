//! Where the signing keys come from: static keys, the standard environment variables, or the
//! shared `~/.aws/credentials` / `~/.aws/config` profile files (the same order the AWS CLI uses
//! for these sources). More providers (IMDS, web identity, SSO) plug in here later.
//!
//! Secrets never reach a log: the `Debug` impl of [`Credentials`] prints only the key id.

use std::fmt;
use std::path::PathBuf;

use crate::error::{Error, ErrorKind, Operation, Result};

/// An access key pair, optionally with a session token.
#[derive(Clone, PartialEq, Eq)]
pub struct Credentials {
    /// `AWS_ACCESS_KEY_ID`.
    pub access_key_id: String,
    /// `AWS_SECRET_ACCESS_KEY` (never logged).
    pub secret_access_key: String,
    /// `AWS_SESSION_TOKEN` for temporary credentials (never logged).
    pub session_token: Option<String>,
}

impl Credentials {
    /// Static credentials without a session token.
    pub fn new(access_key_id: impl Into<String>, secret_access_key: impl Into<String>) -> Self {
        Credentials {
            access_key_id: access_key_id.into(),
            secret_access_key: secret_access_key.into(),
            session_token: None,
        }
    }
}

impl fmt::Debug for Credentials {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Credentials")
            .field("access_key_id", &self.access_key_id)
            .field("secret_access_key", &"** redacted **")
            .field("session_token", &self.session_token.as_ref().map(|_| "** redacted **"))
            .finish()
    }
}

/// How the client finds its credentials.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CredentialsSource {
    /// Exactly these keys.
    Static(Credentials),
    /// `AWS_ACCESS_KEY_ID`/`AWS_SECRET_ACCESS_KEY`/`AWS_SESSION_TOKEN`, else the named profile
    /// (or `AWS_PROFILE`, else `default`) from `~/.aws/credentials` and `~/.aws/config`.
    Default {
        /// Profile name overriding `AWS_PROFILE`.
        profile: Option<String>,
    },
    /// Send unsigned requests (public buckets).
    Anonymous,
}

impl CredentialsSource {
    /// Resolves the source into keys (`None` for anonymous access).
    pub fn resolve(&self) -> Result<Option<Credentials>> {
        match self {
            CredentialsSource::Static(c) => Ok(Some(c.clone())),
            CredentialsSource::Anonymous => Ok(None),
            CredentialsSource::Default { profile } => {
                if let Some(c) = from_env() {
                    return Ok(Some(c));
                }
                let name = profile
                    .clone()
                    .or_else(|| std::env::var("AWS_PROFILE").ok().filter(|p| !p.is_empty()))
                    .unwrap_or_else(|| "default".to_string());
                match from_profile_files(&name)? {
                    Some(c) => Ok(Some(c)),
                    None => Err(Error::new(
                        ErrorKind::Credentials,
                        Operation::Config,
                        format!(
                            "no credentials: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or \
                             add profile {name:?} to ~/.aws/credentials"
                        ),
                    )),
                }
            }
        }
    }
}

fn from_env() -> Option<Credentials> {
    let get = |k| std::env::var(k).ok().filter(|v: &String| !v.is_empty());
    Some(Credentials {
        access_key_id: get("AWS_ACCESS_KEY_ID")?,
        secret_access_key: get("AWS_SECRET_ACCESS_KEY")?,
        session_token: get("AWS_SESSION_TOKEN"),
    })
}

fn home_file(env_key: &str, default_name: &str) -> Option<PathBuf> {
    if let Ok(p) = std::env::var(env_key) {
        return Some(PathBuf::from(p));
    }
    std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".aws").join(default_name))
}

/// Reads `profile` from the credentials file, then from the config file (where sections other
/// than `default` are spelled `[profile NAME]`).
fn from_profile_files(profile: &str) -> Result<Option<Credentials>> {
    let files = [
        (home_file("AWS_SHARED_CREDENTIALS_FILE", "credentials"), profile.to_string()),
        (
            home_file("AWS_CONFIG_FILE", "config"),
            if profile == "default" { profile.to_string() } else { format!("profile {profile}") },
        ),
    ];
    for (path, section) in files {
        let Some(path) = path else { continue };
        if !path.exists() {
            continue;
        }
        let ini = ini::Ini::load_from_file(&path).map_err(|e| {
            Error::new(ErrorKind::Credentials, Operation::Config, format!("cannot parse {}", path.display()))
                .with_source(e)
        })?;
        if let Some(s) = ini.section(Some(section.as_str())) {
            if let (Some(id), Some(secret)) = (s.get("aws_access_key_id"), s.get("aws_secret_access_key")) {
                return Ok(Some(Credentials {
                    access_key_id: id.to_string(),
                    secret_access_key: secret.to_string(),
                    session_token: s.get("aws_session_token").map(str::to_string),
                }));
            }
        }
    }
    Ok(None)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_never_prints_secrets() {
        let mut c = Credentials::new("AKID", "SECRETVALUE");
        c.session_token = Some("TOKENVALUE".into());
        let s = format!("{c:?}");
        assert!(s.contains("AKID"));
        assert!(!s.contains("SECRETVALUE") && !s.contains("TOKENVALUE"));
    }

    #[test]
    fn reads_profiles_from_both_files() {
        let dir = tempfile::tempdir().unwrap();
        let creds = dir.path().join("credentials");
        let config = dir.path().join("config");
        std::fs::write(&creds, "[default]\naws_access_key_id = A1\naws_secret_access_key = S1\n").unwrap();
        std::fs::write(
            &config,
            "[profile other]\naws_access_key_id = A2\naws_secret_access_key = S2\naws_session_token = T2\n",
        )
        .unwrap();
        // Environment variables are process-wide: this is the only test that sets them.
        std::env::set_var("AWS_SHARED_CREDENTIALS_FILE", &creds);
        std::env::set_var("AWS_CONFIG_FILE", &config);
        let d = from_profile_files("default").unwrap().unwrap();
        assert_eq!((d.access_key_id.as_str(), d.secret_access_key.as_str()), ("A1", "S1"));
        let o = from_profile_files("other").unwrap().unwrap();
        assert_eq!(o.session_token.as_deref(), Some("T2"));
        assert!(from_profile_files("missing").unwrap().is_none());
    }
}
