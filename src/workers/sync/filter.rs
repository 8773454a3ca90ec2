//! The filters of `/sync` and of `/messages` (paging back): the event types ingest reads.

use std::sync::OnceLock;

use serde_json::json;

/// Timeline events per room on the first sync (older history is fetched when paged into).
const INITIAL_TIMELINE_LIMIT: u32 = 50;
/// Timeline events per room on later syncs; longer gaps are recorded and paged in.
const TIMELINE_LIMIT: u32 = 100;

const STATE_TYPES: &[&str] = &[
    "m.room.name",
    "m.room.avatar",
    "m.room.topic",
    "m.room.member",
    "m.room.create",
    "m.room.encryption",
    "m.bridge",
    "uk.half-shot.bridge",
];

fn timeline_types() -> Vec<&'static str> {
    let mut types = STATE_TYPES.to_vec();
    types.extend([
        "m.room.message",
        "m.room.redaction",
        "m.room.encrypted",
        "m.reaction",
        "m.sticker",
    ]);
    types
}

/// The `/sync` filter: the state, timeline events, receipts, typing and account data
/// ingest reads (tags, marked-unread, push rules: the flags other clients share); no
/// presence or other account data.
pub(super) fn sync_filter(initial: bool) -> &'static str {
    static FILTERS: OnceLock<[String; 2]> = OnceLock::new();
    let filters = FILTERS.get_or_init(|| {
        [INITIAL_TIMELINE_LIMIT, TIMELINE_LIMIT].map(|limit| {
            json!({
                "presence": {"not_types": ["*"]},
                "account_data": {"types": ["m.direct", "m.push_rules"]},
                "room": {
                    "state": {"types": STATE_TYPES, "lazy_load_members": false},
                    "timeline": {"types": timeline_types(), "limit": limit},
                    "ephemeral": {"types": ["m.receipt", "m.typing"]},
                    "account_data": {"types": [
                        "m.fully_read",
                        "m.tag",
                        "m.marked_unread",
                        "com.famedly.marked_unread",
                    ]},
                },
            })
            .to_string()
        })
    });
    &filters[usize::from(!initial)]
}

/// The `/messages` filter for paging back through a room's history: the timeline's types,
/// and the member state of the page's senders (`lazy_load_members`), from which each
/// back-filled message gets its sender's name as it was then ([`super::past_senders`]).
pub(crate) fn history_filter() -> &'static str {
    static FILTER: OnceLock<String> = OnceLock::new();
    FILTER.get_or_init(|| json!({"types": timeline_types(), "lazy_load_members": true}).to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_filters_keep_timeline_messages_state_receipts_and_read_markers() {
        let initial: serde_json::Value = serde_json::from_str(sync_filter(true)).unwrap();
        let later: serde_json::Value = serde_json::from_str(sync_filter(false)).unwrap();
        assert_eq!(initial["room"]["timeline"]["limit"], INITIAL_TIMELINE_LIMIT);
        assert_eq!(later["room"]["timeline"]["limit"], TIMELINE_LIMIT);
        let types = later["room"]["timeline"]["types"].as_array().unwrap();
        for t in [
            "m.room.message",
            "m.room.redaction",
            "m.room.encrypted",
            "m.room.member",
            "m.bridge",
        ] {
            assert!(types.contains(&serde_json::json!(t)), "{t}");
        }
        assert_eq!(
            later["room"]["ephemeral"]["types"],
            serde_json::json!(["m.receipt", "m.typing"])
        );
        assert_eq!(
            later["account_data"]["types"],
            serde_json::json!(["m.direct", "m.push_rules"])
        );
        let room_data = later["room"]["account_data"]["types"].as_array().unwrap();
        for t in ["m.fully_read", "m.tag", "m.marked_unread"] {
            assert!(room_data.contains(&serde_json::json!(t)), "{t}");
        }
    }
}
