"""The smaller frictions of issue 23, one test each (each fails on the code before it)."""

from __future__ import annotations

import io
import json
import subprocess
import sys

import pytest

from toolsift import ToolIndex
from toolsift.cli import main
from toolsift.errors import IndexFormatError, QueryError, SchemaError


def _run(argv, *, out=None):
    return main(list(map(str, argv)), out=out or io.StringIO())


# ------------------------------------------------------------------ toolsift learn
def _usage_db(tmp_path, calls):
    from toolsift.usage import record_use, UsageLog

    log = UsageLog(tmp_path / "usage.db")
    for session in ("s1", "s2"):
        for intent, tool in calls:
            record_use(intent, tool, "success", log=log, session=session)
    log.close()
    return tmp_path / "usage.db"


def test_learn_takes_out_after_the_options_as_documented(tmp_path, demo_index):
    src = demo_index.save(tmp_path / "base.idx")
    db = _usage_db(tmp_path, [("mail the slides to the team", "send_email")])
    out = io.StringIO()
    # docs/usage-learning.md: toolsift learn INDEX --usage usage.db OUT
    assert _run(["learn", src, "--usage", db, tmp_path / "out.idx"], out=out) == 0
    assert (tmp_path / "out.idx" / "manifest.json").is_file()
    assert _run(["learn", src, tmp_path / "out2.idx", "--usage", db]) == 0  # the other order still works
    assert _run(["learn", src, "--usage", db]) == 2  # neither OUT nor --dry-run: one-line error
    with pytest.raises(SystemExit):  # two trailing positionals are still an argument error
        _run(["learn", src, "--usage", db, tmp_path / "a", tmp_path / "b"])


def test_learn_warns_about_tool_ids_the_index_does_not_have(tmp_path, demo_index):
    from toolsift.usage import UnknownToolsWarning, learn

    db = _usage_db(tmp_path, [("mail the slides", "send_email"), ("mail the slides", "mail__send_email")])
    from toolsift.usage import UsageLog

    with pytest.warns(UnknownToolsWarning, match="mail__send_email"):
        result = learn(demo_index, UsageLog(db))
    assert result.unknown_tools == ("mail__send_email",)
    assert "does not have" in result.summary() and "--save-index" in result.summary()
    out = io.StringIO()
    assert _run(["learn", demo_index.save(tmp_path / "b.idx"), "--usage", db, "--dry-run"], out=out) == 0
    assert "mail__send_email" in out.getvalue()


# ------------------------------------------------------------------ errors and types
def test_missing_index_is_a_file_not_found_error(tmp_path):
    with pytest.raises(FileNotFoundError, match="does not exist"):
        ToolIndex.load(tmp_path / "nope")
    with pytest.raises(IndexFormatError):  # still toolsift's own error, for `except ToolsiftError`
        ToolIndex.load(tmp_path / "nope")
    (tmp_path / "file").write_text("x")
    with pytest.raises(IndexFormatError, match="is a file"):
        ToolIndex.load(tmp_path / "file")


def test_tokenizer_unavailable_is_the_documented_missing_extra_error():
    from toolsift.extras import MissingExtraError
    from toolsift.tokens import TokenizerUnavailable

    err = TokenizerUnavailable("token counts need tiktoken")
    assert isinstance(err, MissingExtraError) and isinstance(err, ImportError)
    assert err.extra == "tokens" and str(err) == "token counts need tiktoken"


def test_k_is_checked_once_with_one_error_type(demo_index):
    from toolsift.integrations._toolset import ToolSearch
    from toolsift.integrations.langgraph import make_retrieve_tools

    for bad in (0, -1, 2.5, True, "3"):
        with pytest.raises(QueryError, match="k"):
            demo_index.search("email", k=bad)
        with pytest.raises(QueryError, match="k"):
            ToolSearch(demo_index, k=bad)
        with pytest.raises(QueryError, match="k"):
            make_retrieve_tools(demo_index, k=bad)
    assert issubclass(QueryError, SchemaError)


# ------------------------------------------------------------------ ToolIndex surface
def test_build_takes_raw_tool_dicts_like_the_integrations(demo_catalog):
    from toolsift.integrations._toolset import as_index

    raw = [t.to_openai() for t in demo_catalog][:10]
    built = ToolIndex.build(raw)
    assert built.catalog.ids == as_index(raw).catalog.ids == [t.name for t in demo_catalog][:10]
    assert [h.id for h in built.search("send an email", k=3)] == [h.id for h in as_index(raw).search("send an email", k=3)]


def test_contains_and_getitem(demo_index, tmp_path):
    for index in (demo_index, ToolIndex.load(demo_index.save(tmp_path / "i"))):
        assert "send_email" in index and "nope" not in index and 0 not in index
        assert index["send_email"].name == "send_email"
        with pytest.raises(KeyError, match="nope"):
            index["nope"]


