"""The inspector (``/ui`` of ``memory serve``) in a real browser: Debian's Chromium, headless,
driven by Playwright, on a server seeded with a branching session, a compaction overlay, a
supersession chain, a finished job and stored text that looks like HTML. Screenshots of each
view go to a temporary directory, so a run leaves the tree clean; with
``MEMORY_INSPECTOR_SHOTS`` set to the absolute path of ``docs/inspector`` they refresh the ones
the README shows."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Page, expect, sync_playwright

from agent_memory import MemoryClient

from .conftest import FakeModel, Served, design_config, key_entry, serve, text

SHOTS = Path(
    os.environ.get("MEMORY_INSPECTOR_SHOTS") or tempfile.mkdtemp(prefix="inspector-shots-")
)
HOSTILE = '<script>window.__pwned = 1</script><img src=x onerror="window.__pwned = 2">'


def chromium() -> str:
    path = (
        os.environ.get("MEMORY_CHROMIUM")
        or shutil.which("chromium")
        or shutil.which("chromium-browser")
    )
    if path is None:
        raise RuntimeError("no Chromium: install Debian's chromium (scripts/setup-clients.sh does)")
    return path


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    with sync_playwright() as p:
        browser = p.chromium.launch(
            executable_path=chromium(),
            headless=True,
            args=[
                "--no-sandbox",
                "--disable-gpu",
                "--disable-quic",
                "--no-first-run",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
            ],
        )
        yield browser
        browser.close()


@pytest.fixture(scope="module")
def seeded(model: FakeModel) -> Iterator[Served]:
    served = serve(design_config(model))
    with MemoryClient(served.base_url) as memory:
        trip = memory.sessions.create(id="trip", name="Trip planning", profile="alice")
        trip.append_messages(
            [text("u1", "user", "Plan a trip to Lyon"), text("a1", "assistant", "By train?")]
        )
        trip.append_message(text("a2", "assistant", "By plane?"), parent_id="u1")
        chain = [
            text(f"t{i}", "user" if i % 2 == 0 else "assistant", f"turn {i} about the trip")
            for i in range(8)
        ]
        trip.append_messages(chain, parent_id="a1")
        trip.append_message(text("x1", "user", HOSTILE))
        assert trip.compact().compacted
        long = memory.sessions.create(id="long", name="Longer than a page")
        long.append_messages(
            [text(f"m{i}", "user" if i % 2 == 0 else "assistant", f"line {i}") for i in range(230)]
        )
        alice = memory.profile("alice")
        alice.remember("Prefers window seats", kind="fact", key="seat", session_id="trip")
        alice.remember("Prefers aisle seats now", kind="fact", key="seat", session_id="trip")
        alice.remember(HOSTILE, kind="fact")
        accepted = alice.ingest(
            "chat-1", [{"role": "user", "content": "My sister lives in Marseille."}]
        )
        assert accepted.job is not None
        assert alice.wait_for_job(accepted.job.id).status == "done"
    yield served
    served.stop()


def open_page(browser: Browser, url: str) -> Page:
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    page.on("dialog", lambda dialog: dialog.accept())
    page.goto(url)
    return page


def shot(page: Page, name: str) -> None:
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / f"{name}.png"), full_page=True)


def test_sessions_branches_overlays_and_escaping(browser: Browser, seeded: Served) -> None:
    page = open_page(browser, f"{seeded.base_url}/ui")
    expect(page.get_by_role("link", name="trip")).to_be_visible()
    shot(page, "sessions")
    page.get_by_role("link", name="trip").click()
    expect(page.locator("article.overlay")).to_have_count(1)
    expect(page.locator("article.leaf")).to_contain_text("latest leaf")
    # Stored HTML is text: it shows as written, and its script never ran.
    expect(page.locator('article[data-id="x1"]')).to_contain_text(
        "<script>window.__pwned = 1</script>"
    )
    assert page.evaluate("window.__pwned") is None
    assert page.locator('article[data-id="x1"] script, article[data-id="x1"] img').count() == 0
    shot(page, "session")

    # The raw originals instead of the summary.
    page.select_option("#raw-toggle", "1")
    expect(page.locator("article.overlay")).to_have_count(0)
    expect(page.locator('article[data-id="t3"]')).to_be_visible()
    # Another branch: u1's second answer.
    page.locator('button[data-branch="a2"]').click()
    expect(page.locator('article[data-id="a2"]')).to_be_visible()
    expect(page.locator('article[data-id="a1"]')).to_have_count(0)
    assert "leaf=a2" in page.url
    shot(page, "branch")

    # The profile block changed since the seed froze the prompt: refresh it, then look.
    with MemoryClient(seeded.base_url) as memory:
        memory.sessions.session("trip").refresh_system_prompt()
    page.get_by_role("link", name="Context").click()
    expect(page.locator("#frozen-prompt")).to_contain_text("SOUL (Identity)")
    expect(page.locator("#prompt-state")).to_contain_text("Current")
    expect(page.locator("#loaded-skills")).to_contain_text("none")
    # A write to a block leaves the frozen prompt as it was, and marks it stale.
    with MemoryClient(seeded.base_url) as memory:
        memory.sessions.session("trip").replace_context_block("memory", "Prefers trains")
    page.reload()
    expect(page.locator("#prompt-state")).to_contain_text("Stale")
    expect(page.locator("#frozen-prompt")).not_to_contain_text("Prefers trains")
    expect(page.locator("table")).to_contain_text("writable")
    shot(page, "context")
    page.close()


def test_a_long_session_pages_back(browser: Browser, seeded: Served) -> None:
    page = open_page(browser, f"{seeded.base_url}/ui#/session/long")
    expect(page.locator("article")).to_have_count(200)
    expect(
        page.get_by_text("230 stored messages on this path, the last 200 entries shown")
    ).to_be_visible()
    expect(page.locator('article[data-id="m229"]')).to_be_visible()
    expect(page.locator('article[data-id="m29"]')).to_have_count(0)
    page.get_by_role("link", name="Earlier messages").click()
    # The page of the path ending at the first one shown: m0 to m30 (31 messages, no more).
    expect(page.locator('article[data-id="m0"]')).to_be_visible()
    expect(page.locator("article")).to_have_count(31)
    expect(page.get_by_role("link", name="Earlier messages")).to_have_count(0)


def test_profiles_chains_recall_forget_jobs_and_health(browser: Browser, seeded: Served) -> None:
    page = open_page(browser, f"{seeded.base_url}/ui#/profile/alice")
    row = page.locator("tr", has_text="Prefers aisle seats now")
    expect(row).to_be_visible()
    expect(page.locator("td.content", has_text="<script>")).to_be_visible()
    assert page.evaluate("window.__pwned") is None
    row.get_by_role("button", name="Chain and provenance").click()
    chain = page.locator("ol.chain li")
    expect(chain).to_have_count(2)
    expect(chain.nth(0)).to_contain_text("Prefers window seats")
    expect(chain.nth(0)).to_contain_text("superseded")
    expect(page.locator("#memory-detail")).to_contain_text("Session trip")
    assert "null" not in page.locator("main").inner_text().split()
    shot(page, "profile")

    page.goto(f"{seeded.base_url}/ui#/recall?profile=alice&q=aisle%20seats")
    first = page.locator("tr[data-hit]").first
    expect(first).to_contain_text("Prefers aisle seats now")
    ranks = first.locator("td[data-channel]")
    assert ranks.count() >= 1
    assert any(ranks.nth(i).inner_text().strip() not in ("", "—") for i in range(ranks.count()))
    expect(page.locator("main")).to_contain_text("Degraded")
    shot(page, "recall")

    # Forget (confirmed): gone from the current list; listed, forgotten, with `all`.
    page.goto(f"{seeded.base_url}/ui#/profile/alice")
    page.locator("tr", has_text="Prefers aisle seats now").get_by_role(
        "button", name="Forget"
    ).click()
    expect(page.locator("tr", has_text="Prefers aisle seats now")).to_have_count(0)
    page.goto(f"{seeded.base_url}/ui#/profile/alice?all=true")
    expect(page.locator("tr", has_text="Prefers aisle seats now")).to_contain_text("forgotten")

    page.goto(f"{seeded.base_url}/ui#/jobs?profile=alice")
    expect(page.locator("tr[data-job]").first).to_contain_text("done")
    expect(page.locator("tr[data-job] td[data-attempts]").first).to_have_text("0")
    shot(page, "jobs")
    page.goto(f"{seeded.base_url}/ui#/health")
    expect(page.locator("main")).to_contain_text("sessions")
    expect(page.locator("main")).to_contain_text("sqlite")
    expect(page.locator("main")).to_contain_text("no embedder")
    shot(page, "health")
    # A narrow window still reads.
    page.set_viewport_size({"width": 420, "height": 900})
    page.goto(f"{seeded.base_url}/ui#/profile/alice")
    expect(page.get_by_role("button", name="Chain and provenance").first).to_be_visible()
    shot(page, "narrow")
    page.close()


def test_consolidation_merges_and_the_block_with_its_scores(
    browser: Browser, seeded: Served
) -> None:
    with MemoryClient(seeded.base_url) as memory:
        tea = memory.profile("tea")
        for said in [
            "The user likes green tea.",
            "the user likes green tea",
            "THE USER LIKES GREEN TEA!",
        ]:
            tea.remember(said)
        tea.remember("The user's sister likes green tea.")
        tea.remember("The user does not like green tea at night.")
        tea.remember("Book the dentist", kind="task")
    page = open_page(browser, f"{seeded.base_url}/ui#/consolidate/tea")
    expect(page.locator("#contradictions")).to_contain_text("none")
    planned = page.locator("ol.merges > li")
    expect(planned).to_have_count(1)
    expect(planned.first).to_contain_text("absorbs")
    expect(planned.first).to_contain_text("why: consolidation")
    expect(page.locator("main")).not_to_contain_text("sister likes green tea")
    shot(page, "consolidation")
    page.get_by_role("button", name="Merge these").click()
    expect(page.locator("#consolidation-result")).to_contain_text("Merged 2 memories into 1")
    # The fake model flags every pair it is asked about: the negation, not the sister.
    flagged = page.locator("#flagged-now li")
    expect(flagged).to_have_count(1)
    expect(flagged.first).to_contain_text("does not like green tea at night")
    expect(flagged.first).to_contain_text("why: cannot both hold")
    page.reload()
    expect(page.locator("#contradictions li")).to_have_count(1)
    expect(page.locator("#contradictions")).not_to_contain_text("sister")
    shot(page, "contradictions")

    page.goto(f"{seeded.base_url}/ui#/profile/tea?all=true")
    expect(page.locator("span.badge", has_text="merged")).to_have_count(2)
    survivor = (
        page.locator("tr", has_text="current")
        .filter(has_text="green tea")
        .filter(has_not_text="sister")
        .filter(has_not_text="at night")
    )
    survivor.get_by_role("button", name="Chain and provenance").click()
    expect(page.locator("ul.absorbed li")).to_have_count(2)
    expect(page.locator("ul.absorbed")).to_contain_text("consolidation:")

    page.goto(f"{seeded.base_url}/ui#/block/tea?tokens=200")
    expect(page.locator("#block-text")).to_contain_text("Open tasks:")
    expect(page.locator("#digest")).to_contain_text("No digest")
    rows = page.locator("tr[data-candidate]")
    expect(rows).to_have_count(4)
    expect(rows.first).to_contain_text("yes")
    with MemoryClient(seeded.base_url) as memory:
        assert memory.profile("tea").refresh_digest(force=True).written
    page.goto(f"{seeded.base_url}/ui#/block/tea?tokens=15")
    expect(page.locator("#block-text")).to_contain_text("Summary:")
    expect(page.locator("#digest")).to_contain_text("shown: the memories do not all fit")
    expect(page.locator("#digest code")).to_have_count(1)
    shot(page, "block")
    page.close()


def test_under_api_keys_the_page_asks_for_one(browser: Browser) -> None:
    key = "mk_test_ui_0123456789abcdef"
    served = serve('[memory]\nembedder = "none"\n', keys=key_entry("ui", key))
    try:
        with MemoryClient(served.base_url, api_key=key) as memory:
            memory.sessions.create(id="tenant-session")
        page = open_page(browser, f"{served.base_url}/ui")
        expect(page.get_by_role("alert")).to_contain_text("enter an API key")
        page.get_by_label("API key").fill(key)
        page.get_by_role("button", name="Use").click()
        expect(page.get_by_role("link", name="tenant-session")).to_be_visible()
        # Keyboard: Tab moves along the views' links and Enter opens one.
        page.get_by_role("link", name="Sessions").focus()
        page.keyboard.press("Tab")
        assert page.evaluate("document.activeElement.textContent") == "Profiles"
        page.keyboard.press("Enter")
        expect(page.get_by_role("heading", name="Profiles")).to_be_visible()
        page.close()
    finally:
        served.stop()


def test_the_profiles_page_is_paged_in_name_order(browser: Browser) -> None:
    served = serve('[memory]\nembedder = "none"\n')
    try:
        with MemoryClient(served.base_url) as memory:
            for i in range(55):
                memory.profile(f"user-{i:03}").remember(f"user {i} keeps a red bicycle")
        page = open_page(browser, f"{served.base_url}/ui#/profiles")
        names = page.locator("#profile-list li")
        expect(names).to_have_count(50)
        expect(names.first).to_have_text("user-000")
        page.get_by_role("link", name="Next page").click()
        expect(names).to_have_count(5)
        expect(names.first).to_have_text("user-050")
        expect(page.get_by_role("link", name="Next page")).to_have_count(0)
        page.get_by_label("Open profile").fill("user-054")
        page.get_by_role("button", name="Open").click()
        expect(page.locator("main")).to_contain_text("user 54 keeps a red bicycle")
    finally:
        served.stop()
