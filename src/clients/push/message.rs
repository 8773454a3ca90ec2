//! What one push carries (the alert and the app's keys, as the APNs JSON payload) and how
//! APNs can answer: which answers mean the device token is dead.

use serde::Serialize;
use serde_json::{json, Map, Value};

#[derive(Debug, thiserror::Error)]
pub enum PushError {
    /// APNs answered with an error status; `reason` is its `reason` field.
    #[error("APNs rejected the notification: {status} {reason}")]
    Rejected { status: u16, reason: String },
    #[error("APNs unreachable: {0}")]
    Unreachable(String),
    #[error("cannot sign the APNs provider token: {0}")]
    Signing(String),
}

impl PushError {
    /// Whether the device token is permanently invalid (the app was uninstalled, or the
    /// token is not a token of this environment): the device should be removed.
    pub fn device_is_gone(&self) -> bool {
        match self {
            Self::Rejected { status: 410, .. } => true,
            Self::Rejected {
                status: 400,
                reason,
            } => reason == "BadDeviceToken" || reason == "Unregistered",
            _ => false,
        }
    }
}

/// What a push shows, plus custom keys next to `aps`.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Notification {
    pub title: String,
    pub body: String,
    /// Custom top-level keys (`type`, ids the app needs to open the right screen).
    pub data: Map<String, Value>,
}

impl Notification {
    pub fn new(title: impl Into<String>, body: impl Into<String>) -> Self {
        Self {
            title: title.into(),
            body: body.into(),
            data: Map::new(),
        }
    }

    pub fn with(mut self, key: &str, value: impl Into<Value>) -> Self {
        self.data.insert(key.to_owned(), value.into());
        self
    }

    /// The APNs JSON payload: `{"aps": {"alert": {"title", "body"}, "sound": "default"}, …data}`.
    pub fn payload(&self) -> Value {
        let mut root = Map::new();
        root.insert(
            "aps".into(),
            json!({"alert": {"title": self.title, "body": self.body}, "sound": "default"}),
        );
        for (k, v) in &self.data {
            if k != "aps" {
                root.insert(k.clone(), v.clone());
            }
        }
        Value::Object(root)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn payload_has_aps_alert_and_custom_keys() {
        let n = Notification::new("Title", "Body")
            .with("type", "reminder")
            .with("aps", "ignored");
        let p = n.payload();
        assert_eq!(p["aps"]["alert"]["title"], "Title");
        assert_eq!(p["aps"]["alert"]["body"], "Body");
        assert_eq!(p["aps"]["sound"], "default");
        assert_eq!(p["type"], "reminder");
    }

    #[test]
    fn dead_tokens_are_recognized() {
        let r = |status, reason: &str| PushError::Rejected {
            status,
            reason: reason.into(),
        };
        assert!(r(410, "Unregistered").device_is_gone());
        assert!(r(400, "BadDeviceToken").device_is_gone());
        assert!(!r(400, "BadTopic").device_is_gone());
        assert!(!r(500, "InternalServerError").device_is_gone());
        assert!(!PushError::Unreachable("x".into()).device_is_gone());
    }
}
