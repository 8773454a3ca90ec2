//! Managing a group the user created: name, topic, picture, invitations, removal with a
//! reason and leaving, each seen on Synapse by another member and in the room list at once.

use reqwest::Method;

use super::*;

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

    // Name: on Synapse and in the list at once; the native override is another field.
    let resp = room_call(
        &app,
        &token,
        Method::PUT,
        &room,
        "/name",
        Some(json!({"name": "Crag crew"})),
    )
    .await;
    assert_eq!(expect_json(resp, 200).await["roomId"], room.as_str());
    sse.wait_for("room.updated of the renamed room", |e| {
        e.event == "room.updated" && e.data["roomId"] == room.as_str()
    })
    .await;
    assert_eq!(
        dave.state(&room, "m.room.name", "").await["name"],
        "Crag crew"
    );
    assert_eq!(
        listed(&app, &token, &room).await.unwrap()["name"],
        "Crag crew"
    );

    // Topic, with a line break.
    let topic = "Sundays at the crag\nBring a rope";
    let resp = room_call(
        &app,
        &token,
        Method::PUT,
        &room,
        "/topic",
        Some(json!({"topic": topic})),
    )
    .await;
    expect_json(resp, 200).await;
    let seen = dave.state(&room, "m.room.topic", "").await;
    assert_eq!(seen["topic"], topic, "{seen}");
    assert_eq!(listed(&app, &token, &room).await.unwrap()["topic"], topic);

    // Picture: a PNG, uploaded and set as m.room.avatar with its size and dimensions.
    let png = crate::rich::png(4, 3, 200);
    let set = expect_json(
        upload_avatar(&app, &token, &room, "image/png", &png).await,
        200,
    )
    .await;
    let mxc = set["avatarUrl"].as_str().unwrap().to_owned();
    assert!(mxc.starts_with("mxc://"), "{set}");
    let avatar = dave.state(&room, "m.room.avatar", "").await;
    assert_eq!(avatar["url"], mxc.as_str(), "{avatar}");
    assert_eq!(avatar["info"]["mimetype"], "image/png", "{avatar}");
    assert_eq!(avatar["info"]["w"], 4, "{avatar}");
    assert_eq!(avatar["info"]["size"], png.len(), "{avatar}");
    let (_, stored) = dave.download(&mxc).await;
    assert_eq!(stored, png, "the avatar is stored in the clear as sent");
    assert_eq!(
        listed(&app, &token, &room).await.unwrap()["avatarUrl"],
        mxc.as_str()
    );

    // Invite Carol: invited on Synapse, listed by the members route.
    let resp = room_call(
        &app,
        &token,
        Method::POST,
        &room,
        "/members",
        Some(json!({"userId": carol.user_id})),
    )
    .await;
    expect_json(resp, 200).await;
    assert_eq!(
        dave.membership_of(&room, &carol.user_id).await.as_deref(),
        Some("invite")
    );
    let members = expect_json(
        room_call(&app, &token, Method::GET, &room, "/members", None).await,
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
        of(&me).unwrap()["powerLevel"].as_i64().unwrap() >= 100,
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

    // Remove Bob with a reason: Dave sees him gone, with the reason.
    let path = format!("/members/{}", enc(&bob.user_id));
    let resp = room_call(
        &app,
        &token,
        Method::DELETE,
        &room,
        &path,
        Some(json!({"reason": "moved away"})),
    )
    .await;
    expect_json(resp, 200).await;
    let gone = dave.state(&room, "m.room.member", &bob.user_id).await;
    assert_eq!(gone["membership"], "leave", "{gone}");
    assert_eq!(gone["reason"], "moved away", "{gone}");
    // Without a body, withdrawing Carol's invitation.
    let path = format!("/members/{}", enc(&carol.user_id));
    expect_json(
        room_call(&app, &token, Method::DELETE, &room, &path, None).await,
        200,
    )
    .await;
    assert_eq!(
        dave.membership_of(&room, &carol.user_id).await.as_deref(),
        Some("leave")
    );

    // Leave: gone from the list at once, left on Synapse.
    let resp = room_call(&app, &token, Method::POST, &room, "/leave", None).await;
    expect_json(resp, 200).await;
    sse.wait_for("room.deleted of the left room", |e| {
        e.event == "room.deleted" && e.data["roomId"] == room.as_str()
    })
    .await;
    assert!(listed(&app, &token, &room).await.is_none());
    assert_eq!(
        dave.membership_of(&room, &me).await.as_deref(),
        Some("leave")
    );
    // Managing a room the user left: 404 as for any room not the user's.
    expect_error(
        room_call(
            &app,
            &token,
            Method::PUT,
            &room,
            "/name",
            Some(json!({"name": "x"})),
        )
        .await,
        404,
        "not_found",
    )
    .await;
}
