"""Every client method once, sync and async, against a real server, while an httpx event hook
records each request; then every request must match an operation of the server's OpenAPI
document (method, path, declared query parameters, body fields of its schema, required
fields present), and every documented operation must have been called. A route the client
lacks, or a call the server does not document, fails here."""

from __future__ import annotations

import inspect
import re
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import httpx
import pytest

from agent_memory import (
    AsyncMemoryClient,
    InvalidInputError,
    MemoryClient,
    NotFoundError,
    RefusedError,
)
from agent_memory.models import Category, IngestLine, RecallHit, Settings

from .conftest import FakeModel, Served, serve, text


async def resolve(value: Any) -> Any:
    """The value, awaited when the async client returned an awaitable."""
    return await value if inspect.isawaitable(value) else value


async def collect(values: Iterator[Any] | AsyncIterator[Any]) -> list[Any]:
    if isinstance(values, AsyncIterator):
        return [v async for v in values]
    return list(values)


async def tour(memory: MemoryClient | AsyncMemoryClient, model: FakeModel, tag: str) -> None:
    """Calls every method of the client, checking what each returns."""
    r = resolve
    await r(memory.health())
    assert (await r(memory.ready()))["status"] == "ok"
    about = await r(memory.about())
    assert (about.embedder, about.roles["sessions"], about.llm_model) == ("none", "sqlite", "fake")
    sid = f"tour-{tag}"
    profile_name = f"tour-{tag}"
    session = await r(
        memory.sessions.create(id=sid, name="tour", model="m", source="t", profile=profile_name)
    )
    assert (await r(memory.sessions.get(sid))).id == sid
    info = await r(session.info())
    assert (info.name, info.profile) == ("tour", profile_name)

    outcome = await r(session.append_message(text("m0", "user", "hello there")))
    assert outcome.outcome == "inserted"
    chain = [
        text(f"m{i}", "user" if i % 2 == 0 else "assistant", f"turn {i} of the tour")
        for i in range(1, 8)
    ]
    outcomes = await r(session.append_messages(chain, parent_id="m0"))
    assert [o.parent_id for o in outcomes][:2] == ["m0", "m1"]
    await r(session.append_message(text("b1", "assistant", "a branch"), parent_id="m0"))
    assert [m["id"] for m in await r(session.get_branches("m0"))] == ["m1", "b1"]
    assert [m["id"] for m in await r(session.get_history("m3"))] == ["m0", "m1", "m2", "m3"]
    assert len(await r(session.get_history("m3", raw=True))) == 4
    assert (await r(session.get_latest_leaf()))["id"] == "b1"
    assert (await r(session.get_latest_leaf(under="m1")))["id"] == "m7"
    assert [m["id"] for m in await r(session.get_history())] == ["m0", "b1"]
    await r(session.delete_message("b1"))
    await r(session.update_message(text("m7", "assistant", "the last turn")))
    assert (await r(session.get_history()))[-1]["parts"][0]["text"] == "the last turn"
    assert [h.message_id for h in await r(session.search("turn 3", limit=5, mode="phrase"))] == [
        "m3"
    ]
    assert len(await r(memory.sessions.search("tour", limit=50, mode="any_words"))) >= 6

    before = len(model.requests)
    compacted = await r(session.compact(leaf_id="m7"))
    assert compacted.compacted and compacted.usage is not None
    assert compacted.usage.input_tokens == 300
    assert len(model.requests) > before
    assert len(await r(session.get_compactions())) == 1

    blocks = await r(session.get_context_blocks())
    assert [b.label for b in blocks] == ["soul", "memory", "knowledge", "profile"]
    assert (await r(session.get_context_block("soul"))).kind == "readonly"
    await r(session.replace_context_block("memory", "a fact"))
    assert (
        await r(session.append_context_block("memory", "another fact"))
    ).content == "a fact\nanother fact"
    with pytest.raises(RefusedError):
        await r(session.replace_context_block("soul", "x"))
    frozen = await r(session.refresh_system_prompt())
    assert "another fact" in frozen
    assert await r(session.freeze_system_prompt()) == frozen
    names = [t.name for t in await r(session.tool_definitions())]
    assert {"set_context", "recall", "remember"} <= set(names), names
    openai_tools = await r(session.tools())
    assert openai_tools[0]["type"] == "function"
    result = await r(
        session.execute_tool("set_context", {"label": "memory", "content": "replaced"})
    )
    assert not result.is_error, result.result
    assert await r(session.freeze_system_prompt()) == frozen
    assert "replaced" in await r(session.refresh_system_prompt())
    assert (await r(session.rename("tour renamed"))).name == "tour renamed"
    assert (await r(session.bind(profile_name))).profile == profile_name

    fork = await r(memory.sessions.fork(sid, "m3", name="fork"))
    assert (await r(fork.delete_messages(["m3", "unknown"]))) == 1
    page = await r(memory.sessions.list_page(limit=10, offset=0))
    assert any(s.id == fork.id for s in page)
    listed = [s.id for s in await collect(memory.sessions.list(page_size=1))]
    assert sid in listed and fork.id in listed
    exported = await collect(fork.export_lines())
    assert len(exported) >= 3
    await r(fork.delete())
    with pytest.raises(NotFoundError):
        await r(fork.info())
    imported = await r(memory.sessions.import_(exported))
    assert imported.sessions_created == 1
    await r(memory.sessions.delete(fork.id))

    ended = await r(session.end(reason="tour over"))
    assert ended.session.end_reason == "tour over"
    assert ended.shipped is not None and ended.shipped.job is not None
    profile = memory.profile(profile_name)
    assert (await r(profile.wait_for_job(ended.shipped.job.id))).status == "done"
    trip = {"trip": "alps", "day": 2, "paid": True, "tags": ["train", "lake"]}
    remembered = await r(
        profile.remember(
            "The tour visits Lyon", kind="event", key="tour stop", session_id=sid, metadata=trip
        )
    )
    assert remembered.metadata == trip
    with pytest.raises(InvalidInputError, match="metadata"):
        await r(profile.remember("Nested", metadata={"owner": {"name": "ada"}}))
    accepted = await r(
        profile.ingest(
            "side", [IngestLine(role="user", content="A side trip to Annecy", created_at=1)]
        )
    )
    assert accepted.job is not None
    job = await r(profile.wait_for_job(accepted.job.id))
    assert job.finished
    assert job.attempts == 0, "no failed run"
    assert [d.feature for d in job.degraded] == ["vectors"], "extraction ran through the model"
    assert job.usage.stages["extraction"].calls >= 1, job.usage
    again = await r(profile.ingest(sid, leaf="m7", from_="m0", to="m7"))
    assert again.job is None and again.already_shipped
    recalled = await r(profile.recall("Lyon", limit=3, answer=True, explain=True))
    assert recalled.hits[0].memory is not None and recalled.hits[0].memory.id == remembered.id
    assert recalled.answer is not None and recalled.usage.total.calls >= 1
    annecy = await r(profile.recall("Annecy"))
    assert annecy.hits[0].raw is not None and "Annecy" in annecy.hits[0].raw.content
    listed_page = await r(
        profile.list_page(
            kind="event", key="tour stop", session=sid, all=True, since=0, until=2**53, limit=5
        )
    )
    assert [m.id for m in listed_page.memories] == [remembered.id]
    assert listed_page.memories[0].metadata == trip
    chosen = {"trip": "alps", "day": {"$gte": 2}, "tags": {"$in": ["lake"]}}
    assert [m.id for m in await collect(profile.list(metadata=chosen))] == [remembered.id]
    exists = {"paid": {"$exists": True}}
    assert [m.id for m in await collect(profile.list(metadata=exists))] == [remembered.id]
    assert await collect(profile.list(metadata={"trip": "other"})) == []
    filtered = await r(profile.recall("Lyon", metadata=chosen))
    assert [h.item["id"] for h in filtered.hits] == [remembered.id]
    with pytest.raises(InvalidInputError, match=r"\$near"):
        await r(profile.list_page(metadata={"day": {"$near": 2}}))
    assert remembered.id in [m.id for m in await collect(profile.list(page_size=1))]
    assert any(j.id == job.id for j in await r(profile.jobs()))
    expires = int(time.time() * 1000) + 3_600_000
    other = await r(profile.remember("Temporary", kind="fact", expires_at=expires))
    assert other.expires_at == expires
    await r(profile.forget(other.id, reason="tour"))
    assert (await r(profile.purge(other.id, with_sources=True))).memory
    assert (await r(profile.consolidate(dry_run=True))).dry_run
    assert not (await r(profile.consolidate())).dry_run
    assert isinstance(await r(profile.merged(remembered.id)), list)
    assert isinstance(await r(profile.contradictions()), list)
    assert len((await r(profile.block(tokens=200, top=5))).candidates) <= 5
    assert (await r(profile.refresh_digest(force=True))).reason
    await r(profile.digest())
    stop = Category(name="stop", description="A stop")
    chosen_settings = await r(
        profile.set_settings(instructions="Keep the stops", categories=[stop], language="English")
    )
    assert chosen_settings.settings.categories == [stop]
    assert (await r(profile.settings())).effective == chosen_settings.settings
    lines = await collect(profile.export_lines(vectors=False))
    names = await r(memory.profiles())
    assert profile_name in names
    # Paged in name order: pages of one give every name, each once.
    assert len((await r(memory.profiles_page(limit=1))).profiles) == 1
    paged = await collect(memory.profile_names(limit=1))
    assert profile_name in paged
    assert paged == sorted(set(paged))
    await r(profile.delete())
    copy = memory.profile(f"{profile_name}-copy")
    assert (await r(copy.import_(lines))).memories_new >= 1
    copied = [m for m in await collect(copy.list()) if m.id == remembered.id]
    assert copied[0].metadata == trip, "metadata travels in the export"
    await r(copy.forget(remembered.id))
    await r(session.delete())


