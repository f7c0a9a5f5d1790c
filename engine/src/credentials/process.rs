//! `credential_process` in a profile: a command whose standard output is a JSON document
//! (`Version: 1`, `AccessKeyId`, `SecretAccessKey`, optional `SessionToken` and `Expiration`),
//! as the AWS CLI and SDKs run it. The command runs through `sh -c` (the SDKs split the line
//! themselves; a shell gives the same result for every quoting users write in practice).

use std::time::Duration;

use futures::future::BoxFuture;
use serde::Deserialize;

use super::{credentials_error, time, Credentials, ProvideCredentials};
use crate::error::Result;

/// How long a credential process may run before it is killed and the fetch fails.
const PROCESS_TIMEOUT: Duration = Duration::from_secs(60);

/// Runs a configured command for credentials.
#[derive(Debug)]
pub(crate) struct ProcessProvider {
    command: String,
    profile: String,
}

#[derive(Deserialize)]
#[serde(rename_all = "PascalCase")]
struct Output {
    version: Option<u32>,
    access_key_id: Option<String>,
    secret_access_key: Option<String>,
    session_token: Option<String>,
    expiration: Option<String>,
}

impl ProcessProvider {
    pub(crate) fn new(command: String, profile: &str) -> Self {
        ProcessProvider { command, profile: profile.to_string() }
    }

    async fn run(&self) -> Result<Credentials> {
        let source = format!("credential_process of profile {:?}", self.profile);
        let child = tokio::process::Command::new("sh")
            .arg("-c")
            .arg(&self.command)
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .map_err(|e| credentials_error(&source, "cannot start sh").with_source(e))?;
        let out = match tokio::time::timeout(PROCESS_TIMEOUT, child.wait_with_output()).await {
            Ok(r) => r.map_err(|e| credentials_error(&source, "cannot read its output").with_source(e))?,
            Err(_) => return Err(credentials_error(&source, format!("still running after {PROCESS_TIMEOUT:?}"))),
        };
        if !out.status.success() {
            // stderr is the process's own explanation; stdout may hold secrets and is not shown.
            let stderr = String::from_utf8_lossy(&out.stderr);
            let excerpt: String = stderr.trim().chars().take(300).collect();
            let status = match out.status.code() {
                Some(code) => format!("exited {code}"),
                None => "was killed by a signal".to_string(),
            };
            return Err(credentials_error(&source, format!("the command {status}: {excerpt}")));
        }
        parse(&out.stdout).map_err(|why| credentials_error(&source, why))
    }
}

/// Parses the process's JSON; the error says what is wrong without echoing the output.
fn parse(stdout: &[u8]) -> std::result::Result<Credentials, String> {
    let o: Output = serde_json::from_slice(stdout)
        .map_err(|e| format!("its output is not the expected JSON document ({} bytes; {e})", stdout.len()))?;
    match o.version {
        Some(1) => {}
        Some(v) => return Err(format!("unsupported Version {v} (only 1 is defined)")),
        None => return Err("its JSON has no \"Version\": 1".into()),
    }
    let (Some(id), Some(secret)) = (o.access_key_id, o.secret_access_key) else {
        return Err("its JSON lacks AccessKeyId or SecretAccessKey".into());
    };
    let mut c = Credentials::new(id, secret);
    c.session_token = o.session_token.filter(|t| !t.is_empty());
    if let Some(e) = o.expiration {
        c.expiry = Some(time::parse_rfc3339(&e).ok_or_else(|| format!("Expiration {e:?} is not an RFC 3339 time"))?);
    }
    Ok(c)
}

impl ProvideCredentials for ProcessProvider {
    fn provide_credentials(&self) -> BoxFuture<'_, Result<Credentials>> {
        Box::pin(self.run())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_version_1_and_refuses_the_rest() {
        let c = parse(br#"{"Version":1,"AccessKeyId":"A","SecretAccessKey":"S","SessionToken":"T","Expiration":"2030-01-01T00:00:00Z"}"#)
            .unwrap();
        assert_eq!(c.session_token.as_deref(), Some("T"));
        assert!(c.expiry.is_some());
        assert!(parse(br#"{"Version":1,"AccessKeyId":"A","SecretAccessKey":"S"}"#).unwrap().expiry.is_none());
        assert!(parse(b"not json").unwrap_err().contains("not the expected JSON"));
        assert!(parse(br#"{"Version":2,"AccessKeyId":"A","SecretAccessKey":"S"}"#).unwrap_err().contains("Version 2"));
        assert!(parse(br#"{"Version":1,"AccessKeyId":"A"}"#).unwrap_err().contains("lacks"));
        let e = parse(br#"{"Version":1,"AccessKeyId":"A","SecretAccessKey":"SECRET","Expiration":"x"}"#).unwrap_err();
        assert!(!e.contains("SECRET"));
    }

    #[tokio::test]
    async fn runs_the_command_and_reports_failures() {
        let ok =
            ProcessProvider::new(r#"printf '{"Version":1,"AccessKeyId":"%s","SecretAccessKey":"S"}' AKID"#.into(), "p");
        assert_eq!(ok.provide_credentials().await.unwrap().access_key_id, "AKID");
        let e = ProcessProvider::new("echo nope >&2; exit 3".into(), "p").provide_credentials().await.unwrap_err();
        assert_eq!(e.kind(), crate::ErrorKind::Credentials);
        assert!(e.message().contains("exited 3: nope"), "{e}");
        let e = ProcessProvider::new("echo garbage".into(), "p").provide_credentials().await.unwrap_err();
        assert!(e.message().contains("not the expected JSON"), "{e}");
    }
}
