//! What a query asks for, and whether a decrypted text answers it.
//!
//! `q` is words and `"quoted phrases"`. A document matches when it has every part:
//! - a bare word of 3 or more characters matches any word it begins ("addr" finds
//!   "address"); a shorter one matches only that whole word;
//! - a quoted phrase (or quoted single word) matches its words as whole words, in order,
//!   next to each other.
//!
//! Matching is on normal forms ([`super::terms::normalize`]): case and diacritics never
//! matter.

use super::terms::{apostrophe_parts, words, Word, MIN_PREFIX};
use crate::error::{AppError, AppResult};

/// Longest `q`, in characters.
pub const MAX_QUERY_CHARS: usize = 500;
/// Most parts (words and phrases) in one query.
pub const MAX_PARTS: usize = 16;
/// Characters of context kept before the first hit in a snippet.
const SNIPPET_BEFORE: usize = 40;
/// Longest snippet, in characters.
pub const SNIPPET_CHARS: usize = 200;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Part {
    Word(String),
    Phrase(Vec<String>),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Query {
    pub parts: Vec<Part>,
}

impl Query {
    pub fn parse(q: &str) -> AppResult<Self> {
        if q.chars().count() > MAX_QUERY_CHARS {
            return Err(AppError::invalid(
                "q",
                format!("must be at most {MAX_QUERY_CHARS} characters"),
            ));
        }
        let mut parts = Vec::new();
        // Split on double quotes: odd segments were inside quotes. An unclosed quote runs
        // to the end (what a user typing a phrase means).
        for (i, segment) in q.split('"').enumerate() {
            let ws: Vec<String> = words(segment).into_iter().map(|w| w.norm).collect();
            if i % 2 == 1 && !ws.is_empty() {
                parts.push(Part::Phrase(ws));
            } else {
                parts.extend(ws.into_iter().map(Part::Word));
            }
        }
        parts.dedup();
        if parts.is_empty() {
            return Err(AppError::invalid("q", "must contain at least one word"));
        }
        if parts.len() > MAX_PARTS {
            return Err(AppError::invalid(
                "q",
                format!("at most {MAX_PARTS} words or phrases"),
            ));
        }
        Ok(Self { parts })
    }

    /// Every normal-form word the index is asked about (a phrase's words each).
    pub fn lookup_words(&self) -> Vec<&str> {
        let mut out: Vec<&str> = Vec::new();
        for part in &self.parts {
            match part {
                Part::Word(w) => out.push(w),
                Part::Phrase(ws) => out.extend(ws.iter().map(String::as_str)),
            }
        }
        // The longest word first: it tends to be the rarest, and it drives the scan.
        out.sort_by_key(|w| std::cmp::Reverse(w.chars().count()));
        out.dedup();
        out
    }

    /// The byte ranges of `text` that answer the query, or `None` when some part is
    /// missing (a candidate whose blind terms matched by collision or coarse prefix).
    pub fn matches(&self, text: &str) -> Option<Vec<(usize, usize)>> {
        let ws = words(text);
        let parts = apostrophe_parts(&ws);
        let mut hits = Vec::new();
        for part in &self.parts {
            let found: Vec<(usize, usize)> = match part {
                Part::Word(q) => ws
                    .iter()
                    .chain(&parts)
                    .filter(|w| word_matches(q, w))
                    .map(|w| (w.start, w.end))
                    .collect(),
                Part::Phrase(qs) => ws
                    .windows(qs.len())
                    .filter(|win| win.iter().zip(qs).all(|(w, q)| w.norm == *q))
                    .map(|win| (win[0].start, win[win.len() - 1].end))
                    .collect(),
            };
            if found.is_empty() {
                return None;
            }
            hits.extend(found);
        }
        hits.sort_unstable();
        hits.dedup();
        Some(hits)
    }
}

fn word_matches(q: &str, w: &Word) -> bool {
    if q.chars().count() < MIN_PREFIX {
        w.norm == q
    } else {
        w.norm.starts_with(q)
    }
}

/// A highlighted range of a snippet, in characters (Unicode scalar values) from its start.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct Highlight {
    pub start: usize,
    pub end: usize,
}

/// A window of `text` around its first hit (at most [`SNIPPET_CHARS`] characters, "…"
/// where cut), with the hits inside it.
pub fn snippet(text: &str, hits: &[(usize, usize)]) -> (String, Vec<Highlight>) {
    let char_at = |byte: usize| text[..byte].chars().count();
    let total = text.chars().count();
    let first = hits.first().map_or(0, |h| char_at(h.0));
    // Context before the hit, but no shorter than the text allows: a short text is
    // returned whole.
    let start = first
        .saturating_sub(SNIPPET_BEFORE)
        .min(total.saturating_sub(SNIPPET_CHARS));
    let end = (start + SNIPPET_CHARS).min(total);
    let body: String = text.chars().skip(start).take(end - start).collect();
    let lead = usize::from(start > 0);
    let mut out = String::new();
    if start > 0 {
        out.push('…');
    }
    out.push_str(&body);
    if end < total {
        out.push('…');
    }
    let highlights = hits
        .iter()
        .map(|&(s, e)| (char_at(s), char_at(e)))
        .filter(|&(s, e)| s >= start && e <= end)
        .map(|(s, e)| Highlight {
            start: s - start + lead,
            end: e - start + lead,
        })
        .collect();
    (out, highlights)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_prefixes_and_phrases_parse() {
        let q = Query::parse(r#"Addr "new   York" x"#).unwrap();
        assert_eq!(
            q.parts,
            vec![
                Part::Word("addr".into()),
                Part::Phrase(vec!["new".into(), "york".into()]),
                Part::Word("x".into()),
            ]
        );
        assert_eq!(
            Query::parse(r#""york""#).unwrap().parts,
            vec![Part::Phrase(vec!["york".into()])]
        );
        assert!(Query::parse("  ...  ").is_err());
        assert!(Query::parse(&"a ".repeat(300)).is_err());
    }

    #[test]
    fn phrases_match_exactly_and_words_by_prefix() {
        let q = Query::parse(r#""new york""#).unwrap();
        assert!(q.matches("I moved to New York!").is_some());
        assert!(q.matches("York is new").is_none());
        assert!(q.matches("new yorkshire").is_none());
        let q = Query::parse("addr").unwrap();
        assert!(q.matches("my ADDRESS is").is_some());
        assert!(q.matches("my add is").is_none());
        let q = Query::parse("is").unwrap();
        assert!(q.matches("island").is_none());
        assert!(q.matches("it is").is_some());
        assert!(Query::parse("eglise")
            .unwrap()
            .matches("rue de l'Église")
            .is_some());
    }

    #[test]
    fn snippets_cut_around_the_first_hit_with_highlights_in_characters() {
        let text = format!("{}ünïcode address here{}", "x".repeat(100), "y".repeat(200));
        let q = Query::parse("address").unwrap();
        let hits = q.matches(&text).unwrap();
        let (s, hl) = snippet(&text, &hits);
        assert!(s.starts_with('…'));
        let chars: Vec<char> = s.chars().collect();
        let got: String = chars[hl[0].start..hl[0].end].iter().collect();
        assert_eq!(got, "address");
    }
}
