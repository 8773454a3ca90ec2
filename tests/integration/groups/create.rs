//! New groups: an encrypted Matrix room with its invitations, a WhatsApp group through the
//! bridge's `create_group` (joined, listed at once), a bridge that creates no groups.

use super::*;
use crate::common::bridge::{Network, Op};

#[tokio::test]
async fn a_matrix_group_is_an_encrypted_room_with_its_invitations_listed_at_once() {
    let (app, user) = setup(&[], "").await;
    let token = personal_token(&app, &user).await;
    let (bob, carol) = (person().await, person().await);

    let created = expect_json(
        create_group(
            &app,
            &token,
            "matrix",
            &[&bob.user_id, &carol.user_id],
            Some(" Climbing club "),
        )
        .await,
        201,
    )
    .await;
    assert_eq!(sorted_keys(&created), ["created", "roomId"]);
    assert_eq!(created["created"], true);
    let room = created["roomId"].as_str().unwrap().to_owned();

    // Listed at once, as a group (not direct), encrypted, named.
    let row = listed(&app, &token, &room).await.expect("listed at once");
    assert_eq!(row["name"], "Climbing club", "{row}");
    assert_eq!(row["isDirect"], false, "{row}");
    assert_eq!(row["encrypted"], true, "{row}");
    assert_eq!(row["membership"], "join", "{row}");

    // On Synapse: both are invited (a private room: joining needs the invitation); once Bob
    // joins he sees the encryption, the name and Carol's invitation.
    bob.join(&room).await;
    let encryption = bob.state(&room, "m.room.encryption", "").await;
    assert_eq!(encryption["algorithm"], "m.megolm.v1.aes-sha2");
    assert_eq!(
        bob.state(&room, "m.room.name", "").await["name"],
        "Climbing club"
    );
    assert_eq!(
        bob.membership_of(&room, &carol.user_id).await.as_deref(),
        Some("invite")
    );
    assert_eq!(
        bob.membership_of(&room, &mxid(&user)).await.as_deref(),
        Some("join")
    );
    // Not a direct chat: no is_direct on the invitations.
    let invite = bob.state(&room, "m.room.member", &carol.user_id).await;
    assert_ne!(invite["is_direct"], true, "{invite}");

    // An unknown Matrix user: 404 naming the participant, no room made.
    let ghost = "@nobody_here_at_all:localhost";
    let err = expect_error(
        create_group(&app, &token, "matrix", &[&bob.user_id, ghost], None).await,
        404,
        "identifier_not_found",
    )
    .await;
    assert!(
        err["message"]
            .as_str()
            .unwrap()
            .starts_with("participants[1]: "),
        "{err}"
    );
}

#[tokio::test]
async fn a_whatsapp_group_goes_through_create_group_and_its_portal_is_joined() {
    let wa = BridgeEmulator::start(Network::WhatsApp).await;
    let (app, user) = setup(&[&wa], "").await;
    let me = mxid(&user);
    let token = personal_token(&app, &user).await;

    let created = expect_json(
        create_group(
            &app,
            &token,
            "whatsapp",
            &["+49 155 50001", "4915550002"],
            Some("Family"),
        )
        .await,
        201,
    )
    .await;
    let room = created["roomId"].as_str().unwrap().to_owned();

    // The real calls, in order: capabilities, one resolve per participant, create_group
    // with the network's user ids and the name as m.room.name content.
    assert_eq!(requests_to(&wa, "/v3/capabilities").len(), 1);
    assert_eq!(
        requests_to(&wa, "/v3/resolve_identifier/"),
        [
            "/_matrix/provision/v3/resolve_identifier/%2B4915550001",
            "/_matrix/provision/v3/resolve_identifier/%2B4915550002"
        ]
    );
    assert_eq!(
        requests_to(&wa, "/v3/create_group/"),
        ["/_matrix/provision/v3/create_group/group"]
    );
    assert_eq!(
        create_group_bodies(&wa),
        [json!({"participants": ["4915550001", "4915550002"], "name": {"name": "Family"}})]
    );
    let (_, creator, ids) = wa.group_by_room(&room).expect("the bridge's group");
    assert_eq!(creator, me);
    assert_eq!(ids, ["4915550001", "4915550002"]);

    // Joined on Synapse (the ghosts see the user in the portal) and listed at once.
    let ghost = wa.ghost_of("4915550001").expect("ghost");
    assert!(ghost.joined_members(&room).await.contains(&me));
    let row = listed(&app, &token, &room).await.expect("listed at once");
    assert_eq!(row["platform"], "whatsapp", "{row}");
    assert_eq!(row["name"], "Family", "{row}");
    assert_eq!(row["isDirect"], false, "{row}");
    assert_eq!(row["membership"], "join", "{row}");
    ghost.send_text(&room, "welcome to the family group").await;
    crate::e2ee::wait_readable(&app, &token, &room, "welcome to the family group").await;
}

