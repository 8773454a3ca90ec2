//! Managing a group the user created: name, topic, picture, invitations, removal with a
//! reason and leaving, each seen on Synapse by another member and in the room list at once.
//! One test, one shared group ([`Group`]), its phases in order.

use reqwest::Method;

use super::*;
use crate::sync::Sse;

/// The group made by the user (`me`, through a personal token) with Bob and Dave, who
/// watches it from Synapse.
struct Group {
    app: TestApp,
    token: String,
    me: String,
    room: String,
    dave: MatrixUser,
}

#[tokio::test]
async fn name_topic_picture_members_and_leaving_reach_the_homeserver_and_the_list() {
    let (app, user) = setup(&[], "").await;
    let me = mxid(&user);
    let token = personal_token(&app, &user).await;
    let (bob, dave, carol) = (person().await, person().await, person().await);
    let created = create_group(
        &app,
        &token,
        "matrix",
        &[&bob.user_id, &dave.user_id],
        Some("Crag"),
    )
    .await;
    let room = expect_json(created, 201).await["roomId"]
        .as_str()
        .unwrap()
        .to_owned();
    bob.join(&room).await;
    dave.join(&room).await;
    let mut sse = crate::sync::open_sse(&app, &token, None).await;
    let g = Group {
        app,
        token,
        me,
        room,
        dave,
    };
    renaming_reaches_synapse_and_the_list(&g, &mut sse).await;
    a_topic_keeps_its_line_break(&g).await;
    a_picture_is_set_with_its_size_and_dimensions(&g).await;
    invited_members_are_listed_with_their_levels(&g, &bob, &carol).await;
    removing_carries_the_reason(&g, &bob, &carol).await;
    leaving_drops_the_room_at_once(&g, &mut sse).await;
}

/// Name: on Synapse and in the list at once; the native override is another field.
async fn renaming_reaches_synapse_and_the_list(g: &Group, sse: &mut Sse) {
    let resp = room_call(
        &g.app,
        &g.token,
        Method::PUT,
        &g.room,
        "/name",
        Some(json!({"name": "Crag crew"})),
    )
    .await;
    assert_eq!(expect_json(resp, 200).await["roomId"], g.room.as_str());
    sse.wait_for("room.updated of the renamed room", |e| {
        e.event == "room.updated" && e.data["roomId"] == g.room.as_str()
    })
    .await;
    assert_eq!(
        g.dave.state(&g.room, "m.room.name", "").await["name"],
        "Crag crew"
    );
    assert_eq!(
        listed(&g.app, &g.token, &g.room).await.unwrap()["name"],
        "Crag crew"
    );
}

/// Topic, with a line break.
async fn a_topic_keeps_its_line_break(g: &Group) {
    let topic = "Sundays at the crag\nBring a rope";
    let resp = room_call(
        &g.app,
        &g.token,
        Method::PUT,
        &g.room,
        "/topic",
        Some(json!({"topic": topic})),
    )
    .await;
    expect_json(resp, 200).await;
    let seen = g.dave.state(&g.room, "m.room.topic", "").await;
    assert_eq!(seen["topic"], topic, "{seen}");
    assert_eq!(
        listed(&g.app, &g.token, &g.room).await.unwrap()["topic"],
        topic
    );
}

/// Picture: a PNG, uploaded and set as m.room.avatar with its size and dimensions.
async fn a_picture_is_set_with_its_size_and_dimensions(g: &Group) {
    let png = crate::rich::png(4, 3, 200);
    let set = expect_json(
        upload_avatar(&g.app, &g.token, &g.room, "image/png", &png).await,
        200,
    )
    .await;
    let mxc = set["avatarUrl"].as_str().unwrap().to_owned();
    assert!(mxc.starts_with("mxc://"), "{set}");
    let avatar = g.dave.state(&g.room, "m.room.avatar", "").await;
    assert_eq!(avatar["url"], mxc.as_str(), "{avatar}");
    assert_eq!(avatar["info"]["mimetype"], "image/png", "{avatar}");
    assert_eq!(avatar["info"]["w"], 4, "{avatar}");
    assert_eq!(avatar["info"]["size"], png.len(), "{avatar}");
    let (_, stored) = g.dave.download(&mxc).await;
    assert_eq!(stored, png, "the avatar is stored in the clear as sent");
    assert_eq!(
        listed(&g.app, &g.token, &g.room).await.unwrap()["avatarUrl"],
        mxc.as_str()
    );
}

