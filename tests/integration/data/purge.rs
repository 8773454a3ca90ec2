//! The scheduler's purge of sign-in codes and dead tokens, against the real binary.

use std::time::{Duration, Instant};

use serde_json::json;

use crate::common::*;
use crate::rooms::db;

fn ids(app: &TestApp, sql: &str) -> Vec<String> {
    let conn = db(app);
    let mut stmt = conn.prepare(sql).unwrap();
    let rows = stmt
        .query_map([], |r| r.get::<_, rusqlite::types::Value>(0))
        .unwrap()
        .map(|v| match v.unwrap() {
            rusqlite::types::Value::Integer(i) => i.to_string(),
            rusqlite::types::Value::Text(t) => t,
            other => format!("{other:?}"),
        });
    rows.collect()
}

async fn new_token(app: &TestApp, s: &Session, name: &str) -> String {
    let tokens = app.user(s).tokens();
    let id = tokens.create_named(name).await.id;
    tokens.revoke(&id).await.unwrap();
    id
}

#[tokio::test]
async fn old_codes_and_dead_tokens_are_purged_and_recent_ones_stay() {
    let mut app = TestApp::start_with_mail().await;
    let live = app.sign_up("purge").await;
    // Another user signs out: its refresh token is revoked (a later sign-in of the same
    // user would drop it anyway, see the refresh-token cap).
    let gone = app.sign_up("purge-out").await;
    expect_json(
        app.post_json("/api/auth/logout", Some(&gone.access_token), json!({}))
            .await,
        200,
    )
    .await;
    // A code nobody used, just now: expired or not, the 24 h window keeps it.
    let other = unique_email("purge-unused");
    expect_json(
        app.post_json("/api/auth/code", None, json!({"email": other}))
            .await,
        200,
    )
    .await;
    let old_token = new_token(&app, &live, "old").await;
    let recent_token = new_token(&app, &live, "recent").await;

    let codes = ids(&app, "SELECT id FROM login_codes ORDER BY id");
    assert_eq!(codes.len(), 3, "{codes:?}");
    let refresh = ids(
        &app,
        "SELECT CAST(revoked_at IS NULL AS TEXT) FROM refresh_tokens ORDER BY created_at, rowid",
    );
    assert_eq!(refresh, ["1", "0"], "one live, one revoked by logout");

    // Age the first code past 24 h and the first revocation past 30 days, as if the
    // server had been running that long.
    app.signal("TERM");
    let now = chrono::Utc::now().timestamp();
    {
        let conn = db(&app);
        conn.execute(
            "UPDATE login_codes SET created_at = ?1, expires_at = ?1 + 600 WHERE id = ?2",
            rusqlite::params![now - 25 * 3600, codes[0].parse::<i64>().unwrap()],
        )
        .unwrap();
        conn.execute(
            "UPDATE api_tokens SET revoked_at = ?1 WHERE id = ?2",
            rusqlite::params![now - 31 * 86_400, old_token],
        )
        .unwrap();
    }
    let log_start = app.log().len();
    app.spawn().await;

    // Positive marker: the purge at start logs what it removed.
    let deadline = Instant::now() + Duration::from_secs(15);
    while !app.log()[log_start..].contains("purged expired sign-in codes and tokens") {
        assert!(
            Instant::now() < deadline,
            "no purge after start; log:\n{}",
            app.log()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(
        ids(&app, "SELECT id FROM login_codes ORDER BY id"),
        codes[1..].to_vec(),
        "the code from 25 h ago is gone, the two from today stay"
    );
    assert_eq!(
        ids(
            &app,
            "SELECT CAST(revoked_at IS NULL AS TEXT) FROM refresh_tokens"
        ),
        ["1"],
        "the revoked refresh token is gone, the live one stays"
    );
    assert_eq!(
        ids(&app, "SELECT id FROM api_tokens"),
        [recent_token],
        "the token revoked 31 days ago is gone, the one revoked today is still listed"
    );
    // The live session still works after the purge.
    let resp = app
        .post_json(
            "/api/auth/refresh",
            None,
            json!({"refreshToken": live.refresh_token}),
        )
        .await;
    expect_json(resp, 200).await;
}
