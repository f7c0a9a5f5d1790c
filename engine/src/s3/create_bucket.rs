//! CreateBucket (used by tests, the demo and `gantry serve` users).

use http::Method;

use super::{S3Request, S3};
use crate::error::{Error, Operation};

impl S3 {
    /// Creates `bucket` in the client's region (no location constraint document: the
    /// endpoint's default region).
    pub(crate) async fn create_bucket(&self, bucket: &str) -> Result<(), Error> {
        let req = S3Request::new(Operation::CreateBucket, Method::PUT, bucket, None);
        self.execute(&req).await.map(|_| ())
    }
}
