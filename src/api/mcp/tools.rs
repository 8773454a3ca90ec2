//! The MCP tools: each one names the HTTP route it wraps, and its arguments are named like
//! that route's parameters (path, query or body fields), so a tool call is that request.

use std::sync::Arc;

use poem::http::Method;
use rmcp::model::{JsonObject, Tool};
use serde_json::{json, Map, Value};

pub use super::spec::ToolSpec;
use super::spec::STRS;

/// The tools that only read. Every other tool *acts* (sends, composes, creates, changes,
/// deletes) and needs the token's `mcpActions` opt-in: a tool added without being listed
/// here is acting, so a new sending tool can never slip through as a reading one.
const READ_ONLY: &[&str] = &[
    "list_rooms",
    "read_room_history",
    "search",
    "list_contacts",
    "get_attachment",
    "get_receipts",
    "list_reminders",
    "list_email_threads",
    "read_email_thread",
    "read_email_message",
];

/// Every tool, in the order they are listed.
pub fn specs() -> &'static [ToolSpec] {
    static SPECS: std::sync::OnceLock<Vec<ToolSpec>> = std::sync::OnceLock::new();
    SPECS.get_or_init(super::catalogue::build)
}

impl ToolSpec {
    /// Whether calling it changes anything (needs the `mcpActions` opt-in): every tool
    /// but the listed reading ones, and any tool that is not a GET.
    pub fn acts(&self) -> bool {
        self.method != Method::GET || !READ_ONLY.contains(&self.name)
    }

    pub fn tool(&self) -> Tool {
        let mut props = Map::new();
        for (name, ty, about) in self.args {
            let schema = match *ty {
                STRS => json!({"type": "array", "items": {"type": "string"}, "description": about}),
                t => json!({"type": t, "description": about}),
            };
            props.insert((*name).to_owned(), schema);
        }
        let schema: JsonObject = match json!({
            "type": "object",
            "properties": props,
            "required": self.required,
            "additionalProperties": false,
        }) {
            Value::Object(o) => o,
            _ => JsonObject::new(),
        };
        Tool::new(self.name, self.description, Arc::new(schema))
    }

    /// The request this call makes: (path and query, JSON body). Errors name the argument.
    pub fn request(&self, args: &JsonObject) -> Result<(String, Option<Value>), String> {
        for name in self.required {
            if args.get(*name).is_none_or(Value::is_null) {
                return Err(format!("{name}: is required"));
            }
        }
        if let Some(unknown) = args
            .keys()
            .find(|k| !self.args.iter().any(|(n, _, _)| n == k))
        {
            return Err(format!("{unknown}: is not an argument of {}", self.name));
        }
        let mut path = self.path.to_owned();
        let mut rest = Map::new();
        for (name, value) in args {
            let slot = format!("{{{name}}}");
            if path.contains(&slot) {
                let text = scalar(value).ok_or_else(|| format!("{name}: must be a string"))?;
                // Encoding leaves `.` and `..` as they are, and a URL parser resolves
                // them: refused here, before the request is made (one rule for every
                // client, `clients::segment`).
                let seg =
                    crate::clients::segment::segment(name, &text).map_err(|e| e.to_string())?;
                path = path.replace(&slot, &seg);
            } else if !value.is_null() {
                rest.insert(name.clone(), value.clone());
            }
        }
        if self.method == Method::GET {
            let mut query = Vec::new();
            for (name, value) in &rest {
                let text = scalar(value)
                    .ok_or_else(|| format!("{name}: must be a string, number or boolean"))?;
                query.push(format!(
                    "{}={}",
                    crate::clients::matrix::encode(name),
                    crate::clients::matrix::encode(&text)
                ));
            }
            if !query.is_empty() {
                path = format!("{path}?{}", query.join("&"));
            }
            Ok((path, None))
        } else {
            Ok((path, Some(Value::Object(rest))))
        }
    }
}

fn scalar(v: &Value) -> Option<String> {
    match v {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        Value::Bool(b) => Some(b.to_string()),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(name: &str) -> &'static ToolSpec {
        specs().iter().find(|s| s.name == name).unwrap()
    }

    #[test]
    fn calls_become_the_wrapped_requests() {
        let args = |v: Value| v.as_object().unwrap().clone();
        let (path, body) = spec("search")
            .request(&args(json!({"q": "new york", "limit": 5})))
            .unwrap();
        assert!(path.starts_with("/api/search?"), "{path}");
        assert!(
            path.contains("q=new%20york") && path.contains("limit=5"),
            "{path}"
        );
        assert!(body.is_none());
        let (path, body) = spec("send_text")
            .request(&args(
                json!({"roomId": "!a:b", "content": "hi", "txnId": "t1"}),
            ))
            .unwrap();
        assert_eq!(path, "/api/rooms/%21a%3Ab/messages");
        assert_eq!(body.unwrap(), json!({"content": "hi", "txnId": "t1"}));
        let err = spec("read_room_history")
            .request(&args(json!({})))
            .unwrap_err();
        assert_eq!(err, "roomId: is required");
        assert!(spec("search")
            .request(&args(json!({"q": "x", "bogus": 1})))
            .is_err());
    }

    #[test]
    fn dot_segments_never_become_a_path() {
        let args = |v: Value| v.as_object().unwrap().clone();
        for (tool, call, field) in [
            ("get_receipts", json!({"roomId": ".."}), "roomId"),
            (
                "get_attachment",
                json!({"roomId": "!a:b", "eventId": "."}),
                "eventId",
            ),
            ("read_email_message", json!({"id": ".."}), "id"),
            ("update_reminder", json!({"id": "..", "title": "x"}), "id"),
        ] {
            let err = spec(tool).request(&args(call)).unwrap_err();
            assert!(
                err.starts_with(&format!("{field}: must not be")),
                "{tool}: {err}"
            );
        }
        // Dots inside a value are fine (and a query value is never a path segment).
        let (path, _) = spec("read_email_message")
            .request(&args(json!({"id": "a..b"})))
            .unwrap();
        assert_eq!(path, "/api/email/messages/a..b");
    }

    #[test]
    fn tools_act_unless_listed_as_reading() {
        for name in [
            "send_text",
            "compose_email",
            "create_reminder",
            "update_reminder",
        ] {
            assert!(spec(name).acts(), "{name}");
        }
        for name in [
            "list_rooms",
            "read_room_history",
            "search",
            "read_email_message",
        ] {
            assert!(!spec(name).acts(), "{name}");
        }
        // A tool nobody classified: acting.
        let new_tool = ToolSpec {
            name: "delete_message",
            description: "",
            method: Method::DELETE,
            path: "/x",
            args: &[],
            required: &[],
        };
        assert!(new_tool.acts());
        // A listed name on a method that writes is still acting.
        let disguised = ToolSpec {
            name: "list_rooms",
            method: Method::POST,
            ..new_tool
        };
        assert!(disguised.acts());
        // Every listed tool of this build is a GET (names of tools other branches add may
        // be listed before they arrive).
        for s in specs().iter().filter(|s| READ_ONLY.contains(&s.name)) {
            assert!(!s.acts(), "{} is listed but not a GET", s.name);
        }
    }
}
