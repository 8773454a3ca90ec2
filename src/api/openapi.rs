//! The served OpenAPI document. poem-openapi writes 3.0.0; the contract is 3.1.0, so the
//! generated document is converted here, in one place.
//!
//! 3.0 → 3.1 changes applied: `nullable: true` becomes a `"null"` member of the type (or
//! an `anyOf` with `{"type": "null"}` for references), boolean `exclusiveMinimum` /
//! `exclusiveMaximum` become numeric bounds, and schema `example` becomes `examples`.
//! A described reference, which 3.0 can only write as `allOf: [{$ref}, {description}]`,
//! becomes a `$ref` with a sibling `description` (allowed in 3.1): client generators
//! such as openapi-python-client cannot take `allOf` of an enum and drop the schema.
//! Object properties that are not `required` come from `Option` fields, which serialize
//! as `null` when absent, so they are made nullable too.

use serde_json::{json, Map, Value};

pub const OPENAPI_VERSION: &str = "3.1.0";
/// Version of the interface (not of the binary).
pub const API_VERSION: &str = "2.0.0";

pub fn to_openapi_31(mut doc: Value) -> Value {
    doc["openapi"] = json!(OPENAPI_VERSION);
    doc["info"]["version"] = json!(API_VERSION);
    convert(&mut doc);
    doc
}

fn convert(value: &mut Value) {
    match value {
        Value::Object(map) => {
            for child in map.values_mut() {
                convert(child);
            }
            convert_object(map);
        }
        Value::Array(items) => items.iter_mut().for_each(convert),
        _ => {}
    }
}

fn looks_like_schema(map: &Map<String, Value>) -> bool {
    !map.contains_key("in")
        && !map.contains_key("schema")
        && [
            "type",
            "$ref",
            "properties",
            "allOf",
            "anyOf",
            "oneOf",
            "items",
            "enum",
        ]
        .iter()
        .any(|k| map.contains_key(*k))
}

fn convert_object(map: &mut Map<String, Value>) {
    if !looks_like_schema(map) {
        return;
    }
    inline_described_ref(map);
    if let Some(nullable) = map.remove("nullable") {
        if nullable == json!(true) {
            make_nullable(map);
        }
    }
    for (flag, bound) in [
        ("exclusiveMinimum", "minimum"),
        ("exclusiveMaximum", "maximum"),
    ] {
        match map.get(flag) {
            Some(Value::Bool(true)) => {
                let limit = map.remove(bound).unwrap_or(Value::Null);
                map.insert(flag.to_owned(), limit);
            }
            Some(Value::Bool(false)) => {
                map.remove(flag);
            }
            _ => {}
        }
    }
    if let Some(example) = map.remove("example") {
        map.insert("examples".to_owned(), json!([example]));
    }
    nullable_optional_properties(map);
}

/// `allOf: [{"$ref": R}, {"description": D}]` → `"$ref": R, "description": D`. Only that
/// exact shape: any other `allOf` (e.g. a union variant extending an object) is a real
/// composition and stays.
fn inline_described_ref(map: &mut Map<String, Value>) {
    let Some(Value::Array(parts)) = map.get("allOf") else {
        return;
    };
    let [Value::Object(reference), Value::Object(described)] = parts.as_slice() else {
        return;
    };
    let is_ref = reference.len() == 1 && reference.contains_key("$ref");
    let is_description = described.len() == 1 && described.contains_key("description");
    if !is_ref || !is_description {
        return;
    }
    let (target, description) = (reference["$ref"].clone(), described["description"].clone());
    map.remove("allOf");
    map.insert("$ref".to_owned(), target);
    map.entry("description").or_insert(description);
}

