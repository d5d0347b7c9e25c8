//! The opaque strings the server hands out: session ids and `tools/list` cursors.

/// 128 random bits from the OS as 32 hex digits (visible ASCII, as the spec requires).
pub(super) fn mint_session_id() -> String {
    let mut bytes = [0u8; 16];
    getrandom::fill(&mut bytes).expect("the OS random source is available");
    hex(&bytes)
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|byte| format!("{byte:02x}")).collect()
}

/// Cursors are opaque to clients; inside they are the hex of `offset:N`.
pub(super) fn encode_cursor(offset: usize) -> String {
    hex(format!("offset:{offset}").as_bytes())
}

pub(super) fn decode_cursor(cursor: &str) -> Option<usize> {
    if cursor.len() % 2 != 0 || !cursor.is_ascii() {
        return None;
    }
    let bytes = (0..cursor.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&cursor[i..i + 2], 16).ok())
        .collect::<Option<Vec<u8>>>()?;
    String::from_utf8(bytes).ok()?.strip_prefix("offset:")?.parse().ok()
}
