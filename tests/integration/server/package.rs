//! The Debian package (`[package.metadata.deb]`, cargo-deb): built from the test binary,
//! checked with lintian (no errors) and its unit with `systemd-analyze verify`, then
//! extracted into a temporary root. Its maintainer scripts run for real inside a private
//! mount namespace whose /etc and /var/lib are throw-away copies (so the machine gets no
//! user and no data), and its binary is started with the packaged config on the data
//! directory postinst made.

use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::common::*;
use crate::server::clients::{run_ok, tool};

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

/// The documentation travels with the package: the README and every file of `docs/`
/// (its screenshots included) byte for byte under /usr/share/doc/switchboard, so the
/// README's `docs/…` links resolve on an installed system too.
fn check_docs(root: &Path) {
    let doc = root.join("usr/share/doc/switchboard");
    let same = |repo: &Path, installed: &Path| {
        let want = std::fs::read(repo).unwrap();
        let got = std::fs::read(installed)
            .unwrap_or_else(|e| panic!("{} is not packaged: {e}", installed.display()));
        assert!(
            got == want,
            "{} differs from the repository's",
            installed.display()
        );
    };
    same(&repo_root().join("README.md"), &doc.join("README.md"));
    let mut count = 0;
    for dir in ["docs", "docs/screenshots"] {
        for entry in std::fs::read_dir(repo_root().join(dir)).unwrap() {
            let path = entry.unwrap().path();
            if path.is_file() {
                same(&path, &doc.join(dir).join(path.file_name().unwrap()));
                count += 1;
            }
        }
    }
    assert!(count >= 6, "only {count} files in docs/");
    assert!(doc.join("docs/design.md").is_file());
}

/// Throw-away copies of the system directories the maintainer scripts write to.
struct Sandbox {
    etc: PathBuf,
    var_lib: PathBuf,
    sysusers: PathBuf,
}

impl Sandbox {
    fn new(work: &Path, root: &Path) -> Self {
        let s = Self {
            etc: work.join("sandbox/etc"),
            var_lib: work.join("sandbox/var-lib"),
            sysusers: work.join("sandbox/sysusers.d"),
        };
        std::fs::create_dir_all(&s.var_lib).unwrap();
        run_ok(Command::new("cp").arg("-a").arg("/etc").arg(&s.etc));
        std::fs::create_dir_all(&s.sysusers).unwrap();
        std::fs::copy(
            root.join("usr/lib/sysusers.d/switchboard.conf"),
            s.sysusers.join("switchboard.conf"),
        )
        .unwrap();
        // As dpkg unpacks it before postinst runs.
        std::fs::create_dir_all(s.etc.join("switchboard")).unwrap();
        std::fs::copy(
            root.join("etc/switchboard/switchboard.toml"),
            s.etc.join("switchboard/switchboard.toml"),
        )
        .unwrap();
        s
    }

    /// Runs a maintainer script with the copies mounted over /etc, /var/lib and
    /// /usr/lib/sysusers.d, visible to it alone.
    fn run(&self, script: &Path, args: &[&str]) -> String {
        let mounts = format!(
            "mount --bind '{}' /etc && mount --bind '{}' /var/lib && \
             mount --bind '{}' /usr/lib/sysusers.d && exec sh \"$0\" \"$@\"",
            self.etc.display(),
            self.var_lib.display(),
            self.sysusers.display()
        );
        let out = Command::new("unshare")
            .args(["--mount", "--propagation", "private", "sh", "-ec", &mounts])
            .arg(script)
            .args(args)
            .output()
            .expect("unshare (util-linux) is not installed");
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(
            out.status.success(),
            "{} {args:?} in a mount namespace (needs root) failed: {}\n{text}",
            script.display(),
            out.status
        );
        text
    }

    /// uid and gid of `name` in the copied /etc/passwd.
    fn user(&self, name: &str) -> (u32, u32, String) {
        let passwd = std::fs::read_to_string(self.etc.join("passwd")).unwrap();
        let line = passwd
            .lines()
            .find(|l| l.starts_with(&format!("{name}:")))
            .unwrap_or_else(|| panic!("no user {name} in the sandbox's /etc/passwd"));
        let f: Vec<&str> = line.split(':').collect();
        (
            f[2].parse().unwrap(),
            f[3].parse().unwrap(),
            line.to_owned(),
        )
    }
}

/// postinst creates the system user, /var/lib/switchboard (0700) and a 32-byte master
/// key (0600), all owned by that user, and keeps the key on a second configure.
fn check_postinst(sandbox: &Sandbox, control: &Path) -> Vec<u8> {
    let said = sandbox.run(&control.join("postinst"), &["configure", ""]);
    assert!(said.contains("not enabled"), "{said}");
    let (uid, gid, line) = sandbox.user("switchboard");
    assert!(uid > 0 && uid < 1000, "a system user: {line}");
    assert!(
        line.ends_with(":/var/lib/switchboard:/usr/sbin/nologin"),
        "{line}"
    );
    let data = sandbox.var_lib.join("switchboard");
    let key_path = data.join("master.key");
    for (path, want) in [(&data, 0o700), (&key_path, 0o600)] {
        let meta = std::fs::metadata(path)
            .unwrap_or_else(|e| panic!("postinst did not create {}: {e}", path.display()));
        assert_eq!(mode(path), want, "{}", path.display());
        assert_eq!((meta.uid(), meta.gid()), (uid, gid), "{}", path.display());
    }
    let key = std::fs::read(&key_path).unwrap();
    assert_eq!(key.len(), 32);
    let config = sandbox.etc.join("switchboard/switchboard.toml");
    assert_eq!(mode(&config), 0o640);
    assert_eq!(std::fs::metadata(&config).unwrap().gid(), gid);

    sandbox.run(&control.join("postinst"), &["configure", "2.0.0-1"]);
    assert_eq!(
        std::fs::read(&key_path).unwrap(),
        key,
        "upgrade replaced the key"
    );
    key
}

/// postrm keeps the data on `remove` and deletes it on `purge` only.
fn check_postrm(sandbox: &Sandbox, control: &Path) {
    let data = sandbox.var_lib.join("switchboard");
    sandbox.run(&control.join("postrm"), &["remove"]);
    assert!(data.join("master.key").is_file(), "remove deleted data");
    assert!(data.join("switchboard.db").is_file());
    sandbox.run(&control.join("postrm"), &["purge"]);
    assert!(!data.exists(), "purge kept {}", data.display());
}

#[tokio::test]
async fn the_debian_package_passes_lintian_its_scripts_make_user_and_key_and_it_serves_health() {
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
    check_docs(&root);
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
    let sandbox = Sandbox::new(work.path(), &root);
    let key = check_postinst(&sandbox, &control);

    // The packaged binary with the packaged config on the data directory postinst made
    // (redirected into the sandbox), port redirected, the homeserver from the environment
    // (the config layer above the file).
    let data = sandbox.var_lib.join("switchboard");
    let log_path = work.path().join("server.log");
    let log = std::fs::File::create(&log_path).unwrap();
    let synapse = synapse();
    let server = Running(
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
    assert_eq!(std::fs::read(data.join("master.key")).unwrap(), key);
    assert!(!root.join("data").exists(), "wrote into the package tree");
    drop(server);

    check_postrm(&sandbox, &control);
}
