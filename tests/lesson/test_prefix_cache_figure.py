"""The block-sharing figure (lesson/diagrams/prefix_cache.py) and the prefix-caching rows and sentences
(lesson/prefix_views.py), from a real run saved as a fixture: near-miss with a KV budget of one request,
so the second request diverges at position 0 and evicts the first's blocks, and the third finds them gone."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from engine.contract.serving.prefix import short
from engine.contract.serving.trace import PrefixLookup, ServingRun
from lesson.diagrams.prefix_cache import MAX_CELLS, miss_words, render_prefix_cache
from lesson.prefix_views import prefix_alt, prefix_records, same_tokens, ttft_records, ttft_sentence
from lesson.style import classroom_style
from lesson.text import t
from tests.factories import make_run
from tests.svg import all_text, parse, with_class

FIXTURE = Path(__file__).resolve().parents[1] / "serving" / "fixtures" / "prefix_near_miss_tight.json"


@pytest.fixture(scope="module")
def tight() -> ServingRun:
    return ServingRun.from_json(FIXTURE.read_text(encoding="utf-8"))


def hit_run(run: ServingRun) -> ServingRun:
    """The fixture with its third request served from the first's blocks (as it is without the tight budget)."""
    third = run.requests[2]
    lookup = dataclasses.replace(third.prefix, num_cached_tokens=176, miss="", miss_block=None, other_request="",
                                 evicted_at_ms=None)
    return dataclasses.replace(run, requests=(*run.requests[:2], dataclasses.replace(third, prefix=lookup)))


def test_the_fixture_is_what_it_says(tight):
    first, other, again = tight.requests
    assert tight.settings.prefix_caching and (first.prefix.miss, other.prefix.miss, again.prefix.miss) == (
        "first_seen", "diverged", "evicted")
    assert other.prefix.diverged_at == 0 and again.prefix.other_request == "other-first-token"
    assert sum(len(it.evictions) for it in tight.iterations) > 0


