//! Words, their normal form, and their blind terms.
//!
//! - Words are Unicode words (`unicode-segmentation`, UAX #29), so "Anna's" or "北京" split
//!   the way the standard says, not on ASCII spaces.
//! - The normal form folds case and diacritics: NFKD (compatibility decomposition, so "ﬁ"
//!   is "fi" and "Ｍ" is "m"), combining marks dropped, lowercased. "Müller", "MULLER" and
//!   "müller" are one word.
//! - Blind terms are HMAC-SHA256 under the user's search key (HKDF from the data key with
//!   its own info string, [`SEARCH_KEY_INFO`]) over a one-byte domain and the word, cut to
//!   16 bytes. A word shorter than [`MIN_PREFIX`] characters is filed whole (domain `w`);
//!   a longer one under its prefixes of the lengths in [`PREFIX_LENGTHS`] (domain `p`), which
//!   serve both word and prefix queries: a query word is looked up under its longest
//!   stored prefix length and every candidate is then decrypted and checked, so the coarse
//!   lookup never shows in the results. Fewer prefix lengths keep the index small (about
//!   2.3 terms per word) at the cost of more candidates to check for long query words.

use hmac::{KeyInit, Mac};
use sha2::Sha256;
use unicode_normalization::char::is_combining_mark;
use unicode_normalization::UnicodeNormalization;
use unicode_segmentation::UnicodeSegmentation;

use crate::crypto::DataKey;

/// HKDF info of the search key: the data key's subkey for the blind index.
pub const SEARCH_KEY_INFO: &str = "switchboard-search-index-v1";
/// Words at least this long are searchable by prefix.
pub const MIN_PREFIX: usize = 3;
/// Prefix lengths (in characters) stored for each word.
pub const PREFIX_LENGTHS: [usize; 4] = [3, 4, 6, 9];
/// Longest word indexed, in characters (longer ones are base64 blobs, hashes, URLs' tails).
pub const MAX_WORD_CHARS: usize = 64;
/// Most distinct terms stored for one document (a very long mail is indexed in part).
pub const MAX_TERMS_PER_DOC: usize = 4096;

pub type Term = [u8; 16];

/// A word of a text: its normal form and where it is in the original (byte range).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Word {
    pub norm: String,
    pub start: usize,
    pub end: usize,
}

/// The normal form of one word (see the module docs).
pub fn normalize(word: &str) -> String {
    word.nfkd()
        .filter(|c| !is_combining_mark(*c))
        .flat_map(char::to_lowercase)
        .collect()
}

/// The words of `text`, in order, with their normal forms.
pub fn words(text: &str) -> Vec<Word> {
    text.unicode_word_indices()
        .filter_map(|(start, w)| {
            let norm = normalize(w);
            let n = norm.chars().count();
            (n > 0 && n <= MAX_WORD_CHARS).then(|| Word {
                norm,
                start,
                end: start + w.len(),
            })
        })
        .collect()
}

/// Extra words inside words joined by apostrophes: UAX #29 keeps "l'Église" and "Anna's"
/// whole, but "eglise" should find the first. Each part after an apostrophe is a word of
/// its own for indexing and word queries (not for phrases, which use [`words`]).
pub fn apostrophe_parts(words: &[Word]) -> Vec<Word> {
    let mut out = Vec::new();
    for w in words {
        for part in w.norm.split(['\'', '\u{2019}']).skip(1) {
            if !part.is_empty() {
                out.push(Word {
                    norm: part.to_owned(),
                    // The part's place is the whole word's: a highlight covers the word.
                    start: w.start,
                    end: w.end,
                });
            }
        }
    }
    out
}

/// The user's search key: blinds terms, and nothing else.
#[derive(Clone)]
pub struct SearchKey([u8; 32]);

impl SearchKey {
    pub fn of(dek: &DataKey) -> Self {
        Self(dek.derive(SEARCH_KEY_INFO))
    }

    fn blind(&self, domain: u8, value: &str) -> Term {
        let mut mac = <hmac::Hmac<Sha256> as KeyInit>::new_from_slice(&self.0)
            .expect("HMAC accepts keys of any length");
        mac.update(&[domain, 0]);
        mac.update(value.as_bytes());
        let full = mac.finalize().into_bytes();
        let mut out = [0u8; 16];
        out.copy_from_slice(&full[..16]);
        out
    }

    /// The terms a document with these words is filed under (distinct, bounded), the
    /// [`apostrophe_parts`] included.
    pub fn document_terms(&self, words: &[Word]) -> Vec<Term> {
        let mut seen = std::collections::BTreeSet::new();
        let parts = apostrophe_parts(words);
        for w in words.iter().chain(&parts) {
            let chars: Vec<char> = w.norm.chars().collect();
            if chars.len() < MIN_PREFIX {
                seen.insert(self.blind(b'w', &w.norm));
            } else {
                for k in PREFIX_LENGTHS.iter().copied().filter(|k| *k <= chars.len()) {
                    let prefix: String = chars[..k].iter().collect();
                    seen.insert(self.blind(b'p', &prefix));
                }
            }
            if seen.len() >= MAX_TERMS_PER_DOC {
                break;
            }
        }
        seen.into_iter().collect()
    }

    /// The one term a query word is looked up under (its longest stored prefix).
    pub fn query_term(&self, norm: &str) -> Term {
        let chars: Vec<char> = norm.chars().collect();
        if chars.len() < MIN_PREFIX {
            return self.blind(b'w', norm);
        }
        let k = PREFIX_LENGTHS
            .iter()
            .copied()
            .filter(|k| *k <= chars.len())
            .max()
            .unwrap_or(MIN_PREFIX);
        let prefix: String = chars[..k].iter().collect();
        self.blind(b'p', &prefix)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn case_and_diacritics_fold() {
        assert_eq!(normalize("Müller"), "muller");
        assert_eq!(normalize("MÜLLER"), "muller");
        assert_eq!(normalize("Ｃａｆé"), "cafe");
        assert_eq!(normalize("ﬁle"), "file");
    }

    #[test]
    fn words_keep_their_place_in_the_text() {
        let text = "Anna's new address: Große Straße 5!";
        let ws = words(text);
        let norms: Vec<&str> = ws.iter().map(|w| w.norm.as_str()).collect();
        assert_eq!(
            norms,
            ["anna's", "new", "address", "große", "straße", "5"]
                .map(normalize)
                .iter()
                .map(String::as_str)
                .collect::<Vec<_>>()
        );
        assert_eq!(&text[ws[2].start..ws[2].end], "address");
    }

    #[test]
    fn a_query_word_finds_documents_with_words_it_begins() {
        let key = SearchKey::of(&DataKey::from_bytes([7; 32]));
        let doc = key.document_terms(&words("The address is here"));
        for q in ["address", "addr", "add", "the", "is"] {
            assert!(doc.contains(&key.query_term(q)), "{q}");
        }
        assert!(!doc.contains(&key.query_term("xyz")));
        let doc = key.document_terms(&words("Rue de l'Église"));
        assert!(doc.contains(&key.query_term("eglise")));
        // Another user's key blinds the same word differently.
        let other = SearchKey::of(&DataKey::from_bytes([8; 32]));
        assert!(!doc.contains(&other.query_term("address")));
    }
}
