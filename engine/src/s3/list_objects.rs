//! ListObjectsV2 (one page; the client follows continuation tokens).

use http::Method;

use super::{xml, S3Request, S3};
use crate::error::{Error, Operation};
use crate::types::{ListOptions, ListPage, ObjectSummary};

impl S3 {
    /// One page of keys in `bucket`.
    pub(crate) async fn list_objects(&self, bucket: &str, opts: &ListOptions) -> Result<ListPage, Error> {
        let op = Operation::ListObjectsV2;
        let mut req = S3Request::new(op, Method::GET, bucket, None).query("list-type", "2");
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
        Ok(ListPage {
            objects: result
                .contents
                .into_iter()
                .map(|c| ObjectSummary { key: c.key, size: c.size, etag: c.etag, last_modified: c.last_modified })
                .collect(),
            common_prefixes: result.common_prefixes.into_iter().map(|p| p.prefix).collect(),
            next_continuation_token: if result.is_truncated { result.next_continuation_token } else { None },
        })
    }
}
