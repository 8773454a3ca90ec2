//! A real SMTP server for the run (`tests/support/smtp_sink.py`, aiosmtpd) and helpers
//! that read the sign-in codes out of the delivered messages.

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

use super::{free_port, python, repo_root};

pub struct SmtpSink {
    pub port: u16,
    pub maildir: PathBuf,
    _child: Mutex<Child>,
}

/// The sink of this test run, started on first use. It exits when this process does
/// (its stdin closes).
pub fn smtp() -> &'static SmtpSink {
    static SINK: OnceLock<SmtpSink> = OnceLock::new();
    SINK.get_or_init(|| {
        let port = free_port();
        let maildir =
            std::env::temp_dir().join(format!("switchboard-mail-{}-{port}", std::process::id()));
        let mut child = Command::new(python())
            .arg(repo_root().join("tests/support/smtp_sink.py"))
            .arg(port.to_string())
            .arg(&maildir)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("start the SMTP sink (python with aiosmtpd; run scripts/test.sh)");
        let mut line = String::new();
        BufReader::new(child.stdout.take().expect("stdout"))
            .read_line(&mut line)
            .expect("SMTP sink output");
        assert_eq!(line.trim(), "ready", "SMTP sink did not start");
        SmtpSink {
            port,
            maildir,
            _child: Mutex::new(child),
        }
    })
}

/// TOML for a `[mail]` section that delivers to the sink.
pub fn smtp_config() -> String {
    format!(
        "[mail]\ntransport = \"smtp\"\nfrom = \"Switchboard <noreply@switchboard.test>\"\nsmtp_host = \"127.0.0.1\"\nsmtp_port = {}\nsmtp_security = \"none\"\n\n",
        smtp().port
    )
}

/// Messages delivered to `email` so far, oldest first.
pub fn messages_to(email: &str) -> Vec<String> {
    let sink = smtp();
    let mut files: Vec<(u64, String)> = std::fs::read_dir(&sink.maildir)
        .map(|d| {
            d.filter_map(Result::ok)
                .filter_map(|e| {
                    let name = e.file_name().to_string_lossy().into_owned();
                    let n = name.strip_suffix(".eml")?.parse().ok()?;
                    Some((n, std::fs::read_to_string(e.path()).ok()?))
                })
                .collect()
        })
        .unwrap_or_default();
    files.sort();
    let needle = format!("X-Rcpt-To: {}", email.to_lowercase());
    files
        .into_iter()
        .map(|(_, text)| text)
        .filter(|t| {
            t.lines()
                .next()
                .is_some_and(|l| l.eq_ignore_ascii_case(&needle))
        })
        .collect()
}

/// Waits for the `nth` (0-based) message to `email` and returns the 6-digit code in it.
pub async fn wait_for_code(email: &str, nth: usize) -> String {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        if let Some(message) = messages_to(email).get(nth) {
            return extract_code(message)
                .unwrap_or_else(|| panic!("no code in message:\n{message}"));
        }
        assert!(Instant::now() < deadline, "no mail #{nth} for {email}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

fn extract_code(message: &str) -> Option<String> {
    let subject = message.lines().find(|l| l.starts_with("Subject:"))?;
    let code: String = subject.chars().filter(char::is_ascii_digit).collect();
    (code.len() == 6).then_some(code)
}
