//! Web identity (EKS IRSA, and `web_identity_token_file` in a profile): an OIDC token in a
//! file, exchanged at STS for role credentials. The file is read on every fetch, because the
//! kubelet rotates it (hourly by default) and an old token is refused.

use futures::future::BoxFuture;

use super::sts::{RoleRequest, Sts};
use super::{credentials_error, Credentials, ProvideCredentials};
use crate::error::Result;

/// Exchanges the token in `token_file` for credentials of `role`.
#[derive(Debug)]
pub(crate) struct WebIdentityProvider {
    pub(crate) sts: Sts,
    pub(crate) token_file: std::path::PathBuf,
    pub(crate) role: RoleRequest,
}

impl WebIdentityProvider {
    async fn fetch(&self) -> Result<Credentials> {
        let token = tokio::fs::read_to_string(&self.token_file).await.map_err(|e| {
            let why = match e.kind() {
                std::io::ErrorKind::NotFound => "web identity token file not found",
                _ => "cannot read the web identity token file",
            };
            credentials_error("web identity", format!("{why}: {}", self.token_file.display())).with_source(e)
        })?;
        let token = token.trim();
        if token.is_empty() {
            return Err(credentials_error(
                "web identity",
                format!("the token file {} is empty", self.token_file.display()),
            ));
        }
        self.sts.assume_role_with_web_identity(&self.role, token).await
    }
}

impl ProvideCredentials for WebIdentityProvider {
    fn provide_credentials(&self) -> BoxFuture<'_, Result<Credentials>> {
        Box::pin(self.fetch())
    }
}

/// Assumes a role with credentials from another provider (`role_arn` + `source_profile` or
/// `credential_source`). The source is asked every time, so a refreshing source stays fresh.
#[derive(Debug)]
pub(crate) struct AssumeRoleProvider {
    pub(crate) sts: Sts,
    pub(crate) source: std::sync::Arc<dyn ProvideCredentials>,
    pub(crate) role: RoleRequest,
}

impl ProvideCredentials for AssumeRoleProvider {
    fn provide_credentials(&self) -> BoxFuture<'_, Result<Credentials>> {
        Box::pin(async move {
            let base = self.source.provide_credentials().await?;
            self.sts.assume_role(&base, &self.role).await
        })
    }
}
