//! The command line: subcommands, config errors, key file checks.

use crate::common::*;

#[test]
fn every_subcommand_has_help() {
    let dir = tempfile::tempdir().unwrap();
    for cmd in [
        &["--help"][..],
        &["serve", "--help"],
        &["migrate", "--help"],
        &["openapi", "--help"],
        &["check-config", "--help"],
        &["user", "--help"],
        &["backup", "--help"],
    ] {
        let (status, out, _) = run_cli(cmd, dir.path());
        assert!(status.success(), "{cmd:?}");
        assert!(out.contains("Usage"), "{cmd:?}: {out}");
    }
}

#[test]
fn openapi_prints_the_31_document() {
    let dir = tempfile::tempdir().unwrap();
    let (status, out, _) = run_cli(&["openapi"], dir.path());
    assert!(status.success());
    let doc: serde_json::Value = serde_yaml::from_str(&out).unwrap();
    assert_eq!(doc["openapi"], "3.1.0");
}

#[test]
fn migrate_then_check_config_shows_the_schema_version() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("d");
    let data = data.to_str().unwrap();
    let (status, out, err) = run_cli(&["migrate", "--data-dir", data], dir.path());
    assert!(status.success(), "{err}");
    assert!(out.contains("schema version"), "{out}");
    let (status, out, err) = run_cli(&["check-config", "--data-dir", data], dir.path());
    assert!(status.success(), "{err}");
    assert!(out.contains("configuration: ok"), "{out}");
    assert!(
        out.contains(&format!(
            "schema version {}",
            switchboard::store::SCHEMA_VERSION
        )),
        "{out}"
    );
    assert!(out.contains("not configured"), "{out}");
}

#[test]
fn a_bad_config_value_fails_with_a_message_naming_the_key() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = dir.path().join("c.toml");
    std::fs::write(&cfg, "[rate_limit]\nwindow = \"soon\"\n").unwrap();
    let (status, _, err) = run_cli(
        &["check-config", "--config", cfg.to_str().unwrap()],
        dir.path(),
    );
    assert!(!status.success());
    assert!(err.contains("rate_limit.window"), "{err}");
    assert!(!err.contains("panicked"), "{err}");

    std::fs::write(&cfg, "[server]\nlisten = \"127.0.0.1:1\"\nport = 3\n").unwrap();
    let (status, _, err) = run_cli(&["serve", "--config", cfg.to_str().unwrap()], dir.path());
    assert!(!status.success());
    assert!(err.contains("port"), "{err}");
}

/// `serve` over a data directory whose master key is `key` with file mode `mode`: it
/// must refuse to start, without a panic. Its stderr.
fn serve_refuses_the_key(key: &[u8], mode: u32) -> String {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("d");
    std::fs::create_dir_all(&data).unwrap();
    let path = data.join("master.key");
    std::fs::write(&path, key).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode)).unwrap();
    let (status, _, err) = run_cli(
        &[
            "serve",
            "--data-dir",
            data.to_str().unwrap(),
            "--listen",
            "127.0.0.1:0",
        ],
        dir.path(),
    );
    assert!(!status.success());
    assert!(!err.contains("panicked"), "{err}");
    err
}

#[test]
fn a_world_readable_master_key_is_refused() {
    let err = serve_refuses_the_key(&[7u8; 32], 0o644);
    assert!(err.contains("master.key"), "{err}");
    assert!(err.contains("chmod 600") || err.contains("0600"), "{err}");
}

#[test]
fn a_corrupt_master_key_is_refused() {
    let err = serve_refuses_the_key(b"short", 0o600);
    assert!(err.contains("corrupt"), "{err}");
}

/// `switchboard serve …` that must refuse to start: its exit status and stderr. A server
/// that starts after all is killed after `within` and the test fails saying so (rather
/// than waiting for ever).
fn serve_refused(
    args: &[&str],
    cwd: &std::path::Path,
    within: std::time::Duration,
) -> (std::process::ExitStatus, String) {
    let err_path = cwd.join("serve.stderr");
    let mut child = std::process::Command::new(binary())
        .args(args)
        .current_dir(cwd)
        .env_remove("RUST_LOG")
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::fs::File::create(&err_path).unwrap())
        .spawn()
        .expect("run switchboard");
    let deadline = std::time::Instant::now() + within;
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if std::time::Instant::now() >= deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!(
                "still running after {within:?}: the server started; stderr: {}",
                std::fs::read_to_string(&err_path).unwrap_or_default()
            );
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    };
    (
        status,
        std::fs::read_to_string(&err_path).unwrap_or_default(),
    )
}

