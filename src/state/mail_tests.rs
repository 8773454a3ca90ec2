//! E-mail runtime state of the built application: what the process keeps per mailbox
//! account goes when the account is removed.

use super::AppState;
use crate::config::Config;
use crate::error::AppError;
use crate::services::email::{accounts, sync};
use crate::services::users;
use crate::store::email::{self as store, AccountRow};

#[tokio::test]
async fn removing_an_account_drops_what_the_process_kept_for_it() {
    let dir = tempfile::tempdir().unwrap();
    let mut config = Config::default();
    config.storage.data_dir = dir.path().join("data");
    let state = AppState::build(config).unwrap();
    let user = users::new_user(&state, "unit-mail@example.test", None);
    let user_id = user.id.clone();
    let account = AccountRow {
        id: uuid::Uuid::new_v4().to_string(),
        user_id: user_id.clone(),
        status: "ok".into(),
        created_at: crate::services::email::now_ms(),
        ..AccountRow::default()
    };
    let row = account.clone();
    state
        .store
        .run(move |c| {
            crate::store::users::insert(c, &user)?;
            Ok::<_, AppError>(store::insert_account(c, &row)?)
        })
        .await
        .unwrap();
    // What a sync task, an action and a back-fill leave behind.
    let id = account.id.as_str();
    drop(sync::account_lock(&state, id).await);
    let poke = state.email.poke_handle(id);
    state.email.set_progress(id, 1, 2);
    state.email.set_older(id, "mailbox", 7);
    state.email.backfill_done(id);
    assert!(state.email.tracks(id));

    accounts::remove(&state, &user_id, id).await.unwrap();
    assert!(!state.email.tracks(id), "entries of a removed account stay");
    // The running task was woken (its own handle) to see the account gone.
    tokio::time::timeout(std::time::Duration::from_secs(1), poke.notified())
        .await
        .expect("the sync task is poked");
    // Poking an account nobody runs adds nothing.
    state.email.poke(id);
    assert!(!state.email.tracks(id));
}
