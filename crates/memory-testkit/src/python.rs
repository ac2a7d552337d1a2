//! Python tools from PyPI that tests drive (an OpenAPI validator, the MCP SDK): found on the
//! `PYTHONPATH` a setup script printed, required when the test command says so.

/// The `PYTHONPATH` under which `module` imports: the directory in `dir_env`, or `None`
/// (the caller skips, and says so) when the module is missing and `require_env` is unset.
///
/// # Panics
/// When the module is missing and `require_env` is set (the test command installed it).
#[allow(clippy::panic)]
pub fn python_module(module: &str, dir_env: &str, require_env: &str) -> Option<String> {
    let path = std::env::var(dir_env).unwrap_or_default();
    let available = std::process::Command::new("python3")
        .args(["-c", &format!("import {module}")])
        .env("PYTHONPATH", &path)
        .status()
        .is_ok_and(|s| s.success());
    if available {
        return Some(path);
    }
    if std::env::var(require_env).is_ok() {
        panic!(
            "{require_env} is set but the Python module {module} does not import from {dir_env}={path:?}"
        );
    }
    eprintln!("skipped: the Python module {module} is not installed");
    None
}
