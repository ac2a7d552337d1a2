//! Table names: one table per namespace. LanceDB names allow letters, digits, `_`, `-` and
//! `.`; other characters of a namespace are written `_xx` (hex of each byte) and a literal
//! `_` as `__`, so two namespaces never share a table.

/// The table of `namespace`.
///
/// ```ignore
/// assert_eq!(table_name("memories"), "memories");
/// assert_eq!(table_name("a/b_c"), "a_2fb__c");
/// ```
pub(crate) fn table_name(namespace: &str) -> String {
    let mut out = String::with_capacity(namespace.len());
    for byte in namespace.bytes() {
        match byte {
            b'_' => out.push_str("__"),
            b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' | b'-' => out.push(byte as char),
            other => out.push_str(&format!("_{other:02x}")),
        }
    }
    if out.is_empty() {
        out.push_str("_empty");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::table_name;

    #[test]
    fn names_are_safe_and_distinct() {
        assert_eq!(table_name("memories"), "memories");
        assert_eq!(table_name("a/b_c"), "a_2fb__c");
        assert_ne!(table_name("a_2f"), table_name("a/"));
        assert_eq!(table_name("ü"), "_c3_bc");
        assert_eq!(table_name(""), "_empty");
    }
}