/// Invite Carol: invited on Synapse, listed by the members route with levels and the
/// caller's permissions.
async fn invited_members_are_listed_with_their_levels(
    g: &Group,
    bob: &MatrixUser,
    carol: &MatrixUser,
) {
    let resp = room_call(
        &g.app,
        &g.token,
        Method::POST,
        &g.room,
        "/members",
        Some(json!({"userId": carol.user_id})),
    )
    .await;
    expect_json(resp, 200).await;
    assert_eq!(
        g.dave
            .membership_of(&g.room, &carol.user_id)
            .await
            .as_deref(),
        Some("invite")
    );
    let members = expect_json(
        room_call(&g.app, &g.token, Method::GET, &g.room, "/members", None).await,
        200,
    )
    .await;
    let of = |id: &str| {
        members["members"]
            .as_array()
            .unwrap()
            .iter()
            .find(|m| m["userId"] == id)
            .cloned()
    };
    // The creator outranks every level (room version 12 creators have no number).
    assert!(
        of(&g.me).unwrap()["powerLevel"].as_i64().unwrap() >= 100,
        "{members}"
    );
    assert_eq!(of(&bob.user_id).unwrap()["membership"], "join", "{members}");
    assert_eq!(
        of(&carol.user_id).unwrap()["membership"],
        "invite",
        "{members}"
    );
    assert_eq!(members["total"], 4, "{members}");
    assert_eq!(
        members["permissions"],
        json!({"rename": true, "setTopic": true, "setAvatar": true, "invite": true, "remove": true})
    );
}

/// Remove Bob with a reason: Dave sees him gone, with the reason; without a body,
/// withdrawing Carol's invitation.
async fn removing_carries_the_reason(g: &Group, bob: &MatrixUser, carol: &MatrixUser) {
    let path = format!("/members/{}", enc(&bob.user_id));
    let resp = room_call(
        &g.app,
        &g.token,
        Method::DELETE,
        &g.room,
        &path,
        Some(json!({"reason": "moved away"})),
    )
    .await;
    expect_json(resp, 200).await;
    let gone = g.dave.state(&g.room, "m.room.member", &bob.user_id).await;
    assert_eq!(gone["membership"], "leave", "{gone}");
    assert_eq!(gone["reason"], "moved away", "{gone}");
    // Without a body, withdrawing Carol's invitation.
    let path = format!("/members/{}", enc(&carol.user_id));
    expect_json(
        room_call(&g.app, &g.token, Method::DELETE, &g.room, &path, None).await,
        200,
    )
    .await;
    assert_eq!(
        g.dave
            .membership_of(&g.room, &carol.user_id)
            .await
            .as_deref(),
        Some("leave")
    );
}

/// Leave: gone from the list at once, left on Synapse; managing the room after is 404 as
/// for any room not the user's.
async fn leaving_drops_the_room_at_once(g: &Group, sse: &mut Sse) {
    let resp = room_call(&g.app, &g.token, Method::POST, &g.room, "/leave", None).await;
    expect_json(resp, 200).await;
    sse.wait_for("room.deleted of the left room", |e| {
        e.event == "room.deleted" && e.data["roomId"] == g.room.as_str()
    })
    .await;
    assert!(listed(&g.app, &g.token, &g.room).await.is_none());
    assert_eq!(
        g.dave.membership_of(&g.room, &g.me).await.as_deref(),
        Some("leave")
    );
    // Managing a room the user left: 404 as for any room not the user's.
    expect_error(
        room_call(
            &g.app,
            &g.token,
            Method::PUT,
            &g.room,
            "/name",
            Some(json!({"name": "x"})),
        )
        .await,
        404,
        "not_found",
    )
    .await;
}
