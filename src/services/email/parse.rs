//! Reading a fetched RFC 5322 message with mail-parser into the cached documents.

use mail_parser::{Address, HeaderValue, MessageParser, MimeHeaders};

use super::{AttachmentMeta, Body, Header, Person};

/// Characters of text kept as the snippet.
pub const SNIPPET_CHARS: usize = 200;

#[derive(Debug, Clone, Default)]
pub struct Parsed {
    pub header: Header,
    pub snippet: String,
    pub body: Body,
    /// Unix ms from the Date header (0 when missing or unreadable).
    pub date: i64,
}

fn people(a: Option<&Address<'_>>) -> Vec<Person> {
    a.map(|a| {
        a.iter()
            .filter_map(|p| {
                Some(Person {
                    name: p.name().map(str::to_owned).filter(|n| !n.is_empty()),
                    email: p.address()?.to_owned(),
                })
            })
            .collect()
    })
    .unwrap_or_default()
}

fn ids(v: &HeaderValue<'_>) -> Vec<String> {
    match v {
        HeaderValue::Text(t) => vec![t.to_string()],
        HeaderValue::TextList(l) => l.iter().map(|t| t.to_string()).collect(),
        _ => Vec::new(),
    }
}

/// `None` when the bytes are not a message at all.
pub fn parse(raw: &[u8]) -> Option<Parsed> {
    let m = MessageParser::default().parse(raw)?;
    let text = m.body_text(0).map(|t| t.into_owned());
    let html = m.body_html(0).map(|t| t.into_owned());
    let attachments = m
        .attachments()
        .enumerate()
        .map(|(i, part)| AttachmentMeta {
            index: i as u32,
            filename: part.attachment_name().map(str::to_owned),
            content_type: part
                .content_type()
                .map(|c| match c.subtype() {
                    Some(sub) => format!("{}/{}", c.ctype(), sub),
                    None => c.ctype().to_owned(),
                })
                .unwrap_or_else(|| "application/octet-stream".to_owned()),
            size: part.contents().len() as u64,
        })
        .collect();
    let snippet_source = text
        .clone()
        .or_else(|| m.body_preview(SNIPPET_CHARS * 2).map(|p| p.into_owned()))
        .unwrap_or_default();
    let snippet: String = snippet_source
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .chars()
        .take(SNIPPET_CHARS)
        .collect();
    let header = Header {
        from: people(m.from()).into_iter().next(),
        to: people(m.to()),
        cc: people(m.cc()),
        subject: m.subject().unwrap_or_default().to_owned(),
        message_id: m.message_id().map(str::to_owned),
        in_reply_to: ids(m.in_reply_to()).into_iter().next(),
        references: ids(m.references()),
    };
    Some(Parsed {
        header,
        snippet,
        body: Body {
            text,
            html,
            attachments,
            truncated: false,
        },
        date: m.date().map(|d| clamp_date(d.to_timestamp())).unwrap_or(0),
    })
}

/// A `Date:` as Unix ms, clamped at ingest to 1970 .. two days from now: a sender's
/// year 9999+ (or a clock far ahead) must neither pin a thread to the top for ever nor
/// break formatting it later (a forward's `Date:` line).
pub fn clamp_date(unix_secs: i64) -> i64 {
    let latest = crate::services::scheduled::now_ms() + 2 * 86_400_000;
    unix_secs.saturating_mul(1000).clamp(0, latest)
}

/// The attachment `index` of a raw message: `(content type, filename, bytes)`.
pub fn attachment(raw: &[u8], index: usize) -> Option<(String, Option<String>, Vec<u8>)> {
    let m = MessageParser::default().parse(raw)?;
    let part = m.attachments().nth(index)?;
    let ctype = part
        .content_type()
        .map(|c| match c.subtype() {
            Some(sub) => format!("{}/{}", c.ctype(), sub),
            None => c.ctype().to_owned(),
        })
        .unwrap_or_else(|| "application/octet-stream".to_owned());
    Some((
        ctype,
        part.attachment_name().map(str::to_owned),
        part.contents().to_vec(),
    ))
}

/// What a draft holds, read back from its raw text (Bcc included: a draft keeps it).
#[derive(Debug, Clone, Default)]
pub struct DraftFields {
    pub message_id: Option<String>,
    pub to: Vec<Person>,
    pub cc: Vec<Person>,
    pub bcc: Vec<Person>,
    pub subject: String,
    pub text: String,
    pub html: Option<String>,
    pub in_reply_to: Option<String>,
    pub references: Vec<String>,
}