def operations(doc: dict[str, Any]) -> list[dict[str, Any]]:
    schemas = doc.get("components", {}).get("schemas", {})
    out = []
    for template, item in doc["paths"].items():
        pattern = re.compile("^" + re.sub(r"\{[^}]+\}", "[^/]+", template) + "$")
        for method, operation in item.items():
            ref = (
                (operation.get("requestBody") or {})
                .get("content", {})
                .get("application/json", {})
                .get("schema", {})
                .get("$ref")
            )
            out.append(
                {
                    "method": method.upper(),
                    "template": template,
                    "pattern": pattern,
                    "query": {
                        p["name"] for p in operation.get("parameters", []) if p["in"] == "query"
                    },
                    "schema": schemas.get(ref.rsplit("/", 1)[-1]) if ref else None,
                }
            )
    return out


def check_against_document(recorded: list[httpx.Request], doc: dict[str, Any]) -> None:
    documented = operations(doc)
    called = set()
    for request in recorded:
        candidates = [
            o
            for o in documented
            if o["method"] == request.method and o["pattern"].match(request.url.path)
        ]
        candidates.sort(key=lambda o: o["template"].count("{"))
        assert candidates, f"{request.method} {request.url.path} is not in the document"
        operation = candidates[0]
        called.add((operation["method"], operation["template"]))
        for name in request.url.params:
            assert name in operation["query"], (
                f"{operation['template']} declares no query parameter {name}"
            )
        schema = operation["schema"]
        if (
            schema
            and "properties" in schema
            and request.headers.get("content-type") == "application/json"
        ):
            import json

            body = json.loads(request.content)
            for key in body:
                assert key in schema["properties"], (
                    f"{operation['template']} has no body field {key}"
                )
            for key in schema.get("required", []):
                assert key in body, f"{operation['template']} requires {key}"
    missing = sorted({(o["method"], o["template"]) for o in documented} - called)
    assert missing == [], f"documented operations without a client call: {missing}"