@pytest.mark.parametrize("lang", ["zh", "en"])
def test_one_row_per_request_one_cell_per_block_with_its_hash(tight, lang):
    root = parse(render_prefix_cache(tight, lang=lang))
    rows = with_class(root, "prefix-row")
    assert [r.get("data-request-id") for r in rows] == [r.request_id for r in tight.requests]
    assert [r.get("data-miss") for r in rows] == ["first_seen", "diverged", "evicted"]
    for row, record in zip(rows, tight.requests):
        cells = with_class(row, "block")
        assert len(cells) == min(-(-record.prompt_len // 16), MAX_CELLS)
        names = [c.get("data-hash") for c in cells if c.get("data-state") != "partial"]
        assert names == list(record.prefix.block_hashes[:len(names)])  # the hash chain, short, in order
        assert cells[-1].get("data-state") == "partial"  # 182 tokens: the last block partly filled, never shared
        assert all(short(n) in all_text(row) for n in names)
    assert len(with_class(root, "stop-mark")) == 3  # each look-up stopped at block 0
    assert with_class(root, "evicted-mark")  # blocks evicted later are crossed
    words = all_text(root)
    assert miss_words(tight.requests[1].prefix, lang) in words
    assert "other-first-token" in words and t(lang, "pc_legend_cached") in words


def test_served_prefix_is_highlighted_and_shared_blocks_count_their_holders(tight):
    root = parse(render_prefix_cache(hit_run(tight), lang="en"))
    third = with_class(root, "prefix-row")[2]
    states = [c.get("data-state") for c in with_class(third, "block")]
    assert states == ["cached"] * 11 + ["partial"]
    assert with_class(third, "block", "cached")[0].get("data-hash") == tight.requests[0].prefix.block_hashes[0]
    shared = make_shared_run()
    root = parse(render_prefix_cache(shared, lang="zh"))
    cells = with_class(root, "block")
    assert max(int(c.get("data-refs")) for c in cells) == 2 and with_class(root, "refs")


def make_shared_run() -> ServingRun:
    """A synthetic run (tests/factories.make_run) where r1 holds r0's first block while r0 still runs."""
    run = make_run(block_size=4)
    r0, r1 = run.requests[:2]
    names = ("aaaa1111", "bbbb2222")
    p0 = PrefixLookup(r0.request_id, r0.prompt_len, 0, names, miss="first_seen", miss_block=0)
    p1 = PrefixLookup(r1.request_id, r1.prompt_len, 4, names[:1], miss="diverged", miss_block=1, diverged_at=5,
                      token_piece="x", cached_piece="y", other_request=r0.request_id)
    requests = (dataclasses.replace(r0, prefix=p0), dataclasses.replace(r1, prefix=p1), *run.requests[2:])
    it = run.iterations[0]
    tables = list(it.blocks.tables)
    t0 = next(i for i, tb in enumerate(tables) if tb.request_id == r0.request_id)
    t1 = next((i for i, tb in enumerate(tables) if tb.request_id == r1.request_id), None)
    shared_block = tables[t0].block_ids[0]
    if t1 is None:
        tables.append(dataclasses.replace(tables[t0], request_id=r1.request_id))
    else:
        tables[t1] = dataclasses.replace(tables[t1], block_ids=(shared_block, *tables[t1].block_ids[1:]))
    blocks = dataclasses.replace(it.blocks, tables=tuple(tables))
    iterations = (dataclasses.replace(it, blocks=blocks), *run.iterations[1:])
    settings = dataclasses.replace(run.settings, prefix_caching=True)
    return dataclasses.replace(run, requests=requests, iterations=iterations, settings=settings)


def test_a_run_with_the_cache_off_and_an_older_run_draw_too(tight):
    off = dataclasses.replace(tight, settings=dataclasses.replace(tight.settings, prefix_caching=False))
    assert t("en", "pc_note_off") in " ".join(all_text(parse(render_prefix_cache(off, lang="en"))).split())
    old = make_run()  # no prefix records at all
    root = parse(render_prefix_cache(old, lang="zh"))
    assert {r.get("data-miss") for r in with_class(root, "prefix-row")} == {"cache_off"}
    assert not with_class(root, "block", "cached")


def test_classroom_style_and_hostile_request_ids(tight):
    hostile = dataclasses.replace(tight, requests=tuple(
        dataclasses.replace(r, request_id="<b>x</b>&", prefix=dataclasses.replace(r.prefix, request_id="<b>"))
        for r in tight.requests[:1]) + tight.requests[1:])
    style = classroom_style()
    svg = render_prefix_cache(hostile, lang="en", style=style)
    assert "<b>" not in svg and "&lt;b&gt;x&lt;/b&gt;&amp;" in svg
    root = parse(svg)
    assert float(root.get("width")) <= style.max_width  # classroom: fewer cells per row, never wider
    assert len(with_class(with_class(root, "prefix-row")[0], "block")) < MAX_CELLS


def test_rows_and_sentences_say_the_numbers(tight):
    rows = prefix_records(tight, "en")
    assert [r["request"] for r in rows] == ["first", "other-first-token", "same-again"]
    assert rows[1]["why not all of it"].startswith("diverged from first's cached block at position 0")
    assert "evicted by other-first-token" in rows[2]["why not all of it"]
    zh = prefix_records(hit_run(tight), "zh")
    assert zh[2]["从缓存读取"] == "176" and zh[2]["计算了"] == "6" and zh[2]["命中率"] == "97%"
    on = hit_run(tight)
    assert same_tokens(tight, on)
    ttft = ttft_records(tight, on, "en")
    assert len(ttft) == 3 and ttft[2]["read from the cache"] == "176"
    sentence = ttft_sentence(tight, on, "en")
    assert "the same tokens: yes" in sentence
    assert "176 / 546" in prefix_alt(on, "en")


def test_the_kv_blocks_figure_stacks_a_shared_block_once():
    from lesson.diagrams.kv_blocks import render_kv_blocks

    def first_column_height(run: ServingRun) -> float:
        column = with_class(parse(render_kv_blocks(run, lang="en")), "kv-column")[0]
        return sum(float(r.get("height")) for r in with_class(column, "owned"))

    plain, shared = make_run(block_size=4), make_shared_run()
    tables = {t.request_id: t for t in plain.iterations[0].blocks.tables}
    assert shared.iterations[0].blocks.num_used_tokens <= plain.iterations[0].blocks.num_used_tokens
    if plain.requests[1].request_id in tables:  # r1 holds r0's first block instead of its own
        assert first_column_height(shared) < first_column_height(plain)
    else:  # r1 joined holding r0's blocks: nothing more is stacked
        assert first_column_height(shared) == first_column_height(plain)
