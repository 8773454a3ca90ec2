//! The Debian package (`[package.metadata.deb]`, cargo-deb): built from the test binary,
//! checked with lintian (no errors) and its unit with `systemd-analyze verify`, then
//! extracted into a temporary root whose binary is started with the packaged config.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::clients::{run_ok, tool};
use crate::common::*;

/// Kills the packaged server when the test ends, passed or not.
struct Running(Child);

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// cargo-deb takes binaries from `target/release/` (it maps that prefix onto the real
/// target directory). Pointed at a target directory of its own that holds the test
/// binary there, it packages exactly the binary under test: no ~10 min release build,
/// and the real target/release is left alone. `--strip` as a release build would be.
fn build_deb(work: &Path) -> PathBuf {
    let target = work.join("target");
    std::fs::create_dir_all(target.join("release")).unwrap();
    std::fs::copy(binary(), target.join("release/switchboard")).expect("copy the binary");
    let out_dir = work.join("deb");
    run_ok(
        Command::new(tool("cargo/bin/cargo-deb"))
            .current_dir(repo_root())
            .env("CARGO_TARGET_DIR", &target)
            .args(["--no-build", "--strip", "--fast", "--output"])
            .arg(&out_dir),
    );
    let debs: Vec<PathBuf> = std::fs::read_dir(&out_dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "deb"))
        .collect();
    assert_eq!(debs.len(), 1, "{debs:?}");
    debs[0].clone()
}

fn lintian(deb: &Path) -> String {
    let out = Command::new("lintian")
        .args(["--fail-on", "error"])
        .arg(deb)
        .output()
        .expect("lintian is not installed: run scripts/test.sh as root (it apt-installs it)");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success() && !text.lines().any(|l| l.starts_with("E: ")),
        "lintian found errors:\n{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    text
}

fn mode(path: &Path) -> u32 {
    std::fs::metadata(path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .permissions()
        .mode()
        & 0o7777
}

/// `systemd-analyze verify` resolves `ExecStart` on the real root, where the package is
/// not installed: verify a copy whose binary path points into the extracted tree (the
/// only change), and fail on any diagnostic, as it exits 0 on unknown keys.
fn verify_unit(root: &Path, work: &Path) {
    let unit = std::fs::read_to_string(root.join("lib/systemd/system/switchboard.service"))
        .expect("the unit is packaged in /lib/systemd/system");
    assert!(
        unit.contains("ExecStart=/usr/bin/switchboard serve"),
        "{unit}"
    );
    let dir = work.join("unit");
    std::fs::create_dir_all(&dir).unwrap();
    let copy = dir.join("switchboard.service");
    let packaged_bin = root.join("usr/bin/switchboard");
    std::fs::write(
        &copy,
        unit.replace("/usr/bin/switchboard", packaged_bin.to_str().unwrap()),
    )
    .unwrap();
    let out = Command::new("systemd-analyze")
        .arg("verify")
        .arg(&copy)
        .output()
        .expect("systemd-analyze (package systemd) is not installed");
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        out.status.success() && said.trim().is_empty(),
        "systemd-analyze verify: {}\n{said}",
        out.status
    );
}

#[tokio::test]
async fn the_debian_package_passes_lintian_and_its_binary_serves_health() {
    let work = tempfile::tempdir().unwrap();
    let deb = build_deb(work.path());
    let report = lintian(&deb);
    println!("lintian (no errors):\n{report}");

    let root = work.path().join("root");
    run_ok(Command::new("dpkg-deb").arg("-x").arg(&deb).arg(&root));
    let control = work.path().join("control");
    run_ok(Command::new("dpkg-deb").arg("-e").arg(&deb).arg(&control));
    assert_eq!(mode(&root.join("usr/bin/switchboard")), 0o755);
    assert!(root.join("usr/lib/sysusers.d/switchboard.conf").is_file());
    let config = root.join("etc/switchboard/switchboard.toml");
    assert_eq!(
        std::fs::read_to_string(&config).unwrap(),
        std::fs::read_to_string(repo_root().join("config.example.toml")).unwrap()
    );
    assert_eq!(
        std::fs::read_to_string(control.join("conffiles"))
            .unwrap()
            .trim(),
        "/etc/switchboard/switchboard.toml"
    );
    for script in ["postinst", "postrm"] {
        assert_eq!(mode(&control.join(script)), 0o755, "{script}");
        run_ok(Command::new("sh").arg("-n").arg(control.join(script)));
    }
    verify_unit(&root, work.path());

    // The packaged binary with the packaged config; data dir and port redirected, the
    // homeserver from the environment (the config layer above the file).
    let data = work.path().join("data");
    let log_path = work.path().join("server.log");
    let log = std::fs::File::create(&log_path).unwrap();
    let synapse = synapse();
    let _server = Running(
        Command::new(root.join("usr/bin/switchboard"))
            .arg("serve")
            .arg("--config")
            .arg(&config)
            .arg("--data-dir")
            .arg(&data)
            .args(["--listen", "127.0.0.1:0"])
            .env_remove("RUST_LOG")
            .env("SWITCHBOARD__MATRIX__HOMESERVER_URL", &synapse.base_url)
            .env("SWITCHBOARD__MATRIX__SERVER_NAME", &synapse.server_name)
            .env(
                "SWITCHBOARD__MATRIX__REGISTRATION_SHARED_SECRET",
                &synapse.shared_secret,
            )
            .stdin(Stdio::null())
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .spawn()
            .expect("start the packaged binary"),
    );
    let deadline = Instant::now() + Duration::from_secs(30);
    let port = loop {
        let text = std::fs::read_to_string(&log_path).unwrap_or_default();
        if let Some(port) = bound_port(&text) {
            break port;
        }
        assert!(
            Instant::now() < deadline,
            "the packaged binary did not start:\n{text}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    let resp = reqwest::get(format!("http://127.0.0.1:{port}/health"))
        .await
        .expect("GET /health");
    let body = expect_json(resp, 200).await;
    assert_eq!(body["status"], "ok", "{body}");
    assert_eq!(body["checks"]["database"]["status"], "ok");
    assert_eq!(body["checks"]["matrix"]["status"], "ok");
    assert_eq!(body["version"], env!("CARGO_PKG_VERSION"));
    assert_eq!(mode(&data.join("master.key")), 0o600);
    assert!(!root.join("data").exists(), "wrote into the package tree");
}
