//! Concurrent writes to one user row through the API must both take effect.

use serde_json::json;

use crate::rooms::{db, user_id};
use crate::server::admin::{admin_app, put_subscription};

#[tokio::test]
async fn a_profile_update_racing_a_subscription_change_keeps_both_changes() {
    let (app, admin) = admin_app("").await;
    let user = app.sign_up("race-profile").await;
    let uid = user_id(&user);
    for i in 0..120 {
        let name = format!("Name {i}");
        let active = i % 2 == 0;
        let session = app.user(&user).session();
        let profile = session.profile(json!({"displayName": name}));
        let subscription = put_subscription(&app, &admin, &uid, json!({"active": active}));
        let (p, s) = tokio::join!(profile, subscription);
        p.unwrap();
        s.unwrap();
        let (stored_name, stored_active): (Option<String>, bool) = db(&app)
            .query_row(
                "SELECT display_name, subscription_active FROM users WHERE id = ?1",
                [&uid],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .unwrap();
        assert_eq!(
            (stored_name.as_deref(), stored_active),
            (Some(name.as_str()), active),
            "iteration {i}: one write reverted the other"
        );
    }
}
