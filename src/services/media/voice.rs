//! The audio fields of `POST /api/rooms/{roomId}/media`: `durationMs`, and for voice notes
//! `voice` and `waveform`. A voice note is an `m.audio` event marked
//! `org.matrix.msc3245.voice` with its length in `info.duration` and
//! `org.matrix.msc1767.audio {duration, waveform}`: the shape Element sends and the mautrix
//! bridges turn into the networks' own voice notes (WhatsApp's push-to-talk message,
//! Telegram's voice message), waveform included.

use serde_json::{json, Value};

use crate::error::{AppError, AppResult};

/// Longest `durationMs` accepted: a day.
const MAX_DURATION_MS: u64 = 24 * 60 * 60 * 1000;
/// Most waveform samples accepted (Element sends about a hundred).
pub const MAX_WAVEFORM_SAMPLES: usize = 1024;
/// Largest sample value (MSC1767: 0 to 1024).
pub const MAX_SAMPLE: u64 = 1024;

/// The audio fields of an upload, checked.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AudioFields {
    pub duration_ms: Option<u64>,
    pub voice: bool,
    pub waveform: Option<Vec<u16>>,
}

impl AudioFields {
    /// 400 naming the field: a malformed value, a voice note without `durationMs`, or a
    /// `waveform` without `voice=true`.
    pub fn parse(
        duration_ms: Option<&str>,
        voice: Option<&str>,
        waveform: Option<&str>,
    ) -> AppResult<Self> {
        let fields = Self {
            duration_ms: duration_ms.map(parse_duration).transpose()?,
            voice: voice.map(parse_voice).transpose()?.unwrap_or(false),
            waveform: waveform.map(parse_waveform).transpose()?,
        };
        if fields.voice && fields.duration_ms.is_none() {
            return Err(AppError::invalid(
                "durationMs",
                "is required for a voice note (voice=true)",
            ));
        }
        if fields.waveform.is_some() && !fields.voice {
            return Err(AppError::invalid(
                "waveform",
                "is only sent with voice=true",
            ));
        }
        Ok(fields)
    }

    /// A voice note must be audio (400 naming `voice` otherwise).
    pub fn check_type(&self, msgtype: &str, mimetype: &str) -> AppResult<()> {
        if self.voice && msgtype != "m.audio" {
            return Err(AppError::invalid(
                "voice",
                format!("a voice note must be an audio file, not {mimetype}"),
            ));
        }
        Ok(())
    }

    /// Marks `content` (an `m.audio` event) as a voice note, when it is one.
    pub fn mark(&self, content: &mut Value) {
        let (true, Some(ms)) = (self.voice, self.duration_ms) else {
            return;
        };
        content["org.matrix.msc3245.voice"] = json!({});
        let mut audio = json!({ "duration": ms });
        if let Some(w) = &self.waveform {
            audio["waveform"] = json!(w);
        }
        content["org.matrix.msc1767.audio"] = audio;
    }
}

/// `durationMs`: whole milliseconds, 0 to a day.
fn parse_duration(raw: &str) -> AppResult<u64> {
    raw.trim()
        .parse::<u64>()
        .ok()
        .filter(|ms| *ms <= MAX_DURATION_MS)
        .ok_or_else(|| {
            AppError::invalid(
                "durationMs",
                format!("must be whole milliseconds from 0 to {MAX_DURATION_MS}"),
            )
        })
}

/// `voice`: `true` or `false`.
fn parse_voice(raw: &str) -> AppResult<bool> {
    match raw.trim() {
        "true" => Ok(true),
        "false" => Ok(false),
        _ => Err(AppError::invalid("voice", "must be true or false")),
    }
}

/// `waveform`: a JSON array of at most [`MAX_WAVEFORM_SAMPLES`] whole numbers from 0 to
/// [`MAX_SAMPLE`].
fn parse_waveform(raw: &str) -> AppResult<Vec<u16>> {
    let bad = |why: String| AppError::invalid("waveform", why);
    let v: Value = serde_json::from_str(raw)
        .map_err(|_| bad("must be a JSON array of whole numbers".into()))?;
    let samples = v
        .as_array()
        .ok_or_else(|| bad("must be a JSON array of whole numbers".into()))?;
    if samples.len() > MAX_WAVEFORM_SAMPLES {
        return Err(bad(format!(
            "must have at most {MAX_WAVEFORM_SAMPLES} samples"
        )));
    }
    samples
        .iter()
        .map(|s| {
            s.as_u64()
                .filter(|n| *n <= MAX_SAMPLE)
                .map(|n| n as u16)
                .ok_or_else(|| {
                    bad(format!(
                        "samples must be whole numbers from 0 to {MAX_SAMPLE}"
                    ))
                })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_are_whole_milliseconds_up_to_a_day() {
        assert_eq!(parse_duration("4200").unwrap(), 4200);
        assert_eq!(parse_duration(" 0 ").unwrap(), 0);
        assert_eq!(parse_duration("86400000").unwrap(), MAX_DURATION_MS);
        for bad in [
            "",
            "-1",
            "1.5",
            "abc",
            "86400001",
            "99999999999999999999999",
        ] {
            let err = parse_duration(bad).unwrap_err();
            assert!(err.to_string().starts_with("durationMs: "), "{bad}: {err}");
        }
    }

    #[test]
    fn waveforms_are_bounded_arrays_of_small_whole_numbers() {
        assert_eq!(parse_waveform("[0, 512, 1024]").unwrap(), [0, 512, 1024]);
        assert_eq!(parse_waveform("[]").unwrap(), Vec::<u16>::new());
        let long = format!("[{}]", vec!["1"; MAX_WAVEFORM_SAMPLES + 1].join(","));
        for bad in [
            "",
            "{}",
            "[1025]",
            "[-1]",
            "[1.5]",
            "[\"1\"]",
            "3",
            long.as_str(),
        ] {
            let e = parse_waveform(bad).unwrap_err();
            assert!(e.to_string().starts_with("waveform: "), "{bad}: {e}");
        }
        assert!(parse_voice("true").unwrap());
        assert!(!parse_voice("false").unwrap());
        assert!(parse_voice("yes").is_err());
    }

    #[test]
    fn a_voice_note_needs_its_duration_and_carries_both_markers() {
        let err = AudioFields::parse(None, Some("true"), None).unwrap_err();
        assert!(err.to_string().starts_with("durationMs: "), "{err}");
        let err = AudioFields::parse(Some("5"), None, Some("[1]")).unwrap_err();
        assert!(err.to_string().starts_with("waveform: "), "{err}");
        let f = AudioFields::parse(Some("4200"), Some("true"), Some("[1,2]")).unwrap();
        assert!(f.check_type("m.file", "text/plain").is_err());
        assert!(f.check_type("m.audio", "audio/ogg").is_ok());
        let mut c = json!({"msgtype": "m.audio"});
        f.mark(&mut c);
        assert_eq!(c["org.matrix.msc3245.voice"], json!({}));
        assert_eq!(
            c["org.matrix.msc1767.audio"],
            json!({"duration": 4200, "waveform": [1, 2]})
        );
        let mut plain = json!({});
        AudioFields::parse(Some("4200"), None, None)
            .unwrap()
            .mark(&mut plain);
        assert_eq!(plain, json!({}));
    }
}
