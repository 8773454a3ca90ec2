//! Reading the server's answers: a JSON body with its status, an error body with its code,
//! the refusal of bad input naming its field, and the rate-limit headers.

/// The field names of a JSON object, sorted (to compare a body's exact shape).
pub fn sorted_keys(v: &serde_json::Value) -> Vec<&str> {
    let mut keys: Vec<&str> = v.as_object().unwrap().keys().map(String::as_str).collect();
    keys.sort_unstable();
    keys
}

/// Reads a JSON body, asserting the status first (printing the body on mismatch).
pub async fn expect_json(resp: reqwest::Response, status: u16) -> serde_json::Value {
    let got = resp.status().as_u16();
    let text = resp.text().await.expect("body");
    assert_eq!(got, status, "unexpected status; body: {text}");
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("body is not JSON ({e}): {text}"))
}

/// Asserts an error response: status, JSON `{"error": code, "message": …}`.
pub async fn expect_error(resp: reqwest::Response, status: u16, code: &str) -> serde_json::Value {
    assert_rate_headers(&resp);
    let body = expect_json(resp, status).await;
    assert_eq!(body["error"], code, "error code; body: {body}");
    assert!(
        body["message"].as_str().is_some_and(|m| !m.is_empty()),
        "message; body: {body}"
    );
    body
}

/// Asserts the 400 `invalid_request` of bad input whose message names `field` first
/// (`"{field}: …"`, as every validation message of the API does); returns the body.
pub async fn expect_invalid_field(resp: reqwest::Response, field: &str) -> serde_json::Value {
    let body = expect_error(resp, 400, "invalid_request").await;
    let message = body["message"].as_str().unwrap_or_default();
    assert!(
        message.starts_with(&format!("{field}:")),
        "the refusal should name {field}: {body}"
    );
    body
}

/// Asserts the three `x-ratelimit-*` headers are there, each a number.
pub fn assert_rate_headers(resp: &reqwest::Response) {
    for name in [
        "x-ratelimit-limit",
        "x-ratelimit-remaining",
        "x-ratelimit-reset",
    ] {
        let value = resp
            .headers()
            .get(name)
            .unwrap_or_else(|| panic!("{name} missing on {}", resp.status()));
        value
            .to_str()
            .unwrap()
            .parse::<u64>()
            .unwrap_or_else(|_| panic!("{name} not a number"));
    }
}
