//! Lists: sorting, filters and cursor paging with both caller shapes.

use serde_json::{json, Value};

use crate::common::client::Refusal;
use crate::common::*;
use crate::tokens::create_token;

use super::{db, fake_room_id, list, room_ids, seed_room, user_id, Seed};

/// A user with seven seeded rooms (see [`seed_seven_rooms`]) and a personal token.
struct Scene {
    app: TestApp,
    user: Session,
    uid: String,
    token: String,
    ids: Vec<String>,
    /// Rooms 1 and 4 tie on time and importance: room id ascending decides.
    a: String,
    b: String,
}

impl Scene {
    fn native(&self) -> &str {
        &self.user.access_token
    }
}

#[tokio::test]
async fn lists_sort_filter_and_page_with_both_caller_shapes() {
    let s = scene().await;
    native_default_is_importance_with_client_fields(&s).await;
    recent_and_unread_orders(&s).await;
    personal_tokens_get_recent_readable_names_and_no_client_fields(&s).await;
    archived_filter(&s).await;
    paging_by_cursor_gives_the_single_pages_order(&s).await;
    a_cursor_is_bound_to_its_filters(&s).await;
    counts_per_platform_use_the_lists_filter(&s).await;
    another_user_sees_none_of_these_rooms(&s).await;
}

async fn scene() -> Scene {
    let app = TestApp::start_with_mail().await;
    let user = app.sign_up("rooms-list").await;
    let uid = user_id(&user);
    let t = create_token(&app, &user, json!({"name": "lists"})).await;
    let ids: Vec<String> = (0..7).map(|i| fake_room_id(&format!("list{i}"))).collect();
    seed_seven_rooms(&app, &uid, &ids);
    // Tie on the same time and importance: room id ascending.
    let (a, b) = if ids[1] < ids[4] {
        (ids[1].clone(), ids[4].clone())
    } else {
        (ids[4].clone(), ids[1].clone())
    };
    Scene {
        app,
        user,
        uid,
        token: t.token,
        ids,
        a,
        b,
    }
}

/// 0: old, important, 1 unread.  1: newest, unimportant, 5 unread.  2: middle, pinned.
/// 3: archived.  4: same time as 1, no name.  5: left (never listed).  6: invite.
fn seed_seven_rooms(app: &TestApp, uid: &str, ids: &[String]) {
    seed_room(
        app,
        uid,
        Seed::new(&ids[0])
            .name("Alpha")
            .ts(1_000)
            .importance(0.9)
            .unread(1)
            .platform("whatsapp"),
    );
    seed_room(
        app,
        uid,
        Seed::new(&ids[1])
            .name("Bravo")
            .ts(5_000)
            .importance(0.1)
            .unread(5)
            .platform("telegram"),
    );
    seed_room(
        app,
        uid,
        Seed {
            pinned: true,
            ..Seed::new(&ids[2]).name("Charlie").ts(3_000).importance(0.5)
        },
    );
    seed_room(
        app,
        uid,
        Seed {
            archived: true,
            ..Seed::new(&ids[3]).name("Delta").ts(9_000).importance(0.95)
        },
    );
    seed_room(
        app,
        uid,
        Seed::new(&ids[4]).ts(5_000).importance(0.1).unread(2),
    );
    seed_room(
        app,
        uid,
        Seed {
            membership: "leave",
            ..Seed::new(&ids[5]).name("Echo").ts(9_999)
        },
    );
    seed_room(
        app,
        uid,
        Seed {
            membership: "invite",
            ..Seed::new(&ids[6]).name("Foxtrot").ts(2_000).importance(0.3)
        },
    );
}

/// Native default: importance, pinned first; archived and left rooms hidden.
async fn native_default_is_importance_with_client_fields(s: &Scene) {
    let body = list(&s.app, s.native(), "").await;
    let expected: Vec<String> = [&s.ids[2], &s.ids[0], &s.ids[6], &s.a, &s.b]
        .into_iter()
        .cloned()
        .collect();
    assert_eq!(room_ids(&body), expected);
    assert!(body["nextCursor"].is_null());
    let first = body["rooms"][1].as_object().unwrap();
    assert_eq!(first["id"], first["roomId"]);
    assert_eq!(first["platform"], "whatsapp");
    assert_eq!(first["unreadCount"], 1);
    assert_eq!(first["lastMessageAt"], 1_000);
    assert_eq!(first["importance"], 0.9);
    assert_eq!(first["encryptedName"], Value::Null);
    assert_eq!(first["encryptedAvatar"], Value::Null);
    assert_eq!(first["nonce"], Value::Null);
    for absent in ["name", "topic", "avatarUrl", "memberIds"] {
        assert!(
            !first.contains_key(absent),
            "native list room has {absent}: {first:?}"
        );
    }
    for key in [
        "isDirect",
        "recipientId",
        "highlightCount",
        "archived",
        "muted",
        "favorite",
        "pinned",
        "memberCount",
    ] {
        assert!(first.contains_key(key), "{key} missing: {first:?}");
    }
    assert_eq!(body["rooms"][2]["membership"], "invite");
}

