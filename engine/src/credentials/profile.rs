//! The shared config and credentials files (`~/.aws/config`, `~/.aws/credentials`, or
//! `AWS_CONFIG_FILE` / `AWS_SHARED_CREDENTIALS_FILE`), and how a profile becomes a provider.
//!
//! A profile's keys are merged from both files, the credentials file winning, as the SDKs do.
//! What a profile provides, checked in this order:
//! 1. `role_arn`, with `web_identity_token_file`, or `source_profile` (a chain of profiles; a
//!    profile naming itself uses its own keys), or `credential_source` (`Environment`,
//!    `Ec2InstanceMetadata`, `EcsContainer`): a role assumed through STS;
//! 2. `sso_session` or `sso_start_url`: role credentials through the SSO portal;
//! 3. `credential_process`: a command's JSON;
//! 4. `aws_access_key_id` + `aws_secret_access_key` (+ `aws_session_token`).
//!
//! A profile with none of them (often just a `region`) provides nothing, and the chain moves
//! on to the container endpoint and IMDS.

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;

use super::chain::ChainContext;
use super::container::ContainerProvider;
use super::env::{expand_home, keys_from_env};
use super::imds::ImdsProvider;
use super::process::ProcessProvider;
use super::sso::SsoProvider;
use super::sts::{default_session_name, RoleRequest, Sts};
use super::web_identity::{AssumeRoleProvider, WebIdentityProvider};
use super::{credentials_error, Credentials, Env, ProvideCredentials, StaticProvider};
use crate::error::{Error, ErrorKind, Operation, Result};

type Section = HashMap<String, String>;

/// Every profile and SSO session of the two files.
#[derive(Debug, Default)]
pub(crate) struct Profiles {
    profiles: HashMap<String, Section>,
    sso_sessions: HashMap<String, Section>,
}

fn config_error(message: String) -> Error {
    Error::new(ErrorKind::Credentials, Operation::Config, message)
}

impl Profiles {
    /// Reads both files; a missing file is empty, an unparsable one is an error naming it.
    pub(crate) fn load(env: &Env) -> Result<Profiles> {
        let mut p = Profiles::default();
        if let Some(path) = env.aws_file("AWS_CONFIG_FILE", "config") {
            for (name, section) in read_ini(&path)? {
                if let Some(profile) = name.strip_prefix("profile ") {
                    p.profiles.entry(profile.trim().to_string()).or_default().extend(section);
                } else if let Some(session) = name.strip_prefix("sso-session ") {
                    p.sso_sessions.insert(session.trim().to_string(), section);
                } else if name == "default" {
                    p.profiles.entry(name).or_default().extend(section);
                }
            }
        }
        if let Some(path) = env.aws_file("AWS_SHARED_CREDENTIALS_FILE", "credentials") {
            for (name, section) in read_ini(&path)? {
                p.profiles.entry(name).or_default().extend(section);
            }
        }
        Ok(p)
    }

    pub(crate) fn get(&self, name: &str) -> Option<&Section> {
        self.profiles.get(name)
    }

    /// The profile's `region`.
    #[cfg(test)]
    pub(crate) fn region(&self, name: &str) -> Option<String> {
        self.get(name)?.get("region").filter(|r| !r.is_empty()).cloned()
    }
}

fn read_ini(path: &Path) -> Result<Vec<(String, Section)>> {
    if !path.exists() {
        return Ok(Vec::new());
    }
    let ini =
        ini::Ini::load_from_file(path).map_err(|e| config_error(format!("cannot parse {}: {e}", path.display())))?;
    Ok(ini
        .iter()
        .filter_map(|(name, props)| {
            let section = props.iter().map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_string())).collect();
            Some((name?.trim().to_string(), section))
        })
        .collect())
}

/// The provider profile `name` describes, `Ok(None)` when it has no credentials of any kind.
pub(crate) fn provider_for(
    profiles: &Profiles,
    name: &str,
    ctx: &ChainContext,
) -> Result<Option<Arc<dyn ProvideCredentials>>> {
    resolve(profiles, name, ctx, &mut Vec::new())
}

