//! Voice notes: `voice=true` with `durationMs` and `waveform` reaches Synapse as the `m.audio`
//! the bridges deliver as voice notes; the abuse cases are refused before anything is sent.

use serde_json::{json, Value};

use crate::common::*;
use crate::rich::{ogg, plain, png, upload, wait_event_id};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_voice_note_reaches_synapse_marked_with_its_duration_and_waveform() {
    let p = plain("").await;
    let (app, token, room) = (&p.app, p.token.as_str(), p.room.as_str());
    // Sends need the room stored by the sync worker first.
    crate::rooms::wait_for_room(app, token, room).await;
    let note = ogg(4_000);
    let waveform: Vec<u32> = (0..100).map(|i| (i * 37) % 1025).collect();
    let waveform_json = serde_json::to_string(&waveform).unwrap();
    let resp = upload(
        app,
        token,
        room,
        &[
            ("txnId", "voice-1"),
            ("voice", "true"),
            ("durationMs", "4200"),
            ("waveform", &waveform_json),
        ],
        Some(("Voice note.ogg", "audio/ogg; codecs=opus", &note)),
    )
    .await;
    let sent = expect_json(resp, 200).await;
    let event_id = sent["eventId"].as_str().unwrap();

    // As another member's client reads it from Synapse.
    let ev = p.bob.event(room, event_id).await;
    let c = &ev["content"];
    assert_eq!(c["msgtype"], "m.audio", "{ev}");
    assert_eq!(c["org.matrix.msc3245.voice"], json!({}), "{ev}");
    assert_eq!(c["info"]["duration"], 4200, "{ev}");
    assert_eq!(c["info"]["mimetype"], "audio/ogg", "{ev}");
    assert_eq!(
        c["org.matrix.msc1767.audio"],
        json!({"duration": 4200, "waveform": waveform}),
        "{ev}"
    );
    let (_, bytes) = p.bob.download(c["url"].as_str().unwrap()).await;
    assert_eq!(bytes, note);
    // Switchboard reads it back as audio with its length.
    let m = wait_event_id(app, token, room, event_id).await;
    assert_eq!(m["media"]["durationMs"], 4200, "{m}");

    // An ordinary audio file (no voice field) carries no voice marker.
    let resp = upload(
        app,
        token,
        room,
        &[("txnId", "audio-1"), ("durationMs", "1000")],
        Some(("song.ogg", "audio/ogg", &note)),
    )
    .await;
    let plain_audio = expect_json(resp, 200).await;
    let ev = p
        .bob
        .event(room, plain_audio["eventId"].as_str().unwrap())
        .await;
    assert_eq!(ev["content"]["info"]["duration"], 1000, "{ev}");
    assert!(
        ev["content"].get("org.matrix.msc3245.voice").is_none(),
        "{ev}"
    );
}

/// Fields, file bytes, file type, the field named in the refusal.
type Case<'a> = (Vec<(&'a str, &'a str)>, &'a [u8], &'a str, &'a str);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn malformed_voice_notes_are_refused_naming_the_field_and_nothing_is_sent() {
    let p = plain("").await;
    let (app, token, room) = (&p.app, p.token.as_str(), p.room.as_str());
    // Sends need the room stored by the sync worker first.
    crate::rooms::wait_for_room(app, token, room).await;
    let note = ogg(500);
    let long: Vec<u32> = vec![5; 1025];
    let long = serde_json::to_string(&long).unwrap();
    let image = png(4, 4, 100);
    // (fields besides txnId and voice=true, file bytes, file type, the field refused)
    let cases: Vec<Case> = vec![
        (
            vec![("waveform", long.as_str()), ("durationMs", "1000")],
            &note,
            "audio/ogg",
            "waveform",
        ),
        (
            vec![("waveform", "[1, 2, 1025]"), ("durationMs", "1000")],
            &note,
            "audio/ogg",
            "waveform",
        ),
        (
            vec![("waveform", "[1, -2]"), ("durationMs", "1000")],
            &note,
            "audio/ogg",
            "waveform",
        ),
        (
            vec![("waveform", "not json"), ("durationMs", "1000")],
            &note,
            "audio/ogg",
            "waveform",
        ),
        (
            vec![("durationMs", "-1500")],
            &note,
            "audio/ogg",
            "durationMs",
        ),
        (
            vec![("durationMs", "86400001")],
            &note,
            "audio/ogg",
            "durationMs",
        ),
        (vec![], &note, "audio/ogg", "durationMs"),
        (
            vec![("durationMs", "900"), ("voice", "yes")],
            &note,
            "audio/ogg",
            "voice",
        ),
        (vec![("durationMs", "900")], &image, "image/png", "voice"),
    ];
    for (i, (extra, bytes, ctype, field)) in cases.into_iter().enumerate() {
        let txn = format!("bad-voice-{i}");
        let mut fields = vec![("txnId", txn.as_str())];
        if !extra.iter().any(|(k, _)| *k == "voice") {
            fields.push(("voice", "true"));
        }
        fields.extend(extra);
        let resp = upload(app, token, room, &fields, Some(("v.ogg", ctype, bytes))).await;
        eprintln!("case {i}: {field}"); // names the case when the assertion below fails
        expect_invalid_field(resp, field).await;
    }
    // A waveform without voice=true is refused too.
    let resp = upload(
        app,
        token,
        room,
        &[("txnId", "bad-wave"), ("waveform", "[1,2]")],
        Some(("v.ogg", "audio/ogg", &note)),
    )
    .await;
    expect_invalid_field(resp, "waveform").await;

    // Positive marker, then: nothing of the refused ones reached the room.
    let marker = p.bob.send_text(room, "after the refusals").await;
    let page = wait_event_id(app, token, room, &marker).await;
    assert_eq!(page["content"]["body"], "after the refusals");
    let all: Value = expect_json(
        app.get_auth(
            &format!(
                "/api/messages?roomId={}&limit=100",
                switchboard::clients::matrix::encode(room)
            ),
            token,
        )
        .await,
        200,
    )
    .await;
    let audio = all["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["msgtype"] == "m.audio" || m["msgtype"] == "m.image")
        .count();
    assert_eq!(audio, 0, "{all}");
}
