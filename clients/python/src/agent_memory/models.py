"""The JSON shapes the server returns, as pydantic models with the server's field names.
Fields this client does not model are kept (``model_extra``), so nothing the server sends
is lost. Messages are AI SDK ``UIMessage`` dicts, stored and returned as given.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

Message = dict[str, Any]
"""An AI SDK ``UIMessage``: ``id``, ``role``, ``parts`` and any other fields, kept as given."""


class Model(BaseModel):
    """A server shape: unknown fields are kept."""

    model_config = ConfigDict(extra="allow")


class SessionUsage(Model):
    input_tokens: int
    output_tokens: int
    cost: float


class SessionInfo(Model):
    """A session record."""

    id: str
    name: str | None
    parent_session_id: str | None
    model: str | None
    source: str | None
    usage: SessionUsage
    end_reason: str | None
    """Why the session ended; ``None`` while open."""
    profile: str | None
    """The long-term profile the session is bound to."""
    created_at: int
    """Milliseconds since the epoch."""
    updated_at: int


class AppendOutcome(Model):
    """What an append did with one message: ``inserted`` (with its parent) or ``already_exists``."""

    outcome: Literal["inserted", "already_exists"]
    parent_id: str | None = None


class SearchHit(Model):
    """A full-text search hit."""

    session_id: str
    message_id: str
    role: str
    content: str
    score: float


class ContextBlock(Model):
    """A context block as the prompt shows it."""

    label: str
    description: str | None
    content: str
    tokens: int
    max_tokens: int | None
    kind: str
    """``readonly`` (a profile block too), ``writable``, ``searchable`` or ``skill``."""
    scope: str


class TokenUsage(Model):
    """One LLM call's tokens."""

    input_tokens: int
    output_tokens: int


class CompactResult(Model):
    """What a compaction did."""

    compacted: bool
    from_message_id: str | None
    to_message_id: str | None
    summary: str | None
    usage: TokenUsage | None
    """The summarizing call's tokens; ``None`` when nothing was compacted."""


class CompactionOverlay(Model):
    id: str
    summary: str
    from_message_id: str
    to_message_id: str
    created_at: int
    seq: int


class Compaction(Model):
    """A compaction overlay and the overlay that replaced it, if any."""

    overlay: CompactionOverlay
    superseded_by: str | None


class ToolDefinition(Model):
    """A tool as MCP describes it: name, description, JSON input schema."""

    name: str
    description: str
    input_schema: dict[str, Any] = Field(alias="inputSchema")


class ToolResult(Model):
    """What a tool returned: the text the model reads, and whether it refused."""

    result: str
    is_error: bool


class Forgotten(Model):
    reason: str
    at: int


class MergeNote(Model):
    """Why and when consolidation merged a memory into the one ``superseded_by`` names."""

    reason: str
    at: int


class Memory(Model):
    """A typed long-term memory with its provenance."""

    id: str
    kind: Literal["fact", "event", "instruction", "task"]
    content: str
    key: str | None
    questions: list[str]
    session_id: str | None
    source_message_ids: list[str]
    recorded_at: int
    valid_at: int | None
    superseded_by: str | None
    forgotten: Forgotten | None
    metadata: dict[str, str | int | float | bool | list[str]] = {}
    """Your own metadata (absent on the wire when empty)."""
    expires_at: int | None = None
    """When it stops being current, in milliseconds since the epoch (``None``: never); from
    then on recall and the default list leave it out, ``list(all=True)`` still shows it."""
    merged: MergeNote | None = None
    """Set when consolidation merged it into ``superseded_by``."""
    confirmed_at: int | None = None
    """The latest time the same thing was said again (a paraphrase merged into it)."""
    recalled_at: int | None = None
    """The latest time recall returned it (written at most once an hour)."""


class MemoryPage(Model):
    """A page of memories and the cursor of the next (``None`` on the last)."""

    memories: list[Memory]
    next_cursor: str | None


class ProfilePage(Model):
    """A page of profile names in name order, and the ``after`` of the next page (``None`` on
    the last)."""

    profiles: list[str]
    next: str | None = None


