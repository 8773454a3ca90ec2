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
