//! Pages of one conversation are sent gzip-compressed to clients that accept it (as
//! browsers and most HTTP libraries do); pages that mix conversations never are (BREACH:
//! see `services::pages`). The compressed form is the same page, and is as fresh.

use std::io::Read;

use reqwest::header::{ACCEPT_ENCODING, CONTENT_ENCODING, VARY};
use serde_json::Value;

use crate::common::*;

use super::{enc, msg, register_key, uid, Seeder};

struct Answer {
    encoding: Option<String>,
    vary: Option<String>,
    /// The body as JSON, decompressed when it came compressed.
    json: Value,
    wire_len: usize,
}

async fn read(app: &TestApp, token: &str, path: &str, accept: Option<&str>) -> Answer {
    let mut req = app.http.get(app.url(path)).bearer_auth(token);
    if let Some(a) = accept {
        req = req.header(ACCEPT_ENCODING, a);
    }
    let resp = req.send().await.expect("request");
    assert_eq!(resp.status(), 200, "{path}");
    let header = |name| {
        resp.headers()
            .get(name)
            .map(|v: &reqwest::header::HeaderValue| v.to_str().unwrap().to_owned())
    };
    let (encoding, vary) = (header(CONTENT_ENCODING), header(VARY));
    let bytes = resp.bytes().await.unwrap();
    let plain = if encoding.as_deref() == Some("gzip") {
        let mut out = Vec::new();
        flate2::read::GzDecoder::new(&bytes[..])
            .read_to_end(&mut out)
            .expect("a gzip body");
        out
    } else {
        bytes.to_vec()
    };
    Answer {
        encoding,
        vary,
        json: serde_json::from_slice(&plain).expect("JSON"),
        wire_len: bytes.len(),
    }
}

fn texts(page: &Value) -> Vec<&str> {
    page["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["text"].as_str().unwrap())
        .collect()
}

#[tokio::test]
async fn one_conversation_pages_are_gzipped_when_accepted_and_mixed_lists_never() {
    let app = TestApp::start_with_mail().await;
    let me = app.sign_up("msg.gzip").await;
    let id = uid(&me);
    let token = personal_token(&app, &me).await;
    let seed = Seeder::open(&app);
    let room = "!gzip:seed.test";
    seed.room(&id, room, None);
    let mut first = None;
    for i in 1..=30 {
        let text = format!("line {i}: shall we meet on Saturday at the market?");
        let (mid, _) = seed.message(&id, room, &msg("@anna:seed.test", 1_000 * i, &text));
        first.get_or_insert(mid);
    }
    let page = format!("/api/messages?roomId={}&limit=50", enc(room));

    // Readable history: compressed for a browser's Accept-Encoding, the same JSON.
    let plain = read(&app, &token, &page, None).await;
    let zipped = read(&app, &token, &page, Some("gzip, deflate, br, zstd")).await;
    assert_eq!(plain.encoding, None);
    assert_eq!(zipped.encoding.as_deref(), Some("gzip"));
    assert_eq!(zipped.json, plain.json);
    assert_eq!(texts(&zipped.json).len(), 30);
    assert!(
        zipped.wire_len * 4 < plain.wire_len,
        "{} of {}",
        zipped.wire_len,
        plain.wire_len
    );
    for answer in [&plain, &zipped] {
        assert_eq!(answer.vary.as_deref(), Some("accept-encoding"));
    }
    // Refused with a zero quality: sent as it is.
    let refused = read(&app, &token, &page, Some("gzip;q=0, br")).await;
    assert_eq!(refused.encoding, None);
    assert_eq!(refused.json, plain.json);

    // A write ends the compressed form with the page: the next compressed read shows it.
    app.user(&me)
        .messages()
        .delete(first.as_ref().unwrap())
        .await
        .unwrap();
    let after = read(&app, &token, &page, Some("gzip")).await;
    assert_eq!(after.encoding.as_deref(), Some("gzip"));
    assert_eq!(texts(&after.json).len(), 29);
    assert!(!texts(&after.json).iter().any(|t| t.starts_with("line 1:")));

    // The readable room list shows many conversations' last lines: never compressed.
    for _ in 0..40 {
        let other = format!("!gzip-{}:seed.test", uuid::Uuid::new_v4().simple());
        seed.room(&id, &other, None);
        seed.message(
            &id,
            &other,
            &msg("@bob:seed.test", 5_000, "a secret of another chat"),
        );
    }
    let rooms = read(&app, &token, "/api/rooms?limit=100", Some("gzip")).await;
    assert!(
        rooms.json["rooms"].as_array().unwrap().len() > 40,
        "{}",
        rooms.json
    );
    assert!(
        rooms.wire_len > 4096,
        "large enough to be worth compressing"
    );
    assert_eq!(rooms.encoding, None);
    assert_eq!(rooms.vary, None);

    // Native sessions: a sealed page of one room is compressed, history across rooms is
    // not (its clear metadata names several conversations).
    register_key(&app, &me).await;
    let sealed_one = read(&app, &me.access_token, &page, Some("gzip")).await;
    assert_eq!(sealed_one.encoding.as_deref(), Some("gzip"));
    assert_eq!(sealed_one.json["messages"].as_array().unwrap().len(), 29);
    let sealed_all = read(
        &app,
        &me.access_token,
        "/api/messages?limit=50",
        Some("gzip"),
    )
    .await;
    assert!(sealed_all.wire_len > 4096, "{}", sealed_all.wire_len);
    assert_eq!(sealed_all.encoding, None);
}
