//! Clients generated from the served `/openapi.yaml` by two mainstream generators:
//! openapi-python-client (PyPI) and openapi-typescript (npm). Each must run without a
//! warning and keep every schema and operation of the document (tests/clients/check_*
//! compare the generated names with the document's); the Python client then runs the
//! README's script (read a room's history, send approved text) against the server.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::common::matrix::{register, MatrixUser};
use crate::common::*;

/// Where scripts/test.sh installs the tools of these tests (target/test-tools).
pub fn test_tools() -> PathBuf {
    std::env::var_os("SWITCHBOARD_TEST_TOOLS")
        .map(PathBuf::from)
        .unwrap_or_else(|| repo_root().join("target/test-tools"))
}

/// A tool scripts/test.sh installs under [`test_tools`]; missing is a failure, not a skip.
pub fn tool(relative: &str) -> PathBuf {
    let path = test_tools().join(relative);
    assert!(
        path.exists(),
        "{} is missing: run the tests through scripts/test.sh, which installs it \
         (its log says why it could not)",
        path.display()
    );
    path
}

/// Runs a check and returns its stdout; fails with everything it printed otherwise.
pub fn run_ok(cmd: &mut Command) -> String {
    let out = cmd
        .output()
        .unwrap_or_else(|e| panic!("cannot run {cmd:?}: {e}"));
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{cmd:?} failed ({}):\n{stdout}{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
}

async fn served_document(app: &TestApp) -> PathBuf {
    let resp = app.get("/openapi.yaml").await;
    assert_eq!(resp.status(), 200);
    let path = app.dir.path().join("openapi.yaml");
    std::fs::write(&path, resp.text().await.expect("document")).expect("write document");
    path
}

fn generate_python_client(doc: &Path, out: &Path) -> String {
    run_ok(
        Command::new(tool("client-venv/bin/python"))
            .arg(repo_root().join("tests/clients/check_python_client.py"))
            .arg(doc)
            .arg(out),
    )
}

#[tokio::test]
async fn the_typescript_client_generates_without_warnings_or_dropped_parts() {
    let app = TestApp::start_with(TestConfig {
        matrix: MatrixMode::Missing,
        ..TestConfig::default()
    })
    .await;
    let doc = served_document(&app).await;
    let report = run_ok(
        Command::new("node")
            .arg(repo_root().join("tests/clients/check_typescript_client.mjs"))
            .arg(&doc)
            .arg(app.dir.path().join("typescript"))
            .arg(tool("node/node_modules").parent().unwrap()),
    );
    assert!(report.contains("no warnings"), "{report}");
}

/// The generated client of the served document, used as the README's script: a personal
/// token reads a synced conversation (`ReadableMessagePage`, the type the generator
/// dropped before) and sends approved text, which arrives on the homeserver.
#[tokio::test]
async fn the_python_client_generates_cleanly_and_runs_the_readme_script() {
    let app = TestApp::start_with_mail().await;
    let doc = served_document(&app).await;
    let clients = app.dir.path().join("python");
    let report = generate_python_client(&doc, &clients);
    assert!(report.contains("no warnings"), "{report}");

    let me = app.sign_up("clients.script").await;
    let token = personal_token(&app, &me).await;
    let mine = MatrixUser::from_token(
        me.user["matrixUserId"].as_str().expect("matrixUserId"),
        me.matrix_access_token
            .as_deref()
            .expect("matrixAccessToken"),
    );
    let bob = register("clientsbob").await;
    let room = mine
        .create_room(Some("script test"), &[&bob.user_id], false)
        .await;
    bob.join(&room).await;
    bob.send_text(&room, "hello from bob").await;
    wait_for_text(&app, &token, &room, "hello from bob").await;

    let reply = format!("approved by a script {}", uuid::Uuid::new_v4().simple());
    let printed = run_ok(
        Command::new(tool("client-venv/bin/python"))
            .arg(repo_root().join("tests/clients/read_and_send.py"))
            .arg(&room)
            .arg(&reply)
            .env("PYTHONPATH", &clients)
            .env("SWITCHBOARD_URL", &app.base)
            .env("SWITCHBOARD_TOKEN", &token),
    );
    assert!(
        printed.contains(&format!("incoming {}: hello from bob", bob.user_id)),
        "{printed}"
    );
    let event_id = printed
        .lines()
        .find_map(|l| l.strip_prefix("sent "))
        .unwrap_or_else(|| panic!("no event id printed:\n{printed}"));
    // It came back from the homeserver through the sync worker: it really was sent.
    let page = wait_for_text(&app, &token, &room, &reply).await;
    let sent = page["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["text"] == reply.as_str())
        .unwrap();
    assert_eq!(sent["eventId"], event_id, "{page}");
    assert_eq!(sent["direction"], "outgoing");
}

/// Polls the personal-token history of `room` until a message reads `text`.
async fn wait_for_text(app: &TestApp, token: &str, room: &str, text: &str) -> Value {
    let url = format!("/api/messages?roomId={}", room.replace('!', "%21"));
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let resp = app.get_auth(&url, token).await;
        let status = resp.status().as_u16();
        let body: Value = resp.json().await.unwrap_or_default();
        if status == 200
            && body["messages"]
                .as_array()
                .is_some_and(|m| m.iter().any(|m| m["text"] == text))
        {
            return body;
        }
        assert!(
            Instant::now() < deadline,
            "{text:?} did not reach the history of {room}: {status} {body}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}
