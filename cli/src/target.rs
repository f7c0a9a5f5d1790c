//! `s3://bucket/key` arguments of the fleet commands.

use crate::CliResult;

/// A bucket and a key or prefix (possibly empty).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct S3Target {
    pub(crate) bucket: String,
    pub(crate) key: String,
}

impl S3Target {
    /// Parses `s3://bucket[/key]`; the key is kept byte for byte (spaces, `+`, `%`, unicode).
    pub(crate) fn parse(text: &str) -> CliResult<S3Target> {
        let rest = text.strip_prefix("s3://").ok_or_else(|| format!("{text}: expected s3://bucket[/prefix]"))?;
        let (bucket, key) = rest.split_once('/').unwrap_or((rest, ""));
        if bucket.is_empty() {
            return Err(format!("{text}: missing bucket name").into());
        }
        Ok(S3Target { bucket: bucket.to_string(), key: key.to_string() })
    }

    /// `s3://bucket/key` of another key in the same bucket.
    pub(crate) fn uri(&self, key: &str) -> String {
        format!("s3://{}/{key}", self.bucket)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_stay_intact() {
        let t = S3Target::parse("s3://b/dir/a b+c%20ü").unwrap();
        assert_eq!((t.bucket.as_str(), t.key.as_str()), ("b", "dir/a b+c%20ü"));
        assert_eq!(S3Target::parse("s3://b").unwrap().key, "");
        assert!(S3Target::parse("b/k").is_err());
        assert!(S3Target::parse("s3:///k").is_err());
    }
}