class RawMessage(Model):
    """A message as long-term memory stored it."""

    id: str
    session_id: str
    role: str
    content: str
    created_at: int


class ChannelRank(Model):
    channel: str
    rank: int
    score: float


class RecallHit(Model):
    """A recall hit: a memory (``item.type == "memory"``) or a raw message (``"raw"``)."""

    item: dict[str, Any]
    score: float
    ranks: list[ChannelRank]

    @property
    def memory(self) -> Memory | None:
        """The hit as a memory, when it is one."""
        return Memory.model_validate(self.item) if self.item.get("type") == "memory" else None

    @property
    def raw(self) -> RawMessage | None:
        """The hit as a raw message, when it is one."""
        return RawMessage.model_validate(self.item) if self.item.get("type") == "raw" else None


class Degradation(Model):
    """A feature that could not run, and why."""

    feature: str
    reason: str


class StageUsage(Model):
    """LLM calls and tokens of one stage."""

    calls: int
    requests: int = 0
    repairs: int = 0
    input_tokens: int
    output_tokens: int


class Usage(Model):
    """LLM usage per stage (extraction, verification, synthesis, ...)."""

    stages: dict[str, StageUsage]

    @property
    def total(self) -> StageUsage:
        """Every stage added up."""
        return StageUsage(
            calls=sum(s.calls for s in self.stages.values()),
            requests=sum(s.requests for s in self.stages.values()),
            repairs=sum(s.repairs for s in self.stages.values()),
            input_tokens=sum(s.input_tokens for s in self.stages.values()),
            output_tokens=sum(s.output_tokens for s in self.stages.values()),
        )


class MergeMember(Model):
    """A memory of a planned merge, with its evidence against the survivor."""

    id: str
    content: str
    overlap: float | None = None
    """Share of rarity-weighted content words in common with the survivor (``None`` for it)."""
    cosine: float | None = None
    """Cosine of its vector and the survivor's, when both have one."""


class ContradictionMember(Model):
    """One memory of a flagged contradiction, as it reads now."""

    id: str
    content: str


class Contradiction(Model):
    """Two current memories the verification model said cannot both be true."""

    first: ContradictionMember
    """The older of the two."""
    second: ContradictionMember
    """The newer."""
    reason: str
    flagged_at: int


class PlannedMerge(Model):
    """One consolidation group: what stays, what is merged into it, and why."""

    kind: Literal["fact", "event", "instruction", "task"]
    survivor: MergeMember
    absorbed: list[MergeMember]
    reason: str


class ConsolidationReport(Model):
    """What a consolidation run merged (or, in a dry run, would merge)."""

    job_id: str | None = None
    dry_run: bool
    considered: int
    truncated: bool
    pairs_judged: int
    merges: list[PlannedMerge]
    absorbed: int
    rejected: list[PlannedMerge]
    """Groups the LLM said do not say the same thing."""
    stale: int
    """Merges skipped because a memory changed meanwhile."""
    contradictions: list[Contradiction] = []
    """Contradictions the LLM flagged in this run (none without an LLM or in a dry run)."""
    degraded: list[Degradation]
    usage: Usage


class BlockScore(Model):
    """A memory's score in the profile block: ``kind * (0.6 * said + 0.4 * used)``."""

    score: float
    kind: float
    said: float
    """Recency of recording or confirmation (half-life 30 days)."""
    used: float
    """Recency of use in recall (half-life 7 days), 0 if never."""


class BlockCandidate(Model):
    """A fact or open task the block considered, with its score and whether it is shown."""

    memory: Memory
    score: BlockScore
    chosen: bool


class ProfileDigest(Model):
    """A profile's digest: a short summary the LLM wrote from its memories."""

    text: str
    sources: list[str]
    """The memories it draws on."""
    generated_at: int
    read: int
    """How many memories it was written from."""


class DigestReport(Model):
    """What a digest run did."""

    digest: ProfileDigest | None
    written: bool
    reason: str
    usage: Usage