#[tokio::test]
async fn bridges_without_groups_bounds_unknown_people_and_failures_are_told_apart() {
    let wa = BridgeEmulator::start(Network::WhatsApp).await;
    let dc = BridgeEmulator::start(Network::Discord).await;
    let (app, user) = setup(&[&wa, &dc], "").await;
    let token = &user.access_token;

    // Discord offers no group type: 409, and nothing was resolved or created.
    let err = expect_error(
        create_group(&app, token, "discord", &["80351110224678913"], Some("Raid")).await,
        409,
        "not_supported",
    )
    .await;
    assert!(
        err["message"].as_str().unwrap().contains("Discord"),
        "{err}"
    );
    assert!(requests_to(&dc, "/v3/resolve_identifier/").is_empty());
    assert!(requests_to(&dc, "/v3/create_group/").is_empty());
    // A bridge older than the capabilities endpoint (M_UNRECOGNIZED): 409 as well.
    wa.fail_next(
        Op::Capabilities,
        404,
        "M_UNRECOGNIZED",
        "Unrecognized endpoint",
    );
    expect_error(
        create_group(&app, token, "whatsapp", &["4915550001"], Some("Family")).await,
        409,
        "not_supported",
    )
    .await;

    // WhatsApp requires a name (its capabilities say so) and at most 25 bytes.
    let err = expect_error(
        create_group(&app, token, "whatsapp", &["4915550001"], None).await,
        400,
        "invalid_request",
    )
    .await;
    assert!(
        err["message"].as_str().unwrap().starts_with("name: "),
        "{err}"
    );
    expect_error(
        create_group(
            &app,
            token,
            "whatsapp",
            &["4915550001"],
            Some(&"n".repeat(26)),
        )
        .await,
        400,
        "invalid_request",
    )
    .await;
    // Nobody has the second number: 404 naming it; no group was created.
    let err = expect_error(
        create_group(
            &app,
            token,
            "whatsapp",
            &["4915550001", "+4915559999"],
            Some("F"),
        )
        .await,
        404,
        "identifier_not_found",
    )
    .await;
    assert!(
        err["message"]
            .as_str()
            .unwrap()
            .starts_with("participants[1]: "),
        "{err}"
    );
    assert!(requests_to(&wa, "/v3/create_group/").is_empty());
    // The bridge fails: 502 naming it.
    wa.fail_next(
        Op::CreateGroup,
        500,
        "M_UNKNOWN",
        "Failed to create portal room",
    );
    let err = expect_error(
        create_group(&app, token, "whatsapp", &["4915550001"], Some("F")).await,
        502,
        "bridge_error",
    )
    .await;
    assert!(
        err["message"]
            .as_str()
            .unwrap()
            .contains("Failed to create portal room"),
        "{err}"
    );
    // A user without a WhatsApp login: 409 not_logged_in.
    let other = app.sign_up("groups.nologin").await;
    expect_error(
        create_group(
            &app,
            &other.access_token,
            "whatsapp",
            &["4915550001"],
            Some("F"),
        )
        .await,
        409,
        "not_logged_in",
    )
    .await;
}
