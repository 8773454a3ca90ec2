//! Loading and creating 32-byte secret key files on disk.
//!
//! Shared by the master key and the server identity keys so all of them get
//! the same guarantees:
//! - new files are created with mode 0600 (parent directory 0700 if missing),
//!   written to a temporary file first and then hard-linked into place, so a
//!   crash never leaves a half-written key and two processes racing to create
//!   the key cannot silently end up with different keys;
//! - existing files are refused when group/other have any permission bit,
//!   and when they are not exactly 32 bytes (we never "repair" a key: a
//!   silently regenerated key would make existing data unreadable).

use std::fs::{self, File, OpenOptions};
use std::io::{self, Read, Write};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

use super::{random_array, CryptoError};

/// Length of every key file handled here.
pub(crate) const KEY_LEN: usize = 32;

fn io_err(path: &Path, source: io::Error) -> CryptoError {
    CryptoError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// Load the key at `path`, creating it from fresh OS randomness if it does not exist.
pub(crate) fn load_or_create(path: &Path) -> Result<[u8; KEY_LEN], CryptoError> {
    match load(path) {
        Err(CryptoError::Io { source, .. }) if source.kind() == io::ErrorKind::NotFound => {
            create(path)
        }
        other => other,
    }
}

/// Load an existing key file, enforcing permissions and length.
pub(crate) fn load(path: &Path) -> Result<[u8; KEY_LEN], CryptoError> {
    let file = File::open(path).map_err(|e| io_err(path, e))?;
    // Check the metadata of the handle we read from, not of the path, so the
    // check and the read concern the same file.
    let meta = file.metadata().map_err(|e| io_err(path, e))?;
    if !meta.is_file() {
        return Err(CryptoError::CorruptKey {
            path: path.to_path_buf(),
            reason: "not a regular file".into(),
        });
    }
    let mode = meta.permissions().mode() & 0o7777;
    if mode & 0o077 != 0 {
        return Err(CryptoError::InsecurePermissions {
            path: path.to_path_buf(),
            mode,
        });
    }
    // Read at most one byte more than expected so a huge file is not slurped.
    let mut buf = Vec::with_capacity(KEY_LEN + 1);
    (&file)
        .take(KEY_LEN as u64 + 1)
        .read_to_end(&mut buf)
        .map_err(|e| io_err(path, e))?;
    if buf.len() != KEY_LEN {
        let reason = if buf.len() > KEY_LEN {
            format!("expected exactly {KEY_LEN} bytes, found more")
        } else {
            format!("expected exactly {KEY_LEN} bytes, found {}", buf.len())
        };
        return Err(CryptoError::CorruptKey {
            path: path.to_path_buf(),
            reason,
        });
    }
    let mut key = [0u8; KEY_LEN];
    key.copy_from_slice(&buf);
    buf.fill(0);
    Ok(key)
}

/// Create a new key file atomically; if another process won the race, load theirs.
fn create(path: &Path) -> Result<[u8; KEY_LEN], CryptoError> {
    let parent = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    if !parent.exists() {
        fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(&parent)
            .map_err(|e| io_err(&parent, e))?;
    }

    let key: [u8; KEY_LEN] = random_array();
    let file_name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "key".into());
    let suffix: u64 = u64::from_le_bytes(random_array());
    let tmp = parent.join(format!(".{file_name}.tmp-{suffix:016x}"));

    write_new(&tmp, &key).map_err(|e| io_err(&tmp, e))?;

    // hard_link fails with AlreadyExists instead of overwriting, unlike rename.
    let linked = fs::hard_link(&tmp, path);
    let _ = fs::remove_file(&tmp);
    match linked {
        Ok(()) => {
            // Best effort: persist the directory entry too.
            if let Ok(dir) = File::open(&parent) {
                let _ = dir.sync_all();
            }
            Ok(key)
        }
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => load(path),
        // Some filesystems (certain FUSE/network mounts) lack hard links:
        // fall back to an exclusive create, which still never overwrites.
        Err(_) => match write_new(path, &key) {
            Ok(()) => Ok(key),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => load(path),
            Err(e) => Err(io_err(path, e)),
        },
    }
}

/// Exclusively create `path` with mode 0600 and write `key` to it durably.
/// A file this call created is removed again if writing it fails.
fn write_new(path: &Path, key: &[u8]) -> io::Result<()> {
    let mut f = OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)?;
    let written = f.write_all(key).and_then(|()| f.sync_all());
    if written.is_err() {
        drop(f);
        let _ = fs::remove_file(path);
    }
    written
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mode_of(path: &Path) -> u32 {
        fs::metadata(path).unwrap().permissions().mode() & 0o777
    }

    #[test]
    fn a_missing_key_file_is_created_0600_in_a_new_directory_and_reloads_identically() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("nested/data/test.key");
        let created = load_or_create(&path).unwrap();
        assert_eq!(mode_of(&path), 0o600);
        assert_eq!(fs::read(&path).unwrap(), created);
        assert_eq!(load_or_create(&path).unwrap(), created);
        // No temporary files are left behind.
        let entries: Vec<_> = fs::read_dir(path.parent().unwrap()).unwrap().collect();
        assert_eq!(entries.len(), 1);
    }

    #[test]
    fn two_created_keys_differ() {
        let dir = tempfile::tempdir().unwrap();
        let a = load_or_create(&dir.path().join("a.key")).unwrap();
        let b = load_or_create(&dir.path().join("b.key")).unwrap();
        assert_ne!(a, b);
    }

    #[test]
    fn a_group_or_world_accessible_key_file_is_refused_with_a_chmod_hint() {
        let dir = tempfile::tempdir().unwrap();
        for mode in [0o644, 0o640, 0o604, 0o660, 0o601] {
            let path = dir.path().join(format!("k{mode:o}.key"));
            fs::write(&path, [7u8; 32]).unwrap();
            fs::set_permissions(&path, fs::Permissions::from_mode(mode)).unwrap();
            let err = load_or_create(&path).unwrap_err();
            assert!(
                matches!(err, CryptoError::InsecurePermissions { mode: m, .. } if m == mode),
                "{err:?}"
            );
            let msg = err.to_string();
            assert!(msg.contains("chmod 600"), "{msg}");
            assert!(msg.contains(&path.display().to_string()), "{msg}");
        }
    }

    #[test]
    fn an_owner_only_read_only_key_file_is_accepted() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("ro.key");
        fs::write(&path, [9u8; 32]).unwrap();
        fs::set_permissions(&path, fs::Permissions::from_mode(0o400)).unwrap();
        assert_eq!(load(&path).unwrap(), [9u8; 32]);
    }

    #[test]
    fn a_key_file_of_the_wrong_length_is_refused_as_corrupt_and_left_untouched() {
        let dir = tempfile::tempdir().unwrap();
        for len in [0usize, 31, 33, 64] {
            let path = dir.path().join(format!("len{len}.key"));
            fs::write(&path, vec![1u8; len]).unwrap();
            fs::set_permissions(&path, fs::Permissions::from_mode(0o600)).unwrap();
            let err = load_or_create(&path).unwrap_err();
            assert!(matches!(err, CryptoError::CorruptKey { .. }), "{err:?}");
            assert!(err.to_string().contains("corrupt"));
            assert_eq!(fs::read(&path).unwrap().len(), len);
        }
    }

    #[test]
    fn a_directory_in_place_of_the_key_file_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("k.key");
        fs::DirBuilder::new().mode(0o700).create(&path).unwrap();
        assert!(load_or_create(&path).is_err());
    }
}