def test_search_batch_has_token_budget_and_format(demo_index):
    queries = ["send an email", "weather in Lisbon tomorrow", "refund a payment"]
    batch = demo_index.search_batch(queries, k=5, token_budget=300, format="anthropic")
    one = [demo_index.search(q, k=5, token_budget=300, format="anthropic") for q in queries]
    assert [[(h.id, h.score, h.tokens) for h in hs] for hs in batch] == \
        [[(h.id, h.score, h.tokens) for h in hs] for hs in one]
    assert all(sum(h.tokens for h in hs) <= 300 for hs in batch)
    with pytest.raises(QueryError):
        demo_index.search_batch(queries, token_budget=0)
    from toolsift.errors import FormatError

    with pytest.raises(FormatError):
        demo_index.search_batch(queries, format="nope")


# ------------------------------------------------------------------ the command line
def test_search_json_into_a_closed_pipe_is_quiet(tmp_path, demo_index):
    demo_index.save(tmp_path / "idx")
    # The reader is gone before toolsift (seconds of imports) writes a byte: every write
    # meets a closed pipe, as with `| head` once head has its lines.
    cmd = f"{sys.executable} -m toolsift search {tmp_path / 'idx'} 'send an email' --json -k 20 | true"
    proc = subprocess.run(["bash", "-o", "pipefail", "-c", cmd], capture_output=True, text=True, timeout=120)
    assert "Traceback" not in proc.stderr and "BrokenPipe" not in proc.stderr, proc.stderr
    assert proc.stderr == "" and proc.returncode == 141


def test_batch_threads_defaults():
    """`rank` follows the index's config.threads; `score` (millions of pairs, one call)
    uses every core this process may use (0), and says so in its help."""
    import argparse

    from toolsift.cli_batch import add_commands

    p = argparse.ArgumentParser()
    sub = p.add_subparsers(dest="command")
    add_commands(sub)
    assert p.parse_args(["score", "i", "p", "o"]).threads == 0
    assert p.parse_args(["rank", "i", "q", "o"]).threads is None  # None: the index's config.threads
    assert p.parse_args(["score", "i", "p", "o", "--threads", "1"]).threads == 1
    assert "every core" in sub.choices["score"].format_help()


def test_score_output_tool_id_is_a_plain_string(tmp_path, demo_index):
    import pyarrow as pa
    import pyarrow.parquet as pq

    demo_index.save(tmp_path / "idx")
    pq.write_table(pa.table({"query": ["send an email", "weather"], "tool_id": ["send_email", "send_sms"]}),
                   tmp_path / "pairs.parquet")
    for ext in ("parquet", "arrow"):
        assert _run(["score", tmp_path / "idx", tmp_path / "pairs.parquet", tmp_path / f"out.{ext}", "--quiet"]) == 0
    assert pq.read_table(tmp_path / "out.parquet").schema.field("tool_id").type == pa.string()
    with pa.ipc.open_file(tmp_path / "out.arrow") as f:
        table = f.read_all()
    assert table.schema.field("tool_id").type == pa.string()
    assert table.column("tool_id").to_pylist() == ["send_email", "send_sms"]


def test_no_progress_bar_before_an_error(tmp_path, demo_index, capsys):
    import pyarrow as pa
    import pyarrow.parquet as pq

    demo_index.save(tmp_path / "idx")
    pq.write_table(pa.table({"query": ["send an email"] * 3, "tool_id": ["send_email", "nope", "send_sms"]}),
                   tmp_path / "bad.parquet")
    assert _run(["score", tmp_path / "idx", tmp_path / "bad.parquet", tmp_path / "o.parquet"]) == 2  # bars on
    err = capsys.readouterr().err
    assert err == "toolsift: error: row 1, column 'tool_id': unknown tool id 'nope'\n"


# ------------------------------------------------------------------ adapters, eval
def test_from_callable_keeps_defaults_out_of_examples():
    from toolsift.adapters import from_callable

    def convert(amount: float, currency: str = "EUR", rounding: int = 2) -> float:
        """Convert an amount into another currency."""
        return amount

    tool = from_callable(convert)
    assert [p.example for p in tool.parameters] == [None, None, None]
    assert tool.source["defaults"] == {"currency": "EUR", "rounding": 2}
    assert "examples" not in json.dumps(tool.to_openai())


def test_eval_plot_labels_the_retriever_per_method():
    from toolsift.evaluate.cli import labelled_curves

    curves = {"mftr": [0.5], "default": [0.4], "bm25s-fulldoc": [0.3]}
    assert list(labelled_curves(curves, "hybrid", fixed={"default", "bm25s-fulldoc"})) == \
        ["mftr (hybrid)", "default", "bm25s-fulldoc"]


# ------------------------------------------------------------------ fast start
ENGINE = ("numba", "scipy", "pyarrow", "toolsift._core", "onnxruntime", "llvmlite")


@pytest.mark.parametrize("argv", [["--help"], ["index"], ["search", "--help"], ["index", "a", "b", "--preset", "x"],
                                  ["score", "--help"], ["nonsense"]])
