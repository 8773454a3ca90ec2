//! The built application end to end below the HTTP layer: personal tokens expire and
//! are revoked (services need the whole composition root, so these tests live here).

use super::AppState;
use crate::clock::unix_now;
use crate::config::Config;
use crate::crypto;
use crate::error::AppError;
use crate::services::allowlist::ALLOWLIST_VERSION;
use crate::services::session::{self, Principal};
use crate::services::tokens::{create, revoke, update, TokenChange};

const OPT_IN: TokenChange = TokenChange {
    opt_in: true,
    mcp_actions: None,
};
use crate::services::users;
use crate::store::users as user_store;

async fn state_with_user() -> (tempfile::TempDir, AppState, String) {
    let dir = tempfile::tempdir().unwrap();
    let mut config = Config::default();
    config.storage.data_dir = dir.path().join("data");
    let state = AppState::build(config).unwrap();
    let user = users::new_user(&state, "unit@example.test", None);
    let id = user.id.clone();
    state
        .store
        .run(move |c| user_store::insert(c, &user).map_err(AppError::from))
        .await
        .unwrap();
    (dir, state, id)
}

async fn set_expiry(state: &AppState, token_id: &str, at: i64) {
    let id = token_id.to_owned();
    state
        .store
        .run(move |c| {
            c.execute(
                "UPDATE api_tokens SET expires_at = ?2 WHERE id = ?1",
                rusqlite::params![id, at],
            )
            .map_err(AppError::from)
        })
        .await
        .unwrap();
}

#[tokio::test]
async fn an_expired_token_is_refused_with_401_and_a_live_one_is_accepted() {
    let (_dir, state, user_id) = state_with_user().await;
    let created = create(&state, &user_id, "script", Some(30)).await.unwrap();
    assert_eq!(created.token.len(), 52);
    assert_eq!(created.row.token_hash, crypto::sha256_hex(&created.token));
    let principal = session::authenticate(&state, &created.token).await.unwrap();
    assert_eq!(
        principal,
        Principal::ApiToken {
            user_id: user_id.clone().into(),
            token_id: created.row.id.clone().into(),
            allowlist_version: ALLOWLIST_VERSION,
            opted_in_version: 0,
        }
    );

    let now = unix_now() as i64;
    set_expiry(&state, &created.row.id, now - 1).await;
    let err = session::authenticate(&state, &created.token)
        .await
        .unwrap_err();
    assert_eq!(err.code(), "unauthorized");
    assert!(err.to_string().contains("expired"), "{err}");

    // Expiry is exact to the second: a token expiring right now is already expired.
    set_expiry(&state, &created.row.id, now).await;
    assert!(session::authenticate(&state, &created.token).await.is_err());
    set_expiry(&state, &created.row.id, now + 60).await;
    assert!(session::authenticate(&state, &created.token).await.is_ok());
}

#[tokio::test]
async fn revoked_tokens_cannot_opt_in_and_other_users_tokens_are_404() {
    let (_dir, state, user_id) = state_with_user().await;
    let created = create(&state, &user_id, "script", None).await.unwrap();
    let other = uuid::Uuid::new_v4().to_string();
    assert_eq!(
        revoke(&state, &other, &created.row.id)
            .await
            .unwrap_err()
            .code(),
        "not_found"
    );
    assert_eq!(
        update(&state, &other, &created.row.id, OPT_IN)
            .await
            .unwrap_err()
            .code(),
        "not_found"
    );
    assert_eq!(
        update(&state, &user_id, &created.row.id, OPT_IN)
            .await
            .unwrap()
            .allowlist_version,
        ALLOWLIST_VERSION
    );
    let revoked = revoke(&state, &user_id, &created.row.id).await.unwrap();
    let first = revoked.revoked_at.expect("revokedAt");
    let again = revoke(&state, &user_id, &created.row.id).await.unwrap();
    assert_eq!(again.revoked_at, Some(first));
    assert_eq!(
        update(&state, &user_id, &created.row.id, OPT_IN)
            .await
            .unwrap_err()
            .code(),
        "token_revoked"
    );
    assert_eq!(
        session::authenticate(&state, &created.token)
            .await
            .unwrap_err()
            .code(),
        "unauthorized"
    );
}
