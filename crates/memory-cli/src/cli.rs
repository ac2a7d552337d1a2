use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

/// Durable, branching, searchable memory for AI agents.
#[derive(Debug, Parser)]
#[command(name = "memory", version, about)]
pub struct Cli {
    /// Where the data lives [default: ./memory-data]
    #[arg(long, global = true, env = "MEMORY_DATA_DIR")]
    pub data_dir: Option<PathBuf>,

    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Create, list, show, rename and delete sessions.
    #[command(subcommand)]
    Session(SessionCommand),
    /// Append, update and delete messages.
    #[command(subcommand)]
    Message(MessageCommand),
    /// Print the root-to-leaf history of a session (latest leaf by default).
    History {
        /// Session id.
        session: String,
        /// Read the branch ending at this message.
        #[arg(long)]
        leaf: Option<String>,
        /// Every original message, without compaction overlays.
        #[arg(long)]
        raw: bool,
        #[command(flatten)]
        format: Format,
    },
    /// Summarize older turns of a branch (needs `[llm]` in memory.toml); originals stay.
    Compact {
        /// Session id.
        session: String,
        /// Compact the branch ending at this message.
        #[arg(long)]
        leaf: Option<String>,
        #[command(flatten)]
        format: Format,
    },
    /// List a session's compaction overlays (superseded ones marked).
    Compactions {
        /// Session id.
        session: String,
        #[command(flatten)]
        format: Format,
    },
    /// Print the children of a message.
    Branches {
        /// Session id.
        session: String,
        /// Message id.
        message: String,
        #[command(flatten)]
        format: Format,
    },
    /// Full-text search (every word must match) across sessions or in one.
    Search {
        /// The words to find.
        query: String,
        /// Only this session.
        #[arg(long)]
        session: Option<String>,
        /// Match the words as one phrase, in order.
        #[arg(long)]
        phrase: bool,
        /// Maximum hits (default 20, at most 1000).
        #[arg(long)]
        limit: Option<usize>,
        #[command(flatten)]
        format: Format,
    },
    /// Import a JSONL file written by `export` (idempotent).
    Import {
        /// The file.
        file: PathBuf,
        #[command(flatten)]
        format: Format,
    },
    /// Export a session as JSONL (session record, then messages with parents).
    Export {
        /// Session id.
        session: String,
        /// Write here instead of standard output.
        #[arg(long, short)]
        output: Option<PathBuf>,
    },
    /// Read and write a session's context blocks (declared in `<data-dir>/memory.toml`).
    #[command(subcommand)]
    Context(ContextCommand),
    /// Print a session's frozen system prompt.
    Prompt {
        /// Session id.
        session: String,
        /// Re-render from the blocks (and re-freeze).
        #[arg(long)]
        refresh: bool,
    },
    /// Print the tool definitions of a session, or run a tool call.
    #[command(args_conflicts_with_subcommands = true)]
    Tools {
        #[command(subcommand)]
        call: Option<ToolsCommand>,
        /// Session id.
        session: Option<String>,
        /// openai, anthropic or mcp.
        #[arg(long, default_value = "openai")]
        format: String,
    },
    /// Check a configuration file.
    #[command(subcommand)]
    Config(ConfigCommand),
    /// Long-term memory profiles (stored under `<data-dir>/profiles`).
    #[command(subcommand)]
    Profile(ProfileCommand),
    /// Speed benchmarks (run them with `--release`; results go in docs/benchmarks.md).
    #[command(subcommand)]
    Bench(BenchCommand),
    /// Retrieval benchmarks through the real ingest and recall code paths.
    #[command(subcommand)]
    Eval(EvalCommand),
    /// Write a branching conversation with tool calls into a fresh data dir, search it and
    /// print two branches.
    Demo,
    /// Serve the memory tools (remember, recall, forget, list_memories, session_search, and
    /// the context-block tools of a session) to an MCP client over stdin/stdout, for one
    /// long-term profile.
    Mcp {
        /// The profile the tools read and write.
        profile: String,
        /// The session whose context blocks the context tools use (a call may name another).
        #[arg(long)]
        session: Option<String>,
    },
    /// API keys for `memory serve --keys`.
    #[command(subcommand)]
    Keys(KeysCommand),
    /// Local model files, fetched from the Hugging Face hub on first use or ahead of it.
    #[command(subcommand)]
    Models(ModelsCommand),
    /// Back up the deployment into its blob store (`[storage] blobs`: the data directory's
    /// `blobs/`, or an S3/R2 bucket), list backups, restore one.
    #[command(subcommand)]
    Backup(BackupCommand),
    /// Rebuild the text indexes from the records: the sessions' message index and every
    /// profile's (or only `--profile`'s), with progress. A run that stops part-way resumes
    /// after the last profile it finished.
    Reindex {
        /// Only this profile's index.
        #[arg(long)]
        profile: Option<String>,
        /// Ignore an unfinished run's progress and start over.
        #[arg(long, conflicts_with = "profile")]
        restart: bool,
        #[command(flatten)]
        format: Format,
    },
    /// Run ingest jobs from the deployment's job queue, every profile's, until Ctrl-C: any
    /// number of workers (on any machine sharing the queue) each claim a job under a lease.
    /// Ctrl-C lets the current job finish and claims no more.
    Worker {
        /// Milliseconds between looks at an empty queue.
        #[arg(long, default_value_t = 500)]
        poll_ms: u64,
        /// Run what is queued now, then exit.
        #[arg(long)]
        once: bool,
        /// The keys file of `memory serve --keys`: run the jobs of every tenant it names.
        #[arg(long)]
        keys: Option<std::path::PathBuf>,
    },
    /// Serve the REST API (OpenAPI at `/openapi.json`, docs at `/docs`) and MCP (`/mcp`)
    /// over this data dir's deployment, until Ctrl-C. Without `--keys` (local mode) it binds
    /// to loopback only; with a keys file each key opens its tenant's own data.
    Serve {
        /// The address to listen on (loopback; port 0 picks a free one).
        #[arg(long, default_value = "127.0.0.1:8787")]
        bind: std::net::SocketAddr,
        /// Requests handled at once; more are refused with 503 and Retry-After.
        #[arg(long, default_value_t = 64)]
        max_concurrent_requests: usize,
        /// Seconds one request may run before it is answered with 503.
        #[arg(long, default_value_t = 30)]
        request_timeout_secs: u64,
        /// Leave accepted ingest jobs to `memory worker` processes (by default this process
        /// runs each one in the background).
        #[arg(long)]
        no_jobs: bool,
        /// The long-term profile the MCP endpoint (`/mcp`, streamable HTTP) serves when the
        /// connection names none (`/mcp?profile=NAME`).
        #[arg(long, default_value = "default")]
        mcp_profile: String,
        /// The API keys file (`memory keys new` prints entries): every request must carry a
        /// key, and each key reaches only its tenant's sessions and profiles.
        #[arg(long)]
        keys: Option<std::path::PathBuf>,
        /// Requests per second one key may make (bursts of twice that) when its entry names
        /// no rate; more get 429 with Retry-After.
        #[arg(long, default_value_t = 100)]
        rate_per_key: u32,
    },
}

