//! What each CLI subcommand does. Errors come back as one printable message. The data
//! commands read and write through the store's modules, never with SQL of their own, and the
//! long ones (`reindex`, `backup`, `restore`) show their progress ([`progress`]).

mod progress;

use std::path::Path;

use crate::config::{Config, LogFormat, Overrides};
use crate::state::AppState;
use crate::store::{backup as copy, Store, SCHEMA_VERSION};
use progress::{Progress, Unit};

pub use crate::services::admin::UserCommand;

type CmdResult = Result<(), String>;

fn load(overrides: &Overrides) -> Result<Config, String> {
    Config::load(overrides, std::env::vars()).map_err(|e| format!("configuration error: {e}"))
}

/// Installs the subscriber; log lines are written by a queue thread until the returned
/// guard is dropped (it flushes what is left).
fn init_logging(config: &Config) -> crate::logging::FlushGuard {
    let filter = std::env::var("RUST_LOG")
        .ok()
        .and_then(|v| v.parse::<tracing_subscriber::EnvFilter>().ok())
        .unwrap_or_else(|| {
            config
                .log
                .level
                .parse()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"))
        });
    let (writer, guard) = crate::logging::queued_stderr();
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(writer)
        // No colour codes in files and the journal.
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()));
    let _ = match config.log.format {
        LogFormat::Json => builder.json().try_init(),
        LogFormat::Text => builder.try_init(),
    };
    guard
}

/// How long an idle blocking thread waits for more work before it ends (Tokio's default is
/// 10 s). Each thread that ran a job keeps its allocator heap until it ends, so after a
/// burst (a page render per connection, every sync worker's crypto store at start) the
/// threads' memory stays resident for as long as they wait; docs/benchmarks.md measured
/// it. A steady load keeps its threads busy and does not notice the shorter wait.
const BLOCKING_THREAD_KEEP_ALIVE: std::time::Duration = std::time::Duration::from_secs(2);

fn runtime() -> Result<tokio::runtime::Runtime, String> {
    tokio::runtime::Builder::new_multi_thread()
        .thread_keep_alive(BLOCKING_THREAD_KEEP_ALIVE)
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start the async runtime: {e}"))
}

pub fn serve(overrides: &Overrides) -> CmdResult {
    let config = load(overrides)?;
    let _log = init_logging(&config);
    let rt = runtime()?;
    rt.block_on(async move {
        let state = AppState::build(config).map_err(|e| format!("startup failed: {e}"))?;
        tracing::info!(
            version = env!("CARGO_PKG_VERSION"),
            data_dir = %state.config.storage.data_dir.display(),
            base_url = %state.config.public_base_url(),
            matrix = state.matrix.as_ref().map(|m| m.base_url()).unwrap_or("not configured"),
            "switchboard starting"
        );
        crate::clients::mail::announce_transport(&state.config);
        crate::serve(state, crate::shutdown_signal())
            .await
            .map_err(|e| format!("cannot serve: {e}"))
    })?;
    tracing::info!("stopped");
    Ok(())
}

pub fn migrate(overrides: &Overrides) -> CmdResult {
    let config = load(overrides)?;
    let _log = init_logging(&config);
    let store = Store::open(&config.storage).map_err(|e| e.to_string())?;
    let version = store.schema_version().map_err(|e| e.to_string())?;
    println!(
        "database {} is at schema version {version}",
        config.storage.database_path().display()
    );
    Ok(())
}

pub fn openapi() -> CmdResult {
    print!("{}", crate::api::spec_yaml());
    Ok(())
}

/// Validates without creating anything: config, key files if present, database version.
pub fn check_config(overrides: &Overrides) -> CmdResult {
    let config = load(overrides)?;
    println!("configuration: ok");
    print_settings(&config);
    print_master_key(&config)?;
    print_database(&config)
}

/// What the configuration turns on: addresses, mail, the homeserver, bridges, AI, push, limits.
fn print_settings(config: &Config) {
    let on_off = |on: bool| if on { "configured" } else { "disabled" };
    println!("  listen:          {}", config.server.listen);
    println!("  base url:        {}", config.public_base_url());
    println!("  data dir:        {}", config.storage.data_dir.display());
    println!("  mail transport:  {:?}", config.mail.transport);
    match &config.matrix {
        Some(m) => println!(
            "  homeserver:      {} ({})",
            m.homeserver_url, m.server_name
        ),
        None => println!("  homeserver:      not configured (/health will answer 503)"),
    }
    let bridges: Vec<&str> = config
        .bridges
        .iter()
        .filter(|(_, b)| b.provisioning_url.is_some())
        .map(|(name, _)| name)
        .collect();
    let bridges = if bridges.is_empty() {
        "none".to_owned()
    } else {
        bridges.join(", ")
    };
    println!("  bridges:         {bridges}");
    println!("  ai service:      {}", on_off(config.ai.is_some()));
    println!("  push (APNs):     {}", on_off(config.push.is_some()));
    println!(
        "  rate limit:      {} requests per {}",
        config.rate_limit.requests,
        humantime::format_duration(config.rate_limit.window.0)
    );
}

