//! The shared Synapse of a test run, started once through `scripts/synapse.sh`.

use std::collections::HashMap;
use std::path::PathBuf;
use std::process::Command;
use std::sync::OnceLock;

use super::repo_root;

#[derive(Debug, Clone)]
pub struct Synapse {
    pub base_url: String,
    pub server_name: String,
    pub shared_secret: String,
}

pub fn venv_dir() -> PathBuf {
    std::env::var_os("SWITCHBOARD_TEST_VENV")
        .map(PathBuf::from)
        .unwrap_or_else(|| repo_root().join(".synapse/venv"))
}

fn data_dir() -> PathBuf {
    std::env::var_os("SWITCHBOARD_TEST_SYNAPSE_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| repo_root().join("target/test-synapse"))
}

/// `SWITCHBOARD_TEST_SYNAPSE_PORT`, else 18448, else (taken, e.g. by the Synapse of another
/// checkout) any free port.
fn port() -> String {
    if let Ok(port) = std::env::var("SWITCHBOARD_TEST_SYNAPSE_PORT") {
        return port;
    }
    const DEFAULT: u16 = 18448;
    let port = match std::net::TcpListener::bind(("127.0.0.1", DEFAULT)) {
        Ok(_) => DEFAULT,
        Err(_) => super::free_port(),
    };
    port.to_string()
}

fn parse_env(text: &str) -> HashMap<String, String> {
    text.lines()
        .filter_map(|l| l.split_once('='))
        .map(|(k, v)| (k.trim().to_owned(), v.trim().trim_matches('"').to_owned()))
        .collect()
}

/// The running Synapse: reused when `scripts/synapse.sh --status` says it is up,
/// started otherwise.
pub fn synapse() -> &'static Synapse {
    static SYNAPSE: OnceLock<Synapse> = OnceLock::new();
    SYNAPSE.get_or_init(|| {
        let script = repo_root().join("scripts/synapse.sh");
        let dir = data_dir();
        let status = Command::new("bash")
            .arg(&script)
            .arg("--status")
            .arg(&dir)
            .output()
            .expect("bash");
        let output = if status.status.success() {
            status.stdout
        } else {
            let out = Command::new("bash")
                .arg(&script)
                .arg(venv_dir())
                .arg(&dir)
                .arg(port())
                .output()
                .expect("run scripts/synapse.sh");
            if out.status.success() {
                out.stdout
            } else {
                // Another test process may have started it in the meantime.
                let again = Command::new("bash")
                    .arg(&script)
                    .arg("--status")
                    .arg(&dir)
                    .output()
                    .expect("bash");
                assert!(
                    again.status.success(),
                    "scripts/synapse.sh failed:\n{}\n{}",
                    String::from_utf8_lossy(&out.stdout),
                    String::from_utf8_lossy(&out.stderr)
                );
                again.stdout
            }
        };
        let env = parse_env(&String::from_utf8_lossy(&output));
        Synapse {
            base_url: env["MATRIX_BASE_URL"].clone(),
            server_name: env["MATRIX_SERVER_NAME"].clone(),
            shared_secret: env["MATRIX_SHARED_SECRET"].clone(),
        }
    })
}
