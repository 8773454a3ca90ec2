//! The web app's media in Chromium (tests/web/media.py) against the real binary and Synapse:
//! an incoming image decoded inline and full size, an audio player, a link preview card, a
//! pasted image and a dropped file sent after their preview, a voice note recorded with
//! Chromium's fake microphone that Synapse holds as a voice `m.audio` with a duration, the
//! blob: URLs released when the conversation closes, and no card once previews are off.

use std::time::{Duration, Instant};

use reqwest::Method;
use serde_json::{json, Value};
use switchboard::clients::matrix::encode;

use super::{real_png, wav_tone, Site, TITLE};
use crate::common::chromium::{assert_steps, run_script, script_config, SignInCodes};
use crate::common::matrix::MatrixUser;
use crate::common::*;
use crate::conversation::Chat;
use crate::rooms::cs_api;

const WAIT: Duration = Duration::from_secs(30);

/// The newest `m.room.message` events of the room as the friend reads them on Synapse.
async fn room_events(friend_token: &str, room: &str) -> Vec<Value> {
    let page = cs_api(
        Method::GET,
        &format!("/rooms/{}/messages?dir=b&limit=50", encode(room)),
        friend_token,
        None,
    )
    .await;
    page["chunk"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["type"] == "m.room.message")
        .cloned()
        .collect()
}

/// Polls Synapse until an event of `sender` satisfies `pick`.
async fn wait_event(
    friend_token: &str,
    room: &str,
    sender: &str,
    pick: impl Fn(&Value) -> bool,
) -> Option<Value> {
    let deadline = Instant::now() + WAIT;
    while Instant::now() < deadline {
        let found = room_events(friend_token, room)
            .await
            .into_iter()
            .find(|e| e["sender"] == sender && pick(e));
        if found.is_some() {
            return found;
        }
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
    None
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn chromium_shows_images_plays_audio_previews_links_and_sends_files_and_voice_notes() {
    let site = Site::start().await;
    let app = TestApp::start_with_mail().await;
    let chat = Chat::new(&app, "mediaweb").await;
    let friend = MatrixUser::from_token(&chat.friend, &chat.friend_token);
    let png = real_png(40, 30);
    let mxc = friend.upload(png.clone(), "image/png").await;
    friend
        .send(
            &chat.room,
            "m.room.message",
            json!({"msgtype": "m.image", "body": "garden.png", "url": mxc,
                "info": {"mimetype": "image/png", "size": png.len(), "w": 40, "h": 30}}),
        )
        .await;
    let wav = wav_tone(1200);
    let mxc = friend.upload(wav.clone(), "audio/wav").await;
    friend
        .send(
            &chat.room,
            "m.room.message",
            json!({"msgtype": "m.audio", "body": "tune.wav", "url": mxc,
                "info": {"mimetype": "audio/wav", "size": wav.len(), "duration": 1200}}),
        )
        .await;
    let link_text = format!("the harvest, with photos: {}/page", site.base);
    let link_event = friend.send_text(&chat.room, &link_text).await;
    crate::rich::wait_event_id(&app, &chat.token, &chat.room, &link_event).await;

    let config = script_config(
        &app,
        &chat.user.email,
        json!({
            "roomId": chat.room,
            "linkText": link_text,
            "title": TITLE,
        }),
    );
    let mut codes = SignInCodes::new(&chat.user.email);
    let mut voice: Option<Value> = None;
    let (room, me, friend_token) = (
        chat.room.clone(),
        chat.me.clone(),
        chat.friend_token.clone(),
    );
    let report = run_script(
        "tests/web/media.py",
        config,
        async |verb: &str, arg: &str| match verb {
            "CODE" => codes.next(arg).await,
            "FILE" => {
                let found = wait_event(&friend_token, &room, &me, |e| {
                    e["content"]["body"] == arg && e["content"]["url"].is_string()
                })
                .await;
                if found.is_some() { "yes" } else { "no" }.to_owned()
            }
            "VOICE" => {
                voice = wait_event(&friend_token, &room, &me, |e| {
                    e["content"]["org.matrix.msc3245.voice"].is_object()
                })
                .await;
                if voice.is_some() { "yes" } else { "no" }.to_owned()
            }
            other => panic!("unknown request from the browser script: {other} {arg}"),
        },
    )
    .await;
    assert_steps(
        &report,
        &[
            "image_inline",
            "image_full",
            "audio_player",
            "link_preview",
            "paste_sent",
            "drop_sent",
            "voice_sent",
            "blobs_released",
            "previews_off",
        ],
    );

    // The voice note as the bridges read it: m.audio, voice, a duration near the 2+ s
    // recorded, and a waveform of 0–1024 values.
    let ev = voice.expect("voice note on Synapse");
    let c = &ev["content"];
    assert_eq!(c["msgtype"], "m.audio", "{ev}");
    let duration = c["info"]["duration"].as_u64().expect("info.duration");
    assert!((2000..20_000).contains(&duration), "{ev}");
    assert_eq!(c["org.matrix.msc1767.audio"]["duration"], duration, "{ev}");
    let waveform = c["org.matrix.msc1767.audio"]["waveform"]
        .as_array()
        .expect("waveform");
    assert!(!waveform.is_empty() && waveform.len() <= 100, "{ev}");
    assert!(
        waveform
            .iter()
            .all(|v| v.as_u64().is_some_and(|n| n <= 1024)),
        "{ev}"
    );
    assert!(
        waveform.iter().any(|v| v.as_u64() > Some(0)),
        "the fake microphone's tone: {ev}"
    );
    let mimetype = c["info"]["mimetype"].as_str().unwrap();
    assert!(mimetype.starts_with("audio/"), "{ev}");
}
