//! Name matching: the forms a model writes a tool name in.
//!
//! A name is compared in its *compact* form — lower case, separators and spaces removed — so
//! `browser_navigate`, `browser navigate`, `Browser-Navigate` and `browserNavigate` meet. The
//! catalog keys each tool by its full compact name and by the compact name without the
//! `server-` prefix (`create issue` finds `github-create_issue`).

/// Lower case, letters and digits only.
pub fn compact(s: &str) -> String {
    s.chars()
        .filter(|c| c.is_alphanumeric())
        .flat_map(char::to_lowercase)
        .collect()
}

/// True when `query` reads as one identifier (no spaces, some separator or capital inside), the
/// shape a half-remembered tool name has; only such queries pay for a typo scan of all names.
pub fn looks_like_identifier(query: &str) -> bool {
    let q = query.trim();
    !q.is_empty()
        && !q.contains(char::is_whitespace)
        && q.chars().count() >= 6
        && (q.contains(['_', '-', '.']) || q.chars().skip(1).any(char::is_uppercase))
}

/// Optimal-string-alignment distance between `a` and `b` when it is at most 1, else `None`.
/// One insertion, deletion, substitution or adjacent transposition.
pub fn within_one_edit(a: &str, b: &str) -> bool {
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

/// Every string obtained from `w` by deleting one character (the typo index's keys).
pub fn deletions(w: &str) -> Vec<String> {
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
    }
}
