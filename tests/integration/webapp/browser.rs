//! The web app (`assets/`, docs/design.md) in a real browser: Debian's Chromium driven by
//! Playwright for Python (tests/web/webapp.py) against the real binary, Synapse, the SMTP sink
//! and the WhatsApp bridge emulator. The script asks this test for what only the test can do
//! (a sign-in code from the mail, a QR rotation and a scan at the emulator) on a line protocol:
//! `CODE <email>`, `SAY <text>`, `QR <processId>`, `SCAN <processId>`, then `DONE <json report>`.
//! Also: `tsc --noEmit --allowJs --checkJs` over assets/ with the API types generated from the
//! served OpenAPI document.

use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

use serde_json::{json, Value};

use crate::common::bridge::{BridgeEmulator, Login, Network};
use crate::common::chromium::{run_script, CHROMIUM};
use crate::common::*;

/// IMAP password of the journey's Dovecot mailbox (the SMTP sink takes any).
const MAIL_PASSWORD: &str = "web-mail-secret-4Kp";

fn tool(rel: &str) -> PathBuf {
    let dir = std::env::var_os("SWITCHBOARD_TEST_TOOLS")
        .map(PathBuf::from)
        .unwrap_or_else(|| repo_root().join("target/test-tools"));
    dir.join(rel)
}

/// Runs the journey's Playwright script; answers its requests; returns its final report.
async fn run_browser(config: Value, answer: impl AsyncFnMut(&str, &str) -> String) -> Value {
    run_script("tests/web/webapp.py", config, answer).await
}

