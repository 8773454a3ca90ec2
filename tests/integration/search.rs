//! Encrypted full-text search against the real binary and Synapse: messages written on
//! Matrix, ingested by the sync worker, found by word, prefix and phrase; never another
//! user's; no indexed word in the database file; gone after a key deletion.

use std::time::{Duration, Instant};

use base64::engine::general_purpose::STANDARD;
use base64::Engine as _;
use reqwest::Method;
use serde_json::{json, Value};
use switchboard::crypto::{open_envelope, Envelope};
use x25519_dalek::{PublicKey, StaticSecret};

use crate::common::matrix::{self as mx, MatrixUser};
use crate::common::*;

pub(crate) fn enc(s: &str) -> String {
    switchboard::clients::matrix::encode(s)
}

pub(crate) fn me_on_matrix(s: &Session) -> MatrixUser {
    MatrixUser::from_token(
        s.user["matrixUserId"].as_str().expect("matrixUserId"),
        s.matrix_access_token.as_deref().expect("matrix token"),
    )
}

/// A personal token: (id, secret).
pub(crate) async fn token_with_id(app: &TestApp, s: &Session) -> (String, String) {
    let created = expect_json(
        app.post_json(
            "/api/developer/tokens",
            Some(&s.access_token),
            json!({"name": "search script"}),
        )
        .await,
        201,
    )
    .await;
    (
        created["id"].as_str().unwrap().to_owned(),
        created["token"].as_str().unwrap().to_owned(),
    )
}

pub(crate) async fn opt_in(app: &TestApp, s: &Session, token_id: &str) {
    let resp = app
        .send(
            Method::PATCH,
            &format!("/api/developer/tokens/{token_id}"),
            Some(&s.access_token),
            Some(json!({"optIn": true})),
        )
        .await;
    let body = expect_json(resp, 200).await;
    assert!(body["optedInVersion"].as_u64().unwrap() >= 2, "{body}");
}

/// Runs `switchboard reindex --user <uid>` against the app's config; its output.
pub(crate) fn reindex(app: &TestApp, uid: &str) -> String {
    let config = app.config_path.to_str().unwrap();
    let (status, out, err) = run_cli(
        &["reindex", "--config", config, "--user", uid],
        app.dir.path(),
    );
    assert!(status.success(), "{out}{err}");
    out
}

pub(crate) async fn search(app: &TestApp, bearer: &str, query: &str) -> Value {
    expect_json(
        app.get_auth(&format!("/api/search?{query}"), bearer).await,
        200,
    )
    .await
}

