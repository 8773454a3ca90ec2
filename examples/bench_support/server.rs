//! The release `switchboard serve` binary as its own process, for the benchmarks that
//! measure the server alone (its CPU from /proc/<pid>/stat, its RSS from /proc/<pid>/status):
//! the read routes of `bench_messages` and its many-users mode.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use switchboard::config::Overrides;
use switchboard::Config;

use super::synapse::Homeserver;

/// A data directory and the configuration file `switchboard serve` reads, on a free port of
/// 127.0.0.1, with the homeserver of `hs`. The directory goes when this is dropped.
pub struct Setup {
    pub dir: tempfile::TempDir,
    pub config_path: PathBuf,
    pub port: u16,
}

impl Setup {
    /// `extra` is appended to the file (more TOML sections, e.g. `[rate_limit]`).
    pub fn new(hs: &Homeserver, extra: &str) -> Self {
        let dir = tempfile::tempdir().expect("temp dir");
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("free port")
            .port();
        let config_path = dir.path().join("switchboard.toml");
        std::fs::write(
            &config_path,
            format!(
                "[server]\nlisten = \"127.0.0.1:{port}\"\n[storage]\ndata_dir = \"{}\"\n\
                 [matrix]\nhomeserver_url = \"{}\"\nserver_name = \"{}\"\nregistration_shared_secret = \"{}\"\n{extra}",
                dir.path().join("data").display(),
                hs.base,
                hs.server_name,
                hs.secret
            ),
        )
        .expect("config");
        Self {
            dir,
            config_path,
            port,
        }
    }

    /// The same configuration the server reads, for seeding its data directory from here
    /// (same master key file, hence the same data keys and JWT secret).
    pub fn config(&self) -> Config {
        let overrides = Overrides {
            config_path: Some(self.config_path.clone()),
            ..Overrides::default()
        };
        Config::load(&overrides, std::iter::empty()).expect("bench configuration")
    }

    pub fn database(&self) -> PathBuf {
        self.dir.path().join("data").join("switchboard.db")
    }

    pub fn log_path(&self) -> PathBuf {
        self.dir.path().join("switchboard.log")
    }

    /// Starts `$BENCH_SWITCHBOARD_BIN` (default `target/release/switchboard`) `serve`,
    /// logging to [`Setup::log_path`].
    pub fn start(&self) -> Server {
        let bin = std::env::var("BENCH_SWITCHBOARD_BIN")
            .unwrap_or_else(|_| "target/release/switchboard".into());
        let log = std::fs::File::create(self.log_path()).expect("log");
        let child = Command::new(&bin)
            .arg("--config")
            .arg(&self.config_path)
            .arg("serve")
            .stdout(log.try_clone().expect("log"))
            .stderr(log)
            .stdin(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("start {bin}: {e}"));
        Server {
            pid: child.id(),
            child,
            log: self.log_path(),
            started: Instant::now(),
        }
    }
}

/// The running server; killed when dropped (also on a panic).
pub struct Server {
    child: Child,
    pub pid: u32,
    pub log: PathBuf,
    pub started: Instant,
}

impl Server {
    /// Panics (naming the log) if the process has ended.
    pub fn assert_running(&mut self) {
        if let Some(status) = self.child.try_wait().expect("wait") {
            panic!("switchboard exited: {status}; log {}", self.log.display());
        }
    }

    /// utime + stime of the process so far, in seconds.
    pub fn cpu_secs(&self) -> f64 {
        super::load::process_cpu_secs(self.pid)
    }

    /// Resident set size now (`VmRSS`) and at its peak (`VmHWM`), in MiB.
    pub fn rss_mib(&self) -> (f64, f64) {
        let kib = |name| self.status_field(name).unwrap_or(0.0);
        (kib("VmRSS:") / 1024.0, kib("VmHWM:") / 1024.0)
    }

    /// Threads of the process now (`Threads` of /proc/<pid>/status).
    pub fn threads(&self) -> u64 {
        self.status_field("Threads:").unwrap_or(0.0) as u64
    }

    /// What `smaps_rollup` says of the process's memory, in MiB: (anonymous, file-backed
    /// resident) — the heap and stacks against the binary's own pages.
    pub fn memory_split_mib(&self) -> (f64, f64) {
        let rollup =
            std::fs::read_to_string(format!("/proc/{}/smaps_rollup", self.pid)).unwrap_or_default();
        let kib = |name: &str| {
            rollup
                .lines()
                .find(|l| l.starts_with(name))
                .and_then(|l| l.split_whitespace().nth(1)?.parse::<f64>().ok())
                .unwrap_or(0.0)
        };
        let anon = kib("Anonymous:");
        (anon / 1024.0, (kib("Rss:") - anon).max(0.0) / 1024.0)
    }

    fn status_field(&self, name: &str) -> Option<f64> {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.pid)).ok()?;
        status
            .lines()
            .find(|l| l.starts_with(name))
            .and_then(|l| l.split_whitespace().nth(1)?.parse::<f64>().ok())
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Polls `count` (a read-only query on the server's database, see [`count`]) every 200 ms
/// until it reaches `want` or `limit` passes; returns the last value.
pub fn wait_for(server: &mut Server, db: &Path, sql: &str, want: u64, limit: Duration) -> u64 {
    let began = Instant::now();
    loop {
        server.assert_running();
        let n = count(db, sql);
        if n >= want || began.elapsed() > limit {
            return n;
        }
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// One `SELECT COUNT(*) …` on a read-only connection to the server's database (0 while
/// the file does not exist yet).
pub fn count(db: &Path, sql: &str) -> u64 {
    let Ok(c) =
        rusqlite::Connection::open_with_flags(db, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)
    else {
        return 0;
    };
    c.query_row(sql, [], |r| r.get::<_, i64>(0)).unwrap_or(0) as u64
}
