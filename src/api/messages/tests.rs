use std::sync::Arc;

use super::*;
use crate::services::conversations::MessageContent;
use crate::services::messages::ReadableMessage;

fn schema_properties(name: &str) -> Vec<String> {
    let spec = crate::api::spec_json();
    let mut keys: Vec<String> = spec["components"]["schemas"][name]["properties"]
        .as_object()
        .unwrap_or_else(|| panic!("schema {name} in the document"))
        .keys()
        .cloned()
        .collect();
    keys.sort();
    keys
}

fn keys(value: &serde_json::Value) -> Vec<String> {
    let mut keys: Vec<String> = value.as_object().unwrap().keys().cloned().collect();
    keys.sort();
    keys
}

#[test]
fn the_readable_page_is_written_exactly_as_documented() {
    let message = ReadableMessage {
        event_id: "$e".into(),
        sender_id: "@s:x".into(),
        sender_name: "Sam".into(),
        sender_avatar_url: None,
        content: Arc::new(MessageContent {
            body: "secret".into(),
            content: serde_json::json!({"msgtype": "m.text", "body": "secret"}),
        }),
        redacted: true,
        msgtype: "m.image".into(),
        rich: messages::rich::rich(
            "m.image",
            &serde_json::json!({"body": "a.png", "url": "mxc://h/a", "info": {"mimetype": "image/png"}}),
            Some(9),
            vec![messages::rich::Reaction {
                key: "👍".into(),
                count: 2,
                mine: true,
            }],
        ),
        outgoing: true,
        is_mine: false,
        timestamp: 7,
    };
    let body = messages::readable::render(Some("!r:x"), &[message], None).unwrap();
    let written: serde_json::Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(keys(&written), schema_properties("ReadableMessagePage"));
    let item = &written["messages"][0];
    assert_eq!(keys(item), schema_properties("ReadableMessage"));
    assert_eq!(item["text"], "", "redacted");
    assert_eq!(item["direction"], "outgoing");
    assert_eq!(item["senderName"], "Sam");
    assert!(item["senderAvatarUrl"].is_null());
    assert!(written["nextCursor"].is_null());
}
