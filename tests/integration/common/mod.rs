//! Test harness: one real Synapse per test run (started with `scripts/synapse.sh`, reused
//! if already running) and the real `switchboard` binary per test, each on its own data
//! directory and port.

#![allow(dead_code)]

use std::io::BufRead;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

pub mod ai;
pub mod apns;
pub mod at_rest;
pub mod auth_api;
pub mod bridge;
pub mod chromium;
pub mod client;
pub mod dovecot;
pub mod homeserver_proxy;
pub mod mail;
pub mod matrix;
pub mod push_service;
mod responses;
pub mod synapse;
mod users;
pub use at_rest::{contains, database_bytes};
pub use responses::*;
pub use synapse::synapse;
pub use users::*;

pub fn repo_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The port in the server's "listening on http://127.0.0.1:PORT" log line.
pub fn bound_port(log: &str) -> Option<u16> {
    let rest = &log[log.find("listening on http://")? + "listening on http://".len()..];
    let addr: String = rest
        .chars()
        .take_while(|c| c.is_ascii_digit() || *c == '.' || *c == ':')
        .collect();
    addr.rsplit_once(':')?.1.parse().ok()
}

/// Serves a stand-in (`app`) on `listener` in the background until the returned sender
/// fires or is dropped; in-flight requests then get 200 ms.
pub fn serve_standin<E>(
    listener: TcpListener,
    app: E,
) -> (
    tokio::sync::oneshot::Sender<()>,
    tokio::task::JoinHandle<()>,
)
where
    E: poem::IntoEndpoint + Send + 'static,
    E::Endpoint: 'static,
{
    let (tx, rx) = tokio::sync::oneshot::channel::<()>();
    let acceptor = poem::listener::TcpAcceptor::from_std(listener).expect("acceptor");
    let task = tokio::spawn(async move {
        let _ = poem::Server::new_with_acceptor(acceptor)
            .run_with_graceful_shutdown(
                app,
                async move {
                    let _ = rx.await;
                },
                Some(Duration::from_millis(200)),
            )
            .await;
    });
    (tx, task)
}

pub fn free_port() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind an ephemeral port");
    listener.local_addr().expect("local addr").port()
}

/// How the `[matrix]` section of a test server is written.
#[derive(Clone, Debug)]
pub enum MatrixMode {
    /// The shared real Synapse.
    Real,
    /// No `[matrix]` section at all.
    Missing,
    /// A homeserver URL nothing listens on.
    Unreachable,
}

#[derive(Clone, Debug)]
pub struct TestConfig {
    pub matrix: MatrixMode,
    /// Extra TOML appended to the file (sections other than server/storage/matrix).
    pub extra: String,
}

impl Default for TestConfig {
    fn default() -> Self {
        Self {
            matrix: MatrixMode::Real,
            extra: String::new(),
        }
    }
}

/// A running `switchboard serve` process.
pub struct TestApp {
    pub base: String,
    pub port: u16,
    pub dir: tempfile::TempDir,
    pub config_path: PathBuf,
    pub http: reqwest::Client,
    child: Option<Child>,
}

pub fn binary() -> &'static str {
    env!("CARGO_BIN_EXE_switchboard")
}

impl TestApp {
    pub async fn start() -> Self {
        Self::start_with(TestConfig::default()).await
    }

    pub async fn start_with(config: TestConfig) -> Self {
        let dir = tempfile::tempdir().expect("temp dir");
        let config_path = dir.path().join("switchboard.toml");
        let data_dir = dir.path().join("data");
        // Port 0: the server binds a free port itself and logs it ([`Self::spawn`] reads it),
        // so no other process can take the port between choosing and binding it.
        // A test may bring its own `[server]` keys in `extra`; `listen` joins them there
        // (TOML allows a table header once).
        let listen = "listen = \"127.0.0.1:0\"\n";
        let mut extra = config.extra.clone();
        let mut toml = match extra.find("[server]\n") {
            Some(at) => {
                extra.insert_str(at + "[server]\n".len(), listen);
                String::new()
            }
            None => format!("[server]\n{listen}\n"),
        };
        // The tests' mail servers (Dovecot, the SMTP sink) listen on loopback, which
        // `[email]` refuses by default; a test of that refusal sets the key itself.
        if !extra.contains("allow_private_hosts") {
            match extra.find("[email]\n") {
                Some(at) => {
                    extra.insert_str(at + "[email]\n".len(), "allow_private_hosts = true\n")
                }
                None => extra.push_str("\n[email]\nallow_private_hosts = true\n"),
            }
        }
        toml.push_str(&format!(
            "[storage]\ndata_dir = \"{}\"\n\n",
            data_dir.display()
        ));
        match &config.matrix {
            MatrixMode::Real => {
                let s = synapse();
                toml.push_str(&format!(
                    "[matrix]\nhomeserver_url = \"{}\"\nserver_name = \"{}\"\nregistration_shared_secret = \"{}\"\n\n",
                    s.base_url, s.server_name, s.shared_secret
                ));
            }
            MatrixMode::Unreachable => {
                toml.push_str(&format!(
                    "[matrix]\nhomeserver_url = \"http://127.0.0.1:{}\"\nserver_name = \"localhost\"\nregistration_shared_secret = \"x\"\n\n",
                    free_port()
                ));
            }
            MatrixMode::Missing => {}
        }
        toml.push_str(&extra);
        std::fs::write(&config_path, toml).expect("write config");
        let mut app = Self {
            base: String::new(),
            port: 0,
            dir,
            config_path,
            http: reqwest::Client::builder()
                .timeout(Duration::from_secs(30))
                .build()
                .expect("client"),
            child: None,
        };
        app.spawn().await;
        app
    }