#[derive(Debug, Subcommand)]
pub enum BackupCommand {
    /// Take a backup now, with SHA-256 checksums and a manifest: a consistent copy of every
    /// SQLite database (taken while the deployment runs) when every role is on SQLite, else
    /// every session (with overlays and blocks) and profile as export lines.
    Create {
        /// Keep only the newest N backups afterwards.
        #[arg(long)]
        keep: Option<usize>,
        #[command(flatten)]
        format: Format,
    },
    /// List the complete backups, oldest first.
    List {
        #[command(flatten)]
        format: Format,
    },
    /// Restore a backup into an empty data directory (every checksum verified first).
    Restore {
        /// The backup (the newest when absent).
        #[arg(long)]
        id: Option<String>,
        /// The data directory to restore into. A file backup (every role on SQLite): no
        /// database file may exist there yet. A logical backup (roles on PostgreSQL or
        /// Redis): its memory.toml names the target backends, which must hold no session and
        /// no profile yet.
        #[arg(long)]
        into: std::path::PathBuf,
        #[command(flatten)]
        format: Format,
    },
}

#[derive(Debug, Subcommand)]
pub enum ModelsCommand {
    /// Fetch a local model's files now, once, instead of at its first use, each checked
    /// against its pin: the model from the Hugging Face hub (`HF_ENDPOINT` names a mirror)
    /// and, for ONNX models, ONNX Runtime's library from its PyPI wheel
    /// (`MEMORY_PACKAGES_ENDPOINT` names a mirror of PyPI's file host).
    Fetch {
        /// `auto` (the default embedder: `local-int8` where ONNX Runtime runs, else `local`),
        /// `local-int8` (into `MEMORY_ONNX_MODEL_DIR` or
        /// `~/.cache/memory-models/all-minilm-l6-v2-int8-dynamic`), `local` (into
        /// `MEMORY_MODEL_DIR` or `~/.cache/memory-models/all-minilm-l6-v2`), or an embedder of
        /// the catalogue by name (into `MEMORY_MODELS_DIR/<name>` or
        /// `~/.cache/memory-models/<name>`; `memory models list` shows them).
        #[arg(long, default_value = "auto")]
        embedder: String,
        /// Also a reranker of the catalogue by name (`ms-marco-MiniLM-L-6-v2`,
        /// `bge-reranker-base`).
        #[arg(long)]
        reranker: Option<String>,
    },
    /// The catalogue of local embedders and rerankers: name, repository, width, pooling,
    /// prefixes, download size, and whether its files are here.
    List {
        #[command(flatten)]
        format: Format,
    },
}

