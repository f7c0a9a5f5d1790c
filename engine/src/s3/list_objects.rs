//! ListObjectsV2 (one page; the client follows continuation tokens).
//!
//! Keys are asked for URL-encoded (`encoding-type=url`), as the AWS SDKs do: a key may hold
//! any byte, including control characters that XML 1.0 cannot carry, and S3 then escapes them.
//! They are decoded only when the answer says it applied the encoding (`<EncodingType>`), so a
//! server that ignores the parameter still lists correctly.

use http::Method;

use super::{xml, S3Request, S3};
use crate::error::{Error, ErrorKind, Operation};
use crate::types::{ListOptions, ListPage, ObjectSummary};

impl S3 {
    /// One page of keys in `bucket`.
    pub(crate) async fn list_objects(&self, bucket: &str, opts: &ListOptions) -> Result<ListPage, Error> {
        let op = Operation::ListObjectsV2;
        let mut req =
            S3Request::new(op, Method::GET, bucket, None).query("list-type", "2").query("encoding-type", "url");
        if let Some(t) = &opts.continuation_token {
            req = req.query("continuation-token", t);
        }
        if let Some(d) = &opts.delimiter {
            req = req.query("delimiter", d);
        }
        if let Some(n) = opts.max_keys {
            req = req.query("max-keys", n.to_string());
        }
        if let Some(p) = &opts.prefix {
            req = req.query("prefix", p);
        }
        let (_, body) = self.execute(&req).await?;
        let result: xml::ListBucketResult = xml::parse(&body, op)?;
        let encoded = result.encoding_type.as_deref().is_some_and(|e| e.eq_ignore_ascii_case("url"));
        let decode = |s: String| if encoded { url_decode(&s) } else { Ok(s) };
        Ok(ListPage {
            objects: result
                .contents
                .into_iter()
                .map(|c| {
                    Ok(ObjectSummary {
                        key: decode(c.key)?,
                        size: c.size,
                        etag: c.etag,
                        last_modified: c.last_modified,
                    })
                })
                .collect::<Result<_, Error>>()?,
            common_prefixes: result.common_prefixes.into_iter().map(|p| decode(p.prefix)).collect::<Result<_, _>>()?,
            next_continuation_token: if result.is_truncated { result.next_continuation_token } else { None },
        })
    }
}

/// Decodes a key as S3 encodes it for `encoding-type=url`: `+` is a space (a literal plus
/// arrives as `%2B`), `%XX` a byte; the bytes must be UTF-8, as keys are.
fn url_decode(s: &str) -> Result<String, Error> {
    let plus_as_space = s.replace('+', " ");
    percent_encoding::percent_decode_str(&plus_as_space).decode_utf8().map(|k| k.into_owned()).map_err(|_| {
        Error::new(ErrorKind::Protocol, Operation::ListObjectsV2, format!("listed key {s:?} is not UTF-8 once decoded"))
    })
}

#[cfg(test)]
mod tests {
    use super::url_decode;

    #[test]
    fn url_encoded_keys_decode_as_s3_encodes_them() {
        assert_eq!(url_decode("pct%2541").unwrap(), "pct%41");
        assert_eq!(url_decode("plus%2Bx").unwrap(), "plus+x");
        assert_eq!(url_decode("sp+ace").unwrap(), "sp ace");
        assert_eq!(url_decode("ctl%01/%C3%BC").unwrap(), "ctl\u{1}/ü");
        assert_eq!(url_decode("plain/key.bin").unwrap(), "plain/key.bin");
        assert!(url_decode("bad%FF").is_err());
    }
}
