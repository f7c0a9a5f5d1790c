//! The default chain, in the AWS SDKs' order: environment keys, web identity from the
//! environment (IRSA), the profile, the container endpoint, then IMDS. The first source that
//! is *configured* is used, and its errors are reported as they are: a broken
//! `credential_process` fails loudly instead of silently falling through to IMDS.

use std::sync::Arc;

use super::container::ContainerProvider;
use super::env::keys_from_env;
use super::fetch::Fetcher;
use super::imds::{ImdsClient, ImdsProvider};
use super::profile::{provider_for, Profiles};
use super::sts::{default_session_name, RoleRequest, Sts};
use super::web_identity::WebIdentityProvider;
use super::{Env, ProvideCredentials, StaticProvider};
use crate::error::{Error, ErrorKind, Operation, Result};

/// What the providers of one client share.
#[derive(Debug, Clone)]
pub(crate) struct ChainContext {
    pub(crate) env: Env,
    pub(crate) fetcher: Fetcher,
    /// The client's region: where STS is called unless a profile says otherwise.
    pub(crate) region: String,
    /// `None` when IMDS is disabled.
    pub(crate) imds: Option<Arc<ImdsClient>>,
}

impl ChainContext {
    pub(crate) fn new(env: Env, fetcher: Fetcher, region: String) -> Self {
        let imds = ImdsClient::from_env(&env, fetcher.clone()).map(Arc::new);
        ChainContext { env, fetcher, region, imds }
    }

    #[cfg(test)]
    pub(crate) fn for_tests(env: Env) -> Self {
        let t = crate::config::Timeouts::default();
        let connector = crate::http::Connector::new(t.connect, t.tls_handshake, None, None);
        ChainContext::new(env, Fetcher::new(connector), "us-east-1".into())
    }
}

/// The provider the default chain picks for this machine, and the name of its source (for
/// `cp --json` and the logs).
pub(crate) fn default_provider(
    ctx: &ChainContext,
    profile: Option<&str>,
) -> Result<(Arc<dyn ProvideCredentials>, &'static str)> {
    let env = &ctx.env;
    if let Some(keys) = keys_from_env(env) {
        return Ok((Arc::new(StaticProvider(keys)), "environment"));
    }
    if let (Some(file), Some(role_arn)) = (env.get("AWS_WEB_IDENTITY_TOKEN_FILE"), env.get("AWS_ROLE_ARN")) {
        let role = RoleRequest {
            role_arn,
            session_name: env.get("AWS_ROLE_SESSION_NAME").unwrap_or_else(default_session_name),
            external_id: None,
            duration_seconds: None,
        };
        let sts = Sts::new(ctx.fetcher.clone(), env, &ctx.region);
        return Ok((Arc::new(WebIdentityProvider { sts, token_file: file.into(), role }), "web identity"));
    }
    let explicit = profile.map(str::to_string).or_else(|| env.get("AWS_PROFILE"));
    let name = explicit.clone().unwrap_or_else(|| "default".to_string());
    let profiles = Profiles::load(env)?;
    if profiles.get(&name).is_some() {
        if let Some(p) = provider_for(&profiles, &name, ctx)? {
            return Ok((p, "profile"));
        }
    } else if explicit.is_some() {
        return Err(Error::new(
            ErrorKind::Credentials,
            Operation::Config,
            format!("profile {name:?} is not in ~/.aws/config or ~/.aws/credentials"),
        ));
    }
    if let Some(c) = ContainerProvider::from_env(env, ctx.fetcher.clone())? {
        return Ok((Arc::new(c), "container"));
    }
    match &ctx.imds {
        Some(client) => Ok((Arc::new(ImdsProvider { client: client.clone(), last_resort: true }), "imds")),
        None => Err(Error::new(
            ErrorKind::Credentials,
            Operation::Config,
            format!(
                "no credentials: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or add profile {name:?} to \
                 ~/.aws/credentials (instance metadata is off: AWS_EC2_METADATA_DISABLED)"
            ),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pick(pairs: &[(&str, &str)], profile: Option<&str>) -> String {
        let mut all = vec![("HOME", "/nonexistent-gantry-home")];
        all.extend_from_slice(pairs);
        match default_provider(&ChainContext::for_tests(Env::from_pairs(all)), profile) {
            Ok((_, source)) => source.to_string(),
            Err(e) => format!("error: {}", e.message()),
        }
    }

    #[test]
    fn order_of_the_chain() {
        let keys = [("AWS_ACCESS_KEY_ID", "A"), ("AWS_SECRET_ACCESS_KEY", "S")];
        let wi = [("AWS_WEB_IDENTITY_TOKEN_FILE", "/t"), ("AWS_ROLE_ARN", "arn:r")];
        let ecs = [("AWS_CONTAINER_CREDENTIALS_RELATIVE_URI", "/v2/credentials/x")];
        assert_eq!(pick(&[keys.as_slice(), &wi, &ecs].concat(), None), "environment");
        assert_eq!(pick(&[wi.as_slice(), &ecs].concat(), None), "web identity");
        assert_eq!(pick(&ecs, None), "container");
        assert_eq!(pick(&[], None), "imds");
        let off = pick(&[("AWS_EC2_METADATA_DISABLED", "true")], None);
        assert!(off.starts_with("error: no credentials"), "{off}");
        assert!(pick(&[], Some("nope")).contains("profile \"nope\" is not in"));
        let bad = pick(&[("AWS_CONTAINER_CREDENTIALS_FULL_URI", "http://10.1.1.1/x")], None);
        assert!(bad.contains("plain http"), "{bad}");
    }
}
