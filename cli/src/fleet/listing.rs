//! What a fleet command works on: the objects under an S3 prefix or the files under a local
//! directory, each named relative to its root with `/` separators, so the two sides compare
//! name for name.

use std::future::Future;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use gantry::{Client, ListOptions};

use crate::CliResult;

/// One object or file.
#[derive(Debug, Clone)]
pub(crate) struct Entry {
    /// Name below the root, `/`-separated (a key minus the prefix, or a relative path).
    pub(crate) name: String,
    pub(crate) size: u64,
    /// Last modification: the file's mtime, or the object's LastModified.
    pub(crate) modified: Option<SystemTime>,
    /// The object's ETag (S3 side only).
    pub(crate) etag: Option<String>,
}

/// Every object under `prefix` of `bucket`, named relative to `prefix`. Keys ending in `/`
/// (folder markers) are left out: no file can carry their name.
pub(crate) fn s3_entries(client: &Client, bucket: &str, prefix: &str) -> CliResult<Vec<Entry>> {
    let mut all = Vec::new();
    client.block_on(s3_pages(client, bucket, prefix, |page| {
        all.extend(page);
        std::future::ready(true)
    }))?;
    Ok(all)
}

/// The objects under `prefix` of `bucket` as [`s3_entries`] names them, handed to `each` a
/// ListObjectsV2 page at a time as the pages arrive, so work can start on the first page
/// while the next is listed. `each` answers whether to go on.
pub(crate) async fn s3_pages<F, Fut>(client: &Client, bucket: &str, prefix: &str, mut each: F) -> gantry::Result<()>
where
    F: FnMut(Vec<Entry>) -> Fut,
    Fut: Future<Output = bool>,
{
    let mut options = ListOptions::new();
    if !prefix.is_empty() {
        options = options.prefix(prefix);
    }
    loop {
        let page = client.list_objects(bucket, &options).await?;
        let entries = page
            .objects
            .into_iter()
            .filter(|o| !o.key.ends_with('/') && o.key.len() > prefix.len())
            .map(|o| Entry {
                name: o.key[prefix.len()..].to_string(),
                size: o.size,
                modified: o.last_modified.as_deref().and_then(|t| humantime::parse_rfc3339_weak(t).ok()),
                etag: o.etag,
            })
            .collect();
        if !each(entries).await {
            return Ok(());
        }
        match page.next_continuation_token {
            Some(token) => options.continuation_token = Some(token),
            None => return Ok(()),
        }
    }
}

/// Every regular file under `root` (symlinks to files followed, directory loops refused),
/// named relative to `root`.
pub(crate) fn local_entries(root: &Path) -> CliResult<Vec<Entry>> {
    match std::fs::metadata(root) {
        Err(e) => return Err(format!("{}: {e}", root.display()).into()),
        Ok(m) if !m.is_dir() => return Err(format!("{} is not a directory", root.display()).into()),
        Ok(_) => {}
    }
    let mut out = Vec::new();
    for item in walkdir::WalkDir::new(root).follow_links(true).sort_by_file_name() {
        let item = item.map_err(|e| format!("cannot read {}: {e}", root.display()))?;
        if !item.file_type().is_file() {
            continue;
        }
        let meta = item.metadata().map_err(|e| format!("{}: {e}", item.path().display()))?;
        let rel = item.path().strip_prefix(root).map_err(|e| format!("{}: {e}", item.path().display()))?;
        let name = rel
            .components()
            .map(|c| c.as_os_str().to_str().ok_or_else(|| format!("{}: not a UTF-8 file name", item.path().display())))
            .collect::<Result<Vec<_>, _>>()?
            .join("/");
        out.push(Entry { name, size: meta.len(), modified: meta.modified().ok(), etag: None });
    }
    Ok(out)
}

/// The local path of `name` below `root`; refuses a name that would leave `root` (a key
/// such as `a/../../etc/passwd`) or that is absolute.
pub(crate) fn local_path(root: &Path, name: &str) -> Result<PathBuf, String> {
    let mut path = root.to_path_buf();
    for seg in name.split('/') {
        match seg {
            "" | "." => continue,
            ".." => return Err(format!("{name}: the key would leave the destination directory")),
            s => path.push(s),
        }
    }
    if path == root {
        return Err(format!("{name}: the key names no file"));
    }
    Ok(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_map_to_paths_inside_the_root() {
        let root = Path::new("/dst");
        assert_eq!(local_path(root, "a b/c+d%.bin").unwrap(), Path::new("/dst/a b/c+d%.bin"));
        assert_eq!(local_path(root, "./x").unwrap(), Path::new("/dst/x"));
        assert!(local_path(root, "a/../../etc/passwd").is_err());
        assert!(local_path(root, "/").is_err());
    }

    #[test]
    fn local_entries_are_relative_and_sorted() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("sub/deeper")).unwrap();
        std::fs::write(dir.path().join("b.txt"), b"12").unwrap();
        std::fs::write(dir.path().join("sub/deeper/ü n+i.bin"), b"123").unwrap();
        let names: Vec<(String, u64)> =
            local_entries(dir.path()).unwrap().into_iter().map(|e| (e.name, e.size)).collect();
        assert_eq!(names, [("b.txt".to_string(), 2), ("sub/deeper/ü n+i.bin".to_string(), 3)]);
        assert!(local_entries(&dir.path().join("missing")).is_err());
        assert!(local_entries(&dir.path().join("b.txt")).is_err());
    }
}
