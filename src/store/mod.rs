//! SQLite storage: one r2d2 pool over a WAL database, numbered SQL migrations embedded in
//! the binary, and `run` to execute queries off the async executor.
//!
//! Each aggregate has its own small repository module taking a `&Connection`.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use r2d2::{Pool, PooledConnection};
use r2d2_sqlite::SqliteConnectionManager;
use rusqlite::Connection;

use crate::config::StorageConfig;

pub mod api_tokens;
pub mod backup;
pub mod bridge_logins;
pub mod conversation;
pub mod devices;
pub mod e2ee_trust;
pub mod email;
pub mod epoch;
pub mod history;
pub mod last_message;
pub mod linked_groups;
pub mod login_codes;
pub mod matrix_logouts;
pub mod member_profiles;
pub mod messages;
pub mod preview_settings;
pub mod push_subscriptions;
pub mod reactions;
pub mod refresh_tokens;
pub mod reminders;
pub mod rooms;
pub mod scheduled_messages;
pub mod search_index;
pub mod sent_transactions;
pub mod shred;
pub mod sync_state;
pub mod user_keys;
pub mod users;

pub type Conn = PooledConnection<SqliteConnectionManager>;

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("database error: {0}")]
    Sqlite(#[from] rusqlite::Error),
    #[error("database pool error: {0}")]
    Pool(#[from] r2d2::Error),
    #[error("database task failed: {0}")]
    Join(String),
    #[error("no database connection came free in time")]
    Saturated,
    #[error("cannot create data directory {path}: {source}")]
    DataDir {
        path: String,
        source: std::io::Error,
    },
    #[error("database schema version {found} is newer than this binary knows ({known}); upgrade switchboard")]
    TooNew { found: i64, known: i64 },
}

/// Forward-only migrations; the index + 1 is the `PRAGMA user_version` after applying it.
const MIGRATIONS: &[(&str, &str)] = &[
    ("0001_init", include_str!("../../migrations/0001_init.sql")),
    ("0002_keys", include_str!("../../migrations/0002_keys.sql")),
    (
        "0003_conversations",
        include_str!("../../migrations/0003_conversations.sql"),
    ),
    (
        "0004_bridges",
        include_str!("../../migrations/0004_bridges.sql"),
    ),
    (
        "0005_scheduler",
        include_str!("../../migrations/0005_scheduler.sql"),
    ),
    (
        "0006_code_failures",
        include_str!("../../migrations/0006_code_failures.sql"),
    ),
    (
        "0007_room_invites",
        include_str!("../../migrations/0007_room_invites.sql"),
    ),
    (
        "0008_sessions",
        include_str!("../../migrations/0008_sessions.sql"),
    ),
    (
        "0009_room_list_order",
        include_str!("../../migrations/0009_room_list_order.sql"),
    ),
    (
        "0010_encrypted_rooms",
        include_str!("../../migrations/0010_encrypted_rooms.sql"),
    ),
    (
        "0011_history",
        include_str!("../../migrations/0011_history.sql"),
    ),
    (
        "0012_email",
        include_str!("../../migrations/0012_email.sql"),
    ),
    (
        "0013_search",
        include_str!("../../migrations/0013_search.sql"),
    ),
    (
        "0014_rich_messages",
        include_str!("../../migrations/0014_rich_messages.sql"),
    ),
    (
        "0015_mcp_actions",
        include_str!("../../migrations/0015_mcp_actions.sql"),
    ),
    (
        "0016_room_recipient_name",
        include_str!("../../migrations/0016_room_recipient_name.sql"),
    ),
    (
        "0017_email_refs_v2",
        include_str!("../../migrations/0017_email_refs_v2.sql"),
    ),
    (
        "0018_email_mailbox_names",
        include_str!("../../migrations/0018_email_mailbox_names.sql"),
    ),
    (
        "0019_e2ee_trust",
        include_str!("../../migrations/0019_e2ee_trust.sql"),
    ),
    (
        "0020_web_push",
        include_str!("../../migrations/0020_web_push.sql"),
    ),
    (
        "0021_web_sessions",
        include_str!("../../migrations/0021_web_sessions.sql"),
    ),
    (
        "0022_sender_names",
        include_str!("../../migrations/0022_sender_names.sql"),
    ),
    (
        "0023_conversation",
        include_str!("../../migrations/0023_conversation.sql"),
    ),
    (
        "0024_email_outgoing",
        include_str!("../../migrations/0024_email_outgoing.sql"),
    ),
    (
        "0025_email_addresses",
        include_str!("../../migrations/0025_email_addresses.sql"),
    ),
    (
        "0026_link_previews",
        include_str!("../../migrations/0026_link_previews.sql"),
    ),
];

/// Latest schema version this binary knows.
pub const SCHEMA_VERSION: i64 = MIGRATIONS.len() as i64;

#[derive(Clone)]
pub struct Store {
    pool: Pool<SqliteConnectionManager>,
    /// One permit per pooled connection: a job waits for one *before* it takes a blocking
    /// thread (see [`Store::run`]).
    slots: Arc<tokio::sync::Semaphore>,
    epoch: epoch::WriteEpoch,
}

/// Connections in the pool, and jobs running at once.
const POOL_SIZE: u32 = 8;
/// How long a job waits for a connection before the request is answered 503 (busy).
const POOL_WAIT: Duration = Duration::from_secs(10);

impl Store {
    /// Opens (creating if needed) `<data_dir>/switchboard.db` and applies pending migrations.
    pub fn open(config: &StorageConfig) -> Result<Self, StoreError> {
        create_private_dir(&config.data_dir)?;
        create_private_file(&config.database_path())?;
        let store = Self::open_file(&config.database_path(), config.synchronous.pragma())?;
        store.migrate()?;
        Ok(store)
    }

    fn open_file(path: &Path, synchronous: &'static str) -> Result<Self, StoreError> {
        // WAL is a property of the file: set it once, outside any transaction, before the
        // pool opens several connections at once (busy_timeout first, or they race).
        {
            let conn = Connection::open(path)?;
            conn.busy_timeout(Duration::from_secs(5))?;
            conn.pragma_update(None, "journal_mode", "WAL")?;
        }
        let manager = SqliteConnectionManager::file(path).with_init(move |c| {
            c.busy_timeout(Duration::from_secs(5))?;
            // Transactions read and then write: taking the write lock at BEGIN makes a
            // concurrent writer wait (busy_timeout) instead of failing the upgrade with
            // SQLITE_BUSY when another connection committed since the first read.
            c.set_transaction_behavior(rusqlite::TransactionBehavior::Immediate);
            epoch::install(c)?;
            // secure_delete: deleted rows and freed pages are overwritten with zeros, so
            // ciphertext that `DELETE /api/keys` removes does not linger in free space of
            // the file (or in the WAL frames written after it).
            c.execute_batch(&format!(
                "PRAGMA foreign_keys = ON; PRAGMA synchronous = {synchronous}; \
                 PRAGMA temp_store = MEMORY; PRAGMA secure_delete = ON;"
            ))
        });
        let pool = Pool::builder()
            .max_size(POOL_SIZE)
            .connection_timeout(POOL_WAIT)
            .build(manager)?;
        Ok(Self {
            pool,
            slots: Arc::new(tokio::sync::Semaphore::new(POOL_SIZE as usize)),
            epoch: epoch::WriteEpoch::default(),
        })
    }

    /// Applies every migration newer than the file's `user_version`, each in its own
    /// transaction. Returns the schema version afterwards.
    pub fn migrate(&self) -> Result<i64, StoreError> {
        let mut conn = self.pool.get()?;
        let mut version: i64 = conn.pragma_query_value(None, "user_version", |r| r.get(0))?;
        if version > SCHEMA_VERSION {
            return Err(StoreError::TooNew {
                found: version,
                known: SCHEMA_VERSION,
            });
        }
        for (index, (name, sql)) in MIGRATIONS.iter().enumerate().skip(version as usize) {
            let tx = conn.transaction()?;
            tx.execute_batch(sql)?;
            tx.pragma_update(None, "user_version", (index + 1) as i64)?;
            tx.commit()?;
            version = index as i64 + 1;
            tracing::info!(migration = name, version, "applied database migration");
        }
        Ok(version)
    }

    pub fn schema_version(&self) -> Result<i64, StoreError> {
        let conn = self.pool.get()?;
        Ok(conn.pragma_query_value(None, "user_version", |r| r.get(0))?)
    }

    /// Counts the jobs of [`Store::run`] that committed a write (see [`epoch`]).
    pub fn epoch(&self) -> &epoch::WriteEpoch {
        &self.epoch
    }

    /// Runs `job` with a pooled connection on the blocking thread pool, so SQLite never
    /// stalls the async executor. A job that committed bumps the write epoch before this
    /// returns.
    ///
    /// A job first waits (asynchronously) for one of the pool's [`POOL_SIZE`] slots, and
    /// only then takes a blocking thread. Waiting in the pool itself instead parked one
    /// thread per waiting request: 64 busy connections kept ~60 threads alive, each with
    /// its stack and its own malloc arena, and the heap profile showed the memory was
    /// not live data but those threads' retained arenas (see `docs/benchmarks.md`).
    pub async fn run<T, E, F>(&self, job: F) -> Result<T, E>
    where
        T: Send + 'static,
        E: From<StoreError> + Send + 'static,
        F: FnOnce(&mut Conn) -> Result<T, E> + Send + 'static,
    {
        let pool = self.pool.clone();
        let write_epoch = self.epoch.clone();
        let asked = std::time::Instant::now();
        let slot = match tokio::time::timeout(POOL_WAIT, self.slots.clone().acquire_owned()).await {
            Ok(Ok(slot)) => slot,
            // Never closed; a wait this long means the database is saturated (503).
            _ => return Err(StoreError::Saturated.into()),
        };
        let joined = tokio::task::spawn_blocking(move || {
            let _slot = slot;
            // Bumps on the way out, even if the job panics after committing.
            let _publish = epoch::PublishCommits::new(write_epoch);
            let mut conn = pool.get().map_err(StoreError::from)?;
            crate::metrics::global().db_wait.observe(asked.elapsed());
            job(&mut conn)
        })
        .await;
        match joined {
            Ok(result) => result,
            Err(e) => match e.try_into_panic() {
                Ok(panic) => std::panic::resume_unwind(panic),
                Err(e) => Err(StoreError::Join(e.to_string()).into()),
            },
        }
    }

    /// [`Store::run`] for a job whose only errors are the store's own (SQLite or
    /// [`StoreError`]): `store.query(move |c| rooms::find(c, &u, &r))` instead of wrapping
    /// the call in `Ok::<_, AppError>(…?)`.
    pub async fn query<T, E, F>(&self, job: F) -> Result<T, StoreError>
    where
        T: Send + 'static,
        E: Send + 'static,
        StoreError: From<E>,
        F: FnOnce(&mut Conn) -> Result<T, E> + Send + 'static,
    {
        self.run(move |c| job(c).map_err(StoreError::from)).await
    }

    /// A store in a fresh temporary directory (kept while the returned guard lives).
    #[cfg(test)]
    pub fn open_temp() -> (tempfile::TempDir, Self) {
        let dir = tempfile::tempdir().expect("temp dir");
        let store = Self::open(&StorageConfig {
            data_dir: dir.path().to_path_buf(),
            ..StorageConfig::default()
        })
        .expect("open store");
        (dir, store)
    }

    /// A connection for synchronous callers (CLI commands, tests).
    pub fn conn(&self) -> Result<Conn, StoreError> {
        Ok(self.pool.get()?)
    }
}

/// `PRAGMA wal_checkpoint(TRUNCATE)`: copies every committed page into the database file
/// and empties the WAL, so older versions of pages (e.g. ones that held deleted
/// ciphertext) no longer exist in the -wal file. Waits for readers (busy timeout); returns
/// false when one still kept the checkpoint from completing.
pub fn checkpoint_truncate(conn: &Connection) -> rusqlite::Result<bool> {
    let busy: i64 = conn.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |r| r.get(0))?;
    Ok(busy == 0)
}

/// Creates the data directory readable by the service user only (0700) if it is missing.
pub fn create_private_dir(dir: &Path) -> Result<(), StoreError> {
    let err = |source| StoreError::DataDir {
        path: dir.display().to_string(),
        source,
    };
    if dir.exists() {
        return Ok(());
    }
    std::fs::create_dir_all(dir).map_err(err)?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700)).map_err(err)?;
    }
    Ok(())
}

/// Creates the database file with mode 0600 before SQLite opens it; SQLite gives the
/// -wal and -shm files the same mode.
fn create_private_file(path: &Path) -> Result<(), StoreError> {
    if path.exists() {
        return Ok(());
    }
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    match options.open(path) {
        Ok(_) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(()),
        Err(source) => Err(StoreError::DataDir {
            path: path.display().to_string(),
            source,
        }),
    }
}

#[cfg(test)]
mod tests;
