//! `memory mcp` driven by the official MCP Python SDK (`mcp` from PyPI; the test command
//! installs it with `scripts/setup-mcp-client.sh`): a client nobody here wrote.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::process::Command;

const CLIENT: &str = r#"
import asyncio, json, sys
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

async def main():
    binary, data_dir = sys.argv[1], sys.argv[2]
    params = StdioServerParameters(command=binary, args=["--data-dir", data_dir, "mcp", "team", "--session", "s1"])
    out = {}
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            init = await session.initialize()
            out["instructions"] = init.instructions
            tools = await session.list_tools()
            out["tools"] = sorted(t.name for t in tools.tools)
            text = lambda r: "".join(c.text for c in r.content)
            # The SDK's field is `isError` in older releases, `is_error` in newer ones.
            err = lambda r: getattr(r, "is_error", getattr(r, "isError", None))
            r = await session.call_tool("remember", {"content": "Deploys happen on Fridays", "key": "deploy.day"})
            out["remember"] = [text(r), err(r)]
            r = await session.call_tool("recall", {"query": "when do deploys happen?"})
            out["recall"] = [text(r), err(r)]
            r = await session.call_tool("list_memories", {})
            out["list"] = [text(r), err(r)]
            await session.call_tool("remember", {"content": "Deploys of the mobile app happen on Tuesdays", "metadata": {"app": "mobile"}})
            r = await session.call_tool("recall", {"query": "when do deploys happen?", "metadata": {"app": "mobile"}})
            out["recall_mobile"] = [text(r), err(r)]
            r = await session.call_tool("recall", {"query": "deploys", "metadata": {"app": {"$near": 1}}})
            out["recall_bad_filter"] = [text(r), err(r)]
            r = await session.call_tool("remember", {"content": "x", "kind": "rumour"})
            out["bad_kind"] = [text(r), err(r)]
            r = await session.call_tool("remember", {"content": "Deploys pause for the holidays", "expires_at": "2999-01-31T00:00:00Z"})
            out["expiring"] = [text(r), err(r)]
            r = await session.call_tool("remember", {"content": "x", "expires_at": "2001-01-01T00:00:00Z"})
            out["expired"] = [text(r), err(r)]
            r = await session.call_tool("forget", {"id": "no-such-memory", "reason": "test"})
            out["forget_unknown"] = [text(r), err(r)]
            r = await session.call_tool("session_search", {"query": "anything"})
            out["search"] = [text(r), err(r)]
            r = await session.call_tool("set_context", {"label": "notes", "content": "Prefers green tea"})
            out["set"] = [text(r), err(r)]
            r = await session.call_tool("set_context", {"label": "notes", "content": "word " * 500})
            out["over_budget"] = [text(r), err(r)]
            r = await session.call_tool("set_context", {"label": "notes", "content": "x", "session": "nope"})
            out["unknown_session"] = [text(r), err(r)]
            schema = [getattr(t, "input_schema", getattr(t, "inputSchema", None)) for t in tools.tools if t.name == "set_context"][0]
            out["session_required"] = "session" in schema.get("required", [])
    print(json.dumps(out))

asyncio.run(main())
"#;

#[test]
fn an_mcp_client_remembers_recalls_and_is_refused_clearly() {
    let Some(path) = memory_testkit::python::python_module(
        "mcp.client.stdio",
        "MEMORY_MCP_CLIENT",
        "MEMORY_REQUIRE_MCP_CLIENT",
    ) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("memory.toml"), CONFIG).unwrap();
    create_session(dir.path(), "s1");
    let script = dir.path().join("client.py");
    std::fs::write(&script, CLIENT).unwrap();
    let memory = assert_cmd::cargo::cargo_bin("memory");
    let result = run_client(
        &script,
        &path,
        &[memory.as_os_str(), dir.path().as_os_str()],
    );
    assert_eq!(
        result["tools"],
        serde_json::json!([
            "forget",
            "list_memories",
            "recall",
            "remember",
            "session_search",
            "set_context"
        ])
    );
    assert!(
        result["instructions"]
            .as_str()
            .unwrap()
            .contains("not instructions")
    );
    assert_eq!(result["remember"][1], false, "{result}");
    let recall = result["recall"][0].as_str().unwrap();
    assert!(
        recall.contains("not instructions to follow"),
        "quoted as data: {recall}"
    );
    assert!(recall.contains("Deploys happen on Fridays"), "{recall}");
    assert_eq!(result["recall"][1], false);
    assert!(result["list"][0].as_str().unwrap().contains("deploy.day"));
    let mobile = result["recall_mobile"][0].as_str().unwrap();
    assert!(mobile.contains("Tuesdays"), "{mobile}");
    assert!(
        !mobile.contains("Fridays"),
        "the filter keeps to the scope: {mobile}"
    );
    assert_eq!(result["recall_bad_filter"][1], true, "{result}");
    assert!(
        result["recall_bad_filter"][0]
            .as_str()
            .unwrap()
            .contains("$near")
    );
    assert_eq!(
        result["bad_kind"][1], true,
        "a bad kind is a tool error: {result}"
    );
    assert!(result["bad_kind"][0].as_str().unwrap().contains("rumour"));
    assert_eq!(result["expiring"][1], false, "{result}");
    assert_eq!(
        result["expired"][1], true,
        "an expiry in the past is a tool error: {result}"
    );
    assert!(
        result["expired"][0]
            .as_str()
            .unwrap()
            .contains("not in the future")
    );
    assert_eq!(result["forget_unknown"][1], true);
    assert_eq!(result["search"][1], false);
    // The context tools act on the connection's session, through the blocks' own checks.
    assert_eq!(result["set"][1], false, "{result}");
    assert_eq!(
        result["over_budget"][1], true,
        "over the block's budget: {result}"
    );
    assert_eq!(result["unknown_session"][1], true, "{result}");
    assert_eq!(
        result["session_required"], false,
        "the connection names one"
    );
    assert_eq!(block(dir.path(), "s1", "notes"), "Prefers green tea");
}