#[derive(Debug, Subcommand)]
pub enum KeysCommand {
    /// Print a new API key for a tenant and the keys-file entry that lets it in (the key is
    /// shown once; the file holds only its SHA-256).
    New {
        /// The tenant (1-32 lowercase letters, digits or '_', starting with a letter).
        tenant: String,
        /// A name for logs.
        #[arg(long)]
        label: Option<String>,
    },
}

#[derive(Debug, Subcommand)]
pub enum ContextCommand {
    /// List the blocks with their kind, scope and token use.
    List {
        /// Session id.
        session: String,
        #[command(flatten)]
        format: Format,
    },
    /// Print one block's content.
    Get {
        /// Session id.
        session: String,
        /// Block label.
        label: String,
        #[command(flatten)]
        format: Format,
    },
    /// Replace a writable block (or write a keyed entry of a searchable or skill block).
    Set {
        /// Session id.
        session: String,
        /// Block label.
        label: String,
        /// The content (standard input when omitted or `-`).
        #[arg(allow_hyphen_values = true)]
        content: Option<String>,
        /// Title of a keyed entry (the same title updates in place).
        #[arg(long)]
        title: Option<String>,
        /// One-line description of a keyed entry.
        #[arg(long)]
        description: Option<String>,
        #[command(flatten)]
        format: Format,
    },
    /// Append to a writable block.
    Append {
        /// Session id.
        session: String,
        /// Block label.
        label: String,
        /// The content (standard input when omitted or `-`).
        #[arg(allow_hyphen_values = true)]
        content: Option<String>,
        #[command(flatten)]
        format: Format,
    },
}

#[derive(Debug, Subcommand)]
pub enum ToolsCommand {
    /// Run one tool call and print its string result.
    Call {
        /// Session id.
        session: String,
        /// Tool name.
        name: String,
        /// Arguments as JSON (standard input when omitted or `-`).
        arguments: Option<String>,
    },
}

#[derive(Debug, Subcommand)]
pub enum ConfigCommand {
    /// Validate a memory.toml (default: the data dir's).
    Check {
        /// The file.
        file: Option<PathBuf>,
    },
}

/// End-to-end answering of an evaluation's questions.
#[derive(Debug, Args, Clone, Default)]
pub struct AnswerArgs {
    /// Also answer each question end to end: recall, the configured `[llm]` answers from what
    /// was recalled, and a judge model grades the answer with the benchmark's published
    /// judge prompt (accuracy per type beside the retrieval scores, tokens and time per
    /// question). Needs `[llm]` in memory.toml.
    #[arg(long)]
    pub answer: bool,
    /// The judge model, on `[llm]`'s endpoint (default: `[llm] model`).
    #[arg(long, requires = "answer")]
    pub judge_model: Option<String>,
    /// Items recalled for the answer.
    #[arg(long, default_value_t = 10, requires = "answer")]
    pub answer_limit: usize,
}

/// Recall settings an evaluation may override (the deployment's configuration otherwise),
/// for ablations: the shipped defaults are what the evaluations report.
#[derive(Debug, Args, Clone, Copy, Default)]
pub struct RecallKnobs {
    /// Weight of the raw-message full-text channel.
    #[arg(long)]
    pub raw_fts_weight: Option<f64>,
    /// Weight of the raw-message vector channel.
    #[arg(long)]
    pub raw_vector_weight: Option<f64>,
    /// Neighbours pulled in on each side of a raw hit (0: off).
    #[arg(long)]
    pub context_radius: Option<usize>,
    /// Share of a raw hit's score its neighbours inherit.
    #[arg(long)]
    pub context_weight: Option<f64>,
    /// The RRF constant.
    #[arg(long)]
    pub rrf_k: Option<f64>,
    /// How much further hits of one conversation give way to other conversations (0: off).
    #[arg(long)]
    pub session_spread: Option<f64>,
    /// Weight of the `dated` channel (the window a question's date words name; 0: off).
    #[arg(long)]
    pub dated_weight: Option<f64>,
    /// Weight of the `recency` channel (newest first among the best fused items; 0: off).
    #[arg(long)]
    pub recency_weight: Option<f64>,
}

