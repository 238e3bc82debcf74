"""The hybrid default (issue 34): what a build with no preset gives, the demo's semantic
example, the size rule that switches a huge catalogue to static document vectors, and
the build-time encoder threads."""

from __future__ import annotations

import logging

import pytest

from toolsift import ToolIndex
from toolsift.presets import DEFAULT_PRESET, preset_config, sized_for


def test_default_is_hybrid_and_bm25_is_one_argument_away(demo_catalog, demo_index):
    assert DEFAULT_PRESET == "hybrid" and demo_index.config == preset_config("hybrid")
    assert {f for f, r in demo_index.config.retrievers if r == "hybrid"} == {"description", "response", "examples"}
    bm25 = ToolIndex.build(demo_catalog, preset="bm25")
    assert not bm25.config.uses_dense
    # A request with no word in common with its tool: the dense half finds it.
    q = "snap a photo of the porch"
    assert demo_index.search(q, k=1)[0].id == "get_camera_snapshot"
    assert not any(h.matched and h.id == "get_camera_snapshot" for h in bm25.search(q, k=len(demo_catalog)))


def test_saved_bm25_index_stays_bm25(tmp_path, demo_catalog):
    ToolIndex.build(demo_catalog, preset="bm25").save(tmp_path / "idx")
    assert ToolIndex.load(tmp_path / "idx").config == preset_config("bm25")


def test_demo_semantic_match_is_computed(demo_catalog, demo_index):
    from toolsift.demo import semantic_match

    bm25 = ToolIndex.build(demo_catalog, preset="bm25")
    got = semantic_match(demo_index, bm25)
    assert got is not None and got["rank"] < (got["bm25_rank"] or len(demo_catalog) + 1)
    # Ranks come from the indexes: the same index on both sides gains nothing.
    assert semantic_match(bm25, bm25) is None
    # A candidate whose tool BM25 ranks first is never the example.
    assert semantic_match(demo_index, bm25, (("send an email to Bob", "send_email"),)) is None


def test_large_catalogue_switches_to_static_documents_and_says_so(demo_catalog, caplog):
    cfg = preset_config(static_documents_from=len(demo_catalog))
    with caplog.at_level(logging.WARNING, logger="toolsift.presets"):
        index = ToolIndex.build(demo_catalog, config=cfg)
    assert index.config.encoder == "static"
    assert any("static token table" in r.getMessage() and str(len(demo_catalog)) in r.getMessage()
               for r in caplog.records)
    assert index.search("snap a photo of the porch", k=3)
    # Below the threshold, BM25 configs, explicit encoders and static_documents_from=None: unchanged.
    assert sized_for(cfg, len(demo_catalog) - 1) is cfg
    assert sized_for(preset_config("bm25", static_documents_from=1), 10**6).encoder is None
    assert sized_for(cfg, 10**6, encoder=object()) is cfg
    assert sized_for(preset_config(static_documents_from=None), 10**6).encoder is None
    assert preset_config().static_documents_from == 20_000


def test_build_embeds_on_every_core_and_queries_on_one(monkeypatch):
    from toolsift.cpus import available_cpus
    from toolsift.encoders import OnnxEncoder
    from toolsift.index.embed import get_document_encoder, get_encoder

    cfg = preset_config()
    assert cfg.embed_threads == 0 and cfg.threads == 1
    doc = get_document_encoder(cfg)
    assert isinstance(doc, OnnxEncoder) and doc._workers == available_cpus()
    assert get_document_encoder(cfg) is doc  # loaded once per process
    assert get_encoder(cfg)._workers == 1  # the query-side encoder
    assert get_document_encoder(preset_config(embed_threads=1))._workers == 1


@pytest.mark.parametrize("value", [-1, 1.5, "2"])
def test_bad_embed_threads(value):
    from toolsift.errors import ConfigError

    with pytest.raises(ConfigError):
        preset_config(embed_threads=value)