/// Recent and unread orders.
async fn recent_and_unread_orders(s: &Scene) {
    let body = list(&s.app, s.native(), "?sortBy=recent").await;
    let expected: Vec<String> = [&s.ids[2], &s.a, &s.b, &s.ids[6], &s.ids[0]]
        .into_iter()
        .cloned()
        .collect();
    assert_eq!(room_ids(&body), expected);
    let body = list(&s.app, s.native(), "?sortBy=unread").await;
    let expected: Vec<String> = [&s.ids[2], &s.ids[1], &s.ids[4], &s.ids[0], &s.ids[6]]
        .into_iter()
        .cloned()
        .collect();
    assert_eq!(room_ids(&body), expected);
}

/// Personal token: recent by default, readable names, no client fields.
async fn personal_tokens_get_recent_readable_names_and_no_client_fields(s: &Scene) {
    let body = list(&s.app, &s.token, "").await;
    let expected: Vec<String> = [&s.ids[2], &s.a, &s.b, &s.ids[6], &s.ids[0]]
        .into_iter()
        .cloned()
        .collect();
    assert_eq!(room_ids(&body), expected);
    let rooms = body["rooms"].as_array().unwrap();
    assert_eq!(rooms[0]["name"], "Charlie");
    assert_eq!(rooms[0]["pinned"], true);
    assert_eq!(rooms[4]["name"], "Alpha");
    let unnamed = rooms
        .iter()
        .find(|r| r["roomId"] == s.ids[4].as_str())
        .unwrap();
    assert_eq!(unnamed["name"], Value::Null);
    for r in rooms {
        let r = r.as_object().unwrap();
        for absent in ["encryptedName", "encryptedAvatar", "nonce", "memberIds"] {
            assert!(
                !r.contains_key(absent),
                "token list room has {absent}: {r:?}"
            );
        }
        assert!(
            r.contains_key("topic") && r.contains_key("avatarUrl"),
            "{r:?}"
        );
    }
}

/// archived=true / all.
async fn archived_filter(s: &Scene) {
    let body = list(&s.app, &s.token, "?archived=true").await;
    assert_eq!(room_ids(&body), vec![s.ids[3].clone()]);
    assert_eq!(body["rooms"][0]["name"], "Delta");
    assert_eq!(body["rooms"][0]["archived"], true);
    let body = list(&s.app, &s.token, "?archived=all").await;
    assert_eq!(body["rooms"].as_array().unwrap().len(), 6);
    assert_eq!(body["rooms"][1]["roomId"], s.ids[3].as_str());
}

/// Paging by cursor gives the single page's order, for every sort and filter.
async fn paging_by_cursor_gives_the_single_pages_order(s: &Scene) {
    for (token, query) in [
        (s.token.as_str(), "sortBy=recent&archived=all"),
        (s.token.as_str(), "sortBy=unread&archived=all"),
        (s.native(), "sortBy=importance&archived=all"),
        (s.native(), "sortBy=recent"),
    ] {
        let whole = room_ids(&list(&s.app, token, &format!("?{query}")).await);
        for page_size in [1, 2, 4] {
            let mut paged = Vec::new();
            let mut cursor: Option<String> = None;
            for _ in 0..20 {
                let mut q = format!("?{query}&limit={page_size}");
                if let Some(c) = &cursor {
                    q.push_str(&format!("&cursor={c}"));
                }
                let page = list(&s.app, token, &q).await;
                assert!(page["rooms"].as_array().unwrap().len() <= page_size);
                paged.extend(room_ids(&page));
                match page["nextCursor"].as_str() {
                    Some(c) => cursor = Some(c.to_owned()),
                    None => break,
                }
            }
            assert_eq!(paged, whole, "{query} by {page_size}");
        }
    }
}

/// A cursor is bound to its filters.
async fn a_cursor_is_bound_to_its_filters(s: &Scene) {
    let page = list(&s.app, &s.token, "?limit=1").await;
    let cursor = page["nextCursor"].as_str().expect("cursor").to_owned();
    for other in [
        format!("?sortBy=unread&cursor={cursor}"),
        format!("?archived=all&cursor={cursor}"),
    ] {
        let listed = s.app.api(&s.token).rooms().list(&other).await;
        let body = listed.refused(400, "invalid_request");
        assert!(
            body["message"].as_str().unwrap().starts_with("cursor:"),
            "{body}"
        );
    }
    list(&s.app, &s.token, &format!("?limit=1&cursor={cursor}")).await;
}

/// The counts per platform use the list's own filter.
async fn counts_per_platform_use_the_lists_filter(s: &Scene) {
    let counts = switchboard::store::rooms::count_by_platform(&db(&s.app), &s.uid).unwrap();
    let listed = list(&s.app, &s.token, "?limit=100").await;
    let mut from_list = std::collections::BTreeMap::<String, i64>::new();
    for r in listed["rooms"].as_array().unwrap() {
        let p = r["platform"].as_str().unwrap_or("matrix").to_owned();
        *from_list.entry(p).or_default() += 1;
    }
    assert_eq!(
        counts
            .into_iter()
            .collect::<std::collections::BTreeMap<_, _>>(),
        from_list
    );
}

/// Another user sees none of these rooms.
async fn another_user_sees_none_of_these_rooms(s: &Scene) {
    let other = s.app.sign_up("rooms-list-other").await;
    assert_eq!(
        list(&s.app, &other.access_token, "?archived=all").await["rooms"],
        json!([])
    );
    let theirs = s.app.user(&other).rooms().get(&s.ids[0]).await;
    theirs.refused(404, "not_found");
}
