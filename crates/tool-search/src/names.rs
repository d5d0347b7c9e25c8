//! Name matching: the forms a model writes a tool name in.
//!
//! A name is compared in its *compact* form — lower case, separators and spaces removed — so
//! `browser_navigate`, `browser navigate`, `Browser-Navigate` and `browserNavigate` meet. The
//! catalog keys each tool by its full compact name and by the compact name without the
//! `server-` prefix (`create issue` finds `github-create_issue`).
//!
//! [`compact`] folds case by ASCII rules only: proxy-core resolves the names a model calls
//! with this same normalisation, and Unicode case mapping would let a look-alike meet a real
//! name (the Kelvin sign `K` lower-cases to an ASCII `k`; `İ` to `i` and a combining dot).
//! Other characters are kept as they are.

use super::MAX_TYPO_WORD_CHARS;

/// Letters and digits only, ASCII letters lower-cased; other characters kept as they are.
pub fn compact(s: &str) -> String {
    s.chars()
        .filter(|c| c.is_alphanumeric())
        .map(|c| c.to_ascii_lowercase())
        .collect()
}

/// A name's two keys: its compact full form and the compact form of the name without its
/// `server-` prefix (empty when the name has none). The catalog keys tools by both, and the
/// proxy resolves a called name against both.
pub fn keys(name: &str) -> (String, String) {
    let full = compact(name);
    let bare = crate::model::name_prefix(name)
        .map(|p| compact(&name[p.len() + 1..]))
        .unwrap_or_default();
    (full, bare)
}

/// True when `query` reads as one identifier (no spaces, some separator or capital inside), the
/// shape a half-remembered tool name has; only such queries pay for a typo scan of all names.
pub fn looks_like_identifier(query: &str) -> bool {
    let q = query.trim();
    !q.is_empty()
        && !q.contains(char::is_whitespace)
        && q.chars().nth(5).is_some()
        && (q.contains(['_', '-', '.']) || q.chars().skip(1).any(char::is_uppercase))
}

/// Optimal-string-alignment distance between `a` and `b` when it is at most 1, else `None`.
/// One insertion, deletion, substitution or adjacent transposition.
pub fn within_one_edit(a: &str, b: &str) -> bool {
    // one edit changes the UTF-8 length by at most 4 bytes: far apart lengths cost nothing
    if a.len().abs_diff(b.len()) > 4 {
        return false;
    }
    let a: Vec<char> = a.chars().collect();
    let b: Vec<char> = b.chars().collect();
    if a == b {
        return true;
    }
    let (la, lb) = (a.len(), b.len());
    if la.abs_diff(lb) > 1 {
        return false;
    }
    let prefix = a.iter().zip(&b).take_while(|(x, y)| x == y).count();
    let (ra, rb) = (&a[prefix..], &b[prefix..]);
    match la.cmp(&lb) {
        std::cmp::Ordering::Equal => {
            // substitution, or a swap of two adjacent characters
            ra[1..] == rb[1..] || (ra.len() >= 2 && ra[0] == rb[1] && ra[1] == rb[0] && ra[2..] == rb[2..])
        }
        std::cmp::Ordering::Greater => ra[1..] == *rb,
        std::cmp::Ordering::Less => *ra == rb[1..],
    }
}

/// Every string obtained from `w` by deleting one character (the typo index's keys); none for
/// a word of more than [`MAX_TYPO_WORD_CHARS`] characters, whose deletions would cost the
/// square of its length (such words get no typo matching).
pub fn deletions(w: &str) -> Vec<String> {
    if w.chars().nth(MAX_TYPO_WORD_CHARS).is_some() {
        return Vec::new();
    }
    let idx: Vec<usize> = w.char_indices().map(|(i, _)| i).collect();
    idx.iter()
        .map(|&i| {
            let c_len = w[i..].chars().next().map_or(0, char::len_utf8);
            let mut s = String::with_capacity(w.len());
            s.push_str(&w[..i]);
            s.push_str(&w[i + c_len..]);
            s
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn compact_ignores_case_and_separators() {
        assert_eq!(compact("Browser-Navigate"), "browsernavigate");
        assert_eq!(compact("create issue"), "createissue");
        assert_eq!(compact("github-create_issue"), "githubcreateissue");
    }

    #[test]
    fn compact_folds_ascii_case_only() {
        // the Kelvin sign lower-cases to `k` by Unicode rules: a look-alike, kept apart
        assert_eq!(compact("\u{212A}ubectl_logs"), "\u{212A}ubectllogs");
        assert_ne!(compact("\u{212A}UBECTL_LOGS"), compact("kubectl_logs"));
        assert_eq!(compact("\u{130}nbox"), "\u{130}nbox", "no combining dot appears");
        // other characters as they are, separators and invisible characters still dropped
        assert_eq!(compact("Größe-Ändern"), "größeÄndern");
        assert_eq!(compact("send\u{200B}_Mail"), "sendmail");
    }

    #[test]
    fn one_edit() {
        assert!(within_one_edit("navgate", "navigate"));
        assert!(within_one_edit("navigate", "navgate"));
        assert!(within_one_edit("naivgate", "navigate"));
        assert!(within_one_edit("navigata", "navigate"));
        assert!(!within_one_edit("nvgate", "navigate"));
        assert!(!within_one_edit("abcd", "badc"));
    }

    #[test]
    fn identifier_shape() {
        assert!(looks_like_identifier("browser_navgate"));
        assert!(looks_like_identifier("sendMessage"));
        assert!(!looks_like_identifier("send message"));
        assert!(!looks_like_identifier("mail"));
    }

    #[test]
    fn deletions_of_word() {
        assert_eq!(deletions("abc"), ["bc", "ac", "ab"]);
        let longest = "é".repeat(MAX_TYPO_WORD_CHARS);
        assert_eq!(deletions(&longest).len(), MAX_TYPO_WORD_CHARS);
        assert!(deletions(&format!("{longest}e")).is_empty(), "too long: no deletions");
    }

    #[test]
    fn far_apart_lengths_are_not_one_edit() {
        assert!(within_one_edit("navigate", "navigaté"));
        assert!(within_one_edit("a", "😀"));
        assert!(within_one_edit("", "😀"));
        assert!(!within_one_edit("", "a😀"));
        let long = "x".repeat(60_000);
        assert!(!within_one_edit(&long, "navigate"));
        assert!(within_one_edit(&long, &long[1..]));
    }
}
