"""LangGraph's ``BaseStore`` over the server's profiles: a compiled graph's nodes put, search
and delete through the store (sync and async), and the store's own methods return
LangGraph's ``Item`` and ``SearchItem`` with the values exactly as put."""

from __future__ import annotations

from typing import Any

from langgraph.graph import END, START, StateGraph
from langgraph.runtime import Runtime
from langgraph.store.base import Item, SearchItem
from typing_extensions import TypedDict

from agent_memory import AsyncMemoryClient, MemoryClient
from agent_memory.integrations.langgraph import MemoryStore, decode_label, encode_label

from .conftest import Served


class State(TypedDict, total=False):
    user: str
    fact: str
    found: list[str]
    after_delete: list[str]


def build(store: MemoryStore, *, asynchronous: bool) -> Any:
    def remember(state: State, runtime: Runtime[None]) -> State:
        assert runtime.store is not None
        runtime.store.put(
            ("users", state["user"], "facts"), "diet", {"text": state["fact"], "kind": "diet"}
        )
        return {}

    def search(state: State, runtime: Runtime[None]) -> State:
        assert runtime.store is not None
        items = runtime.store.search(
            ("users", state["user"]), query="vegetarian", filter={"kind": "diet"}
        )
        return {"found": [i.value["text"] for i in items]}

    def forget(state: State, runtime: Runtime[None]) -> State:
        assert runtime.store is not None
        runtime.store.delete(("users", state["user"], "facts"), "diet")
        items = runtime.store.search(("users", state["user"]), query="vegetarian")
        return {"after_delete": [i.value["text"] for i in items]}

    async def aremember(state: State, runtime: Runtime[None]) -> State:
        assert runtime.store is not None
        await runtime.store.aput(
            ("users", state["user"], "facts"), "diet", {"text": state["fact"], "kind": "diet"}
        )
        return {}

    async def asearch(state: State, runtime: Runtime[None]) -> State:
        assert runtime.store is not None
        items = await runtime.store.asearch(
            ("users", state["user"]), query="vegetarian", filter={"kind": "diet"}
        )
        return {"found": [i.value["text"] for i in items]}

    async def aforget(state: State, runtime: Runtime[None]) -> State:
        assert runtime.store is not None
        await runtime.store.adelete(("users", state["user"], "facts"), "diet")
        items = await runtime.store.asearch(("users", state["user"]), query="vegetarian")
        return {"after_delete": [i.value["text"] for i in items]}

    builder = StateGraph(State)
    nodes = [
        ("remember", aremember if asynchronous else remember),
        ("search", asearch if asynchronous else search),
        ("forget", aforget if asynchronous else forget),
    ]
    for name, node in nodes:
        builder.add_node(name, node)
    builder.add_edge(START, "remember")
    builder.add_edge("remember", "search")
    builder.add_edge("search", "forget")
    builder.add_edge("forget", END)
    return builder.compile(store=store)


def test_a_graph_puts_searches_and_deletes_through_the_server(server: Served) -> None:
    with MemoryClient(server.base_url) as memory:
        graph = build(MemoryStore(memory), asynchronous=False)
        state = graph.invoke({"user": "ada@example", "fact": "Ada is vegetarian"})
        assert state["found"] == ["Ada is vegetarian"]
        assert state["after_delete"] == []
        # On the server: a profile per namespace, holding the item as a keyed memory.
        assert "lg.users.ada_40example.facts" in memory.profiles()


async def test_an_async_graph_does_the_same(server: Served) -> None:
    async with AsyncMemoryClient(server.base_url) as memory:
        graph = build(MemoryStore(aclient=memory), asynchronous=True)
        state = await graph.ainvoke({"user": "bob_1", "fact": "Bob is vegetarian on weekdays"})
        assert state["found"] == ["Bob is vegetarian on weekdays"]
        assert state["after_delete"] == []


def test_the_store_returns_langgraphs_types_with_exact_values(server: Served) -> None:
    with MemoryClient(server.base_url) as memory:
        store = MemoryStore(memory)
        value = {
            "text": "Prefers tea",
            "scores": [1, 2.5, None],
            "nested": {"ok": True},
            "ünï": "çødé",
        }
        store.put(("prefs", "carol"), "Drink Choice", value)
        item = store.get(("prefs", "carol"), "Drink Choice")
        assert isinstance(item, Item)
        assert (item.value, item.key, item.namespace) == (value, "Drink Choice", ("prefs", "carol"))
        # Keys that the server's key normalisation would merge stay apart.
        store.put(("prefs", "carol"), "drink choice", {"text": "Other"})
        assert store.get(("prefs", "carol"), "Drink Choice") == item
        # An update keeps created_at and moves updated_at.
        store.put(("prefs", "carol"), "Drink Choice", {"text": "Prefers coffee now"})
        updated = store.get(("prefs", "carol"), "Drink Choice")
        assert updated is not None and updated.value == {"text": "Prefers coffee now"}
        assert updated.created_at == item.created_at and updated.updated_at >= item.updated_at
        assert store.get(("prefs", "carol"), "missing") is None
        assert store.get(("prefs", "nobody"), "Drink Choice") is None

        hits = store.search(("prefs",), query="coffee")
        assert [h.key for h in hits] == ["Drink Choice"]
        assert isinstance(hits[0], SearchItem) and hits[0].score is not None and hits[0].score > 0
        listed = store.search(("prefs", "carol"), limit=10)
        assert sorted(i.key for i in listed) == ["Drink Choice", "drink choice"]
        assert [i.key for i in store.search(("prefs",), filter={"text": {"$ne": "Other"}})] == [
            "Drink Choice"
        ]
        assert len(store.search(("prefs",), limit=1, offset=1)) == 1

        store.put(("prefs", "dave", "deep"), "k", {"text": "x"})
        assert store.list_namespaces(prefix=("prefs",)) == [
            ("prefs", "carol"),
            ("prefs", "dave", "deep"),
        ]
        assert store.list_namespaces(prefix=("prefs",), max_depth=2) == [
            ("prefs", "carol"),
            ("prefs", "dave"),
        ]
        assert store.list_namespaces(suffix=("deep",)) == [("prefs", "dave", "deep")]
        store.delete(("prefs", "carol"), "Drink Choice")
        assert store.get(("prefs", "carol"), "Drink Choice") is None


def test_namespace_labels_round_trip_through_profile_names() -> None:
    for label in ["plain", "with_underscore", "a.b", "ada@example.com", "日本", "__", "_41"]:
        encoded = encode_label(label)
        assert all(c.isascii() and (c.isalnum() or c in "-_") for c in encoded), encoded
        assert decode_label(encoded) == label


def test_a_filtered_query_finds_matches_ranked_below_the_page(server: Served) -> None:
    with MemoryClient(server.base_url) as memory:
        store = MemoryStore(memory)
        for i in range(15):
            store.put(
                ("notes", "erin"),
                f"n{i}",
                {"text": f"coffee coffee coffee note {i}", "kind": "noise"},
            )
        store.put(("notes", "erin"), "wanted", {"text": "a coffee", "kind": "wanted"})
        found = store.search(("notes",), query="coffee", filter={"kind": "wanted"}, limit=1)
        assert [i.key for i in found] == ["wanted"]
        assert len(store.search(("notes",), query="coffee", limit=5)) == 5
