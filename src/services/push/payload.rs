//! What a push carries: the JSON the service worker shows, kept under the size push
//! services accept, and the `Topic` that lets a newer push replace an older one.

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;
use serde::Serialize;
use sha2::{Digest, Sha256};

/// Pushes the push service keeps for an offline browser this long (RFC 8030 `TTL`).
pub const TTL_SECS: u32 = 24 * 3600;
/// The payload's limit (the design's; RFC 8291 allows ~4 KiB).
pub const MAX_PAYLOAD: usize = 3 * 1024;
/// Characters of the message text a push carries at most.
pub const MAX_BODY_CHARS: usize = 200;
const MAX_TITLE_CHARS: usize = 100;

/// The payload of a push (what the service worker shows).
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Payload {
    #[serde(rename = "type")]
    pub kind: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub room_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub event_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub account_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub thread_id: Option<String>,
    pub title: String,
    pub body: String,
    pub unread: i64,
}

fn cut(text: &str, max: usize) -> String {
    let clean: String = text
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    let clean = clean.trim();
    if clean.chars().count() <= max {
        return clean.to_owned();
    }
    let mut out: String = clean.chars().take(max - 1).collect();
    out.push('…');
    out
}

impl Payload {
    /// The JSON bytes, never over [`MAX_PAYLOAD`]: the texts are shortened to fit.
    pub fn to_bytes(&mut self) -> Vec<u8> {
        self.title = cut(&self.title, MAX_TITLE_CHARS);
        self.body = cut(&self.body, MAX_BODY_CHARS);
        loop {
            let bytes = serde_json::to_vec(self).unwrap_or_default();
            if bytes.len() <= MAX_PAYLOAD || (self.body.is_empty() && self.title.is_empty()) {
                return bytes;
            }
            // Only pathological texts (every character escaped) get here.
            let half = |s: &str| s.chars().take(s.chars().count() / 2).collect::<String>();
            self.body = half(&self.body);
            self.title = half(&self.title);
        }
    }
}

/// RFC 8030 `Topic`: at most 32 characters of the URL-safe base64 alphabet; a hash, so the
/// push service does not learn the room id.
pub fn topic(of: &str) -> String {
    let digest = Sha256::digest(of.as_bytes());
    URL_SAFE_NO_PAD.encode(digest)[..32].to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn topics_are_32_url_safe_characters() {
        let t = topic("!room:example.org");
        assert_eq!(t.len(), 32);
        assert!(t
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_'));
        assert_ne!(t, topic("!other:example.org"));
    }

    #[test]
    fn payloads_stay_under_3_kib_and_cut_the_text() {
        let mut p = Payload {
            kind: "message",
            room_id: Some(format!("!{}:example.org", "r".repeat(240))),
            event_id: Some(format!("${}", "e".repeat(250))),
            account_id: None,
            thread_id: None,
            title: "\u{1}".repeat(5000),
            body: "\"".repeat(5000),
            unread: 3,
        };
        let bytes = p.to_bytes();
        assert!(bytes.len() <= MAX_PAYLOAD, "{}", bytes.len());
        let v: serde_json::Value = serde_json::from_slice(&bytes).unwrap();
        assert_eq!(v["type"], "message");
        assert!(v["body"].as_str().unwrap().chars().count() <= MAX_BODY_CHARS);
        let mut short = Payload {
            kind: "message",
            room_id: None,
            event_id: None,
            account_id: None,
            thread_id: None,
            title: "Mom".into(),
            body: format!("mom: {}", "x".repeat(300)),
            unread: 1,
        };
        let v: serde_json::Value = serde_json::from_slice(&short.to_bytes()).unwrap();
        let body = v["body"].as_str().unwrap();
        assert_eq!(body.chars().count(), MAX_BODY_CHARS);
        assert!(body.ends_with('…'));
    }
}