def test_every_method_sync_matches_the_document(server: Served, model: FakeModel) -> None:
    recorded: list[httpx.Request] = []
    http = httpx.Client(event_hooks={"request": [recorded.append]})
    memory = MemoryClient(server.base_url, http=http)
    coroutine = tour(memory, model, "sync")
    # The sync client never awaits: drive the tour's coroutine to its end by hand.
    try:
        coroutine.send(None)
    except StopIteration:
        pass
    else:
        pytest.fail("the sync tour awaited something")
    http.close()
    check_against_document(recorded, MemoryClient(server.base_url).openapi())


async def test_every_method_async_matches_the_document(server: Served, model: FakeModel) -> None:
    recorded: list[httpx.Request] = []

    async def record(request: httpx.Request) -> None:
        recorded.append(request)

    async with httpx.AsyncClient(event_hooks={"request": [record]}) as http:
        memory = AsyncMemoryClient(server.base_url, http=http)
        await tour(memory, model, "async")
        toured = list(recorded)
        check_against_document(toured, await memory.openapi())


LAUNCHES: list[tuple[str, dict[str, Any]]] = [
    ("The Atlas launch is in May", {"project": "atlas", "priority": 2}),
    ("The Borealis launch is in June", {"project": "borealis", "priority": 1}),
    ("The Cygnus launch is in July", {"project": "cygnus"}),
]
DORADO = IngestLine(role="user", content="The Dorado launch is in August.")
EITHER = {"$or": [{"project": "cygnus"}, {"priority": {"$lt": 2}}]}