fn resolve(
    profiles: &Profiles,
    name: &str,
    ctx: &ChainContext,
    seen: &mut Vec<String>,
) -> Result<Option<Arc<dyn ProvideCredentials>>> {
    let Some(p) = profiles.get(name) else {
        return Err(config_error(format!("profile {name:?} is not in ~/.aws/config or ~/.aws/credentials")));
    };
    if seen.iter().any(|s| s == name) {
        seen.push(name.to_string());
        return Err(config_error(format!("profiles form a loop: {}", seen.join(" -> "))));
    }
    seen.push(name.to_string());
    let keys = static_keys(p);
    let bad = |why: String| config_error(format!("profile {name:?}: {why}"));
    if let Some(role_arn) = p.get("role_arn") {
        let region = p.get("region").cloned().unwrap_or_else(|| ctx.region.clone());
        let sts = Sts::new(ctx.fetcher.clone(), &ctx.env, &region);
        let role = RoleRequest {
            role_arn: role_arn.clone(),
            session_name: p.get("role_session_name").cloned().unwrap_or_else(default_session_name),
            external_id: p.get("external_id").cloned(),
            duration_seconds: match p.get("duration_seconds") {
                Some(d) => Some(d.parse().map_err(|_| bad(format!("duration_seconds {d:?} is not a number")))?),
                None => None,
            },
        };
        if let Some(file) = p.get("web_identity_token_file") {
            let token_file = expand_home(file, &ctx.env);
            return Ok(Some(Arc::new(WebIdentityProvider { sts, token_file, role })));
        }
        let source: Arc<dyn ProvideCredentials> = if let Some(src) = p.get("source_profile") {
            if src == name {
                let keys = keys.ok_or_else(|| bad("source_profile names itself but it has no keys".into()))?;
                Arc::new(StaticProvider(keys))
            } else {
                resolve(profiles, src, ctx, seen)?
                    .ok_or_else(|| bad(format!("its source_profile {src:?} has no credentials")))?
            }
        } else if let Some(cs) = p.get("credential_source") {
            credential_source(cs, ctx).map_err(|e| bad(e.message().to_string()))?
        } else {
            return Err(bad("role_arn needs source_profile, credential_source or web_identity_token_file".into()));
        };
        return Ok(Some(Arc::new(AssumeRoleProvider { sts, source, role })));
    }
    if p.contains_key("sso_session") || p.contains_key("sso_start_url") {
        return sso(profiles, name, p, ctx).map(|s| Some(Arc::new(s) as Arc<dyn ProvideCredentials>));
    }
    if let Some(command) = p.get("credential_process") {
        return Ok(Some(Arc::new(ProcessProvider::new(command.clone(), name))));
    }
    Ok(keys.map(|k| Arc::new(StaticProvider(k)) as Arc<dyn ProvideCredentials>))
}

fn static_keys(p: &Section) -> Option<Credentials> {
    let (id, secret) = (p.get("aws_access_key_id")?, p.get("aws_secret_access_key")?);
    if id.is_empty() || secret.is_empty() {
        return None;
    }
    let mut c = Credentials::new(id.clone(), secret.clone());
    c.session_token = p.get("aws_session_token").filter(|t| !t.is_empty()).cloned();
    Some(c)
}

fn credential_source(name: &str, ctx: &ChainContext) -> Result<Arc<dyn ProvideCredentials>> {
    Ok(match name {
        "Environment" => Arc::new(StaticProvider(keys_from_env(&ctx.env).ok_or_else(|| {
            config_error(
                "credential_source = Environment, but AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY are not set".into(),
            )
        })?)),
        "Ec2InstanceMetadata" => match &ctx.imds {
            Some(client) => Arc::new(ImdsProvider { client: client.clone(), last_resort: false }),
            None => {
                return Err(config_error(
                    "credential_source = Ec2InstanceMetadata, but AWS_EC2_METADATA_DISABLED is set".into(),
                ))
            }
        },
        "EcsContainer" => Arc::new(ContainerProvider::from_env(&ctx.env, ctx.fetcher.clone())?.ok_or_else(|| {
            config_error("credential_source = EcsContainer, but AWS_CONTAINER_CREDENTIALS_*_URI is not set".into())
        })?),
        other => {
            return Err(config_error(format!(
                "credential_source {other:?} is not one of Environment, Ec2InstanceMetadata, EcsContainer"
            )))
        }
    })
}

