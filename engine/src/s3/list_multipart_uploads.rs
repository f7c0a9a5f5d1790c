//! ListMultipartUploads: what was left behind (`gantry uploads ls`, and our tests), every page.

use http::Method;

use super::{xml, S3Request, S3};
use crate::error::{Error, Operation};
use crate::types::MultipartUploadSummary;

impl S3 {
    /// In-progress multipart uploads in `bucket` under `prefix`, every page.
    pub(crate) async fn list_multipart_uploads(
        &self,
        bucket: &str,
        prefix: Option<&str>,
    ) -> Result<Vec<MultipartUploadSummary>, Error> {
        let op = Operation::ListMultipartUploads;
        let mut all = Vec::new();
        let mut markers: Option<(String, String)> = None;
        loop {
            let mut req = S3Request::new(op, Method::GET, bucket, None).query("uploads", "");
            if let Some(p) = prefix {
                req = req.query("prefix", p);
            }
            if let Some((key, id)) = &markers {
                req = req.query("key-marker", key.clone()).query("upload-id-marker", id.clone());
            }
            let (_, body) = self.execute(&req).await?;
            let result: xml::ListMultipartUploadsResult = xml::parse(&body, op)?;
            all.extend(result.uploads.into_iter().map(|u| MultipartUploadSummary {
                key: u.key,
                upload_id: u.upload_id,
                initiated: u.initiated.as_deref().and_then(crate::credentials::parse_time),
            }));
            match (result.is_truncated, result.next_key_marker, result.next_upload_id_marker) {
                (true, Some(key), Some(id)) if markers.as_ref() != Some(&(key.clone(), id.clone())) => {
                    markers = Some((key, id))
                }
                _ => return Ok(all),
            }
        }
    }
}