/// Messages of `room_id` as `user` sees them on the homeserver.
async fn room_texts(user: &matrix::MatrixUser, room_id: &str) -> Vec<String> {
    let url = format!(
        "{}/_matrix/client/v3/rooms/{}/messages?dir=b&limit=50",
        synapse().base_url,
        switchboard::clients::matrix::encode(room_id)
    );
    let resp = reqwest::Client::new()
        .get(url)
        .bearer_auth(&user.access_token)
        .send()
        .await
        .unwrap();
    let page = expect_json(resp, 200).await;
    page["chunk"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["type"] == "m.room.message")
        .filter_map(|e| e["content"]["body"].as_str().map(str::to_owned))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_person_uses_switchboard_from_chromium() {
    let wa = BridgeEmulator::start(Network::WhatsApp).await;
    let admin_email = unique_email("web.admin");
    let app = TestApp::start_with_mail_and(format!(
        "[auth]\nadmin_emails = [\"{admin_email}\"]\n\n{}",
        wa.config_section()
    ))
    .await;

    // Alice exists (her Matrix account too) and a Synapse user invites her to a room and
    // writes to it; everything else she does in the browser.
    let alice_email = unique_email("web.alice");
    let alice = app.sign_in(&alice_email, None).await;
    let alice_mxid = alice.user["matrixUserId"].as_str().unwrap().to_owned();
    let bob = matrix::register("webbob").await;
    let room = bob
        .create_room(Some("Garden club"), &[&alice_mxid], false)
        .await;
    let incoming = "Hello from Synapse about the pineapple harvest";
    bob.send_text(&room, incoming).await;

    // Screenshots go to the test's directory; SWITCHBOARD_WEB_SCREENSHOTS=DIR keeps them
    // (the README's come from `SWITCHBOARD_WEB_SCREENSHOTS=docs/screenshots`).
    // A mailbox on the real Dovecot with an HTML mail holding a remote (tracking) image.
    let mailbox = dovecot::add_user("web.mailbox", MAIL_PASSWORD);
    let mail_from = unique_email("web.dana");
    let raw = format!(
        "From: Dana <{mail_from}>\nTo: {mailbox}\nSubject: Quarterly garden report\n\
         Message-ID: <report.{}@example.org>\nDate: Wed, 2 Jul 2025 12:00:00 +0000\n\
         MIME-Version: 1.0\nContent-Type: text/html; charset=utf-8\n\n\
         <p style=\"color: #0a5\">The tomatoes did <b>well</b> this quarter.</p>\
         <img src=\"https://tracker.example.org/open.png\" alt=\"logo\">\n",
        std::process::id()
    );
    dovecot::deliver(&mailbox, MAIL_PASSWORD, "INBOX", &raw).await;

    let shots = std::env::var_os("SWITCHBOARD_WEB_SCREENSHOTS")
        .map(|d| repo_root().join(d))
        .unwrap_or_else(|| app.dir.path().join("screenshots"));
    let config = json!({
        "base": app.base,
        "alice": alice_email,
        "admin": admin_email,
        "roomId": room,
        "roomName": "Garden club",
        "incoming": incoming,
        "searchWord": "pineapple",
        "screenshots": shots,
        "chromium": CHROMIUM,
        "mailbox": mailbox,
        "mailPassword": MAIL_PASSWORD,
        "imapPort": dovecot::dovecot().port,
        "smtpPort": mail::smtp().port,
        "mailSubject": "Quarterly garden report",
        "mailText": "The tomatoes did well this quarter.",
    });
    let mut codes_seen = std::collections::HashMap::<String, usize>::new();
    codes_seen.insert(alice_email.clone(), mail::messages_to(&alice_email).len());
    let report = run_browser(config, async |verb: &str, arg: &str| match verb {
        "CODE" => {
            let seen = codes_seen.entry(arg.to_owned()).or_insert(0);
            let code = mail::wait_for_code(arg, *seen).await;
            *seen += 1;
            code
        }
        "SAY" => {
            bob.send_text(&room, arg).await;
            "ok".to_owned()
        }
        "QR" => {
            wa.refresh_qr(arg);
            "ok".to_owned()
        }
        "SCAN" => {
            wa.complete_login(arg, Login::connected("15550001111", "+1 555 000 1111"));
            "ok".to_owned()
        }
        other => panic!("unknown request from the browser script: {other} {arg}"),
    })
    .await;

    eprintln!("browser report: {report:#}");
    assert_eq!(
        report["problems"],
        json!([]),
        "console errors, page errors or requests off the origin"
    );
    // The reply typed in the browser reached the homeserver as Alice.
    let reply = report["reply"].as_str().expect("reply text");
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    while !room_texts(&bob, &room).await.iter().any(|t| t == reply) {
        assert!(
            std::time::Instant::now() < deadline,
            "Synapse never got {reply:?}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    // The e-mail reply written in the browser went out over SMTP to the sender.
    let mail_reply = report["mailReply"].as_str().expect("mail reply text");
    let delivered = mail::messages_to(&mail_from);
    assert!(
        delivered
            .iter()
            .any(|m| m.contains(mail_reply) && m.contains("Re: Quarterly garden report")),
        "no reply to {mail_from} with {mail_reply:?}: {delivered:?}"
    );
    // The WhatsApp login the browser completed is now the user's.
    let logins = wa.login_ids(&alice_mxid);
    assert_eq!(logins, ["15550001111"], "emulator logins of {alice_mxid}");
    for step in [
        "signed_in",
        "key_set_up",
        "invitation_accepted",
        "message_read",
        "replied",
        "shift_enter_newline",
        "searched",
        "qr_rotated",
        "whatsapp_connected",
        "bridge_unconfigured_shown",
        "token_used",
        "token_revoked",
        "recovery_key_shown",
        "recovery_key_reset_needs_proof",
        "recovery_key_reset_confirmed",
        "admin_hidden",
        // E-mail: read, reply, and outgoing(): a file attached, the send undone from the
        // toast, the draft reopened with its text and file.
        "mailbox_connected",
        "mail_read",
        "remote_image_held_back",
        "mail_replied",
        "mail_attached",
        "mail_undone",
        "draft_reopened",
        "wrong_passphrase_refused",
        "unlocked_key_not_raw",
        "unlocked",
        "admin_shown",
        "bridge_setup_docs",
        "narrow_ok",
    ] {
        assert_eq!(report["steps"][step], true, "step {step} in {report}");
    }
}

/// `tsc --noEmit --allowJs --checkJs` (strict) over assets/, typed by the binary's own
/// OpenAPI document through openapi-typescript (both pinned in tests/clients/package.json).
#[tokio::test]
async fn the_web_app_type_checks() {
    let app = TestApp::start_with(TestConfig {
        matrix: MatrixMode::Missing,
        extra: String::new(),
    })
    .await;
    let doc = app.dir.path().join("openapi.yaml");
    let text = app.get("/openapi.yaml").await.text().await.unwrap();
    std::fs::write(&doc, text).unwrap();
    let node = tool("node/node_modules/.bin");
    assert!(
        node.join("tsc").exists(),
        "{} missing: run scripts/test.sh (npm ci of tests/clients)",
        node.display()
    );
    // tests/web/api.d.ts is generated here (and git-ignored) so the types always match the binary.
    let types = repo_root().join("tests/web/api.d.ts");
    let gen = Command::new(node.join("openapi-typescript"))
        .arg(&doc)
        .arg("-o")
        .arg(&types)
        .output()
        .expect("run openapi-typescript");
    assert!(
        gen.status.success(),
        "openapi-typescript: {}",
        String::from_utf8_lossy(&gen.stderr)
    );
    let tsc = Command::new(node.join("tsc"))
        .arg("-p")
        .arg(repo_root().join("tests/web/tsconfig.json"))
        .output()
        .expect("run tsc");
    assert!(
        tsc.status.success(),
        "tsc --checkJs over assets/:\n{}{}",
        String::from_utf8_lossy(&tsc.stdout),
        String::from_utf8_lossy(&tsc.stderr)
    );
}
