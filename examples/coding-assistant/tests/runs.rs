//! The example runs to the end and exercises every tool.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

#[test]
fn the_scripted_session_uses_every_tool() {
    let dir = tempfile::tempdir().unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_coding-assistant"))
        .arg(dir.path())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    for tool in [
        "set_context",
        "load_context",
        "unload_context",
        "search_context",
        "session_search",
    ] {
        assert!(
            text.contains(&format!("tool {tool}(")),
            "{tool} not called:\n{text}"
        );
    }
    assert!(text.contains("frozen prompt unchanged during the session: true"));
    assert!(text.contains("Prefers tabs over spaces."));
    assert!(text.contains("[skill unloaded: code-review]"));
    assert!(!text.contains("-> Error"), "{text}");
}
