//! Where the hub is and how long to wait for it: the hub clients' environment variables.

use std::time::Duration;

/// The hub unless `HF_ENDPOINT` names a mirror.
pub const DEFAULT_ENDPOINT: &str = "https://huggingface.co";

/// PyPI's file host (where run-time libraries packed in wheels come from) unless
/// `MEMORY_PACKAGES_ENDPOINT` names a mirror of it.
pub const DEFAULT_PACKAGES_ENDPOINT: &str = "https://files.pythonhosted.org";

/// How a download shows its progress.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Progress {
    /// A progress bar on standard error (for a terminal).
    Bar,
    /// One log line when a file starts and one when it is in place.
    Log,
}

/// How to reach the hub.
///
/// ```
/// use memory_hub::HubSettings;
/// let settings = HubSettings::from_vars(|name| match name {
///     "HF_ENDPOINT" => Some("http://127.0.0.1:9000/".into()),
///     "HF_HUB_OFFLINE" => Some("1".into()),
///     _ => None,
/// });
/// assert_eq!(settings.endpoint, "http://127.0.0.1:9000");
/// assert_eq!(settings.packages_endpoint, "https://files.pythonhosted.org");
/// assert!(settings.offline);
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HubSettings {
    /// The hub's base URL, without a trailing slash.
    pub endpoint: String,
    /// The base URL of PyPI's file host (or a mirror), without a trailing slash.
    pub packages_endpoint: String,
    /// Fetch nothing (`HF_HUB_OFFLINE`): a missing file is an error at once.
    pub offline: bool,
    /// How long a connection may take to open.
    pub connect_timeout: Duration,
    /// How long the hub may stay silent during a response before it is given up.
    pub read_timeout: Duration,
    /// How progress is shown.
    pub progress: Progress,
}

impl HubSettings {
    /// From the process's environment (see [`HubSettings::from_vars`]).
    pub fn from_env() -> Self {
        Self::from_vars(|name| std::env::var(name).ok())
    }

    /// From environment variables as `var` reads them: `HF_ENDPOINT` (default
    /// [`DEFAULT_ENDPOINT`]), `MEMORY_PACKAGES_ENDPOINT` (default
    /// [`DEFAULT_PACKAGES_ENDPOINT`]) and `HF_HUB_OFFLINE` (`1`, `true`, `yes` or `on`: nothing
    /// is fetched from either); 10 s to
    /// connect, 30 s of silence at most; a progress bar when standard error is a terminal.
    pub fn from_vars(var: impl Fn(&str) -> Option<String>) -> Self {
        use std::io::IsTerminal;
        let base = |name: &str, default: &str| {
            var(name)
                .map(|e| e.trim().trim_end_matches('/').to_owned())
                .filter(|e| !e.is_empty())
                .unwrap_or_else(|| default.to_owned())
        };
        let endpoint = base("HF_ENDPOINT", DEFAULT_ENDPOINT);
        let packages_endpoint = base("MEMORY_PACKAGES_ENDPOINT", DEFAULT_PACKAGES_ENDPOINT);
        let offline = var("HF_HUB_OFFLINE").is_some_and(|v| {
            matches!(
                v.trim().to_ascii_lowercase().as_str(),
                "1" | "true" | "yes" | "on"
            )
        });
        Self {
            endpoint,
            packages_endpoint,
            offline,
            connect_timeout: Duration::from_secs(10),
            read_timeout: Duration::from_secs(30),
            progress: if std::io::stderr().is_terminal() {
                Progress::Bar
            } else {
                Progress::Log
            },
        }
    }
}