pub fn draft_fields(raw: &[u8]) -> Option<DraftFields> {
    let m = MessageParser::default().parse(raw)?;
    Some(DraftFields {
        message_id: m.message_id().map(str::to_owned),
        to: people(m.to()),
        cc: people(m.cc()),
        bcc: people(m.bcc()),
        subject: m.subject().unwrap_or_default().to_owned(),
        text: m.body_text(0).map(|t| t.into_owned()).unwrap_or_default(),
        html: m.body_html(0).map(|t| t.into_owned()).filter(|_| {
            // A plain draft has no HTML part; mail-parser renders one from the text.
            m.html_body_count() > 0 && m.html_part(0).is_some_and(|p| p.is_text_html())
        }),
        in_reply_to: ids(m.in_reply_to()).into_iter().next(),
        references: ids(m.references()),
    })
}

/// Every attachment of a raw message: `(content type, filename, bytes)`, in order.
pub fn attachments(raw: &[u8]) -> Vec<(String, Option<String>, Vec<u8>)> {
    let Some(m) = MessageParser::default().parse(raw) else {
        return Vec::new();
    };
    m.attachments()
        .map(|part| {
            let ctype = part
                .content_type()
                .map(|c| match c.subtype() {
                    Some(sub) => format!("{}/{}", c.ctype(), sub),
                    None => c.ctype().to_owned(),
                })
                .unwrap_or_else(|| "application/octet-stream".to_owned());
            (
                ctype,
                part.attachment_name().map(str::to_owned),
                part.contents().to_vec(),
            )
        })
        .collect()
}

/// The subject without reply and forward prefixes, lowercased: the last-resort thread key.
pub fn thread_subject(subject: &str) -> String {
    let mut s = subject.trim();
    loop {
        let lower = s.to_lowercase();
        let cut = ["re:", "fwd:", "fw:", "aw:", "wg:"]
            .iter()
            .find(|p| lower.starts_with(*p))
            .map(|p| p.len());
        match cut {
            Some(n) => s = s[n..].trim_start(),
            None => break,
        }
    }
    s.to_lowercase()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_multipart_message_is_read() {
        let raw = b"From: Alice <alice@example.org>\r\nTo: bob@example.org, Carol <carol@example.org>\r\n\
Subject: =?UTF-8?B?SMOpbGxv?=\r\nMessage-ID: <m1@example.org>\r\nIn-Reply-To: <m0@example.org>\r\n\
References: <a@x> <m0@example.org>\r\nDate: Tue, 1 Jul 2025 10:00:00 +0000\r\n\
MIME-Version: 1.0\r\nContent-Type: multipart/mixed; boundary=b\r\n\r\n--b\r\n\
Content-Type: text/plain\r\n\r\nHi   there\r\nBob\r\n--b\r\nContent-Type: application/pdf\r\n\
Content-Disposition: attachment; filename=x.pdf\r\nContent-Transfer-Encoding: base64\r\n\r\nAAEC\r\n--b--\r\n";
        let p = parse(raw).unwrap();
        assert_eq!(p.header.subject, "Héllo");
        assert_eq!(p.header.from.as_ref().unwrap().email, "alice@example.org");
        assert_eq!(p.header.to.len(), 2);
        assert_eq!(p.header.message_id.as_deref(), Some("m1@example.org"));
        assert_eq!(p.header.in_reply_to.as_deref(), Some("m0@example.org"));
        assert_eq!(p.header.references, ["a@x", "m0@example.org"]);
        assert_eq!(p.snippet, "Hi there Bob");
        assert_eq!(p.body.attachments.len(), 1);
        assert_eq!(p.body.attachments[0].content_type, "application/pdf");
        assert_eq!(p.body.attachments[0].size, 3);
        assert_eq!(p.date, 1_751_364_000_000);
        let (ct, name, bytes) = attachment(raw, 0).unwrap();
        assert_eq!(
            (ct.as_str(), name.as_deref(), bytes),
            ("application/pdf", Some("x.pdf"), vec![0, 1, 2])
        );
        assert_eq!(thread_subject("Re: FWD: re:  Plans"), "plans");
    }
}