/// The master key file: loaded (so a bad one fails here), or to be created on first start.
fn print_master_key(config: &Config) -> CmdResult {
    let key_path = config.storage.master_key_path();
    if key_path.exists() {
        crate::crypto::MasterKey::load(&key_path).map_err(|e| e.to_string())?;
        println!("  master key:      {} (ok)", key_path.display());
    } else {
        println!(
            "  master key:      {} (will be created on first start)",
            key_path.display()
        );
    }
    Ok(())
}

/// The database file's schema version (read-only), or that it will be created.
fn print_database(config: &Config) -> CmdResult {
    let db = config.storage.database_path();
    if !db.exists() {
        println!(
            "  database:        {} (will be created; schema version {SCHEMA_VERSION})",
            db.display()
        );
        return Ok(());
    }
    let conn =
        copy::open_read_only(&db).map_err(|e| format!("cannot open {}: {e}", db.display()))?;
    let version =
        copy::schema_version(&conn).map_err(|e| format!("cannot read {}: {e}", db.display()))?;
    let note = if version < SCHEMA_VERSION {
        " (migrations pending; applied at start)"
    } else {
        ""
    };
    println!(
        "  database:        {} schema version {version} of {SCHEMA_VERSION}{note}",
        db.display()
    );
    Ok(())
}

pub fn user(overrides: &Overrides, command: UserCommand) -> CmdResult {
    let config = load(overrides)?;
    let rt = runtime()?;
    // AppState builds clients (SMTP pool) that need the runtime.
    let output = rt.block_on(async move {
        let state = AppState::build(config).map_err(|e| e.to_string())?;
        crate::services::admin::run_cli(&state, command)
            .await
            .map_err(|e| e.to_string())
    })?;
    print!("{output}");
    Ok(())
}

pub fn backup(overrides: &Overrides, file: &Path) -> CmdResult {
    if file.exists() {
        return Err(format!(
            "{} already exists; choose a new file",
            file.display()
        ));
    }
    let config = load(overrides)?;
    let store = Store::open(&config.storage).map_err(|e| e.to_string())?;
    let mut progress = Progress::start("backup", 0, Unit::Bytes);
    store
        .backup_to(file, &mut |done, total| progress.update(done, total))
        .map_err(|e| e.to_string())?;
    progress.finish();
    println!("database copied to {}", file.display());
    println!(
        "also keep {} safe: without it the encrypted columns cannot be read",
        config.storage.master_key_path().display()
    );
    Ok(())
}

/// Rebuilds the search index of every user (or one) from the stored messages and cached
/// mails; safe while the service runs (batches of 500, each its own transaction).
pub fn reindex(overrides: &Overrides, user: Option<&str>) -> CmdResult {
    let config = load(overrides)?;
    let master = crate::crypto::MasterKey::load(&config.storage.master_key_path())
        .map_err(|e| format!("cannot read the master key: {e}"))?;
    let store = Store::open(&config.storage).map_err(|e| e.to_string())?;
    let mut conn = store.conn().map_err(|e| e.to_string())?;
    let users = match user {
        Some(u) => vec![u.to_owned()],
        None => crate::store::users::all_ids(&conn).map_err(|e| e.to_string())?,
    };
    for id in users {
        let total = crate::store::search_index::indexable(&conn, &id).map_err(|e| e.to_string())?;
        let total = u64::try_from(total).unwrap_or(0);
        let mut progress = Progress::start(
            format!("reindex {id}"),
            total,
            Unit::Items("messages and e-mails"),
        );
        let done = crate::services::search::reindex(&mut conn, &master, &id, &mut |n| {
            let read = n.messages + n.emails + n.unreadable;
            progress.update(u64::try_from(read).unwrap_or(u64::MAX), total);
        })
        .map_err(|e| format!("user {id}: {e}"))?;
        progress.finish();
        println!(
            "user {id}: {} messages and {} e-mails indexed, {} unreadable (sealed under a \
             deleted key)",
            done.messages, done.emails, done.unreadable
        );
    }
    Ok(())
}

pub fn restore(overrides: &Overrides, file: &Path) -> CmdResult {
    let config = load(overrides)?;
    let source =
        copy::open_read_only(file).map_err(|e| format!("cannot open {}: {e}", file.display()))?;
    let version = copy::schema_version(&source)
        .map_err(|e| format!("{} is not a switchboard database: {e}", file.display()))?;
    if version == 0 || version > SCHEMA_VERSION {
        return Err(format!(
            "{} has schema version {version}; expected 1..={SCHEMA_VERSION}",
            file.display()
        ));
    }
    std::fs::create_dir_all(&config.storage.data_dir).map_err(|e| e.to_string())?;
    let target = config.storage.database_path();
    let mut progress = Progress::start("restore", 0, Unit::Bytes);
    copy::copy_to_file(&source, &target, &mut |done, total| {
        progress.update(done, total)
    })
    .map_err(|e| e.to_string())?;
    progress.finish();
    println!("restored {} into {}", file.display(), target.display());
    Ok(())
}
