//! Lists: sorting, filters and cursor paging with both caller shapes.

use serde_json::{json, Value};

use crate::common::client::Refusal;
use crate::common::*;
use crate::tokens::create_token;

use super::{db, fake_room_id, list, room_ids, seed_room, user_id, Seed};

#[tokio::test]
async fn lists_sort_filter_and_page_with_both_caller_shapes() {
    let app = TestApp::start_with_mail().await;
    let user = app.sign_up("rooms-list").await;
    let uid = user_id(&user);
    let t = create_token(&app, &user, json!({"name": "lists"})).await;
    let native = user.access_token.as_str();

    let ids: Vec<String> = (0..7).map(|i| fake_room_id(&format!("list{i}"))).collect();
    // 0: old, important, 1 unread.  1: newest, unimportant, 5 unread.  2: middle, pinned.
    // 3: archived.  4: same time as 1, no name.  5: left (never listed).  6: invite.
    seed_room(
        &app,
        &uid,
        Seed::new(&ids[0])
            .name("Alpha")
            .ts(1_000)
            .importance(0.9)
            .unread(1)
            .platform("whatsapp"),
    );
    seed_room(
        &app,
        &uid,
        Seed::new(&ids[1])
            .name("Bravo")
            .ts(5_000)
            .importance(0.1)
            .unread(5)
            .platform("telegram"),
    );
    seed_room(
        &app,
        &uid,
        Seed {
            pinned: true,
            ..Seed::new(&ids[2]).name("Charlie").ts(3_000).importance(0.5)
        },
    );
    seed_room(
        &app,
        &uid,
        Seed {
            archived: true,
            ..Seed::new(&ids[3]).name("Delta").ts(9_000).importance(0.95)
        },
    );
    seed_room(
        &app,
        &uid,
        Seed::new(&ids[4]).ts(5_000).importance(0.1).unread(2),
    );
    seed_room(
        &app,
        &uid,
        Seed {
            membership: "leave",
            ..Seed::new(&ids[5]).name("Echo").ts(9_999)
        },
    );
    seed_room(
        &app,
        &uid,
        Seed {
            membership: "invite",
            ..Seed::new(&ids[6]).name("Foxtrot").ts(2_000).importance(0.3)
        },
    );

    // Tie on the same time and importance: room id ascending.
    let (a, b) = if ids[1] < ids[4] {
        (&ids[1], &ids[4])
    } else {
        (&ids[4], &ids[1])
    };

    // Native default: importance, pinned first; archived and left rooms hidden.
    let body = list(&app, native, "").await;
    let expected: Vec<String> = [&ids[2], &ids[0], &ids[6], a, b]
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

    // Recent and unread orders.
    let body = list(&app, native, "?sortBy=recent").await;
    let expected: Vec<String> = [&ids[2], a, b, &ids[6], &ids[0]]
        .into_iter()
        .cloned()
        .collect();
    assert_eq!(room_ids(&body), expected);
    let body = list(&app, native, "?sortBy=unread").await;
    let expected: Vec<String> = [&ids[2], &ids[1], &ids[4], &ids[0], &ids[6]]
        .into_iter()
        .cloned()
        .collect();
    assert_eq!(room_ids(&body), expected);

    // Personal token: recent by default, readable names, no client fields.
    let body = list(&app, &t.token, "").await;
    let expected: Vec<String> = [&ids[2], a, b, &ids[6], &ids[0]]
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
        .find(|r| r["roomId"] == ids[4].as_str())
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

    // archived=true / all.
    let body = list(&app, &t.token, "?archived=true").await;
    assert_eq!(room_ids(&body), vec![ids[3].clone()]);
    assert_eq!(body["rooms"][0]["name"], "Delta");
    assert_eq!(body["rooms"][0]["archived"], true);
    let body = list(&app, &t.token, "?archived=all").await;
    assert_eq!(body["rooms"].as_array().unwrap().len(), 6);
    assert_eq!(body["rooms"][1]["roomId"], ids[3].as_str());

    // Paging by cursor gives the single page's order, for every sort and filter.
    for (token, query) in [
        (t.token.as_str(), "sortBy=recent&archived=all"),
        (t.token.as_str(), "sortBy=unread&archived=all"),
        (native, "sortBy=importance&archived=all"),
        (native, "sortBy=recent"),
    ] {
        let whole = room_ids(&list(&app, token, &format!("?{query}")).await);
        for page_size in [1, 2, 4] {
            let mut paged = Vec::new();
            let mut cursor: Option<String> = None;
            for _ in 0..20 {
                let mut q = format!("?{query}&limit={page_size}");
                if let Some(c) = &cursor {
                    q.push_str(&format!("&cursor={c}"));
                }
                let page = list(&app, token, &q).await;
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

    // A cursor is bound to its filters.
    let page = list(&app, &t.token, "?limit=1").await;
    let cursor = page["nextCursor"].as_str().expect("cursor").to_owned();
    for other in [
        format!("?sortBy=unread&cursor={cursor}"),
        format!("?archived=all&cursor={cursor}"),
    ] {
        let listed = app.api(&t.token).rooms().list(&other).await;
        let body = listed.refused(400, "invalid_request");
        assert!(
            body["message"].as_str().unwrap().starts_with("cursor:"),
            "{body}"
        );
    }
    list(&app, &t.token, &format!("?limit=1&cursor={cursor}")).await;

    // The counts per platform use the list's own filter.
    let counts = switchboard::store::rooms::count_by_platform(&db(&app), &uid).unwrap();
    let listed = list(&app, &t.token, "?limit=100").await;
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

    // Another user sees none of these rooms.
    let other = app.sign_up("rooms-list-other").await;
    assert_eq!(
        list(&app, &other.access_token, "?archived=all").await["rooms"],
        json!([])
    );
    let theirs = app.user(&other).rooms().get(&ids[0]).await;
    theirs.refused(404, "not_found");
}
