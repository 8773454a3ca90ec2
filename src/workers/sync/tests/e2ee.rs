//! Encrypted timeline events as the ingest sees them: stored, never dropped.

use super::*;

#[test]
fn an_encrypted_event_without_its_key_is_stored_undecryptable_and_the_room_marked_encrypted() {
    let mut f = Fixture::new();
    let encryption = json!({"type": "m.room.encryption", "state_key": "", "sender": BOB,
        "event_id": "$enc", "origin_server_ts": 1, "content": {"algorithm": "m.megolm.v1.aes-sha2"}});
    let sealed = json!({"algorithm": "m.megolm.v1.aes-sha2", "ciphertext": "AwgA", "session_id": "s",
        "sender_key": "k", "device_id": "D"});
    let ev = json!({"type": "m.room.encrypted", "event_id": "$x", "sender": BOB,
        "origin_server_ts": 5, "content": sealed});
    let out = f.ingest(joined(
        "s1",
        ROOM,
        vec![member(ME, "join", None), encryption],
        vec![ev],
    ));
    assert_eq!(out.new_messages.len(), 1);
    assert!(!out.new_messages[0].scorable);
    let (row, content) = f.message("$x");
    assert_eq!(row.msgtype, crate::workers::sync::ingest::UNDECRYPTABLE);
    assert_eq!(
        content.body,
        crate::workers::sync::ingest::UNDECRYPTABLE_BODY
    );
    assert_eq!(
        content.content, sealed,
        "kept to decrypt it when the key arrives"
    );
    assert!(f.room(ROOM).encrypted);
}

#[test]
fn a_stored_room_that_turns_on_encryption_later_is_marked_encrypted() {
    let mut f = Fixture::new();
    f.ingest(joined("s1", ROOM, vec![member(ME, "join", None)], vec![]));
    assert!(!f.room(ROOM).encrypted, "a plain room at first");
    let encryption = json!({"type": "m.room.encryption", "state_key": "", "sender": BOB,
        "event_id": "$enc", "origin_server_ts": 7, "content": {"algorithm": "m.megolm.v1.aes-sha2"}});
    f.ingest(joined("s2", ROOM, vec![encryption], vec![]));
    assert!(
        f.room(ROOM).encrypted,
        "the update of a stored room writes the flag too"
    );
}