def test_help_and_argument_errors_load_no_engine(argv):
    code = ("import sys\nfrom toolsift.cli import main\n"
            f"try:\n    main({argv!r})\nexcept SystemExit:\n    pass\n"
            f"print(sorted(m for m in sys.modules if m.split('.')[0] in {ENGINE!r} or m in {ENGINE!r}))")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.stdout.strip().splitlines()[-1] == "[]", proc.stdout + proc.stderr


def test_public_names_still_import_lazily():
    code = ("import sys, toolsift\nassert 'numba' not in sys.modules\n"
            "from toolsift import ToolIndex, IndexConfig, Hit, load_catalog\n"
            "from toolsift.batch import score_table, PairScorer\nprint('ok')")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.stdout.strip() == "ok", proc.stderr


# ------------------------------------------------------------------ one validation mechanism
@pytest.mark.parametrize(("make", "message"), [
    (lambda: __import__("toolsift.usage", fromlist=["LearnConfig"]).LearnConfig(min_voters=0),
     "learn.min_voters: Input should be greater than or equal to 1, got 0"),
    (lambda: __import__("toolsift.usage", fromlist=["LearnConfig"]).LearnConfig(validate=1),
     "learn.validate: Input should be a valid boolean, got 1"),
    (lambda: __import__("toolsift.usage", fromlist=["LearnConfig"]).LearnConfig(alpha=0),
     "learn.alpha: Input should be greater than 0, got 0"),
    (lambda: __import__("toolsift.usage", fromlist=["AttributionRules"]).AttributionRules(voter="x"),
     "rules.voter: Input should be 'session' or 'client', got 'x'"),
    (lambda: __import__("toolsift.usage", fromlist=["AttributionRules"]).AttributionRules(max_votes=True),
     "rules.max_votes: Input should be a valid integer, got True"),
    (lambda: __import__("toolsift.train.trainer", fromlist=["TrainConfig"]).TrainConfig(lr=float("inf")),
     "train.lr: Input should be a finite number, got inf"),
    (lambda: __import__("toolsift.train.trainer", fromlist=["TrainConfig"]).TrainConfig(optimizer="sgd"),
     "train.optimizer: Input should be 'lbfgs' or 'adam', got 'sgd'"),
    (lambda: __import__("toolsift.config", fromlist=["IndexConfig"]).IndexConfig(candidates=0),
     "config.candidates: Input should be greater than or equal to 1, got 0"),
    (lambda: __import__("toolsift.analyze", fromlist=["Analyzer"]).Analyzer(lowercase="yes"),
     "analyzer.lowercase: Input should be a valid boolean, got 'yes'"),
    (lambda: __import__("toolsift.analyze", fromlist=["Analyzer"]).Analyzer(stemmer=3),
     "analyzer.stemmer: Input should be a valid string, got 3"),
])
def test_config_classes_report_errors_one_way(make, message):
    from toolsift.errors import ConfigError

    with pytest.raises(ConfigError) as info:
        make()
    assert str(info.value) == message



def test_first_plain_search_loads_no_schema_writers(tmp_path, demo_index):
    # The first query of a process paid ~40 ms CPU importing every catalogue adapter for
    # a format check it did not need (no token budget, the default format).
    demo_index.save(tmp_path / "idx")
    code = ("import sys\nfrom toolsift import ToolIndex\n"
            f"index = ToolIndex.load({str(tmp_path / 'idx')!r})\n"
            "index.search('send an email', k=3, explain=True)\n"
            "print(sorted(m for m in sys.modules if m.startswith(('toolsift.adapters', 'toolsift.search.budget'))))")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert proc.stdout.strip().splitlines()[-1] == "[]", proc.stdout + proc.stderr
    with pytest.raises(Exception, match="unknown tool format"):  # a typo'd format still fails without a budget
        demo_index.search("send an email", format="opneai")


def test_load_and_bm25_search_import_no_numba_scipy_or_pandas(tmp_path, demo_catalog):
    # Loading a saved BM25 index and searching it (one fused engine call) needs neither
    # the Numba kernels nor SciPy (which Numba imports) nor pandas (which pyarrow's
    # to_numpy imports): ~1.3 s of a CLI search's CPU before they were kept off this path.
    # An explained search explains the engine's k hits with the NumPy formula
    # (toolsift.search.explain): no Numba either.
    from toolsift import ToolIndex

    ToolIndex.build(demo_catalog, preset="bm25").save(tmp_path / "idx")
    heavy = ("numba", "scipy", "pandas", "llvmlite")
    code = ("import sys\nfrom toolsift import ToolIndex\n"
            f"index = ToolIndex.load({str(tmp_path / 'idx')!r})\n"
            "hits = index.search('send an email', k=3)\n"
            "assert hits, 'no hits'\n"
            f"print(sorted(m for m in sys.modules if m.split('.')[0] in {heavy!r}))\n"
            "assert index.search('send an email', k=3, explain=True)[0].fields\n"
            f"print(sorted(m for m in sys.modules if m.split('.')[0] in {heavy!r}))")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    lines = proc.stdout.strip().splitlines()
    assert lines[-2:] == ["[]", "[]"], proc.stdout + proc.stderr