/// Optional (`Option`) properties are sent as `null` when empty: say so in the schema.
fn nullable_optional_properties(map: &mut Map<String, Value>) {
    let required: Vec<String> = map
        .get("required")
        .and_then(Value::as_array)
        .map(|r| {
            r.iter()
                .filter_map(|v| v.as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default();
    let Some(Value::Object(properties)) = map.get_mut("properties") else {
        return;
    };
    for (name, schema) in properties.iter_mut() {
        if required.contains(name) {
            continue;
        }
        if let Value::Object(prop) = schema {
            let already = match prop.get("type") {
                Some(Value::Array(types)) => types.contains(&json!("null")),
                _ => prop
                    .get("anyOf")
                    .and_then(Value::as_array)
                    .is_some_and(|a| a.contains(&json!({"type": "null"}))),
            };
            if !already {
                make_nullable(prop);
            }
        }
    }
}

fn make_nullable(map: &mut Map<String, Value>) {
    match map.get_mut("type") {
        Some(Value::String(t)) => {
            let t = std::mem::take(t);
            map.insert("type".to_owned(), json!([t, "null"]));
            if let Some(Value::Array(values)) = map.get_mut("enum") {
                values.push(Value::Null);
            }
        }
        Some(Value::Array(types)) => {
            if !types.contains(&json!("null")) {
                types.push(json!("null"));
            }
        }
        _ => {
            // A reference or a composition: wrap it.
            let mut inner = Map::new();
            for key in ["$ref", "allOf", "anyOf", "oneOf"] {
                if let Some(v) = map.remove(key) {
                    inner.insert(key.to_owned(), v);
                }
            }
            map.insert(
                "anyOf".to_owned(),
                json!([Value::Object(inner), {"type": "null"}]),
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nullable_types_and_references_become_31_forms() {
        let doc = json!({
            "openapi": "3.0.0",
            "info": {"title": "t", "version": "x"},
            "components": {"schemas": {"A": {"type": "object", "properties": {
                "s": {"type": "string", "nullable": true},
                "r": {"allOf": [{"$ref": "#/components/schemas/B"}], "nullable": true},
                "n": {"type": "integer", "minimum": 0, "exclusiveMinimum": true},
                "e": {"type": "string", "example": "hi"}
            }}}}
        });
        let out = to_openapi_31(doc);
        assert_eq!(out["openapi"], "3.1.0");
        assert_eq!(out["info"]["version"], "2.0.0");
        let props = &out["components"]["schemas"]["A"]["properties"];
        assert_eq!(props["s"]["type"], json!(["string", "null"]));
        assert_eq!(props["r"]["anyOf"][1], json!({"type": "null"}));
        assert_eq!(props["n"]["exclusiveMinimum"], json!(0));
        assert!(props["n"].get("minimum").is_none());
        assert_eq!(props["e"]["examples"], json!(["hi"]));
    }

    #[test]
    fn optional_properties_become_nullable() {
        let doc = json!({"components": {"schemas": {"A": {
            "type": "object",
            "required": ["a"],
            "properties": {
                "a": {"type": "string"},
                "b": {"type": "string"},
                "c": {"$ref": "#/components/schemas/B"}
            }
        }}}});
        let out = to_openapi_31(doc);
        let props = &out["components"]["schemas"]["A"]["properties"];
        assert_eq!(props["a"]["type"], "string");
        assert_eq!(props["b"]["type"], json!(["string", "null"]));
        assert_eq!(props["c"]["anyOf"][1], json!({"type": "null"}));
    }

    #[test]
    fn described_references_become_refs_with_a_description() {
        let r = "#/components/schemas/E";
        let doc = json!({"components": {"schemas": {"A": {
            "type": "object",
            "required": ["req", "union"],
            "properties": {
                "req": {"description": "d", "allOf": [{"$ref": r}, {"description": "d"}]},
                "opt": {"allOf": [{"$ref": r}, {"description": "o"}], "nullable": true},
                "union": {"allOf": [{"type": "object"}, {"$ref": r}]}
            }
        }}}});
        let out = to_openapi_31(doc);
        let props = &out["components"]["schemas"]["A"]["properties"];
        assert_eq!(props["req"], json!({"$ref": r, "description": "d"}));
        assert_eq!(
            props["opt"],
            json!({"description": "o", "anyOf": [{"$ref": r}, {"type": "null"}]})
        );
        assert_eq!(props["union"]["allOf"][1], json!({"$ref": r}));
    }

    #[test]
    fn parameter_examples_are_left_alone() {
        let doc = json!({"paths": {"/x": {"get": {"parameters": [
            {"name": "q", "in": "query", "schema": {"type": "string"}, "example": "v"}
        ]}}}});
        let out = to_openapi_31(doc);
        assert_eq!(out["paths"]["/x"]["get"]["parameters"][0]["example"], "v");
    }
}
