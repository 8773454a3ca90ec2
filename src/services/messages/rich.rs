//! The rich fields of a message object (docs/design.md), both views: `media` (what an
//! attachment is, from the event content), `replyTo`, `editedAt` and `reactions`
//! (aggregated from the stored `m.reaction` annotations; redacted ones are gone).
//!
//! Everything here is content: the native view carries it inside the sealed envelope,
//! the readable view at the top level of each message.

use std::collections::HashMap;

use rusqlite::Connection;
use serde::Serialize;
use serde_json::Value;

use crate::crypto::DataKey;
use crate::services::conversations::open_reaction_key;
use crate::store::reactions;

/// Message types (and the sticker event type) that carry an attachment.
pub const MEDIA_MSGTYPES: &[&str] = &["m.image", "m.file", "m.audio", "m.video", "m.sticker"];

/// `media` of a message object.
#[derive(Debug, Clone, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Media {
    pub mimetype: String,
    /// Bytes, as the sender announced them; null when not announced.
    pub size: Option<u64>,
    /// File name (`filename`, else the body).
    pub name: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub width: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub height: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub duration_ms: Option<u64>,
    /// `GET …/media/{eventId}?thumbnail=true` has something to serve.
    pub has_thumbnail: bool,
}

/// One reaction key on a message.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct Reaction {
    pub key: String,
    pub count: u32,
    /// The caller reacted with this key.
    pub mine: bool,
}

/// The rich fields of one message.
#[derive(Debug, Clone, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Rich {
    pub media: Option<Media>,
    pub reply_to: Option<String>,
    pub edited_at: Option<i64>,
    pub reactions: Vec<Reaction>,
}

/// Fallback type of an attachment whose sender named none.
pub const UNKNOWN_MIMETYPE: &str = "application/octet-stream";

/// What an attachment event announces (none for other message types or no source).
pub fn media_of(msgtype: &str, content: &Value) -> Option<Media> {
    if !MEDIA_MSGTYPES.contains(&msgtype) {
        return None;
    }
    let encrypted = content["file"].is_object();
    if !encrypted && !content["url"].is_string() {
        return None;
    }
    let info = &content["info"];
    let name = content["filename"]
        .as_str()
        .or(content["body"].as_str())
        .unwrap_or("attachment");
    let has_thumbnail = info["thumbnail_url"].is_string()
        || info["thumbnail_file"].is_object()
        // The homeserver scales unencrypted images itself.
        || (!encrypted && matches!(msgtype, "m.image" | "m.sticker"));
    Some(Media {
        mimetype: info["mimetype"]
            .as_str()
            .unwrap_or(UNKNOWN_MIMETYPE)
            .to_owned(),
        size: info["size"].as_u64(),
        name: name.to_owned(),
        width: info["w"].as_u64(),
        height: info["h"].as_u64(),
        duration_ms: info["duration"].as_u64(),
        has_thumbnail,
    })
}

/// The event a message replies to (`m.relates_to.m.in_reply_to.event_id`).
pub fn reply_to(content: &Value) -> Option<String> {
    content["m.relates_to"]["m.in_reply_to"]["event_id"]
        .as_str()
        .map(str::to_owned)
}

/// The rich fields of a message from its (opened) content.
pub fn rich(
    msgtype: &str,
    content: &Value,
    edited_at: Option<i64>,
    reactions: Vec<Reaction>,
) -> Rich {
    Rich {
        media: media_of(msgtype, content),
        reply_to: reply_to(content),
        edited_at,
        reactions,
    }
}

/// The reactions on each of `event_ids` (those without any are absent), keys in the order
/// they were first used; `me` is the caller's Matrix ID. Keys that cannot be opened
/// (shredded data key) are left out.
pub fn reactions_of<'e>(
    c: &Connection,
    dek: &DataKey,
    user_id: &str,
    me: Option<&str>,
    event_ids: impl IntoIterator<Item = &'e str>,
) -> rusqlite::Result<HashMap<String, Vec<Reaction>>> {
    let mut out = HashMap::new();
    for event_id in event_ids {
        let rows = reactions::of_target(c, user_id, event_id)?;
        if rows.is_empty() {
            continue;
        }
        let mut keys: Vec<Reaction> = Vec::new();
        for r in rows {
            let Some(key) = open_reaction_key(dek, user_id, &r.event_id, &r.key_enc) else {
                continue;
            };
            let mine = me == Some(r.sender_id.as_str());
            match keys.iter_mut().find(|k| k.key == key) {
                Some(k) => {
                    k.count += 1;
                    k.mine |= mine;
                }
                None => keys.push(Reaction {
                    key,
                    count: 1,
                    mine,
                }),
            }
        }
        out.insert(event_id.to_owned(), keys);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn media_replies_and_plain_text() {
        let image = json!({"msgtype": "m.image", "body": "cat.png", "url": "mxc://hs/abc",
            "info": {"mimetype": "image/png", "size": 42, "w": 3, "h": 2}});
        let m = media_of("m.image", &image).unwrap();
        assert_eq!(
            (
                m.mimetype.as_str(),
                m.size,
                m.name.as_str(),
                m.width,
                m.height
            ),
            ("image/png", Some(42), "cat.png", Some(3), Some(2))
        );
        assert!(m.has_thumbnail);
        let voice = json!({"msgtype": "m.audio", "body": "note", "filename": "v.ogg",
            "file": {"url": "mxc://hs/x"}, "info": {"duration": 1500}});
        let v = media_of("m.audio", &voice).unwrap();
        assert_eq!((v.name.as_str(), v.duration_ms), ("v.ogg", Some(1500)));
        assert_eq!(v.mimetype, UNKNOWN_MIMETYPE);
        assert!(!v.has_thumbnail);
        assert!(media_of("m.text", &json!({"body": "hi"})).is_none());
        assert!(media_of("m.image", &json!({"body": "no source"})).is_none());
        let reply = json!({"body": "yes", "m.relates_to": {"m.in_reply_to": {"event_id": "$a"}}});
        assert_eq!(reply_to(&reply).as_deref(), Some("$a"));
        assert_eq!(reply_to(&json!({"body": "x"})), None);
    }
}
