//! A store's files that the process reads outside SQLite (the backup reads
//! the database file and its WAL index), held open until the process ends.
//!
//! Closing any descriptor of a file drops every POSIX lock the process holds
//! on it, and SQLite's locks are POSIX locks: on the database file, the
//! shared lock that tells a closing connection elsewhere that it is not the
//! last one (the last one copies the WAL into the file, then removes it); on
//! the WAL index, the read marks that keep a checkpoint from writing into the
//! file under a reader. A server that backs itself up holds those locks for
//! its own connections, so a descriptor opened beside them is never closed:
//! one for each file (each inode) a process reads this way.

use std::fs::File;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

/// The file at `path`, opened for reading once per inode and never closed.
pub(super) fn held_open(path: &Path) -> std::io::Result<Arc<File>> {
    static HELD: Mutex<Vec<(PathBuf, Arc<File>)>> = Mutex::new(Vec::new());
    let now = std::fs::metadata(path)?;
    let same = |file: &File| {
        file.metadata()
            .is_ok_and(|m| (m.dev(), m.ino()) == (now.dev(), now.ino()))
    };
    let mut held = HELD.lock().unwrap_or_else(|e| e.into_inner());
    if let Some((_, file)) = held.iter().find(|(p, f)| p == path && same(f)) {
        return Ok(file.clone());
    }
    let file = Arc::new(File::open(path)?);
    held.push((path.to_owned(), file.clone()));
    Ok(file)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A file is opened once, and again only when another file takes its
    /// name; the descriptor held reads the file it was opened on.
    #[test]
    fn one_descriptor_per_file_under_a_name() {
        use std::os::unix::fs::FileExt;
        let dir = crate::tests::temp_dir("held-files");
        let path = dir.join("f");
        std::fs::write(&path, b"first").unwrap();
        let a = held_open(&path).unwrap();
        let b = held_open(&path).unwrap();
        assert!(Arc::ptr_eq(&a, &b));
        // Replaced under the same name (a rename, as a restore does).
        let other = dir.join("g");
        std::fs::write(&other, b"second").unwrap();
        std::fs::rename(&other, &path).unwrap();
        let c = held_open(&path).unwrap();
        assert!(!Arc::ptr_eq(&a, &c));
        let mut bytes = [0u8; 5];
        c.read_exact_at(&mut bytes, 0).unwrap();
        assert_eq!(&bytes, b"secon");
        a.read_exact_at(&mut bytes, 0).unwrap();
        assert_eq!(&bytes, b"first");
        assert!(held_open(&dir.join("missing")).is_err());
        let _ = std::fs::remove_dir_all(&dir);
    }
}
