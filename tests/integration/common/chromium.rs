//! The Playwright scripts of tests/web/ in Debian's Chromium, and what every launcher of one
//! shares: the script's JSON argument, its line protocol (`VERB arg` requests the test
//! answers, then `DONE <json report>`), the mailed sign-in codes it asks for with
//! `CODE <email>`, and the report's check.

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use serde_json::Value;

use super::{mail, python, repo_root, TestApp};

/// The browser every run uses: Debian's package (Playwright's own download is not reachable).
pub const CHROMIUM: &str = "/usr/bin/chromium";
/// A whole browser script must finish within this.
const SCRIPT_TIMEOUT: Duration = Duration::from_secs(300);

/// The JSON argument of a script: the app's base URL, the user's e-mail, where screenshots go
/// (`SWITCHBOARD_WEB_SCREENSHOTS=DIR` keeps them, e.g. docs/screenshots) and the browser,
/// with the fields of `extra` (an object) added.
pub fn script_config(app: &TestApp, email: &str, extra: Value) -> Value {
    let screenshots = std::env::var_os("SWITCHBOARD_WEB_SCREENSHOTS")
        .map(|d| repo_root().join(d))
        .unwrap_or_else(|| app.dir.path().join("screenshots"));
    let mut config = serde_json::json!({
        "base": app.base,
        "email": email,
        "screenshots": screenshots,
        "chromium": CHROMIUM,
    });
    if let (Some(config), Value::Object(extra)) = (config.as_object_mut(), extra) {
        config.extend(extra);
    }
    config
}

/// The sign-in codes a script asks for (`CODE <email>`): each is the next mail to arrive
/// after the ones already there when the script started.
pub struct SignInCodes {
    seen: usize,
}

impl SignInCodes {
    pub fn new(email: &str) -> Self {
        Self {
            seen: mail::messages_to(email).len(),
        }
    }

    pub async fn next(&mut self, email: &str) -> String {
        let code = mail::wait_for_code(email, self.seen).await;
        self.seen += 1;
        code
    }
}

/// The report of a script has no problem and every one of `steps` done.
pub fn assert_steps(report: &Value, steps: &[&str]) {
    eprintln!("browser report: {report:#}");
    assert_eq!(report["problems"], serde_json::json!([]), "{report}");
    for step in steps {
        assert_eq!(report["steps"][step], true, "step {step} in {report}");
    }
}

/// Runs the Playwright script `script` (a path under the repository) with `config`; answers
/// its requests with `answer(verb, arg)`; returns its final report.
pub async fn run_script(
    script: &str,
    config: Value,
    answer: impl AsyncFnMut(&str, &str) -> String,
) -> Value {
    assert!(
        Path::new(CHROMIUM).exists(),
        "{CHROMIUM} is missing: scripts/test.sh installs Debian's chromium (apt-get, as root)"
    );
    let mut child = Command::new(python())
        .arg(repo_root().join(script))
        .arg(config.to_string())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("start {script}: {e}"));
    let mut stdin = child.stdin.take().unwrap();
    let stdout = BufReader::new(child.stdout.take().unwrap());
    // A thread reads the script's lines, so the runtime stays free for the stand-ins.
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<String>();
    std::thread::spawn(move || {
        for line in stdout.lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    let mut answer = answer;
    let report = tokio::time::timeout(SCRIPT_TIMEOUT, async {
        while let Some(line) = rx.recv().await {
            let (verb, arg) = line.split_once(' ').unwrap_or((line.as_str(), ""));
            if verb == "DONE" {
                return serde_json::from_str::<Value>(arg).expect("report JSON");
            }
            let reply = answer(verb, arg).await;
            writeln!(stdin, "{reply}").unwrap();
            stdin.flush().unwrap();
        }
        panic!("the browser script ended without a report (its stderr is above)");
    })
    .await;
    let _ = child.kill();
    let _ = child.wait();
    report.unwrap_or_else(|_| panic!("{script} took longer than {SCRIPT_TIMEOUT:?}"))
}
