//! Whole-database copies for `switchboard backup` and `restore`: SQLite's online backup API,
//! page by page, so a copy of the live database is consistent while the service writes, and
//! the command can report the bytes copied as it goes.

use std::path::Path;

use rusqlite::backup::{Backup, StepResult};
use rusqlite::{Connection, OpenFlags};

use super::{Store, StoreError};

impl Store {
    /// Consistent online copy of the live database (SQLite backup API), safe while serving;
    /// `on_step(bytes copied, bytes in all)` as it goes.
    pub fn backup_to(
        &self,
        target: &Path,
        on_step: &mut dyn FnMut(u64, u64),
    ) -> Result<(), StoreError> {
        let conn = self.conn()?;
        copy_to_file(&conn, target, on_step)?;
        Ok(())
    }
}

/// Pages copied per step: 256 pages of 4 KiB are 1 MiB between two progress reports.
const PAGES_PER_STEP: i32 = 256;

/// Opens a database file read-only (the file a restore reads, or one `check-config` inspects
/// without creating it).
pub fn open_read_only(path: &Path) -> rusqlite::Result<Connection> {
    Connection::open_with_flags(path, OpenFlags::SQLITE_OPEN_READ_ONLY)
}

/// The schema version the migrations left in the file (`PRAGMA user_version`); reading it
/// fails on a file that is not an SQLite database.
pub fn schema_version(conn: &Connection) -> rusqlite::Result<i64> {
    conn.pragma_query_value(None, "user_version", |r| r.get(0))
}

/// Copies the main database of `src` into the file `target` (created, or overwritten page by
/// page), calling `on_step(bytes copied, bytes in all)` after every step.
pub fn copy_to_file(
    src: &Connection,
    target: &Path,
    on_step: &mut dyn FnMut(u64, u64),
) -> rusqlite::Result<()> {
    let page_size: i64 = src.pragma_query_value(None, "page_size", |r| r.get(0))?;
    let page_size = u64::try_from(page_size).unwrap_or(0);
    let mut dst = Connection::open(target)?;
    let backup = Backup::new(src, &mut dst)?;
    loop {
        let step = backup.step(PAGES_PER_STEP)?;
        let progress = backup.progress();
        let total = u64::try_from(progress.pagecount).unwrap_or(0);
        let left = u64::try_from(progress.remaining).unwrap_or(0).min(total);
        on_step((total - left) * page_size, total * page_size);
        match step {
            StepResult::More => {}
            StepResult::Done => return Ok(()),
            // Another connection holds a lock the copy needs: fail as SQLite would rather
            // than wait without a bound (the caller may simply run the command again).
            _ => {
                return Err(rusqlite::Error::SqliteFailure(
                    rusqlite::ffi::Error::new(rusqlite::ffi::SQLITE_BUSY),
                    Some("the database stayed locked during the copy".to_owned()),
                ))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_copy_reports_its_bytes_and_reads_back() {
        let dir = tempfile::tempdir().unwrap();
        let src = Connection::open(dir.path().join("a.db")).unwrap();
        // 600 rows of 4000 bytes: about 2.4 MB, several steps of 1 MiB.
        src.execute_batch(
            "PRAGMA user_version = 7; CREATE TABLE t (x BLOB);
             WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 600)
             INSERT INTO t SELECT zeroblob(4000) FROM n;",
        )
        .unwrap();
        let target = dir.path().join("b.db");
        let mut steps = Vec::new();
        copy_to_file(&src, &target, &mut |done, total| steps.push((done, total))).unwrap();
        assert!(steps.len() > 1, "several steps for > 1 MiB: {steps:?}");
        let (done, total) = *steps.last().unwrap();
        assert_eq!(done, total);
        assert!(total > 2_000_000, "{total}");
        assert!(steps.windows(2).all(|w| w[0].0 <= w[1].0), "{steps:?}");
        let copy = open_read_only(&target).unwrap();
        assert_eq!(schema_version(&copy).unwrap(), 7);
        let rows: i64 = copy
            .query_row("SELECT COUNT(*) FROM t", [], |r| r.get(0))
            .unwrap();
        assert_eq!(rows, 600);
    }
}