def ids(hits: list[RecallHit], kind: str | None = None) -> list[str]:
    """The hits' ids (of the ``kind`` given: ``memory`` or ``raw``), sorted."""
    return sorted(h.item["id"] for h in hits if kind in (None, h.item["type"]))


def test_recall_filters_by_metadata(client: MemoryClient) -> None:
    team = client.profile("launches-sync")
    atlas, borealis, cygnus = (team.remember(c, metadata=m).id for c, m in LAUNCHES)
    accepted = team.ingest("launch-chat", [DORADO])
    assert accepted.job is not None and team.wait_for_job(accepted.job.id).status == "done"

    def recalled(metadata: dict[str, Any] | None = None) -> list[RecallHit]:
        return team.recall("when is the launch?", metadata=metadata).hits

    unfiltered = recalled()
    assert ids(unfiltered, "memory") == sorted([atlas, borealis, cygnus])
    assert ids(unfiltered, "raw"), unfiltered
    # Raw messages carry no metadata: a filter on a value leaves them out.
    assert ids(recalled({"project": "atlas"})) == [atlas]
    assert ids(recalled(EITHER)) == sorted([borealis, cygnus])
    assert recalled({"priority": {"$gte": 3}}) == []
    # A filter an empty mapping passes lets them in.
    unlabelled = recalled({"project": {"$exists": False}})
    assert unlabelled and all(h.raw and "Dorado" in h.raw.content for h in unlabelled)
    with pytest.raises(InvalidInputError, match=r"\$near"):
        team.recall("when is the launch?", metadata={"priority": {"$near": 1}})


async def test_async_recall_filters_by_metadata(aclient: AsyncMemoryClient) -> None:
    team = aclient.profile("launches-async")
    atlas, borealis, cygnus = [(await team.remember(c, metadata=m)).id for c, m in LAUNCHES]
    accepted = await team.ingest("launch-chat", [DORADO])
    assert accepted.job is not None
    assert (await team.wait_for_job(accepted.job.id)).status == "done"

    async def recalled(metadata: dict[str, Any] | None = None) -> list[RecallHit]:
        return (await team.recall("when is the launch?", metadata=metadata)).hits

    unfiltered = await recalled()
    assert ids(unfiltered, "memory") == sorted([atlas, borealis, cygnus])
    assert ids(unfiltered, "raw"), unfiltered
    assert ids(await recalled({"project": "atlas"})) == [atlas]
    assert ids(await recalled(EITHER)) == sorted([borealis, cygnus])
    assert await recalled({"priority": {"$gte": 3}}) == []
    unlabelled = await recalled({"project": {"$exists": False}})
    assert unlabelled and all(h.raw and "Dorado" in h.raw.content for h in unlabelled)
    with pytest.raises(InvalidInputError, match=r"\$near"):
        await team.recall("when is the launch?", metadata={"priority": {"$near": 1}})


