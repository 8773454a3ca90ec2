//! Flags changed here and in another Matrix client at the same time end as the
//! homeserver has them. A sync response whose request began before a local write
//! finished has that flag left out (it may predate the write); what it carried is read
//! again once the write is done, so another client's change in the same response is not
//! lost (it once was: a notification level set in Element while a level was being set
//! here never arrived, and a later sync does not bring it again).

use super::*;
use crate::common::homeserver_proxy::{homeserver_proxy, start_behind, Rule};

/// The room's level as Element encodes it in the user's push rules on Synapse.
async fn homeserver_level(mx: &str, room: &str) -> &'static str {
    if push_rule(mx, "override", room).await.is_some() {
        "off"
    } else if push_rule(mx, "room", room).await.is_some() {
        "mentions"
    } else {
        "all"
    }
}

/// Element's write of a room's level: the `room` rule for mentions, none for all.
/// Deleting a rule that is not there (Switchboard's own "all" may have come first) is
/// answered 404 `M_NOT_FOUND`, which means the level is already "all".
async fn element_sets(mx: &str, room: &str, level: &str) {
    let path = format!("/pushrules/global/room/{}", encode(room));
    if level == "mentions" {
        cs_api(Method::PUT, &path, mx, Some(json!({"actions": []}))).await;
        return;
    }
    let (status, body) = cs_api_status(Method::DELETE, &path, mx, None).await;
    let absent = status == 404 && body["errcode"] == "M_NOT_FOUND";
    assert!(
        status.is_success() || absent,
        "DELETE {path}: {status} {body}"
    );
}

/// Polls the room as the personal token lists it until its level is `level`.
async fn level_until(app: &TestApp, token: &str, room: &str, level: &str, what: &str) {
    let what = format!("{what}: level {level}");
    room_until(app, token, room, &what, |r| {
        r["notifications"]["level"] == level
    })
    .await;
}

#[tokio::test]
async fn levels_set_here_and_in_element_at_once_end_as_the_homeserver_has_them() {
    let app = TestApp::start_with_mail().await;
    let chat = Chat::new(&app, "race").await;
    let mx = matrix_token(&chat.user);
    let other = create_room(&mx, "Other", false, &[]).await;
    wait_for_room(&app, &chat.token, &other).await;
    let path = chat.path("notifications");
    for round in 0..6 {
        let (here, there) = if round % 2 == 0 {
            ("mentions", "all")
        } else {
            ("all", "mentions")
        };
        let set_here = app.send(
            Method::PUT,
            &path,
            Some(&chat.user.access_token),
            Some(json!({"level": here})),
        );
        // Element changes the other room's level and the same room's, while this one is
        // being written here.
        let in_element = async {
            element_sets(&mx, &other, here).await;
            element_sets(&mx, &chat.room, there).await;
        };
        let (resp, ()) = tokio::join!(set_here, in_element);
        expect_json(resp, 200).await;
        for room in [&other, &chat.room] {
            let want = homeserver_level(&mx, room).await;
            let what = format!("round {round}, room {room}");
            level_until(&app, &chat.token, room, want, &what).await;
        }
    }
}

/// The case that once lost a change, made certain: the homeserver answers Switchboard's
/// writes of the shared flags late (after storing them), so the sync worker's next request
/// begins while each write is still under way here; Element's change, made right after the
/// write returned, then arrives in that request's response, which leaves the flag out.
#[tokio::test]
async fn another_clients_change_right_after_a_write_here_is_not_lost() {
    let (proxy, _stop) = homeserver_proxy(|method, path| {
        let shared = [
            "/pushrules/global/",
            "/tags/",
            "/account_data/m.marked_unread",
        ];
        if method != "GET" && shared.iter().any(|p| path.contains(p)) {
            Rule::AnswerLate(Duration::from_millis(1500))
        } else {
            Rule::Forward
        }
    });
    let app = start_behind(&proxy).await;
    let chat = Chat::new(&app, "late").await;
    let mx = matrix_token(&chat.user);

    // Notification level: mentions here, then all in Element.
    let resp = app
        .send(
            Method::PUT,
            &chat.path("notifications"),
            Some(&chat.user.access_token),
            Some(json!({"level": "mentions"})),
        )
        .await;
    expect_json(resp, 200).await;
    element_sets(&mx, &chat.room, "all").await;
    level_until(&app, &chat.token, &chat.room, "all", "all from Element").await;

    // Tags: favourite here, then low priority in Element.
    let resp = app
        .post_json(&chat.path("favorite"), Some(&chat.token), json!({}))
        .await;
    assert!(resp.status().is_success(), "{:?}", resp.text().await);
    let tag = format!(
        "/user/{}/rooms/{}/tags/m.lowpriority",
        encode(&chat.me),
        encode(&chat.room)
    );
    cs_api(Method::PUT, &tag, &mx, Some(json!({}))).await;
    chat.room_until(&app, "low priority from Element", |r| {
        r["archived"] == true && r["favorite"] == true
    })
    .await;

    // Marked unread: marked here, then cleared in Element.
    let resp = app
        .post_json(&chat.path("unread"), Some(&chat.token), json!({}))
        .await;
    assert_eq!(resp.status(), 204);
    let mark = format!(
        "/user/{}/rooms/{}/account_data/m.marked_unread",
        encode(&chat.me),
        encode(&chat.room)
    );
    cs_api(Method::PUT, &mark, &mx, Some(json!({"unread": false}))).await;
    chat.room_until(&app, "unmarked by Element", |r| r["markedUnread"] == false)
        .await;
}