#[test]
fn metrics_on_a_public_address_are_refused_at_start_unless_allowed() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = dir.path().join("c.toml");
    let data = dir.path().join("d");
    for listen in ["0.0.0.0:0", "[::]:0", "8.8.8.8:9100"] {
        std::fs::write(&cfg, format!("[metrics]\nlisten = \"{listen}\"\n")).unwrap();
        let (status, err) = serve_refused(
            &[
                "serve",
                "--config",
                cfg.to_str().unwrap(),
                "--data-dir",
                data.to_str().unwrap(),
                "--listen",
                "127.0.0.1:0",
            ],
            dir.path(),
            std::time::Duration::from_secs(20),
        );
        assert!(!status.success(), "{listen}: {err}");
        assert!(
            err.contains("metrics.listen") && err.contains("allow_public"),
            "{listen}: {err}"
        );
        assert!(!err.contains("panicked"), "{err}");
    }
    // Opted in, the configuration is accepted.
    std::fs::write(
        &cfg,
        "[metrics]\nlisten = \"0.0.0.0:9100\"\nallow_public = true\n",
    )
    .unwrap();
    let (status, out, err) = run_cli(
        &[
            "check-config",
            "--config",
            cfg.to_str().unwrap(),
            "--data-dir",
            data.to_str().unwrap(),
        ],
        dir.path(),
    );
    assert!(status.success(), "{err}");
    assert!(out.contains("configuration: ok"), "{out}");
}

#[tokio::test]
async fn metrics_on_a_public_address_when_allowed_are_announced_with_a_warning() {
    let app = TestApp::start_with(TestConfig {
        matrix: MatrixMode::Missing,
        extra: "[metrics]\nlisten = \"0.0.0.0:0\"\nallow_public = true\n".into(),
    })
    .await;
    // Both lines are written before the main listener answers; the log file may lag a little.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    loop {
        let log = app.log();
        if log.contains("metrics listening on")
            && log.contains("WITHOUT authentication on a public address")
        {
            break;
        }
        assert!(std::time::Instant::now() < deadline, "no warning: {log}");
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
}

#[test]
fn an_address_in_use_is_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = taken.local_addr().unwrap().to_string();
    let data = dir.path().join("d");
    let (status, _, err) = run_cli(
        &[
            "serve",
            "--data-dir",
            data.to_str().unwrap(),
            "--listen",
            &addr,
        ],
        dir.path(),
    );
    assert!(!status.success());
    assert!(err.contains("cannot serve"), "{err}");
}

/// Off a terminal (here: stderr is a pipe, as under CI or systemd) `backup` and `restore`
/// report their progress as plain lines on stderr, without a bar's control characters, and
/// keep stdout for the result.
#[test]
fn backup_and_restore_write_plain_progress_lines_off_a_terminal() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("d");
    let data = data.to_str().unwrap();
    let (status, _, err) = run_cli(&["migrate", "--data-dir", data], dir.path());
    assert!(status.success(), "{err}");
    let copy = dir.path().join("copy.db");
    let copy = copy.to_str().unwrap();
    let (status, out, err) = run_cli(&["backup", copy, "--data-dir", data], dir.path());
    assert!(status.success(), "{err}");
    assert!(out.contains("database copied to"), "{out}");
    let lines: Vec<&str> = err.lines().filter(|l| l.starts_with("backup: ")).collect();
    assert_eq!(lines.first(), Some(&"backup: started"), "{err}");
    let last = lines.last().unwrap();
    assert!(last.ends_with(", done") && last.contains("B of "), "{err}");
    assert!(
        !err.contains('\r') && !err.contains('\u{1b}'),
        "a bar was drawn: {err:?}"
    );

    let other = dir.path().join("restored");
    let (status, out, err) = run_cli(
        &["restore", copy, "--data-dir", other.to_str().unwrap()],
        dir.path(),
    );
    assert!(status.success(), "{err}");
    assert!(out.contains("restored"), "{out}");
    let done = err
        .lines()
        .find(|l| l.starts_with("restore: ") && l.ends_with(", done"));
    assert!(done.is_some(), "{err}");
    assert!(
        !err.contains('\r') && !err.contains('\u{1b}'),
        "a bar was drawn: {err:?}"
    );
}
