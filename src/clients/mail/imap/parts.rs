//! One message's MIME structure (`BODYSTRUCTURE`, parsed by async-imap's imap-proto) and
//! its parts fetched one at a time (`BODY.PEEK[<part>]<offset.length>`), so that taking a
//! file out of a message never downloads the whole message.

use async_imap::imap_proto::{
    BodyContentCommon, BodyContentSinglePart, BodyStructure, ContentEncoding, SectionPath,
};

use super::{ImapError, Result, Session};

/// What a part is, as the server's structure says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PartKind {
    Multipart,
    /// `message/rfc822` (or `message/global`): a whole message inside this one.
    Message,
    Text,
    /// Anything else (images, PDFs, …).
    Other,
}

/// One node of a message's structure, owned (the server's response is gone once read).
#[derive(Debug, Clone)]
pub struct Part {
    /// The IMAP part number (`[2, 1]` is `BODY[2.1]`); a message that is not multipart has
    /// its body at `[1]`.
    pub section: Vec<u32>,
    pub kind: PartKind,
    /// Lowercased `type/subtype`.
    pub mimetype: String,
    /// Content-Type parameters (names lowercased), as the server reports them.
    pub params: Vec<(String, String)>,
    /// The Content-Disposition type, lowercased (`attachment`, `inline`), when present.
    pub disposition: Option<String>,
    /// Content-Disposition parameters (names lowercased).
    pub disposition_params: Vec<(String, String)>,
    /// The Content-Transfer-Encoding, lowercased (`base64`, `quoted-printable`, `7bit`, …).
    pub encoding: String,
    /// The encoded size the server announces.
    pub octets: u64,
    pub children: Vec<Part>,
}

impl Part {
    pub fn param(&self, name: &str) -> Option<&str> {
        self.params
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }

    /// Whether the part names a file (`filename` on the disposition or `name` on the type).
    pub fn has_name(&self) -> bool {
        self.param("name").is_some()
            || self
                .disposition_params
                .iter()
                .any(|(k, _)| k.starts_with("filename"))
    }
}

/// Parts nested deeper than this are not followed (a hostile structure stays small).
const MAX_DEPTH: usize = 32;

fn params(
    p: &Option<Vec<(std::borrow::Cow<'_, str>, std::borrow::Cow<'_, str>)>>,
) -> Vec<(String, String)> {
    p.iter()
        .flatten()
        .map(|(k, v)| (k.to_ascii_lowercase(), v.to_string()))
        .collect()
}

fn encoding(e: &ContentEncoding<'_>) -> String {
    match e {
        ContentEncoding::SevenBit => "7bit".into(),
        ContentEncoding::EightBit => "8bit".into(),
        ContentEncoding::Binary => "binary".into(),
        ContentEncoding::Base64 => "base64".into(),
        ContentEncoding::QuotedPrintable => "quoted-printable".into(),
        ContentEncoding::Other(o) => o.to_ascii_lowercase(),
    }
}

fn node(
    section: Vec<u32>,
    kind: PartKind,
    common: &BodyContentCommon<'_>,
    single: Option<&BodyContentSinglePart<'_>>,
) -> Part {
    let d = common.disposition.as_ref();
    Part {
        section,
        kind,
        mimetype: format!("{}/{}", common.ty.ty, common.ty.subtype).to_ascii_lowercase(),
        params: params(&common.ty.params),
        disposition: d.map(|d| d.ty.to_ascii_lowercase()),
        disposition_params: d.map(|d| params(&d.params)).unwrap_or_default(),
        encoding: single.map_or_else(|| "7bit".into(), |s| encoding(&s.transfer_encoding)),
        octets: single.map_or(0, |s| u64::from(s.octets)),
        children: Vec::new(),
    }
}

/// The owned tree of a structure; `section` is the part number of `b` (empty for the root).
pub(super) fn convert(b: &BodyStructure<'_>, section: Vec<u32>, depth: usize) -> Result<Part> {
    if depth > MAX_DEPTH {
        return Err(ImapError::Protocol(format!(
            "the message's structure nests deeper than {MAX_DEPTH} parts"
        )));
    }
    // A single-part body at the root is part 1 (RFC 3501 6.4.5).
    let leaf = |s: Vec<u32>| if s.is_empty() { vec![1] } else { s };
    Ok(match b {
        BodyStructure::Multipart { common, bodies, .. } => {
            let mut p = node(section.clone(), PartKind::Multipart, common, None);
            for (i, child) in bodies.iter().enumerate() {
                let mut s = section.clone();
                s.push(i as u32 + 1);
                p.children.push(convert(child, s, depth + 1)?);
            }
            p
        }
        BodyStructure::Message { common, other, .. } => {
            node(leaf(section), PartKind::Message, common, Some(other))
        }
        BodyStructure::Text { common, other, .. } => {
            node(leaf(section), PartKind::Text, common, Some(other))
        }
        BodyStructure::Basic { common, other, .. } => {
            node(leaf(section), PartKind::Other, common, Some(other))
        }
    })
}

/// The structure of message `uid` in the selected mailbox; `None` when the server has no
/// such message (any more).
pub async fn structure(s: &mut Session, uid: u32) -> Result<Option<Part>> {
    let mut out = None;
    super::messages::for_each_fetch(s, &uid.to_string(), "(UID BODYSTRUCTURE)", |f| {
        if f.uid == Some(uid) {
            if let Some(b) = f.bodystructure() {
                out = Some(convert(b, Vec::new(), 0)?);
            }
        }
        Ok(())
    })
    .await?;
    Ok(out)
}

/// Fetches part `section` of message `uid` as it is encoded, `chunk` bytes per command
/// (`BODY.PEEK[<section>]<offset.chunk>`), handing each piece to `each` as it arrives: at
/// most one piece is held at a time. At most `max_total` bytes in all (a server sending
/// more is cut off with an error). `Ok(false)` when the server returned nothing for the
/// message: it is gone.
pub async fn fetch_part(
    s: &mut Session,
    uid: u32,
    section: &[u32],
    chunk: u32,
    max_total: u64,
    mut each: impl FnMut(&[u8]) -> Result<()>,
) -> Result<bool> {
    let path = SectionPath::Part(section.to_vec(), None);
    let name = section
        .iter()
        .map(u32::to_string)
        .collect::<Vec<_>>()
        .join(".");
    let mut offset: u64 = 0;
    loop {
        let query = format!("(UID BODY.PEEK[{name}]<{offset}.{chunk}>)");
        let mut got: Option<usize> = None;
        super::messages::for_each_fetch(s, &uid.to_string(), &query, |f| {
            if f.uid != Some(uid) {
                return Ok(());
            }
            let data = f.section(&path).unwrap_or_default();
            if data.len() > chunk as usize || offset + data.len() as u64 > max_total {
                return Err(ImapError::Protocol(format!(
                    "the server sent more of part {name} than was asked for"
                )));
            }
            each(data)?;
            got = Some(got.unwrap_or(0) + data.len());
            Ok(())
        })
        .await?;
        match got {
            None => return Ok(false),
            Some(n) => {
                offset += n as u64;
                if n < chunk as usize {
                    return Ok(true);
                }
            }
        }
    }
}
