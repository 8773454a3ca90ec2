//! A real IMAP server for the e-mail tests: Dovecot from the Debian packages, started once
//! per run by `scripts/dovecot.sh` in `SWITCHBOARD_TEST_DOVECOT_DIR` (default
//! `target/test-dovecot`, reused while it runs), and helpers that act on it as another
//! mail client would (APPEND, flags, mailboxes) through the IMAP protocol.

use std::collections::HashMap;
use std::path::PathBuf;
use std::process::Command;
use std::sync::OnceLock;

use switchboard::clients::mail::imap::{self, Endpoint, Security, Session};
use switchboard::config::{EmailConfig, PrivateHosts};

use super::repo_root;

pub struct Dovecot {
    pub port: u16,
    pub dir: PathBuf,
}

fn parse_env(text: &str) -> HashMap<String, String> {
    text.lines()
        .filter_map(|l| l.split_once('='))
        .map(|(k, v)| (k.trim().to_owned(), v.trim().to_owned()))
        .collect()
}

pub fn dovecot() -> &'static Dovecot {
    static DOVECOT: OnceLock<Dovecot> = OnceLock::new();
    DOVECOT.get_or_init(|| {
        let script = repo_root().join("scripts/dovecot.sh");
        let dir = std::env::var_os("SWITCHBOARD_TEST_DOVECOT_DIR")
            .map(PathBuf::from)
            .unwrap_or_else(|| repo_root().join("target/test-dovecot"));
        let status = Command::new("bash")
            .arg(&script)
            .arg("--status")
            .arg(&dir)
            .output()
            .expect("bash");
        let out = if status.status.success() {
            status.stdout
        } else {
            let _ = Command::new("bash").arg(&script).arg("--stop").arg(&dir).output();
            let out = Command::new("bash")
                .arg(&script)
                .arg(&dir)
                .arg(super::free_port().to_string())
                .output()
                .expect("run scripts/dovecot.sh");
            assert!(
                out.status.success(),
                "scripts/dovecot.sh failed (is dovecot-imapd installed? scripts/test.sh installs it):\n{}{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            );
            out.stdout
        };
        let env = parse_env(&String::from_utf8_lossy(&out));
        Dovecot {
            port: env["DOVECOT_PORT"].parse().expect("DOVECOT_PORT"),
            dir,
        }
    })
}

/// A fresh mailbox user on the test Dovecot; returns its address.
pub fn add_user(prefix: &str, password: &str) -> String {
    let d = dovecot();
    let email = super::unique_email(prefix);
    let out = Command::new("bash")
        .arg(repo_root().join("scripts/dovecot.sh"))
        .arg("--add-user")
        .arg(&d.dir)
        .arg(&email)
        .arg(password)
        .output()
        .expect("add user");
    assert!(out.status.success(), "add user: {out:?}");
    // Dovecot may refuse a user added a moment ago (it re-reads its passwd file lazily):
    // wait until the new user can log in, so no test meets that window through the API.
    let (user, pass) = (email.clone(), password.to_owned());
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime");
        rt.block_on(async { imap::logout(login(&user, &pass).await).await });
    })
    .join()
    .expect("the new mail user logs in");
    email
}

pub fn endpoint(user: &str, password: &str) -> Endpoint {
    Endpoint {
        host: "127.0.0.1".into(),
        port: dovecot().port,
        security: Security::None,
        username: user.into(),
        password: password.into(),
    }
}

/// The client settings the tests' own IMAP sessions use (loopback allowed).
pub fn harness_config() -> EmailConfig {
    EmailConfig {
        allow_private_hosts: PrivateHosts::All,
        ..EmailConfig::default()
    }
}

/// An IMAP session of `user`, as another mail client. A user added a moment ago may not
/// be known yet (Dovecot re-reads its passwd-file when it sees the file change, and tests
/// add users concurrently): a refused login (answered after Dovecot's 2 s failure delay) is retried for a few seconds.
pub async fn login(user: &str, password: &str) -> Session {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(12);
    loop {
        match imap::connect(&endpoint(user, password), &harness_config(), "test-harness").await {
            Ok(s) => return s,
            Err(imap::ImapError::Login(_)) if std::time::Instant::now() < deadline => {
                tokio::time::sleep(std::time::Duration::from_millis(200)).await;
            }
            Err(e) => panic!("IMAP login to the test Dovecot: {e:?}"),
        }
    }
}

/// Delivers a message into `mailbox` by IMAP APPEND.
pub async fn deliver(user: &str, password: &str, mailbox: &str, raw: &str) {
    let mut s = login(user, password).await;
    // Lines end in CRLF on the wire; a message already written with CRLF keeps them (a
    // blind `\n` → `\r\n` made those `\r\r\n`).
    let crlf = raw.replace("\r\n", "\n").replace('\n', "\r\n");
    imap::append(&mut s, mailbox, "()", crlf.as_bytes())
        .await
        .expect("APPEND");
    imap::logout(s).await;
}

/// `(uid, seen, flagged, Message-ID header)` of every message in `mailbox`.
pub async fn list(user: &str, password: &str, mailbox: &str) -> Vec<(u32, bool, bool, String)> {
    let mut s = login(user, password).await;
    let sel = imap::select(&mut s, mailbox, false).await.expect("SELECT");
    let mut out = Vec::new();
    if sel.exists > 0 {
        for f in imap::fetch_messages(&mut s, "1:*", imap::Extent::Whole, u64::MAX)
            .await
            .expect("FETCH")
        {
            let text = String::from_utf8_lossy(&f.raw).into_owned();
            let mid = text
                .lines()
                .find_map(|l| {
                    l.strip_prefix("Message-ID:")
                        .or_else(|| l.strip_prefix("Message-Id:"))
                })
                .unwrap_or_default()
                .trim()
                .to_owned();
            out.push((f.uid, f.seen, f.flagged, mid));
        }
    }
    imap::logout(s).await;
    out
}

/// Sets or clears a flag on every message of `mailbox`, as another client would.
pub async fn set_flag(user: &str, password: &str, mailbox: &str, add: bool, flag: &str) {
    let mut s = login(user, password).await;
    imap::select(&mut s, mailbox, false).await.expect("SELECT");
    imap::store_flag(&mut s, "1:*", add, flag)
        .await
        .expect("STORE");
    imap::logout(s).await;
}

/// Whether `mailbox` exists for `user`.
pub async fn mailbox_names(user: &str, password: &str) -> Vec<String> {
    let mut s = login(user, password).await;
    let names = imap::list_mailboxes(&mut s, usize::MAX)
        .await
        .expect("LIST")
        .into_iter()
        .map(|m| m.name)
        .collect();
    imap::logout(s).await;
    names
}

/// Deletes a mailbox behind Switchboard's back.
pub async fn delete_mailbox(user: &str, password: &str, mailbox: &str) {
    let mut s = login(user, password).await;
    s.delete(mailbox).await.expect("DELETE mailbox");
    imap::logout(s).await;
}