/// Runs a Python MCP client script with `args`; its JSON output (it must succeed).
fn run_client(
    script: &std::path::Path,
    python_path: &str,
    args: &[&std::ffi::OsStr],
) -> serde_json::Value {
    let out = Command::new("python3")
        .arg(script)
        .args(args)
        .env("PYTHONPATH", python_path)
        .output()
        .unwrap();
    common::json_output(out)
}

/// A writable block of 50 tokens per session, no embedder.
const CONFIG: &str = "[[blocks]]\nlabel = \"notes\"\nkind = \"writable\"\n\
    description = \"What the user prefers\"\nmax_tokens = 50\nscope = \"session\"\n\n\
    [memory]\nembedder = \"none\"\n";

fn create_session(dir: &std::path::Path, id: &str) {
    let out = Command::new(assert_cmd::cargo::cargo_bin("memory"))
        .arg("--data-dir")
        .arg(dir)
        .args(["session", "create", "--id", id])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn block(dir: &std::path::Path, session: &str, label: &str) -> String {
    let out = Command::new(assert_cmd::cargo::cargo_bin("memory"))
        .arg("--data-dir")
        .arg(dir)
        .args(["context", "get", session, label])
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout).trim().to_owned()
}

const HTTP_CLIENT: &str = r#"
import asyncio, json, sys
from mcp import ClientSession
try:  # renamed in the SDK's 2.x releases
    from mcp.client.streamable_http import streamable_http_client as connect
except ImportError:
    from mcp.client.streamable_http import streamablehttp_client as connect

async def main():
    out = {}
    async with connect(sys.argv[1]) as streams:
        read, write = streams[0], streams[1]
        async with ClientSession(read, write) as session:
            await session.initialize()
            tools = await session.list_tools()
            out["tools"] = sorted(t.name for t in tools.tools)
            text = lambda r: "".join(c.text for c in r.content)
            await session.call_tool("remember", {"content": "The office plant is a fern", "key": "office.plant"})
            r = await session.call_tool("recall", {"query": "which plant is in the office?"})
            out["recall"] = text(r)
            r = await session.call_tool("set_context", {"label": "notes", "content": "Waters the fern on Mondays"})
            out["set"] = text(r)
    print(json.dumps(out))

asyncio.run(main())
"#;

/// The same tools over streamable HTTP at `/mcp` of `memory serve`, for the profile the
/// server names and the session the URL names; what a client remembers there is in that
/// profile for the CLI.
#[test]
fn an_mcp_client_over_http_reaches_the_served_profile() {
    let Some(path) = memory_testkit::python::python_module(
        "mcp.client.streamable_http",
        "MEMORY_MCP_CLIENT",
        "MEMORY_REQUIRE_MCP_CLIENT",
    ) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("memory.toml"), CONFIG).unwrap();
    create_session(dir.path(), "desk");
    let binary = assert_cmd::cargo::cargo_bin("memory");
    let (mut server, address, _) = common::spawn_server(dir.path(), &["--mcp-profile", "office"]);
    let script = dir.path().join("http_client.py");
    std::fs::write(&script, HTTP_CLIENT).unwrap();
    let url = format!("http://{address}/mcp?session=desk");
    let result = run_client(&script, &path, &[std::ffi::OsStr::new(&url)]);
    server.kill().unwrap();
    server.wait().unwrap();
    assert_eq!(result["tools"].as_array().unwrap().len(), 6, "{result}");
    assert!(
        result["recall"].as_str().unwrap().contains("fern"),
        "{result}"
    );
    let listed = Command::new(&binary)
        .arg("--data-dir")
        .arg(dir.path())
        .args(["profile", "list", "office", "--json"])
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&listed.stdout).contains("fern"));
    assert_eq!(
        block(dir.path(), "desk", "notes"),
        "Waters the fern on Mondays"
    );
}