def millis(at: datetime) -> int:
    """An aware datetime in milliseconds since the epoch (exact, as the server counts)."""
    return (at - datetime(1970, 1, 1, tzinfo=timezone.utc)) // timedelta(milliseconds=1)


def test_expired_memories_leave_recall_and_the_default_list(client: MemoryClient) -> None:
    desk = client.profile("expiry-sync")
    soon = datetime.now(timezone.utc) + timedelta(seconds=1.5)
    gate = desk.remember("The flight boards at gate B12 today", kind="event", expires_at=soon)
    far = "2999-01-01T00:00:00Z"
    passport = desk.remember("The passport is valid for years", expires_at=far)
    plain = desk.remember("The hotel is near the station")
    assert gate.expires_at == millis(soon), "an aware datetime is sent as isoformat"
    assert passport.expires_at == millis(datetime(2999, 1, 1, tzinfo=timezone.utc))
    assert plain.expires_at is None, "no expiry: the field is absent"

    def listed(all: bool | None = None) -> list[str]:
        return sorted(m.id for m in desk.list(all=all))

    def recalled(query: str) -> list[str]:
        return [h.item["id"] for h in desk.recall(query).hits]

    assert listed() == sorted([gate.id, passport.id, plain.id]), "not expired yet"
    assert gate.id in recalled("gate B12")

    time.sleep(max(0.0, (soon - datetime.now(timezone.utc)).total_seconds() + 0.1))
    assert listed() == sorted([passport.id, plain.id]), "the default list leaves out what expired"
    assert gate.id not in recalled("gate B12"), "recall leaves out what expired"
    assert passport.id in recalled("passport valid")
    assert listed(all=True) == sorted([gate.id, passport.id, plain.id]), "all still lists it"
    audited = [m for m in desk.list(all=True) if m.id == gate.id]
    assert audited[0].expires_at == millis(soon)

    past = millis(datetime.now(timezone.utc)) - 60_000
    with pytest.raises(InvalidInputError, match="not in the future") as refused:
        desk.remember("Too late", expires_at=past)
    assert refused.value.status == 400
    with pytest.raises(InvalidInputError, match="RFC 3339"):
        desk.remember("Unreadable", expires_at="next tuesday")
    with pytest.raises(ValueError, match="aware"):
        desk.remember("Naive", expires_at=datetime.now() + timedelta(days=1))
    assert listed(all=True) == sorted([gate.id, passport.id, plain.id]), "nothing refused is stored"


DEPLOYMENT_SETTINGS = """
[memory]
embedder = "none"
instructions = "Ignore small talk."

[[memory.categories]]
name = "work"
description = "The job"
"""


@pytest.fixture(scope="module")
def deployment() -> Iterator[Served]:
    """A server whose deployment has its own instructions and categories."""
    served = serve(DEPLOYMENT_SETTINGS)
    yield served
    served.stop()