/// Searches until `want` results are there (the sync worker ingests asynchronously).
pub(crate) async fn wait_for_results(
    app: &TestApp,
    bearer: &str,
    query: &str,
    want: usize,
) -> Value {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let page = search(app, bearer, query).await;
        if page["results"].as_array().unwrap().len() >= want {
            return page;
        }
        assert!(
            Instant::now() < deadline,
            "search {query} did not reach {want} results: {page}"
        );
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

fn snippets(page: &Value) -> Vec<String> {
    page["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["snippet"].as_str().unwrap().to_owned())
        .collect()
}

fn rooms_of(page: &Value) -> Vec<String> {
    page["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["roomId"].as_str().unwrap().to_owned())
        .collect()
}

/// Two rooms of `me` with bob, bob's messages in both; returns (room a, room b, bob).
async fn two_rooms(
    me: &Session,
    texts_a: &[&str],
    texts_b: &[&str],
) -> (String, String, MatrixUser) {
    let bob = mx::register("searchbob").await;
    let matrix = me_on_matrix(me);
    let a = matrix.create_room(None, &[&bob.user_id], false).await;
    let b = matrix.create_room(None, &[&bob.user_id], false).await;
    bob.join(&a).await;
    bob.join(&b).await;
    for t in texts_a {
        bob.send_text(&a, t).await;
    }
    for t in texts_b {
        bob.send_text(&b, t).await;
    }
    (a, b, bob)
}

#[tokio::test]
async fn words_prefixes_and_phrases_find_the_right_messages_and_never_other_users() {
    let app = TestApp::start_with_mail().await;
    let me = app.sign_up("search.me").await;
    let other = app.sign_up("search.other").await;
    let (token_id, token) = token_with_id(&app, &me).await;
    let (a, b, bob) = two_rooms(
        &me,
        &[
            "Anna sent the Xylophonist address: 12 Rue de l'Église",
            "Quetzalcoatl lives in New York now",
        ],
        &[
            "The xylophonist moved; York has a new museum",
            "Nothing to see here",
        ],
    )
    .await;

    // Search reads across every room: even a token created today needs its own opt-in.
    expect_error(
        app.get_auth("/api/search?q=xylophonist", &token).await,
        403,
        "forbidden_for_api_token",
    )
    .await;
    opt_in(&app, &me, &token_id).await;

    a_word_finds_both_rooms_newest_first(&app, &token, &a, &b, &bob).await;
    prefixes_and_phrases(&app, &token, &a).await;
    filters_and_paging(&app, &token, &a, &b).await;
    bad_input_is_400_naming_the_field(&app, &token).await;
    another_users_message_is_never_found(&app, &token, &other).await;
    snippets_are_sealed_to_a_registered_key(&app, &me).await;
    no_indexed_word_is_in_the_database_file(&app);
}

/// A word: both rooms, newest first, case and diacritics folded; highlights point at the
/// match inside the snippet, in characters.
async fn a_word_finds_both_rooms_newest_first(
    app: &TestApp,
    token: &str,
    a: &str,
    b: &str,
    bob: &MatrixUser,
) {
    let page = wait_for_results(app, token, "q=XYLOPHONIST", 2).await;
    assert_eq!(rooms_of(&page), [b, a], "{page}");
    let r = &page["results"][0];
    assert_eq!(r["kind"], "message");
    assert_eq!(r["senderId"], bob.user_id.as_str());
    uuid::Uuid::parse_str(r["id"].as_str().unwrap()).expect("message id");
    assert!(r["timestamp"].as_i64().unwrap() > 1_700_000_000_000);
    assert!(page["nextCursor"].is_null(), "{page}");
    // Highlights point at the match inside the snippet, in characters.
    for r in page["results"].as_array().unwrap() {
        let chars: Vec<char> = r["snippet"].as_str().unwrap().chars().collect();
        let h = &r["highlights"][0];
        let (s, e) = (
            h["start"].as_u64().unwrap() as usize,
            h["end"].as_u64().unwrap() as usize,
        );
        let hit: String = chars[s..e].iter().collect();
        assert_eq!(hit.to_lowercase(), "xylophonist", "{r}");
    }
    let page = search(app, token, "q=eglise").await;
    assert_eq!(
        snippets(&page),
        ["Anna sent the Xylophonist address: 12 Rue de l'Église"]
    );
}

/// A prefix; short words match whole words only; a quoted phrase matches exactly.
async fn prefixes_and_phrases(app: &TestApp, token: &str, a: &str) {
    let page = search(app, token, "q=xylo").await;
    assert_eq!(page["results"].as_array().unwrap().len(), 2, "{page}");
    let page = search(app, token, "q=quetz").await;
    assert_eq!(rooms_of(&page), [a]);
    // Short words match whole words only: "ne" is not a prefix search.
    assert_eq!(search(app, token, "q=ne").await["results"], json!([]));

    // A quoted phrase matches exactly; the same words unquoted match both.
    let page = search(app, token, &format!("q={}", enc("\"new york\""))).await;
    assert_eq!(snippets(&page), ["Quetzalcoatl lives in New York now"]);
    let page = search(app, token, "q=new%20york").await;
    assert_eq!(page["results"].as_array().unwrap().len(), 2, "{page}");
}

/// Filters (room, sender, time) and paging with a cursor.
async fn filters_and_paging(app: &TestApp, token: &str, a: &str, b: &str) {
    let page = search(app, token, &format!("q=xylophonist&roomId={}", enc(a))).await;
    assert_eq!(rooms_of(&page), [a]);
    let page = search(
        app,
        token,
        &format!("q=xylophonist&sender={}", enc("@nobody:x")),
    )
    .await;
    assert_eq!(page["results"], json!([]));
    assert_eq!(
        search(app, token, "q=xylophonist&before=1").await["results"],
        json!([])
    );
    let first = search(app, token, "q=xylophonist&limit=1").await;
    assert_eq!(rooms_of(&first), [b]);
    let cursor = first["nextCursor"]
        .as_str()
        .expect("a next page")
        .to_owned();
    let second = search(
        app,
        token,
        &format!("q=xylophonist&limit=1&cursor={cursor}"),
    )
    .await;
    assert_eq!(rooms_of(&second), [a]);
    assert!(second["nextCursor"].is_null(), "{second}");
}

/// Bad input is 400 naming the field.
async fn bad_input_is_400_naming_the_field(app: &TestApp, token: &str) {
    for q in [
        "",
        "q=",
        "q=%22%22",
        "q=x&limit=0",
        "q=x&limit=101",
        "q=x&platform=icq",
        "q=x&after=soon",
        "q=x&cursor=zz",
    ] {
        let resp = app.get_auth(&format!("/api/search?{q}"), token).await;
        expect_error(resp, 400, "invalid_request").await;
    }
}

/// Another user's message with the same word: found by its owner (the positive marker
/// that it was ingested), never by me.
async fn another_users_message_is_never_found(app: &TestApp, token: &str, other: &Session) {
    let carol = mx::register("searchcarol").await;
    let theirs = me_on_matrix(other)
        .create_room(None, &[&carol.user_id], false)
        .await;
    carol.join(&theirs).await;
    carol.send_text(&theirs, "xylophonist secret hideout").await;
    let page = wait_for_results(app, &other.access_token, "q=hideout", 1).await;
    assert_eq!(
        page["results"][0]["snippet"], "xylophonist secret hideout",
        "{page}"
    );
    assert_eq!(search(app, token, "q=hideout").await["results"], json!([]));
    assert_eq!(
        search(app, token, "q=xylophonist").await["results"]
            .as_array()
            .unwrap()
            .len(),
        2
    );
}

/// Native sessions with a registered key get the snippet sealed to it.
async fn snippets_are_sealed_to_a_registered_key(app: &TestApp, me: &Session) {
    let mut bytes = [7u8; 32];
    bytes[..16].copy_from_slice(uuid::Uuid::new_v4().as_bytes());
    let secret = StaticSecret::from(bytes);
    let public = STANDARD.encode(PublicKey::from(&secret).as_bytes());
    expect_json(
        app.post_json(
            "/api/keys/register",
            Some(&me.access_token),
            json!({"publicKey": public}),
        )
        .await,
        200,
    )
    .await;
    let page = search(app, &me.access_token, "q=quetzalcoatl").await;
    let r = &page["results"][0];
    assert!(r.get("snippet").is_none(), "{r}");
    let e = &r["encryptedSnippet"];
    let env = Envelope::from_base64(
        e["ephemeralPubkey"].as_str().unwrap(),
        e["nonce"].as_str().unwrap(),
        e["ciphertext"].as_str().unwrap(),
    )
    .unwrap();
    let plain = open_envelope(&secret, &env).expect("opens with the registered key");
    assert_eq!(
        String::from_utf8(plain).unwrap(),
        "Quetzalcoatl lives in New York now"
    );
}

/// The database holds none of the indexed words or their prefixes in plaintext.
fn no_indexed_word_is_in_the_database_file(app: &TestApp) {
    let db = app.data_dir().join("switchboard.db");
    let bytes = database_bytes(app);
    let (docs, terms): (i64, i64) = rusqlite::Connection::open(&db)
        .unwrap()
        .query_row(
            "SELECT (SELECT COUNT(*) FROM search_docs), (SELECT COUNT(*) FROM search_terms)",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .unwrap();
    assert!(
        docs >= 5 && terms > docs,
        "the index is there: {docs} docs, {terms} terms"
    );
    for word in [
        "xylophonist",
        "quetzalcoatl",
        "hideout",
        "museum",
        "eglise",
        "église",
    ] {
        for len in 4..=word.chars().count() {
            let prefix: String = word.chars().take(len).collect();
            for form in [prefix.clone(), prefix.to_uppercase(), capitalize(&prefix)] {
                assert!(
                    !contains(&bytes, form.as_bytes()),
                    "{form:?} is in the database file in plaintext"
                );
            }
        }
    }
}

fn capitalize(s: &str) -> String {
    let mut c = s.chars();
    match c.next() {
        Some(f) => f.to_uppercase().chain(c).collect(),
        None => String::new(),
    }
}

#[tokio::test]
async fn reindex_rebuilds_and_key_deletion_makes_old_results_unreachable() {
    let app = TestApp::start_with_mail().await;
    let me = app.sign_up("search.shred").await;
    let (token_id, token) = token_with_id(&app, &me).await;
    opt_in(&app, &me, &token_id).await;
    let (a, _b, _bob) = two_rooms(
        &me,
        &["brachiosaurus bones found"],
        &["another brachiosaurus"],
    )
    .await;
    let page = wait_for_results(&app, &token, "q=brachiosaurus", 2).await;
    assert_eq!(page["results"].as_array().unwrap().len(), 2);
    let uid = me.user["id"].as_str().unwrap().to_owned();
    let db = rusqlite::Connection::open(app.data_dir().join("switchboard.db")).unwrap();
    db.busy_timeout(Duration::from_secs(5)).unwrap();

    // The index wiped by hand: nothing is found; `switchboard reindex` brings it back.
    db.execute("DELETE FROM search_docs WHERE user_id = ?1", [&uid])
        .unwrap();
    assert_eq!(
        search(&app, &token, "q=brachiosaurus").await["results"],
        json!([])
    );
    let out = reindex(&app, &uid);
    assert!(out.contains("2 messages and 0 e-mails indexed"), "{out}");
    let page = search(&app, &token, "q=brachiosaurus").await;
    assert_eq!(page["results"].as_array().unwrap().len(), 2, "{page}");
    assert_eq!(
        search(&app, &token, &format!("q=bones&roomId={}", enc(&a))).await["results"]
            .as_array()
            .unwrap()
            .len(),
        1
    );

    // Key deletion: search is refused until new keys exist, and then finds nothing old.
    let public = STANDARD.encode(PublicKey::from(&StaticSecret::from([9u8; 32])).as_bytes());
    expect_json(
        app.post_json(
            "/api/keys/register",
            Some(&me.access_token),
            json!({"publicKey": public}),
        )
        .await,
        200,
    )
    .await;
    let resp = app
        .http
        .delete(app.url("/api/keys"))
        .bearer_auth(&me.access_token)
        .header(
            "X-Confirm-Key-Deletion",
            "PERMANENTLY_DELETE_ALL_MY_MESSAGES",
        )
        .send()
        .await
        .unwrap();
    expect_json(resp, 200).await;
    expect_error(
        app.get_auth("/api/search?q=brachiosaurus", &token).await,
        409,
        "NO_SIGNING_KEY",
    )
    .await;
    let docs: i64 = db
        .query_row(
            "SELECT COUNT(*) FROM search_docs WHERE user_id = ?1",
            [&uid],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(docs, 0, "the index rows went with the key");
    let public = STANDARD.encode(PublicKey::from(&StaticSecret::from([10u8; 32])).as_bytes());
    expect_json(
        app.post_json(
            "/api/keys/register",
            Some(&me.access_token),
            json!({"publicKey": public}),
        )
        .await,
        200,
    )
    .await;
    assert_eq!(
        search(&app, &token, "q=brachiosaurus").await["results"],
        json!([])
    );
    // Reindexing cannot bring them back: the messages were sealed under the old key.
    reindex(&app, &uid);
    assert_eq!(
        search(&app, &token, "q=brachiosaurus").await["results"],
        json!([])
    );
}
