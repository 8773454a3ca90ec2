//! The web app's Device verification section in Chromium (tests/web/verify.py): a SAS that
//! matrix-nio starts appears live, is accepted, shows the same emoji as nio, is confirmed
//! with "They match" and ends verified.

use serde_json::json;

use super::{emoji_of, own};
use crate::common::chromium::{assert_steps, run_script, script_config, SignInCodes};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_web_app_walks_a_person_through_a_verification() {
    let mut s = own().await;
    let email = s.session.email.clone();
    let config = script_config(&s.app, &email, json!({}));
    let mut codes = SignInCodes::new(&email);
    let mut started = String::new();
    let report = run_script(
        "tests/web/verify.py",
        config,
        async |verb: &str, arg: &str| match verb {
            "CODE" => codes.next(arg).await,
            "START" => {
                started = s.nio_starts();
                started.clone()
            }
            "KEYS" => {
                let theirs = s.nio.call(json!({
                    "op": "sas_wait", "transaction_id": arg, "until": "keys", "timeout": 30,
                }));
                serde_json::to_string(&emoji_of(&theirs["emoji"])).unwrap()
            }
            "CONFIRM" => {
                s.nio
                    .call(json!({"op": "sas_confirm", "transaction_id": arg}));
                s.nio.call(json!({
                    "op": "sas_wait", "transaction_id": arg, "until": "verified", "timeout": 30,
                }));
                "ok".to_owned()
            }
            other => panic!("unknown request from the browser script: {other} {arg}"),
        },
    )
    .await;
    assert_steps(
        &report,
        &["section_shown", "listed_live", "emoji_shown", "verified"],
    );
    let done = s.wait_verified(&started).await;
    assert_eq!(done["otherDeviceId"], s.nio_device);
}