async def settings_round_trip(memory: MemoryClient | AsyncMemoryClient, name: str) -> None:
    """Sets a profile's settings, reads them back (own and effective), is refused a bad
    category name without a change, and clears them."""
    r = resolve
    profile = memory.profile(name)
    with pytest.raises(NotFoundError):
        await r(profile.settings())

    stored = await r(
        profile.set_settings(
            instructions="Keep travel plans; ignore the weather.",
            categories=[
                Category(name="travel", description="Trips, bookings and places"),
                {"name": "food-2"},
            ],
            language="French",
        )
    )
    travel = Category(name="travel", description="Trips, bookings and places")
    food = Category(name="food-2", description="")  # none given: the server says ""
    assert stored.settings == Settings(
        instructions="Keep travel plans; ignore the weather.",
        categories=[travel, food],
        language="French",
    )
    assert stored.effective == Settings(
        instructions="Ignore small talk.\nKeep travel plans; ignore the weather.",
        categories=[travel, food],
        language="French",
    )
    assert await r(profile.settings()) == stored, "read back as stored"
    assert name in await r(memory.profiles()), "setting them created the profile"

    with pytest.raises(InvalidInputError, match="Not Valid") as refused:
        await r(profile.set_settings(categories=[Category(name="Not Valid")]))
    assert (refused.value.status, refused.value.code) == (400, "invalid_input")
    with pytest.raises(InvalidInputError):
        await r(profile.set_settings(language="French!!"))
    assert await r(profile.settings()) == stored, "a refused update changes nothing"

    cleared = await r(profile.set_settings())
    assert cleared.settings == Settings()
    assert cleared.settings.model_dump(exclude_defaults=True) == {}
    assert cleared.effective == Settings(
        instructions="Ignore small talk.",
        categories=[Category(name="work", description="The job")],
    )
    assert await r(profile.settings()) == cleared


def test_profile_settings(deployment: Served) -> None:
    with MemoryClient(deployment.base_url) as memory:
        coroutine = settings_round_trip(memory, "settings-sync")
        # The sync client never awaits: drive the coroutine to its end by hand.
        try:
            coroutine.send(None)
        except StopIteration:
            pass
        else:
            pytest.fail("the sync round trip awaited something")


async def test_async_profile_settings(deployment: Served) -> None:
    async with AsyncMemoryClient(deployment.base_url) as memory:
        await settings_round_trip(memory, "settings-async")


def test_consolidation_merges_paraphrases_and_the_block_shows_scores(
    client: MemoryClient,
) -> None:
    tidy = client.profile("tidy-py")
    said = [
        "The user likes green tea.",
        "the user likes green tea",
        "The user likes GREEN tea!",
    ]
    ids = [tidy.remember(text).id for text in said]
    tidy.remember("The user walks the dog every morning.")
    negated = tidy.remember("The user does not like green tea at night.")
    planned = tidy.consolidate(dry_run=True)
    assert planned.dry_run and len(planned.merges) == 1 and planned.absorbed == 2
    assert planned.contradictions == [], "a dry run asks nothing about contradictions"
    assert len(tidy.list_page().memories) == 5, "a dry run writes nothing"
    done = tidy.consolidate()
    merge = done.merges[0]
    # The fake model flags every pair it is asked about: the negation against the survivor.
    assert [(c.first.id, c.second.id) for c in done.contradictions] == [
        (merge.survivor.id, negated.id)
    ]
    assert tidy.contradictions() == done.contradictions
    assert sorted([merge.survivor.id, *(m.id for m in merge.absorbed)]) == sorted(ids)
    merged = tidy.merged(merge.survivor.id)
    assert [m.merged.reason for m in merged if m.merged] == [merge.reason] * 2
    assert all(m.superseded_by == merge.survivor.id for m in merged)
    block = tidy.block(tokens=200)
    assert block.text is not None and "green tea" in block.text.lower()
    assert [c.chosen for c in block.candidates] == [True, True, True]
    assert all(c.score.said > 0.99 and c.score.used == 0 for c in block.candidates)
    refreshed = tidy.refresh_digest(force=True)
    assert refreshed.written and refreshed.reason == "asked for"
    digest = tidy.digest()
    assert digest is not None and digest.text == "The user's profile in brief."
    assert len(digest.sources) == 1
    tight = tidy.block(tokens=15)
    assert tight.text is not None and tight.text.startswith("Summary:\nThe user's profile")
    assert tight.digest == digest
    assert tidy.purge(merge.survivor.id).absorbed == 2
    assert tidy.contradictions() == [], "an erased memory takes its contradictions with it"
    tidy.delete()


