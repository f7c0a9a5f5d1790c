//! SigV4 signing through `aws-sigv4`. For S3: no URI double-encoding, no path normalisation,
//! and an `x-amz-content-sha256` header on every request; other services (STS) get the
//! SDKs' default settings.
//!
//! The keys are not held here: every request is signed with whatever the credentials cache
//! holds at that moment, so refreshed credentials take effect on the next request.

use std::time::SystemTime;

use aws_sigv4::http_request::{
    sign, PayloadChecksumKind, PercentEncodingMode, SignableBody, SignableRequest, SigningSettings,
    UriPathNormalizationMode,
};
use aws_sigv4::sign::v4;
use aws_smithy_runtime_api::client::identity::Identity;

use crate::error::{Error, ErrorKind, Operation};

/// Signs requests for one region and service.
#[derive(Debug, Clone)]
pub(crate) struct Signer {
    region: String,
    service: &'static str,
}

/// Whose keys sign, for which service.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum As {
    /// The client's credentials, for the signer's service.
    Own,
    /// The client's credentials, for `s3express` (CreateSession).
    ExpressBase,
    /// An S3 Express session, for `s3express`, its token in `x-amz-s3session-token`.
    ExpressSession,
}

/// What the signature says about the body.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Payload<'a> {
    /// `UNSIGNED-PAYLOAD`.
    Unsigned,
    /// Hash these bytes and sign the hash.
    Signed(&'a [u8]),
    /// A fixed `x-amz-content-sha256` value such as `STREAMING-UNSIGNED-PAYLOAD-TRAILER`.
    Precomputed(&'static str),
}

impl Signer {
    pub(crate) fn new(region: String, service: &'static str) -> Self {
        Signer { region, service }
    }

    /// Adds the SigV4 headers for `identity` to `req`.
    pub(crate) fn sign<B>(
        &self,
        req: &mut http::Request<B>,
        payload: Payload<'_>,
        op: Operation,
        identity: &Identity,
    ) -> Result<(), Error> {
        self.sign_in(req, payload, op, identity, &self.region)
    }

    /// [`Signer::sign`] for another region (a bucket that lives elsewhere).
    pub(crate) fn sign_in<B>(
        &self,
        req: &mut http::Request<B>,
        payload: Payload<'_>,
        op: Operation,
        identity: &Identity,
        region: &str,
    ) -> Result<(), Error> {
        self.sign_as(req, payload, op, identity, region, As::Own)
    }

    /// [`Signer::sign_in`] for S3 Express: for the `s3express` service, and with a session's
    /// token in `x-amz-s3session-token` when `identity` is a session.
    pub(crate) fn sign_as<B>(
        &self,
        req: &mut http::Request<B>,
        payload: Payload<'_>,
        op: Operation,
        identity: &Identity,
        region: &str,
        who: As,
    ) -> Result<(), Error> {
        let mut settings = SigningSettings::default();
        if self.service.starts_with("s3") {
            settings.percent_encoding_mode = PercentEncodingMode::Single;
            settings.uri_path_normalization_mode = UriPathNormalizationMode::Disabled;
            settings.payload_checksum_kind = PayloadChecksumKind::XAmzSha256;
        }
        let service = match who {
            As::Own => self.service,
            As::ExpressBase => super::express::SERVICE,
            As::ExpressSession => {
                settings.session_token_name_override = Some(super::express::TOKEN_HEADER);
                super::express::SERVICE
            }
        };
        let params = v4::SigningParams::builder()
            .identity(identity)
            .region(region)
            .name(service)
            .time(SystemTime::now())
            .settings(settings)
            .build()
            .map_err(|e| Error::new(ErrorKind::Credentials, op, "cannot build signing parameters").with_source(e))?
            .into();
        let body = match payload {
            Payload::Unsigned => SignableBody::UnsignedPayload,
            Payload::Signed(bytes) => SignableBody::Bytes(bytes),
            Payload::Precomputed(value) => SignableBody::Precomputed(value.to_string()),
        };
        let uri = req.uri().to_string();
        let headers = req.headers().iter().filter_map(|(k, v)| Some((k.as_str(), v.to_str().ok()?)));
        let signable = SignableRequest::new(req.method().as_str(), uri.as_str(), headers, body)
            .map_err(|e| Error::new(ErrorKind::InvalidInput, op, "request cannot be signed").with_source(e))?;
        let (instructions, _signature) = sign(signable, &params)
            .map_err(|e| Error::new(ErrorKind::Credentials, op, "signing failed").with_source(e))?
            .into_parts();
        instructions.apply_to_request_http1x(req);
        Ok(())
    }
}
