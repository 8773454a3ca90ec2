//! The names of back-filled messages as they were when they were sent.
//!
//! A page paged back from the homeserver (`/messages?dir=b` with `lazy_load_members`)
//! comes with the member state of its senders as it was right after the page's newest
//! event. Walking the page from that event back to its oldest, every member event met
//! undoes itself: before it, the member's profile was its `unsigned.prev_content`. So each
//! message gets the profile its sender had at its point of the timeline, with no request
//! per message. A sender of whom the page tells nothing keeps the stored (current) profile.

use std::collections::HashMap;

use crate::clients::matrix::types::Event;
use crate::services::senders::Profile;

const MEMBER: &str = "m.room.member";

/// The sender's profile of each message of a back-filled page, by event id. `state` is
/// the page's member state (after its newest event), `events` the page oldest first.
pub fn past_senders(state: &[Event], events: &[Event]) -> HashMap<String, Profile> {
    let mut now: HashMap<&str, Profile> = state
        .iter()
        .filter(|e| e.kind == MEMBER)
        .filter_map(|e| Some((e.state_key.as_deref()?, member_profile(&e.content))))
        .collect();
    let mut by_event = HashMap::new();
    for ev in events.iter().rev() {
        match (ev.kind.as_str(), ev.state_key.as_deref()) {
            (MEMBER, Some(member)) => undo_member_event(&mut now, member, ev),
            (_, Some(_)) => {}
            (_, None) => {
                let (Some(id), Some(sender)) = (ev.event_id.as_deref(), ev.sender.as_deref())
                else {
                    continue;
                };
                if let Some(p) = now.get(sender) {
                    by_event.insert(id.to_owned(), p.clone());
                }
            }
        }
    }
    by_event
}

/// Steps back over one member event: the member's profile becomes the one it replaced, or
/// unknown when the homeserver did not say (the member's first event, or no
/// `prev_content` in this server's events).
fn undo_member_event<'a>(now: &mut HashMap<&'a str, Profile>, member: &'a str, ev: &Event) {
    let before = ev
        .unsigned
        .as_ref()
        .map(|u| &u["prev_content"])
        .filter(|c| c.is_object());
    match before {
        Some(content) => {
            now.insert(member, member_profile(content));
        }
        None => {
            now.remove(member);
        }
    }
}

/// A member event's profile; only a joined member's counts (one who left or was invited
/// has sent nothing under that name).
fn member_profile(content: &serde_json::Value) -> Profile {
    if content["membership"] == "join" {
        Profile::from_member_content(content)
    } else {
        Profile::default()
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn event(v: serde_json::Value) -> Event {
        serde_json::from_value(v).unwrap()
    }

    fn message(id: &str, sender: &str) -> Event {
        event(
            json!({"type": "m.room.message", "event_id": id, "sender": sender,
            "content": {"msgtype": "m.text", "body": id}}),
        )
    }

    fn name_of(by_event: &HashMap<String, Profile>, id: &str) -> Option<String> {
        by_event.get(id).and_then(|p| p.name.clone())
    }

    #[test]
    fn a_rename_inside_the_page_names_the_messages_before_it_by_the_old_name() {
        let rename = event(json!({"type": MEMBER, "event_id": "$r", "sender": "@a:x",
            "state_key": "@a:x",
            "content": {"membership": "join", "displayname": "Anna B. Svensson"},
            "unsigned": {"prev_content": {"membership": "join", "displayname": "Anna Berg",
                "avatar_url": "mxc://x/old"}}}));
        let state = vec![event(
            json!({"type": MEMBER, "event_id": "$r", "sender": "@a:x",
            "state_key": "@a:x",
            "content": {"membership": "join", "displayname": "Anna B. Svensson"}}),
        )];
        // Oldest first, as ingest takes them.
        let page = vec![
            message("$1", "@a:x"),
            rename,
            message("$2", "@a:x"),
            message("$3", "@b:x"),
        ];
        let by_event = past_senders(&state, &page);
        assert_eq!(name_of(&by_event, "$1").as_deref(), Some("Anna Berg"));
        assert_eq!(
            by_event["$1"].avatar.as_deref(),
            Some("mxc://x/old"),
            "the avatar of then too"
        );
        assert_eq!(
            name_of(&by_event, "$2").as_deref(),
            Some("Anna B. Svensson")
        );
        // Nothing known of @b in this page: the stored profile applies.
        assert!(!by_event.contains_key("$3"));
    }

    #[test]
    fn before_a_members_first_event_nothing_is_known() {
        let join = event(json!({"type": MEMBER, "event_id": "$j", "sender": "@a:x",
            "state_key": "@a:x", "content": {"membership": "join", "displayname": "Anna"}}));
        let state = vec![join.clone()];
        let by_event = past_senders(
            &state,
            &[message("$0", "@a:x"), join, message("$1", "@a:x")],
        );
        assert_eq!(name_of(&by_event, "$1").as_deref(), Some("Anna"));
        assert!(!by_event.contains_key("$0"));
    }
}
