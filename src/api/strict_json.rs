//! Strict string fields and required fields in JSON request bodies.
//!
//! poem-openapi reads a JSON number or boolean sent for a string field as its text (`5` →
//! `"5"`, `true` → `"true"`). A client that sends the wrong type has a bug, and accepting
//! it would store something the client did not mean; instead the request is refused with
//! 400 `invalid_request` naming the field. The string fields of every operation's request
//! body are read from the served OpenAPI document, so a route added later is covered.
//!
//! Checked: top-level properties typed `string`, arrays of strings, and string maps
//! (`additionalProperties: string`), and the body's `required` properties (missing or
//! null: 400 `invalid_request` `"<field>: required"`, where poem-openapi's own message
//! would name only the schema). Everything else (wrong containers, ranges) is left to the
//! typed body and the services, which already answer 400.

use std::collections::HashMap;

use serde_json::Value;

use crate::error::AppError;

/// How the value of one body property must look.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Expect {
    Text,
    TextArray,
    TextMap,
}

/// The string properties of each operation's JSON request body, by method and path
/// template.
#[derive(Debug, Clone, Default)]
pub struct StringFields {
    by_operation: HashMap<(String, String), Vec<(String, Expect)>>,
    /// The required top-level properties of each operation's body.
    required: HashMap<(String, String), Vec<String>>,
}

