//! What a conversation tells the other side and the user's other Matrix clients: typing
//! notices, read receipts (public or private), room tags, room account data and the
//! per-room push rules (the way Element encodes a room's notification level).

use serde_json::{json, Value};

use super::{decode, encode, unreachable, MatrixClient, MatrixError};

/// Element's per-room notification levels, as push rules whose `rule_id` is the room id.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RoomPushLevel {
    /// Every message notifies: neither rule.
    All,
    /// Only mentions and keywords: a `room` rule with no actions.
    Mentions,
    /// Nothing notifies: an `override` rule matching the room, with no actions.
    Off,
}

impl MatrixClient {
    async fn send_json(
        &self,
        method: reqwest::Method,
        token: &str,
        path: &str,
        body: Option<&Value>,
    ) -> Result<(), MatrixError> {
        let mut req = self.client_api(method, token, path)?;
        if let Some(body) = body {
            req = req.json(body);
        }
        let resp = req.send().await.map_err(unreachable)?;
        let _: Value = decode(resp).await?;
        Ok(())
    }

    /// `DELETE` that treats "not there" (`M_NOT_FOUND`) as done.
    async fn delete_if_any(&self, token: &str, path: &str) -> Result<(), MatrixError> {
        match self
            .send_json(reqwest::Method::DELETE, token, path, None)
            .await
        {
            Err(e) if e.errcode() == Some("M_NOT_FOUND") => Ok(()),
            other => other,
        }
    }

    /// `PUT /rooms/{roomId}/typing/{userId}`: starts (for `timeout_ms`) or stops typing.
    pub async fn set_typing(
        &self,
        token: &str,
        user_id: &str,
        room_id: &str,
        typing: bool,
        timeout_ms: u64,
    ) -> Result<(), MatrixError> {
        let path = format!("rooms/{}/typing/{}", encode(room_id), encode(user_id));
        let body = if typing {
            json!({"typing": true, "timeout": timeout_ms})
        } else {
            json!({"typing": false})
        };
        self.send_json(reqwest::Method::PUT, token, &path, Some(&body))
            .await
    }

    /// `POST /rooms/{roomId}/read_markers` with the fully-read marker and a private
    /// receipt (`m.read.private`): other clients of the user see the room read, the other
    /// members (and the networks behind the bridges) get no receipt.
    pub async fn mark_read_privately(
        &self,
        token: &str,
        room_id: &str,
        event_id: &str,
    ) -> Result<(), MatrixError> {
        let path = format!("rooms/{}/read_markers", encode(room_id));
        let body = json!({"m.fully_read": event_id, "m.read.private": event_id});
        self.send_json(reqwest::Method::POST, token, &path, Some(&body))
            .await
    }

    /// Adds (`PUT`) or removes (`DELETE`) a room tag such as `m.favourite`.
    pub async fn set_room_tag(
        &self,
        token: &str,
        user_id: &str,
        room_id: &str,
        tag: &str,
        on: bool,
    ) -> Result<(), MatrixError> {
        let path = format!(
            "user/{}/rooms/{}/tags/{}",
            encode(user_id),
            encode(room_id),
            encode(tag)
        );
        if on {
            self.send_json(reqwest::Method::PUT, token, &path, Some(&json!({})))
                .await
        } else {
            self.delete_if_any(token, &path).await
        }
    }

    /// `PUT /user/{userId}/rooms/{roomId}/account_data/{type}`.
    pub async fn put_room_account_data(
        &self,
        token: &str,
        user_id: &str,
        room_id: &str,
        kind: &str,
        content: &Value,
    ) -> Result<(), MatrixError> {
        let path = format!(
            "user/{}/rooms/{}/account_data/{}",
            encode(user_id),
            encode(room_id),
            encode(kind)
        );
        self.send_json(reqwest::Method::PUT, token, &path, Some(content))
            .await
    }