    pub fn data_dir(&self) -> PathBuf {
        self.dir.path().join("data")
    }

    pub fn log_path(&self) -> PathBuf {
        self.dir.path().join("switchboard.log")
    }

    pub fn log(&self) -> String {
        std::fs::read_to_string(self.log_path()).unwrap_or_default()
    }

    /// Starts the process (again) and waits until it answers HTTP. The port is the one the
    /// server logs as bound (it may change across restarts).
    pub async fn spawn(&mut self) {
        self.port = 0;
        self.base.clear();
        let log_start = self.log().len();
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.log_path())
            .expect("log file");
        let child = Command::new(binary())
            .args(["serve", "--config"])
            .arg(&self.config_path)
            .env_remove("RUST_LOG")
            .stdin(Stdio::null())
            .stdout(log.try_clone().expect("log"))
            .stderr(log)
            .spawn()
            .expect("spawn switchboard");
        self.child = Some(child);
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            if self.port == 0 || self.base.is_empty() {
                if let Some(port) = bound_port(&self.log()[log_start..]) {
                    self.port = port;
                    self.base = format!("http://127.0.0.1:{port}");
                }
            } else if self
                .http
                .get(self.url("/openapi.yaml"))
                .send()
                .await
                .is_ok()
            {
                return;
            }
            if let Some(status) = self
                .child
                .as_mut()
                .and_then(|c| c.try_wait().ok().flatten())
            {
                panic!("switchboard exited early ({status}); log:\n{}", self.log());
            }
            assert!(
                Instant::now() < deadline,
                "switchboard did not start; log:\n{}",
                self.log()
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    pub fn url(&self, path: &str) -> String {
        format!("{}{}", self.base, path)
    }

    pub fn pid(&self) -> u32 {
        self.child.as_ref().expect("running").id()
    }

    /// Sends a signal with the system `kill` command and waits for the exit.
    pub fn signal(&mut self, signal: &str) -> ExitStatus {
        let pid = self.pid().to_string();
        let ok = Command::new("kill")
            .args([&format!("-{signal}"), &pid])
            .status()
            .expect("kill");
        assert!(ok.success(), "kill -{signal} failed");
        let mut child = self.child.take().expect("running");
        let deadline = Instant::now() + Duration::from_secs(15);
        loop {
            if let Some(status) = child.try_wait().expect("wait") {
                return status;
            }
            assert!(
                Instant::now() < deadline,
                "switchboard did not exit after SIG{signal}"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    pub fn kill9(&mut self) {
        self.signal("KILL");
    }

    pub async fn restart_after_kill9(&mut self) {
        self.kill9();
        self.spawn().await;
    }

    pub async fn get(&self, path: &str) -> reqwest::Response {
        self.http.get(self.url(path)).send().await.expect("request")
    }

    pub async fn get_auth(&self, path: &str, token: &str) -> reqwest::Response {
        self.http
            .get(self.url(path))
            .bearer_auth(token)
            .send()
            .await
            .expect("request")
    }

    pub async fn post_json(
        &self,
        path: &str,
        token: Option<&str>,
        body: serde_json::Value,
    ) -> reqwest::Response {
        let mut req = self.http.post(self.url(path)).json(&body);
        if let Some(t) = token {
            req = req.bearer_auth(t);
        }
        req.send().await.expect("request")
    }

    pub async fn send(
        &self,
        method: reqwest::Method,
        path: &str,
        token: Option<&str>,
        body: Option<serde_json::Value>,
    ) -> reqwest::Response {
        let mut req = self.http.request(method, self.url(path));
        if let Some(t) = token {
            req = req.bearer_auth(t);
        }
        if let Some(b) = body {
            req = req.json(&b);
        }
        req.send().await.expect("request")
    }
}

impl Drop for TestApp {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
        if std::thread::panicking() {
            // The server's side of a failed test (its log goes with the temp dir).
            let log = self.log();
            let lines: Vec<&str> = log.lines().collect();
            let tail = &lines[lines.len().saturating_sub(30)..];
            eprintln!("---- server log (last {} lines) ----", tail.len());
            for line in tail {
                eprintln!("{line}");
            }
        }
    }
}

/// Runs the binary with arguments to completion; returns (status, stdout, stderr).
pub fn run_cli(args: &[&str], cwd: &Path) -> (ExitStatus, String, String) {
    let out = Command::new(binary())
        .args(args)
        .current_dir(cwd)
        .env_remove("RUST_LOG")
        .stdin(Stdio::null())
        .output()
        .expect("run switchboard");
    (
        out.status,
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Python of the test venv (has openapi-spec-validator and aiosmtpd).
pub fn python() -> PathBuf {
    match std::env::var_os("SWITCHBOARD_TEST_PYTHON") {
        Some(p) => PathBuf::from(p),
        None => synapse::venv_dir().join("bin/python"),
    }
}

/// Lines of a file, for log scraping.
pub fn lines(path: &Path) -> Vec<String> {
    match std::fs::File::open(path) {
        Ok(f) => std::io::BufReader::new(f)
            .lines()
            .map_while(Result::ok)
            .collect(),
        Err(_) => Vec::new(),
    }
}