#[derive(Debug, Args, Clone, Copy)]
pub struct Format {
    /// Print JSON (a stable shape) instead of text.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Subcommand)]
pub enum SessionCommand {
    /// Create a session and print it.
    Create {
        /// Use this id instead of a generated one.
        #[arg(long)]
        id: Option<String>,
        /// Display name.
        #[arg(long)]
        name: Option<String>,
        /// Parent session id.
        #[arg(long)]
        parent: Option<String>,
        /// Model name.
        #[arg(long)]
        model: Option<String>,
        /// Source (app, channel).
        #[arg(long)]
        source: Option<String>,
        /// Bind it to this long-term profile (default: `[sessions] profile`): compaction and
        /// `session end` ship its history there, and its tools include `recall`.
        #[arg(long)]
        profile: Option<String>,
        #[command(flatten)]
        format: Format,
    },
    /// Bind a session to a long-term profile: its compactions and its end ship its history
    /// there, and its tools include `recall` and `remember`.
    Bind {
        /// Session id.
        id: String,
        /// Profile name.
        profile: String,
        #[command(flatten)]
        format: Format,
    },
    /// Unbind a session from its profile (what it shipped stays in the profile).
    Unbind {
        /// Session id.
        id: String,
        #[command(flatten)]
        format: Format,
    },
    /// End a session: set its end reason and ship what was not shipped yet of its current
    /// branch to its profile (when bound), as an ingest job.
    End {
        /// Session id.
        id: String,
        /// Why it ended.
        #[arg(long)]
        reason: Option<String>,
        /// Wait for the ingest job to finish.
        #[arg(long)]
        wait: bool,
        #[command(flatten)]
        format: Format,
    },
    /// List sessions, most recently updated first.
    List {
        /// At most this many.
        #[arg(long, default_value_t = 100)]
        limit: usize,
        /// Skip this many.
        #[arg(long, default_value_t = 0)]
        offset: usize,
        #[command(flatten)]
        format: Format,
    },
    /// Show one session.
    Show {
        /// Session id.
        id: String,
        #[command(flatten)]
        format: Format,
    },
    /// Rename a session.
    Rename {
        /// Session id.
        id: String,
        /// New name.
        name: String,
        #[command(flatten)]
        format: Format,
    },
    /// Move a session's messages, overlays and blocks to the blob store (`[storage] blobs`);
    /// its record stays listed, and the next read or append brings it back. With
    /// `--idle-days`, every session not updated for that long.
    Archive {
        /// The session (or none, with `--idle-days`).
        id: Option<String>,
        /// Archive every session idle for at least this many days.
        #[arg(long)]
        idle_days: Option<f64>,
        #[command(flatten)]
        format: Format,
    },
    /// Delete a session with all its messages and search entries.
    Delete {
        /// Session id.
        id: String,
    },
}

#[derive(Debug, Subcommand)]
pub enum MessageCommand {
    /// Append a UIMessage (JSON argument, or standard input when omitted or `-`).
    Append {
        /// Session id.
        session: String,
        /// The message JSON.
        message: Option<String>,
        /// Attach to this message instead of the latest leaf.
        #[arg(long, conflicts_with = "root")]
        parent: Option<String>,
        /// Start a new root.
        #[arg(long)]
        root: bool,
        #[command(flatten)]
        format: Format,
    },
    /// Replace an existing message (matched by its id).
    Update {
        /// Session id.
        session: String,
        /// The message JSON (standard input when omitted or `-`).
        message: Option<String>,
        #[command(flatten)]
        format: Format,
    },
    /// Delete messages; their children re-link to their parents.
    Delete {
        /// Session id.
        session: String,
        /// Message ids.
        #[arg(required = true)]
        ids: Vec<String>,
        #[command(flatten)]
        format: Format,
    },
}

#[derive(Debug, Subcommand)]
pub enum ProfileCommand {
    /// Ingest a JSONL file of UIMessages (or `export` records) as raw messages; idempotent.
    ///
    /// The messages are stored and searchable when this returns; extraction (with `[llm]`)
    /// and vectorization run as a durable job: in a background worker, or here with `--wait`.
    Ingest {
        /// Profile name.
        profile: String,
        /// The file (leave it out with `--from-session`).
        file: Option<PathBuf>,
        /// Session id for plain UIMessage lines.
        #[arg(long)]
        session: Option<String>,
        /// Ingest this stored session instead of a file (what was shipped before is
        /// skipped).
        #[arg(long, conflicts_with_all = ["file", "session"])]
        from_session: Option<String>,
        /// With `--from-session`: the path to this leaf (the latest by default).
        #[arg(long, requires = "from_session")]
        leaf: Option<String>,
        /// With `--from-session`: start at this message of the path.
        #[arg(long, requires = "from_session")]
        from: Option<String>,
        /// With `--from-session`: end at this message of the path.
        #[arg(long, requires = "from_session")]
        to: Option<String>,
        /// Metadata for every message ingested, as a JSON object (a message's own keys win);
        /// the memories extracted from them carry what their messages share.
        #[arg(long, conflicts_with = "from_session")]
        metadata: Option<String>,
        /// Run extraction and vectorization before returning.
        #[arg(long)]
        wait: bool,
        #[command(flatten)]
        format: Format,
    },
    /// Show the profile's extraction settings, or change them: instructions (what to keep,
    /// what to ignore), custom categories, the language memories are written in.
    Settings {
        /// Profile name.
        profile: String,
        /// Extraction instructions (`-` reads them from standard input).
        #[arg(long)]
        instructions: Option<String>,
        /// A category, `name` or `name=description`; repeat for several (replaces the list).
        #[arg(long = "category", value_name = "NAME[=DESCRIPTION]")]
        categories: Vec<String>,
        /// The language memories are written in ("English", "fr").
        #[arg(long)]
        language: Option<String>,
        /// Remove the profile's own settings first (the deployment's still apply).
        #[arg(long)]
        clear: bool,
        #[command(flatten)]
        format: Format,
    },
    /// List the profile's ingest jobs; `--run` resumes unfinished ones.
    Jobs {
        /// Profile name.
        profile: String,
        /// Run every unfinished job to the end.
        #[arg(long)]
        run: bool,
        /// With `--run`, also retry failed jobs.
        #[arg(long)]
        retry_failed: bool,
        #[command(flatten)]
        format: Format,
    },
    /// Store a memory (a fact unless `--kind` says otherwise).
    Remember {
        /// Profile name.
        profile: String,
        /// The memory.
        text: String,
        /// fact, event, instruction or task.
        #[arg(long)]
        kind: Option<String>,
        /// Topic key; a new fact or instruction with the same key supersedes the old one.
        #[arg(long)]
        key: Option<String>,
        /// Source session.
        #[arg(long)]
        session: Option<String>,
        /// Metadata as a JSON object of strings, numbers, booleans and lists of strings,
        /// e.g. '{"project": "atlas", "tags": ["home"]}'.
        #[arg(long)]
        metadata: Option<String>,
        /// When it stops being current, RFC 3339 (`2027-01-31T00:00:00Z`); default: its
        /// kind's lifetime in `[memory.lifetimes]`, if any.
        #[arg(long, conflicts_with = "expires_in")]
        expires_at: Option<String>,
        /// How long it stays current from now (`90m`, `12h`, `30d`).
        #[arg(long)]
        expires_in: Option<String>,
        #[command(flatten)]
        format: Format,
    },
    /// Recall memories and raw messages for a query.
    Recall {
        /// Profile name.
        profile: String,
        /// The query.
        query: String,
        /// Maximum results.
        #[arg(long, default_value_t = 10)]
        limit: usize,
        /// Show each result's per-channel ranks, the search terms and the date facts.
        #[arg(long)]
        explain: bool,
        /// Also synthesize an answer citing the results (needs `[llm]`).
        #[arg(long)]
        answer: bool,
        /// Only memories whose metadata satisfies this JSON filter (the grammar of
        /// `profile list --where`), applied inside every channel.
        #[arg(long = "where", value_name = "FILTER")]
        where_metadata: Option<String>,
        #[command(flatten)]
        format: Format,
    },
    /// List memories (current ones unless `--all`), optionally filtered.
    List {
        /// Profile name.
        profile: String,
        /// Include superseded versions and forgotten memories.
        #[arg(long)]
        all: bool,
        /// Only this type: fact, event, instruction or task.
        #[arg(long)]
        kind: Option<String>,
        /// Only this topic key (with `--all`: its whole version chain).
        #[arg(long)]
        key: Option<String>,
        /// Only memories from this session.
        #[arg(long)]
        session: Option<String>,
        /// Only memories whose metadata satisfies this JSON filter, e.g.
        /// '{"project": "atlas", "priority": {"$gte": 2}}' (operators $eq, $in, $gt, $gte,
        /// $lt, $lte, $exists, combined with $and, $or, $not).
        #[arg(long = "where", value_name = "FILTER")]
        where_metadata: Option<String>,
        /// Page size.
        #[arg(long, default_value_t = 100)]
        limit: usize,
        /// Cursor from a previous page.
        #[arg(long)]
        cursor: Option<String>,
        #[command(flatten)]
        format: Format,
    },
    /// Hide a memory from recall and list (kept for audit).
    Forget {
        /// Profile name.
        profile: String,
        /// Memory id.
        id: String,
        /// Why.
        #[arg(long, default_value = "forgotten by request")]
        reason: String,
    },
    /// Export a profile as versioned JSONL (raw messages, then memories with their chains).
    Export {
        /// Profile name.
        profile: String,
        /// Write here instead of standard output.
        #[arg(long, short)]
        output: Option<PathBuf>,
        /// Include the vectors (with the model that made them).
        #[arg(long)]
        vectors: bool,
    },
    /// Import an export into a profile (idempotent).
    Import {
        /// Profile name.
        profile: String,
        /// The file.
        file: PathBuf,
        #[command(flatten)]
        format: Format,
    },
    /// Erase a memory and its vector; with `--with-sources`, also the raw messages it came from.
    Purge {
        /// Profile name.
        profile: String,
        /// Memory id.
        id: String,
        /// Also erase the source raw messages (right to erasure).
        #[arg(long)]
        with_sources: bool,
    },
    /// List the profiles, in name order (all of them, or a page with `--limit`).
    Profiles {
        /// Only the names after this one (the last name of the previous page).
        #[arg(long)]
        after: Option<String>,
        /// At most this many names; `--json` then gives `next`, the `--after` of the next page.
        #[arg(long)]
        limit: Option<usize>,
        #[command(flatten)]
        format: Format,
    },
    /// Delete a profile and everything in it (its database file).
    Delete {
        /// Profile name.
        profile: String,
    },
    /// Rebuild every vector with the configured embedder (after a model change).
    Reembed {
        /// Profile name.
        profile: String,
        #[command(flatten)]
        format: Format,
    },
    /// Merge memories that say the same thing: each group into one survivor that keeps the
    /// union of their sources, the others superseded by it with the reason (nothing is
    /// deleted). LLM-free, confirmed by the `[llm]` when one is configured.
    Consolidate {
        /// Profile name.
        profile: String,
        /// Only list the planned merges; write nothing.
        #[arg(long)]
        dry_run: bool,
        #[command(flatten)]
        format: Format,
    },
    /// Pairs of current memories that contradict each other, flagged by the `[llm]` during
    /// consolidation runs (newest first).
    Contradictions {
        /// Profile name.
        profile: String,
        #[command(flatten)]
        format: Format,
    },
    /// The profile's digest (a short summary the `[llm]` writes from its memories, with the
    /// memories it draws on); `--refresh` writes it again when enough changed, `--force`
    /// always.
    Digest {
        /// Profile name.
        profile: String,
        /// Write it again when enough has changed since it was written.
        #[arg(long)]
        refresh: bool,
        /// With `--refresh`: write it even when it is current.
        #[arg(long, requires = "refresh")]
        force: bool,
        #[command(flatten)]
        format: Format,
    },
    /// What the profile block of a bound session's prompt shows, and why: the instructions,
    /// then the facts and open tasks by score (recency of recording and confirmation, of use
    /// in recall, the kind), within the budget.
    Block {
        /// Profile name.
        profile: String,
        /// The budget in tokens (default: `[sessions] profile_block_tokens`, 1,000).
        #[arg(long)]
        tokens: Option<usize>,
        /// How many of the considered facts and tasks to list with their scores.
        #[arg(long, default_value_t = 20)]
        top: usize,
        #[command(flatten)]
        format: Format,
    },
}

#[derive(Debug, Subcommand)]
pub enum EvalCommand {
    /// LoCoMo (turn-level recipe): recall@5/10, recall_all@10 and nDCG@10 of the pipeline and
    /// of a BM25-only baseline, overall (categories 1-4) and per category.
    Locomo {
        /// The data set (`locomo10.json`); it is read in place, never copied.
        #[arg(long)]
        data: PathBuf,
        /// Only the first N conversations (after `--skip`).
        #[arg(long)]
        conversations: Option<usize>,
        /// Skip the first N conversations (for a held-out split).
        #[arg(long, default_value_t = 0)]
        skip: usize,
        /// Keep the ingested conversations in this directory and reuse those already
        /// there, so other recall settings are compared without ingesting again.
        #[arg(long)]
        keep: Option<PathBuf>,
        #[command(flatten)]
        knobs: RecallKnobs,
        #[command(flatten)]
        answers: AnswerArgs,
        #[command(flatten)]
        format: Format,
    },
    /// LongMemEval (each question's haystack in a fresh profile, recalled at the question's
    /// date): session-level recall_any@5/@10, recall_all@5/@10 and nDCG@10, turn-level
    /// recall@10, per question type and overall, beside a BM25 baseline. Resumable: each
    /// finished question is appended to `--results` and skipped by the next run.
    #[command(name = "longmemeval")]
    LongMemEval {
        /// The data set (`longmemeval_s_dev.json.gz`, or plain JSON); read in place.
        #[arg(long)]
        data: PathBuf,
        /// Only these question types (comma-separated, for example `temporal-reasoning`).
        #[arg(long, value_delimiter = ',')]
        types: Vec<String>,
        /// Only the first N questions (after `--types`).
        #[arg(long)]
        limit: Option<usize>,
        /// This process's share, `K/N` (K from 0): several processes may append to one
        /// results file.
        #[arg(long)]
        shard: Option<String>,
        /// The results file (JSON lines); default `eval/longmemeval-<data file>.jsonl` in
        /// the data dir. Results of another configuration are not told apart: use another
        /// file, or `--fresh`.
        #[arg(long)]
        results: Option<PathBuf>,
        /// Start over: delete the results file first.
        #[arg(long)]
        fresh: bool,
        /// Keep the ingested haystacks in this directory (profiles and a record of each),
        /// and reuse those already there: a second run with other recall settings (with
        /// another `--results`) skips the hours of ingesting. Without it they live in a
        /// scratch directory removed at the end.
        #[arg(long)]
        keep: Option<PathBuf>,
        #[command(flatten)]
        knobs: RecallKnobs,
        #[command(flatten)]
        answers: AnswerArgs,
        #[command(flatten)]
        format: Format,
    },
    /// Fit recall's ranking settings on LoCoMo and LongMemEval's development half together:
    /// each question's candidates collected once, every setting scored by the ranking a
    /// recall runs, cross-validated by conversation and by question, with an ablation table
    /// and a per-type table. The printed setting is what ships as the defaults.
    Fit {
        /// LoCoMo's data set (`locomo10.json`).
        #[arg(long)]
        locomo: Option<PathBuf>,
        /// LongMemEval's development half (`longmemeval_s_dev.json.gz`).
        #[arg(long)]
        longmemeval: Option<PathBuf>,
        /// Only the first N LongMemEval questions.
        #[arg(long)]
        limit: Option<usize>,
        /// Where the ingested haystacks are kept: those an earlier `eval locomo` or `eval
        /// longmemeval` kept there are reused, the others ingested (hours for LongMemEval).
        #[arg(long)]
        keep: PathBuf,
        /// Cross-validation folds.
        #[arg(long, default_value_t = 5)]
        folds: usize,
        #[command(flatten)]
        knobs: RecallKnobs,
        #[command(flatten)]
        format: Format,
    },
}

#[derive(Debug, Subcommand)]
pub enum BenchCommand {
    /// Consolidation on a seeded profile of paraphrased memories: in-group and cross-group
    /// pairs merged, the run's time and peak memory, recall before and after (or, with
    /// `--locomo`, LoCoMo recall@10 before and after).
    Consolidation {
        /// Memories in the profile.
        #[arg(long, default_value_t = 20_000)]
        memories: usize,
        /// The share of facts restated two to six times (0.2: about half the memories in
        /// groups).
        #[arg(long, default_value_t = 0.2)]
        grouped: f64,
        /// Questions asked before and after.
        #[arg(long, default_value_t = 500)]
        queries: usize,
        /// The generator's seed.
        #[arg(long, default_value_t = 7)]
        seed: u64,
        /// The vectors: a local model (`local-int8`, the default; `local`, a catalogue
        /// name) or `hashing` (no model; not semantic, so the vector veto merges little).
        #[arg(long, default_value = "local-int8")]
        embedder: String,
        /// Instead of the generator: LoCoMo (`locomo10.json`, read in place), each
        /// conversation's observations remembered as facts, recall@10 of categories 1-4
        /// before and after consolidation.
        #[arg(long)]
        locomo: Option<PathBuf>,
        /// With `--locomo`: only the first N conversations.
        #[arg(long, requires = "locomo")]
        conversations: Option<usize>,
        #[command(flatten)]
        format: Format,
    },
    /// Long-term memory: recall latency on a large profile, LLM-free ingest throughput,
    /// local embedding throughput.
    LongTerm {
        /// Memories in the profile.
        #[arg(long, default_value_t = 100_000)]
        memories: usize,
        /// Raw messages in the profile.
        #[arg(long, default_value_t = 100_000)]
        raw: usize,
        /// Recall queries timed.
        #[arg(long, default_value_t = 300)]
        queries: usize,
        /// Run on the PostgreSQL server `MEMORY_POSTGRES_URL` names (every role, in a scratch
        /// schema dropped afterwards) instead of embedded SQLite.
        #[arg(long)]
        postgres: bool,
        /// SQLite: candidates the approximate graph returns per search (rescored exactly;
        /// the embedded default's).
        #[arg(long, default_value_t = 160)]
        graph_candidates: usize,
        /// SQLite: also measure the graph's recall@10 against the exact scan on this many
        /// sentences embedded by the local model (0: skip; needs scripts/setup-model.sh).
        #[arg(long, default_value_t = 0)]
        model_vectors: usize,
        /// SQLite: keep the model's sentence vectors in this file, and reuse them when a later
        /// run asks for as many (embedding 100,000 sentences takes about 17 minutes here).
        #[arg(long)]
        model_vectors_file: Option<std::path::PathBuf>,
        /// SQLite: the profile's full-text indexes, `tantivy` (the embedded default: on
        /// disk beside the profiles, shared, still no server) or `sqlite` (FTS5, in the
        /// profile's database).
        #[arg(long, default_value = "tantivy", value_parser = ["sqlite", "tantivy"])]
        text: String,
        /// The vectors of the profile and of the queries: `hashing` (the default: fast, and
        /// the approximate graph's worst case) or a local model, `local`, `local-int8` or a
        /// catalogue embedder by name (as a deployment embeds; the queries are embedded before
        /// anything is timed).
        #[arg(long, default_value = "hashing")]
        embedder: String,
        /// Skip the recalls filtered by metadata (at a million memories they take longer
        /// than the rest of the run).
        #[arg(long)]
        no_filtered: bool,
        /// SQLite: the profile database's page size in bytes (default: `[storage.sqlite]
        /// profile_page_size`'s), to compare page sizes in one run.
        #[arg(long)]
        profile_page_size: Option<u32>,
        #[command(flatten)]
        format: Format,
    },
    /// The REST API under load (server and load generator in this process): requests per
    /// second and p50/p95/p99 of append, history, search and recall, and recall at a fixed
    /// rate, beside the same calls on the engine directly.
    Serve {
        /// Sessions seeded (ten messages each).
        #[arg(long, default_value_t = 10_000)]
        sessions: usize,
        /// Memories seeded in the recalled profile.
        #[arg(long, default_value_t = 100_000)]
        memories: usize,
        /// Seconds per phase.
        #[arg(long, default_value_t = 10)]
        seconds: u64,
        /// Concurrent clients in the closed-loop phases.
        #[arg(long, default_value_t = 16)]
        clients: usize,
        /// Recall requests per second of each fixed-rate phase (comma-separated).
        #[arg(long, value_delimiter = ',', default_values_t = [100, 500])]
        recall_rates: Vec<u32>,
        /// On the PostgreSQL server `MEMORY_POSTGRES_URL` names (a scratch schema dropped
        /// afterwards) instead of embedded SQLite.
        #[arg(long)]
        postgres: bool,
        /// SQLite: each append its own transaction (`[storage.sqlite] group_commit = false`),
        /// the baseline of group commit.
        #[arg(long)]
        no_group_commit: bool,
        /// SQLite: every vector search scans exactly (`[storage.sqlite] exact_vectors =
        /// true`), the baseline of the approximate graph.
        #[arg(long)]
        exact_vectors: bool,
        /// SQLite: every full-text index on `sqlite` (FTS5) or `tantivy` (`[storage] text`);
        /// unset: the embedded default (FTS5 for blocks and session messages, Tantivy for
        /// the profiles).
        #[arg(long, value_parser = ["sqlite", "tantivy"])]
        text: Option<String>,
        /// SQLite: the session messages' index (`[storage] session_text`), when it differs
        /// from `--text`.
        #[arg(long, value_parser = ["sqlite", "tantivy"])]
        session_text: Option<String>,
        /// SQLite: the profiles' indexes (`[storage] profile_text`), when they differ from
        /// `--text` (`--profile-text sqlite`: the default before profiles moved to Tantivy).
        #[arg(long, value_parser = ["sqlite", "tantivy"])]
        profile_text: Option<String>,
        /// Tantivy indexes held by one process (`[storage.tantivy] shared = false`) instead
        /// of shared by every process on the host (the default).
        #[arg(long)]
        tantivy_unshared: bool,
    },
    /// Many small profiles on one server (a profile per end user): N profiles x K memories
    /// from C clients over HTTP, with the process's resident memory, threads and open files
    /// sampled throughout; recall on an open profile and on reopened ones; the profile
    /// list; disk per profile beside its data.
    Profiles {
        /// Profiles made.
        #[arg(long, default_value_t = 10_000)]
        profiles: usize,
        /// Memories remembered in each profile.
        #[arg(long, default_value_t = 10)]
        memories: usize,
        /// Concurrent clients.
        #[arg(long, default_value_t = 8)]
        clients: usize,
        /// `[storage] open_profiles`: profile files open at once (embedded default only).
        #[arg(long, default_value_t = 16)]
        open_profiles: usize,
        /// On the PostgreSQL server `MEMORY_POSTGRES_URL` names (a scratch schema dropped
        /// afterwards) instead of the embedded default.
        #[arg(long)]
        postgres: bool,
    },
    /// The local embedders (`local`, `local-int8`) side by side on the same LoCoMo turns:
    /// texts per second and how closely their vectors agree.
    Embedders {
        /// A LoCoMo file (`locomo10.json`).
        #[arg(long)]
        locomo: PathBuf,
        /// Turns embedded.
        #[arg(long, default_value_t = 2_000)]
        texts: usize,
        /// Texts per embed call (ingest sends 64).
        #[arg(long, default_value_t = 64)]
        batch: usize,
        #[command(flatten)]
        format: Format,
    },
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The benchmark's default candidate count is the one the embedded default searches with.
    #[test]
    fn the_bench_measures_the_default_candidate_count() {
        let cli = Cli::parse_from(["memory", "bench", "long-term"]);
        let Command::Bench(BenchCommand::LongTerm {
            graph_candidates, ..
        }) = cli.command
        else {
            panic!("not parsed as `bench long-term`");
        };
        assert_eq!(
            graph_candidates,
            memory_sqlite::ApproximateSearch::default().candidates
        );
    }
}