impl StringFields {
    pub fn from_spec(spec: &Value) -> Self {
        let mut by_operation = HashMap::new();
        let mut required = HashMap::new();
        let Some(paths) = spec["paths"].as_object() else {
            return Self::default();
        };
        for (path, item) in paths {
            let Some(ops) = item.as_object() else {
                continue;
            };
            for (method, op) in ops {
                let Some(schema) = body_schema(spec, op) else {
                    continue;
                };
                let key = (method.to_ascii_uppercase(), path.clone());
                let fields = string_properties(schema);
                if !fields.is_empty() {
                    by_operation.insert(key.clone(), fields);
                }
                let names: Vec<String> = schema["required"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(|n| n.as_str().map(str::to_owned))
                    .collect();
                if !names.is_empty() {
                    required.insert(key, names);
                }
            }
        }
        Self {
            by_operation,
            required,
        }
    }

    /// Whether the operation's body has string or required fields to check.
    pub fn covers(&self, method: &str, template: &str) -> bool {
        let key = (method.to_owned(), template.to_owned());
        self.by_operation.contains_key(&key) || self.required.contains_key(&key)
    }

    /// Refuses `body` when a required field of the operation is missing or null, or a
    /// string field holds a number or a boolean.
    pub fn check(&self, method: &str, template: &str, body: &Value) -> Result<(), AppError> {
        let key = (method.to_owned(), template.to_owned());
        if let Some(object) = body.as_object() {
            for name in self.required.get(&key).into_iter().flatten() {
                if object.get(name).is_none_or(Value::is_null) {
                    return Err(AppError::invalid(name, "required"));
                }
            }
        }
        let Some(fields) = self.by_operation.get(&key) else {
            return Ok(());
        };
        for (name, expect) in fields {
            let Some(value) = body.get(name) else {
                continue;
            };
            let bad = match expect {
                Expect::Text => not_text(value),
                Expect::TextArray => value
                    .as_array()
                    .is_some_and(|items| items.iter().any(not_text)),
                Expect::TextMap => value
                    .as_object()
                    .is_some_and(|map| map.values().any(not_text)),
            };
            if bad {
                let what = match expect {
                    Expect::Text => "a string",
                    Expect::TextArray => "an array of strings",
                    Expect::TextMap => "an object of strings",
                };
                return Err(AppError::invalid(name, format!("must be {what}")));
            }
        }
        Ok(())
    }
}

/// Numbers and booleans: what poem-openapi would silently turn into text.
fn not_text(value: &Value) -> bool {
    value.is_number() || value.is_boolean()
}

/// The schema of the operation's JSON request body, with a `$ref` resolved.
fn body_schema<'a>(spec: &'a Value, op: &'a Value) -> Option<&'a Value> {
    let content = op["requestBody"]["content"].as_object()?;
    let schema = content
        .iter()
        .find(|(media, _)| media.starts_with("application/json"))
        .map(|(_, c)| &c["schema"])?;
    resolve(spec, schema)
}

fn resolve<'a>(spec: &'a Value, schema: &'a Value) -> Option<&'a Value> {
    match schema["$ref"].as_str() {
        Some(reference) => {
            let name = reference.strip_prefix("#/components/schemas/")?;
            spec["components"]["schemas"].get(name)
        }
        None => Some(schema),
    }
}

fn string_properties(schema: &Value) -> Vec<(String, Expect)> {
    let Some(props) = schema["properties"].as_object() else {
        return Vec::new();
    };
    props
        .iter()
        .filter_map(|(name, prop)| {
            let expect = if is_type(prop, "string") {
                Expect::Text
            } else if is_type(prop, "array") && is_type(&prop["items"], "string") {
                Expect::TextArray
            } else if is_type(prop, "object") && is_type(&prop["additionalProperties"], "string") {
                Expect::TextMap
            } else {
                return None;
            };
            Some((name.clone(), expect))
        })
        .collect()
}

/// `type: "string"` or, in OpenAPI 3.1, `type: ["string", "null"]`.
fn is_type(schema: &Value, wanted: &str) -> bool {
    match &schema["type"] {
        Value::String(t) => t == wanted,
        Value::Array(types) => types.iter().any(|t| t == wanted),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn fields() -> StringFields {
        StringFields::from_spec(&crate::api::spec_json())
    }

    #[test]
    fn numbers_and_booleans_for_string_fields_are_refused_by_name() {
        let f = fields();
        let err = f
            .check("PATCH", "/api/auth/profile", &json!({"displayName": 123}))
            .unwrap_err();
        assert_eq!(err.code(), "invalid_request");
        assert!(err.to_string().contains("displayName"), "{err}");
        assert!(f
            .check("POST", "/api/auth/code", &json!({"email": true}))
            .is_err());
        assert!(f
            .check(
                "POST",
                "/api/messages/send-multi",
                &json!({"roomIds": ["!a:x", 7], "body": "hi"})
            )
            .is_err());
    }

    #[test]
    fn strings_nulls_and_other_fields_pass() {
        let f = fields();
        f.check(
            "PATCH",
            "/api/auth/profile",
            &json!({"displayName": "Ann", "username": null}),
        )
        .unwrap();
        f.check(
            "POST",
            "/api/messages/send-multi",
            &json!({"roomIds": ["!a:x"], "body": "hi", "extra": 5}),
        )
        .unwrap();
        // Operations without a JSON body, and unknown ones, are not checked.
        f.check("GET", "/api/rooms", &json!({"x": 1})).unwrap();
        f.check("POST", "/nowhere", &json!({"x": 1})).unwrap();
    }

    #[test]
    fn a_missing_or_null_required_field_is_refused_by_name() {
        let f = fields();
        let err = f
            .check("POST", "/api/auth/verify", &json!({"email": "x"}))
            .unwrap_err();
        assert_eq!(err.code(), "invalid_request");
        assert_eq!(err.to_string(), "code: required");
        let err = f
            .check(
                "POST",
                "/api/auth/verify",
                &json!({"email": "x", "code": null}),
            )
            .unwrap_err();
        assert_eq!(err.to_string(), "code: required");
        f.check(
            "POST",
            "/api/auth/verify",
            &json!({"email": "x", "code": "123456"}),
        )
        .unwrap();
    }

    #[test]
    fn string_maps_are_checked() {
        let f = fields();
        let step = "/api/bridges/{platform}/login/step";
        assert!(
            f.by_operation
                .contains_key(&("POST".to_owned(), step.to_owned())),
            "{:?}",
            f.by_operation
                .keys()
                .filter(|k| k.1.contains("login"))
                .collect::<Vec<_>>()
        );
        let body = |phone: Value| {
            json!({"loginProcessId": "p", "stepId": "s", "stepType": "user_input",
                   "data": {"phone": phone}})
        };
        let err = f
            .check("POST", step, &body(json!(4_915_550_000_i64)))
            .unwrap_err();
        assert_eq!(err.to_string(), "data: must be an object of strings");
        f.check("POST", step, &body(json!("+4915550000"))).unwrap();
    }
}