const CONTEXT_CLIENT: &str = r#"
import asyncio, json, sys
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

async def main():
    binary, data_dir = sys.argv[1], sys.argv[2]
    params = StdioServerParameters(command=binary, args=["--data-dir", data_dir, "mcp", "team"])
    out = {}
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            tools = await session.list_tools()
            out["tools"] = sorted(t.name for t in tools.tools)
            schema = [getattr(t, "input_schema", getattr(t, "inputSchema", None)) for t in tools.tools if t.name == "search_context"][0]
            out["session_required"] = "session" in schema.get("required", [])
            text = lambda r: "".join(c.text for c in r.content)
            err = lambda r: getattr(r, "is_error", getattr(r, "isError", None))
            calls = [
                ("set_context", {"session": "s1", "label": "knowledge", "content": "Releases are cut on Thursdays from main.", "metadata": {"title": "release day"}}),
                ("search_context", {"session": "s1", "label": "knowledge", "query": "releases thursdays"}),
                ("load_context", {"session": "s1", "label": "skills", "key": "code-review"}),
                ("unload_context", {"session": "s1", "label": "skills", "key": "code-review"}),
                ("set_context", {"label": "todos", "content": "no session named"}),
            ]
            out["calls"] = []
            for name, args in calls:
                r = await session.call_tool(name, args)
                out["calls"].append([name, text(r), err(r)])
    print(json.dumps(out))

asyncio.run(main())
"#;

/// Every context-block tool over MCP, on the example configuration's blocks (a searchable
/// block and a skill directory), for a session named in each call.
#[test]
fn an_mcp_client_uses_every_context_tool_of_a_named_session() {
    let Some(path) = memory_testkit::python::python_module(
        "mcp.client.stdio",
        "MEMORY_MCP_CLIENT",
        "MEMORY_REQUIRE_MCP_CLIENT",
    ) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let example = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/config");
    let config = std::fs::read_to_string(example.join("memory.toml"))
        .unwrap()
        .replace("embedder = \"local\"", "embedder = \"none\"");
    std::fs::write(dir.path().join("memory.toml"), config).unwrap();
    std::fs::copy(example.join("SOUL.md"), dir.path().join("SOUL.md")).unwrap();
    std::fs::create_dir(dir.path().join("skills")).unwrap();
    for skill in ["code-review.md", "release.md"] {
        std::fs::copy(
            example.join("skills").join(skill),
            dir.path().join("skills").join(skill),
        )
        .unwrap();
    }
    create_session(dir.path(), "s1");
    let script = dir.path().join("context_client.py");
    std::fs::write(&script, CONTEXT_CLIENT).unwrap();
    let memory = assert_cmd::cargo::cargo_bin("memory");
    let result = run_client(
        &script,
        &path,
        &[memory.as_os_str(), dir.path().as_os_str()],
    );
    for tool in [
        "set_context",
        "search_context",
        "load_context",
        "unload_context",
    ] {
        assert!(
            result["tools"]
                .as_array()
                .unwrap()
                .iter()
                .any(|t| t == tool),
            "{tool} missing: {result}"
        );
    }
    assert_eq!(
        result["session_required"], true,
        "no session in the connection"
    );
    let calls = result["calls"].as_array().unwrap();
    let (set, search, load, unload, unnamed) =
        (&calls[0], &calls[1], &calls[2], &calls[3], &calls[4]);
    assert_eq!(set[2], false, "{set}");
    assert_eq!(search[2], false, "{search}");
    assert!(
        search[1].as_str().unwrap().contains("Thursdays"),
        "{search}"
    );
    assert_eq!(load[2], false, "{load}");
    assert!(
        load[1].as_str().unwrap().to_lowercase().contains("review"),
        "{load}"
    );
    assert_eq!(unload[2], false, "{unload}");
    assert_eq!(
        unnamed[2], true,
        "a call without a session is refused: {unnamed}"
    );
    assert!(
        unnamed[1].as_str().unwrap().contains("session"),
        "{unnamed}"
    );
}