    /// `GET` of account data another client may have changed: the account's push rules
    /// (`pushrules/`, the content of `m.push_rules`), a room's tags (`…/tags`, the content
    /// of `m.tag`), a room's or the account's account data of one type. `None`: the
    /// homeserver has none (404).
    pub(super) async fn read_json<T: serde::de::DeserializeOwned>(
        &self,
        token: &str,
        path: &str,
    ) -> Result<Option<T>, MatrixError> {
        let resp = self
            .client_api(reqwest::Method::GET, token, path)?
            .send()
            .await
            .map_err(unreachable)?;
        match decode(resp).await {
            Ok(v) => Ok(Some(v)),
            Err(MatrixError::Http { status: 404, .. }) => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// `GET /pushrules/`: the content an `m.push_rules` event would carry.
    pub async fn push_rules(&self, token: &str) -> Result<Value, MatrixError> {
        Ok(self
            .read_json(token, "pushrules/")
            .await?
            .unwrap_or_default())
    }

    /// `GET /user/{userId}/rooms/{roomId}/tags`: the content an `m.tag` event would carry.
    pub async fn room_tags(
        &self,
        token: &str,
        user_id: &str,
        room_id: &str,
    ) -> Result<Value, MatrixError> {
        let path = format!("user/{}/rooms/{}/tags", encode(user_id), encode(room_id));
        Ok(self
            .read_json(token, &path)
            .await?
            .unwrap_or_else(|| json!({"tags": {}})))
    }

    /// `GET /user/{userId}/rooms/{roomId}/account_data/{type}`; `None` when never set.
    pub async fn room_account_data(
        &self,
        token: &str,
        user_id: &str,
        room_id: &str,
        kind: &str,
    ) -> Result<Option<Value>, MatrixError> {
        let path = format!(
            "user/{}/rooms/{}/account_data/{}",
            encode(user_id),
            encode(room_id),
            encode(kind)
        );
        self.read_json(token, &path).await
    }

    /// Sets the room's notification level as Element does: `Off` is an `override` rule
    /// for the room with no actions, `Mentions` a `room` rule with no actions, `All` neither.
    pub async fn set_room_push_level(
        &self,
        token: &str,
        room_id: &str,
        level: RoomPushLevel,
    ) -> Result<(), MatrixError> {
        let override_path = format!("pushrules/global/override/{}", encode(room_id));
        let room_path = format!("pushrules/global/room/{}", encode(room_id));
        if level == RoomPushLevel::Off {
            let rule = json!({
                "actions": [],
                "conditions": [{"kind": "event_match", "key": "room_id", "pattern": room_id}],
            });
            self.send_json(reqwest::Method::PUT, token, &override_path, Some(&rule))
                .await?;
        } else {
            self.delete_if_any(token, &override_path).await?;
        }
        if level == RoomPushLevel::Mentions {
            self.send_json(
                reqwest::Method::PUT,
                token,
                &room_path,
                Some(&json!({"actions": []})),
            )
            .await
        } else {
            self.delete_if_any(token, &room_path).await
        }
    }
}

/// The per-room levels a `m.push_rules` account data event encodes (rooms at `All` are
/// absent). Disabled rules and rules that still notify do not count.
pub fn room_push_levels(push_rules: &Value) -> std::collections::HashMap<String, RoomPushLevel> {
    let silent = |rule: &Value| {
        rule["enabled"].as_bool() != Some(false)
            && rule["actions"].as_array().is_some_and(|a| {
                !a.iter()
                    .any(|x| x == "notify" || x.get("set_tweak").is_some())
            })
    };
    let mut levels = std::collections::HashMap::new();
    for rule in push_rules["global"]["room"]
        .as_array()
        .into_iter()
        .flatten()
    {
        if let Some(id) = rule["rule_id"].as_str().filter(|id| id.starts_with('!')) {
            if silent(rule) {
                levels.insert(id.to_owned(), RoomPushLevel::Mentions);
            }
        }
    }
    for rule in push_rules["global"]["override"]
        .as_array()
        .into_iter()
        .flatten()
    {
        let Some(id) = rule["rule_id"].as_str().filter(|id| id.starts_with('!')) else {
            continue;
        };
        let matches_room = rule["conditions"]
            .as_array()
            .is_some_and(|c| c.len() == 1 && c[0]["key"] == "room_id" && c[0]["pattern"] == id);
        if matches_room && silent(rule) {
            levels.insert(id.to_owned(), RoomPushLevel::Off);
        }
    }
    levels
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn element_s_room_rules_give_the_levels() {
        let rules = json!({"global": {
            "override": [
                {"rule_id": ".m.rule.master", "enabled": false, "actions": []},
                {"rule_id": "!off:x", "enabled": true, "actions": [],
                 "conditions": [{"kind": "event_match", "key": "room_id", "pattern": "!off:x"}]},
                {"rule_id": "!dont:x", "enabled": true, "actions": ["dont_notify"],
                 "conditions": [{"kind": "event_match", "key": "room_id", "pattern": "!dont:x"}]},
                {"rule_id": "!disabled:x", "enabled": false, "actions": [],
                 "conditions": [{"kind": "event_match", "key": "room_id", "pattern": "!disabled:x"}]},
            ],
            "room": [
                {"rule_id": "!mentions:x", "enabled": true, "actions": []},
                {"rule_id": "!loud:x", "enabled": true, "actions": ["notify"]},
            ],
        }});
        let levels = room_push_levels(&rules);
        assert_eq!(levels.get("!off:x"), Some(&RoomPushLevel::Off));
        assert_eq!(levels.get("!dont:x"), Some(&RoomPushLevel::Off));
        assert_eq!(levels.get("!mentions:x"), Some(&RoomPushLevel::Mentions));
        assert_eq!(levels.len(), 3, "{levels:?}");
    }
}