def test_the_sync_client_is_generated_from_the_async_one() -> None:
    script = Path(__file__).resolve().parent.parent / "scripts" / "generate_sync.py"
    checked = subprocess.run(
        [sys.executable, str(script), "--check"], capture_output=True, text=True
    )
    assert checked.returncode == 0, checked.stderr


def test_the_models_match_the_documents_schemas(client: MemoryClient) -> None:
    """Each model of a documented response or request shape has exactly its properties: a
    field renamed, added or dropped on either side fails here."""
    from agent_memory import models

    schemas = client.openapi()["components"]["schemas"]
    pairs = {
        "Accepted": models.IngestAccepted,
        "Compacted": models.CompactResult,
        "Ended": models.Ended,
        "Overlay": models.Compaction,
        "ProfileImport": models.ProfileImport,
        "Purged": models.Purged,
        "SessionImport": models.SessionImport,
        "ToolResult": models.ToolResult,
        "IngestLine": models.IngestLine,
        "Settings": models.Settings,
        "CategoryBody": models.Category,
        "SettingsView": models.SettingsView,
    }
    for name, model in pairs.items():
        documented = set(schemas[name]["properties"])
        fields = {f.alias or n for n, f in model.model_fields.items()}
        assert fields == documented, (
            f"{model.__name__} {sorted(fields)} vs {name} {sorted(documented)}"
        )
        for required in schemas[name].get("required", []):
            field = next(f for n, f in model.model_fields.items() if (f.alias or n) == required)
            assert field.is_required(), f"{model.__name__}.{required} is required by the document"


def test_session_tools_are_plain_functions(client: MemoryClient) -> None:
    from agent_memory import session_tools

    session = client.sessions.create(profile="tools-user")
    tools = {t.name: t for t in session_tools(session)}
    assert {"set_context", "recall", "remember"} <= set(tools)
    assert tools["remember"].to_openai()["function"]["parameters"]["type"] == "object"
    assert not tools["set_context"](label="memory", content="Likes tea").startswith("Error:")
    assert session.get_context_block("memory").content == "Likes tea"
    assert tools["set_context"](label="soul", content="x").startswith("Error:"), (
        "a refusal is a result"
    )
    tools["remember"](content="Tools user drinks tea")
    assert "Tools user drinks tea" in tools["recall"](query="tea")


async def test_async_session_tools_are_awaitable_functions(aclient: AsyncMemoryClient) -> None:
    from agent_memory import async_session_tools

    session = await aclient.sessions.create(profile="atools-user")
    tools = {t.name: t for t in await async_session_tools(session)}
    await tools["remember"](content="Async tools user drinks coffee")
    assert "Async tools user drinks coffee" in await tools["recall"](query="coffee")


def test_a_bound_session_shows_its_profile_with_no_block_declared(deployment: Served) -> None:
    """The deployment declares no profile block: a bound session's prompt still shows what
    the profile remembers, frozen until a refresh; an unbound session's does not."""
    with MemoryClient(deployment.base_url) as memory:
        memory.profile("gus").remember("Vegetarian, no mushrooms", kind="fact", key="diet")
        bound = memory.sessions.create(profile="gus")
        prompt = bound.freeze_system_prompt()
        assert "diet: Vegetarian, no mushrooms" in prompt
        memory.profile("gus").remember("Lives in Porto", kind="fact", key="city")
        assert bound.freeze_system_prompt() == prompt
        assert "city: Lives in Porto" in bound.refresh_system_prompt()
        unbound = memory.sessions.create()
        assert "Vegetarian" not in unbound.freeze_system_prompt()


def test_the_readme_python_blocks_run_as_written(deployment: Served) -> None:
    """The front page's Python blocks, run as they are against a real server (only the
    address is the test server's), so the README stays true."""
    readme = Path(__file__).resolve().parents[3] / "README.md"
    blocks = re.findall(r"```python\n(.*?)```", readme.read_text(), re.S)
    assert blocks, "README.md has a Python block"
    for block in blocks:
        code = block.replace("http://127.0.0.1:8787", deployment.base_url)
        exec(compile(code, str(readme), "exec"), {})