class BlockChoice(Model):
    """What the profile block shows, and why."""

    text: str | None
    at: int
    instructions: list[Memory]
    digest: ProfileDigest | None
    """The digest, when the block shows it (the memories did not all fit)."""
    candidates: list[BlockCandidate]
    """Facts and open tasks, best score first."""


class Answer(Model):
    """A synthesized answer and the memories it cites."""

    answer: str
    citations: list[str]


class RecallResult(Model):
    """What a recall found."""

    hits: list[RecallHit]
    answer: Answer | None
    temporal_facts: list[Any]
    analysis: dict[str, Any] | None
    terms: list[str]
    degraded: list[Degradation]
    usage: Usage


JobStatus = Literal[
    "queued",
    "extracting",
    "verifying",
    "storing",
    "vectorizing",
    "done",
    "done_with_errors",
    "failed",
]


class IngestJob(Model):
    """An ingest job; ``done``, ``done_with_errors`` and ``failed`` are final."""

    id: str
    session_id: str
    status: JobStatus
    failed_stage: str | None
    error: str | None
    new_messages: int
    known_messages: int
    memory_ids: list[str]
    vectorized: int
    degraded: list[Degradation]
    usage: Usage
    cancelled: bool = False
    attempts: int = 0
    """Failed runs so far."""

    @property
    def finished(self) -> bool:
        """True once the job will change no more."""
        return self.status in ("done", "done_with_errors", "failed")


class IngestAccepted(Model):
    """An accepted ingest: the job (``None`` when a stored session had nothing new)."""

    job: IngestJob | None
    status_url: str | None = None
    shipped: int | None = None
    already_shipped: int | None = None


class ShipReport(Model):
    profile: str
    session: str
    shipped: int
    already_shipped: int
    job: IngestJob | None
    queued: bool


class Ended(Model):
    """An ended session and what it shipped to its profile (``None`` when unbound)."""

    session: SessionInfo
    shipped: ShipReport | None


class SessionImport(Model):
    messages: int
    inserted: int
    already_present: int
    sessions_created: int


class ProfileImport(Model):
    raw_new: int
    raw_known: int
    memories_new: int
    memories_known: int
    superseded: int
    vectors: int
    settings: bool
    """Whether the export's extraction settings became the profile's (it had none)."""


class Purged(Model):
    memory: bool
    vectors: int
    raw_messages: int
    absorbed: int
    """Memories consolidation had merged into it, erased with it."""


class IngestLine(Model):
    """A line to ingest: role, text, and optionally the time (milliseconds) and metadata."""

    role: str
    content: str
    created_at: int | None = None
    metadata: dict[str, Any] | None = None
    """This message's own metadata (kept with it; extracted memories carry what their
    messages share)."""


class Category(Model):
    """A category the server's classifier may give a profile's memories."""

    name: str
    """1 to 40 of ``a-z 0-9 _ -``."""
    description: str = ""
    """What belongs in it (at most 200 characters; the server returns ``""`` when none)."""


class Settings(Model):
    """A profile's extraction settings; every part is optional (absent on the wire when unset).
    The categories the classifier chooses for a memory are stored in its metadata under
    ``categories``, so ``{"categories": "travel"}`` filters by them."""

    instructions: str | None = None
    """What to keep and what to ignore (at most 4,000 characters), added to the extraction and
    verification prompts."""
    categories: list[Category] = []
    """Labels the classifier chooses from (at most 32, names distinct)."""
    language: str | None = None
    """The language memories are written in (``"English"``, ``"fr"``); ``None``: the language
    of the messages they come from."""


class SettingsView(Model):
    """A profile's own settings and what extraction uses."""

    settings: Settings
    """The profile's own."""
    effective: Settings
    """What extraction uses: the deployment's instructions then the profile's (joined by a
    newline); the profile's categories and language where set, else the deployment's."""


class About(Model):
    """What a deployment is made of."""

    roles: dict[str, str]
    """The backend serving each storage role (``records``, ``sessions``, ``text``, ...)."""
    embedder: str | None
    llm_model: str | None
    """The chat model (``None`` without ``[llm]``)."""
    warnings: list[str]
    run_jobs: bool
    mcp_profile: str