fn sso(profiles: &Profiles, name: &str, p: &Section, ctx: &ChainContext) -> Result<SsoProvider> {
    let need = |section: &Section, key: &str, what: &str| {
        section.get(key).cloned().ok_or_else(|| credentials_error("SSO", format!("{what} has no {key}")))
    };
    let this = format!("profile {name:?}");
    let (cache_key, sso_region) = match p.get("sso_session") {
        Some(session) => {
            let s = profiles.sso_sessions.get(session).ok_or_else(|| {
                credentials_error(
                    "SSO",
                    format!("{this} names sso_session {session:?}, which has no [sso-session {session}] section"),
                )
            })?;
            (session.clone(), need(s, "sso_region", &format!("sso-session {session:?}"))?)
        }
        None => (need(p, "sso_start_url", &this)?, need(p, "sso_region", &this)?),
    };
    let cache_dir = ctx
        .env
        .home()
        .map(|h| h.join(".aws").join("sso").join("cache"))
        .ok_or_else(|| credentials_error("SSO", "HOME is not set, so ~/.aws/sso/cache cannot be found"))?;
    Ok(SsoProvider {
        fetcher: ctx.fetcher.clone(),
        profile: name.to_string(),
        cache_key,
        cache_dir,
        portal: SsoProvider::portal_url(&ctx.env, &sso_region),
        account_id: need(p, "sso_account_id", &this)?,
        role_name: need(p, "sso_role_name", &this)?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ctx(dir: &Path, extra: &[(&str, &str)]) -> ChainContext {
        let home = dir.to_str().unwrap().to_string();
        let mut pairs: Vec<(&str, &str)> = vec![("HOME", Box::leak(home.into_boxed_str()))];
        pairs.extend_from_slice(extra);
        ChainContext::for_tests(Env::from_pairs(pairs))
    }

    fn write(dir: &Path, config: &str, credentials: &str) {
        std::fs::create_dir_all(dir.join(".aws")).unwrap();
        std::fs::write(dir.join(".aws/config"), config).unwrap();
        std::fs::write(dir.join(".aws/credentials"), credentials).unwrap();
    }

    #[test]
    fn merges_files_and_describes_each_kind() {
        let dir = tempfile::tempdir().unwrap();
        write(
            dir.path(),
            "[default]\nregion = eu-west-1\n\n[profile keys]\naws_access_key_id = A2\naws_secret_access_key = S2\n\
             aws_session_token = T2\n\n[profile proc]\ncredential_process = echo hi\n\n\
             [profile role]\nrole_arn = arn:aws:iam::1:role/r\nsource_profile = keys\n\n\
             [profile chain]\nrole_arn = arn:aws:iam::1:role/r2\nsource_profile = role\n\n\
             [profile loop1]\nrole_arn = arn:x\nsource_profile = loop2\n[profile loop2]\nrole_arn = arn:y\nsource_profile = loop1\n\n\
             [profile wi]\nrole_arn = arn:aws:iam::1:role/w\nweb_identity_token_file = ~/token\n\n\
             [profile sso]\nsso_session = corp\nsso_account_id = 111\nsso_role_name = Admin\n[sso-session corp]\nsso_region = us-east-2\nsso_start_url = https://corp.awsapps.com/start\n\n\
             [profile nosrc]\nrole_arn = arn:z\n\n[profile badsrc]\nrole_arn = arn:z\ncredential_source = Moon\n",
            "[default]\naws_access_key_id = A1\naws_secret_access_key = S1\n[keys]\naws_access_key_id = A2b\n",
        );
        let c = ctx(dir.path(), &[]);
        let p = Profiles::load(&c.env).unwrap();
        assert_eq!(p.region("default").as_deref(), Some("eu-west-1"));
        // The credentials file wins over the config file.
        assert_eq!(p.get("keys").unwrap()["aws_access_key_id"], "A2b");
        let describe = |name: &str| match provider_for(&p, name, &c) {
            Ok(Some(provider)) => format!("{provider:?}"),
            Ok(None) => "none".into(),
            Err(e) => format!("error: {}", e.message()),
        };
        assert!(describe("default").starts_with("StaticProvider"));
        assert!(describe("proc").starts_with("ProcessProvider"));
        assert!(describe("role").starts_with("AssumeRoleProvider"));
        let chain = describe("chain");
        assert!(chain.starts_with("AssumeRoleProvider") && chain.matches("AssumeRoleProvider").count() == 2, "{chain}");
        assert!(describe("loop1").contains("loop1 -> loop2 -> loop1"), "{}", describe("loop1"));
        let wi = describe("wi");
        assert!(
            wi.starts_with("WebIdentityProvider") && wi.contains(&format!("{}/token", dir.path().display())),
            "{wi}"
        );
        let sso = describe("sso");
        assert!(sso.contains("portal.sso.us-east-2.amazonaws.com") && sso.contains("cache_key: \"corp\""), "{sso}");
        assert!(describe("nosrc").contains("needs source_profile"));
        assert!(describe("badsrc").contains("Moon"));
        assert!(describe("missing").contains("is not in"));
        // Secrets never show in a provider's Debug.
        assert!(!describe("default").contains("S1"));
    }

    #[test]
    fn unparsable_file_is_a_clear_error() {
        let dir = tempfile::tempdir().unwrap();
        write(dir.path(), "[default\nregion = x\n", "");
        let e = Profiles::load(&ctx(dir.path(), &[]).env).unwrap_err();
        assert!(e.message().contains("cannot parse") && e.message().contains("config"), "{e}");
    }
}
