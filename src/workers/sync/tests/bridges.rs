//! Bridges as the sync worker sees them: which rooms belong to a platform, and which
//! invites and `m.bridge` state are trusted.

use super::*;

#[test]
fn bridge_state_and_bridge_bots_set_the_platform() {
    let mut f = Fixture::new();
    let bridge = json!({"type": "m.bridge", "state_key": "test/discord", "sender": "@discordbot:test",
        "content": {"bridgebot": "@discordbot:test", "protocol": {"id": "discordgo"}, "com.beeper.room_type": "dm"}});
    f.ingest(joined(
        "s1",
        ROOM,
        vec![
            bridge,
            member(ME, "join", None),
            member("@discordbot:test", "join", None),
            member("@discord_1:test", "join", Some("Dee")),
        ],
        vec![],
    ));
    let room = f.room(ROOM);
    assert_eq!(room.platform.as_deref(), Some("discord"));
    assert!(room.is_direct);
    assert_eq!(room.recipient_id.as_deref(), Some("@discord_1:test"));
    assert_eq!(f.name(ROOM).as_deref(), Some("Dee"));

    f.ingest(joined(
        "s2",
        "!wa:test",
        vec![
            member(ME, "join", None),
            member("@whatsappbot:test", "join", None),
        ],
        vec![],
    ));
    assert_eq!(f.room("!wa:test").platform.as_deref(), Some("whatsapp"));
}

fn invited(batch: &str, room: &str, inviter: &str, extra: Vec<Value>) -> Value {
    let mut events = vec![
        json!({"type": "m.room.member", "state_key": ME, "sender": inviter,
        "content": {"membership": "invite", "is_direct": true}}),
    ];
    events.extend(extra);
    json!({"next_batch": batch, "rooms": {"invite": {room: {"invite_state": {"events": events}}}}})
}

fn bridge_state(sender: &str, protocol: &str) -> Value {
    json!({"type": "m.bridge", "state_key": format!("test/{protocol}"), "sender": sender,
        "content": {"bridgebot": "@whatsappbot:test", "protocol": {"id": protocol},
                    "com.beeper.room_type": "dm"}})
}

#[test]
fn only_invites_from_configured_bots_and_their_ghosts_are_handed_to_the_worker() {
    let mut f = Fixture::new();
    let out = f.ingest(invited("s1", "!bot:test", "@whatsappbot:test", vec![]));
    assert_eq!(out.invites, vec!["!bot:test".to_owned()]);
    let out = f.ingest(invited("s2", "!ghost:test", "@whatsapp_4915:test", vec![]));
    assert_eq!(out.invites, vec!["!ghost:test".to_owned()]);
    assert_eq!(f.room("!bot:test").platform.as_deref(), Some("whatsapp"));
    assert_eq!(f.room("!ghost:test").platform.as_deref(), Some("whatsapp"));
    for (room, inviter) in [
        ("!stranger:test", "@mallory:test"),
        ("!elsewhere:test", "@whatsapp_4915:evil.test"),
        ("!lookalike:test", "@whatsappbot_:test"),
    ] {
        let out = f.ingest(invited("s3", room, inviter, vec![]));
        assert!(out.invites.is_empty(), "{inviter}");
        let row = f.room(room);
        assert_eq!(row.membership, "invite");
        assert_eq!(row.invited_by.as_deref(), Some(inviter));
    }
}

#[test]
fn bridge_state_counts_only_from_the_configured_bot_of_its_platform() {
    let mut f = Fixture::new();
    let mallory = "@mallory:test";
    // A stranger's room with forged WhatsApp bridge state (and a forged creator).
    let create = json!({"type": "m.room.create", "state_key": "", "sender": mallory,
        "content": {"creator": "@whatsappbot:test", "room_version": "10"}});
    f.ingest(joined(
        "s1",
        ROOM,
        vec![
            create,
            bridge_state(mallory, "whatsapp"),
            member(ME, "join", None),
            member(mallory, "join", None),
            member(BOB, "join", None),
        ],
        vec![],
    ));
    let room = f.room(ROOM);
    assert_eq!(room.platform, None);
    assert!(!room.is_direct);
    assert_eq!(room.recipient_id, None);
    // Sent later in the timeline: still ignored.
    f.ingest(joined(
        "s2",
        ROOM,
        vec![],
        vec![bridge_state(BOB, "whatsapp")],
    ));
    assert_eq!(f.room(ROOM).platform, None);
    // The WhatsApp bot cannot speak for Discord.
    f.ingest(joined(
        "s3",
        "!x:test",
        vec![
            bridge_state("@whatsappbot:test", "discord"),
            member(ME, "join", None),
        ],
        vec![],
    ));
    assert_eq!(f.room("!x:test").platform, None);
    // The bot itself, for its own platform: believed.
    f.ingest(joined(
        "s4",
        "!wa:test",
        vec![
            bridge_state("@whatsappbot:test", "whatsapp"),
            member(ME, "join", None),
            member("@whatsapp_1:test", "join", Some("Wendy")),
        ],
        vec![],
    ));
    let room = f.room("!wa:test");
    assert_eq!(room.platform.as_deref(), Some("whatsapp"));
    assert!(room.is_direct);
    assert_eq!(room.recipient_id.as_deref(), Some("@whatsapp_1:test"));
}

#[test]
fn an_invites_stripped_state_proves_nothing_about_bridges() {
    let mut f = Fixture::new();
    // Stripped state is whatever the inviting server sent: "sent by the bot" is a claim.
    let forged = vec![
        bridge_state("@whatsappbot:test", "whatsapp"),
        json!({"type": "m.room.create", "state_key": "", "sender": "@whatsappbot:test",
               "content": {"room_version": "10"}}),
        member("@whatsappbot:test", "join", None),
    ];
    f.ingest(invited("s1", ROOM, "@mallory:test", forged));
    let room = f.room(ROOM);
    assert_eq!(room.membership, "invite");
    assert_eq!(room.platform, None);
    assert!(room.is_direct, "the invite itself says is_direct");
}
