//! ListBuckets.

use http::Method;

use super::{xml, S3Request, S3};
use crate::error::{Error, Operation};
use crate::types::BucketSummary;

impl S3 {
    /// The buckets the credentials own (`GET /` on the endpoint).
    pub(crate) async fn list_buckets(&self) -> Result<Vec<BucketSummary>, Error> {
        let op = Operation::ListBuckets;
        let req = S3Request::new(op, Method::GET, "", None);
        let (_, body) = self.execute(&req).await?;
        let doc: xml::ListAllMyBucketsResult = xml::parse(&body, op)?;
        Ok(doc
            .buckets
            .buckets
            .into_iter()
            .map(|b| BucketSummary { name: b.name, creation_date: b.creation_date })
            .collect())
    }
}
