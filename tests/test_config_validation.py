"""Configuration is validated one way: pydantic checks the types and limits declared on
the fields of IndexConfig, Bm25Config and the gateway's configs; errors are ConfigError
naming the key (and the file, for a serve config)."""

from __future__ import annotations

import json

import pytest

from toolsift.config import Bm25Config, IndexConfig
from toolsift.errors import ConfigError


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"candidates": 0}, "config.candidates: Input should be greater than or equal to 1, got 0"),
    ({"candidates": True}, "config.candidates: Input should be a valid integer, got True"),
    ({"candidates": "100"}, "config.candidates: Input should be a valid integer, got '100'"),
    ({"tool_card": 9}, "config.tool_card: Input should be less than or equal to 8, got 9"),
    ({"scale": "log"}, "config.scale: Input should be 'bounded', 'linear' or 'raw', got 'log'"),
    ({"hybrid_weight": 1.5}, "config.hybrid_weight: Input should be less than or equal to 1, got 1.5"),
    ({"threads": -1}, "config.threads: Input should be greater than or equal to 0, got -1"),
    ({"split_identifiers": 1}, "config.split_identifiers: Input should be a valid boolean, got 1"),
    ({"bm25": {"k1": 1.2}}, "config.bm25: Input should be an instance of Bm25Config"),
    ({"retrievers": {"description": "sparse"}}, "config.retrievers['description']: retriever 'sparse'"),
    ({"retrievers": {"title": "bm25"}}, "config.retrievers: unknown field 'title'"),
])
def test_index_config_names_the_bad_field(kwargs, message):
    with pytest.raises(ConfigError) as info:
        IndexConfig(**kwargs)
    assert str(info.value).startswith(message), str(info.value)


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"k1": -0.5}, "bm25.k1: Input should be greater than or equal to 0"),
    ({"k1": float("inf")}, "bm25.k1: Input should be a finite number"),
    ({"b": 1.01}, "bm25.b: Input should be less than or equal to 1"),
    ({"method": "okapi"}, "bm25.method: Input should be 'lucene' or 'atire'"),
])
def test_bm25_config_names_the_bad_field(kwargs, message):
    with pytest.raises(ConfigError, match="^" + message.replace("(", r"\(").replace(")", r"\)")):
        Bm25Config(**kwargs)


def test_valid_configs_round_trip():
    cfg = IndexConfig(candidates=50, tool_card=0, hybrid_weight=1, threads=0, bm25=Bm25Config(k1=2, b=0))
    assert IndexConfig.from_dict(cfg.to_dict()) == cfg
    assert cfg.with_params(cfg.params) == cfg


def test_serve_config_file_errors_name_file_and_key(tmp_path):
    from toolsift.gateway.upstream_config import ServeConfig

    path = tmp_path / "gateway.json"
    cases = [
        ({"upstreams": [{"name": "a", "command": ["x"], "timeout_s": 0}]},
         "upstreams[0].timeout_s: Input should be greater than 0, got 0"),
        ({"upstreams": [{"name": "a", "command": "python srv.py"}]},
         "upstreams[0].command: Input should be a valid tuple, got 'python srv.py'"),
        ({"upstreams": [{"name": "a", "url": "ftp://h"}]}, "upstreams[0].url: String should match"),
        ({"gateway": {"max_limit": 5, "default_limit": 6}}, "gateway.default_limit: must not exceed max_limit (5)"),
        ({"gateway": {"routing": [{"pattern": "(", "tags": ["x"]}]}}, "gateway.routing[0].pattern: '('"),
        ({"max_request_bytes": "big"}, "max_request_bytes: Input should be a valid integer"),
        ({"upstream": []}, "upstream: unknown key"),
    ]
    for data, message in cases:
        path.write_text(json.dumps(data))
        with pytest.raises(ConfigError) as info:
            ServeConfig.load(path)
        assert str(info.value).startswith(f"{path}: {message}"), str(info.value)


def test_trusted_values_pass_the_checks_they_skip(tmp_path):
    """Configs toolsift defines or wrote itself are made under ``trusted()``, which skips
    the field checks (and pydantic) but not the rules across fields: the module constants
    made that way pass the checks, and a saved index loads the config that was saved."""
    from toolsift import ToolIndex
    from toolsift.adapters import demo_catalog_path, load_catalog
    from toolsift.checking import check_fields, trusted
    from toolsift.config import COLDSTART_ANALYZER, COLDSTART_BM25

    check_fields(COLDSTART_ANALYZER, "COLDSTART_ANALYZER")
    check_fields(COLDSTART_BM25, "COLDSTART_BM25")
    with trusted():
        assert Bm25Config(k1=-0.5).k1 == -0.5  # the field check is what trusted() skips
        with pytest.raises(ConfigError, match="unknown field 'title'"):
            IndexConfig(retrievers={"title": "bm25"})  # a rule across fields still runs
    with pytest.raises(ConfigError):
        Bm25Config(k1=-0.5)
    cfg = IndexConfig(candidates=37, bm25=Bm25Config(k1=1.1, b=0.3), threads=0)
    ToolIndex.build(load_catalog(demo_catalog_path()), config=cfg).save(tmp_path / "idx")
    assert ToolIndex.load(tmp_path / "idx").config == cfg
