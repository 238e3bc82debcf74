"""Tests for toolsift.evaluate.datasets: the four MFTR subsets, UltraTool, bad folders."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from toolsift.errors import ToolsiftError
from toolsift.evaluate import (
    DatasetError,
    MftrDataset,
    UltraToolDataset,
    evaluate,
)
from toolsift.kernels.params import ScoringParams

from .conftest import dataset

# folder -> (data set name, tools, queries); counts from the data READMEs.
MFTR = {
    "mftr-apibank": ("apibank", 101, 101),
    "mftr-apigen": ("apigen", 3605, 1000),
    "mftr-gorilla-huggingface": ("gorilla-huggingface", 907, 500),
    "mftr-toolink": ("toolink", 1804, 497),
}
FOLD_SIZES = {
    "mftr-apibank": [20, 20, 20, 20, 21],
    "mftr-apigen": [200] * 5,
    "mftr-gorilla-huggingface": [100] * 5,
    "mftr-toolink": [99, 99, 100, 99, 100],
}
WITH_HARD_NEGATIVES = {"mftr-apibank", "mftr-toolink"}


@pytest.fixture(scope="module", params=sorted(MFTR))
def mftr(request) -> tuple[str, MftrDataset]:
    return request.param, MftrDataset.load(dataset(request.param))


@pytest.fixture(scope="module")
def apibank() -> MftrDataset:
    return MftrDataset.load(dataset("mftr-apibank"))


@pytest.fixture(scope="module")
def ultratool() -> UltraToolDataset:
    return UltraToolDataset.load(dataset("ultratool"))


# ----------------------------------------------------------------------------- MFTR


def test_counts_and_name(mftr):
    folder, ds = mftr
    name, n_tools, n_queries = MFTR[folder]
    assert ds.name == name
    assert ds.root == dataset(folder)
    assert len(ds.raw_tools) == n_tools
    assert len(ds.queries) == n_queries


def test_queries_keep_file_order(mftr):
    _, ds = mftr
    raw = json.loads((ds.root / "dataset/from_toolret" / ds.name / "queries.json").read_text())
    assert [q.id for q in ds.queries] == [r["id"] for r in raw]
    assert [q.text for q in ds.queries] == [r["query"] for r in raw]


def test_every_query_has_its_rewrite(mftr):
    _, ds = mftr
    for q in ds.queries:
        assert q.rewritten is not None, q.id
        assert q.rewritten.needs
        assert q.rewritten.text == q.text


def test_folds_partition_the_queries(mftr):
    folder, ds = mftr
    assert [len(f) for f in ds.folds] == FOLD_SIZES[folder]
    # MFTR cuts the shuffled list at k*n//5.
    n = len(ds.queries)
    assert [len(f) for f in ds.folds] == [(k + 1) * n // 5 - k * n // 5 for k in range(5)]
    flat = [qid for fold in ds.folds for qid in fold]
    assert len(flat) == len(set(flat))
    assert set(flat) == {q.id for q in ds.queries}


def test_fold_order_is_file_order(mftr):
    _, ds = mftr
    path = ds.root / "dataset/train_and_test" / ds.name / "fold_3" / "test_queries.json"
    assert ds.test_ids(3) == tuple(r["id"] for r in json.loads(path.read_text()))


def test_train_and_test_ids(mftr):
    _, ds = mftr
    order = [q.id for q in ds.queries]
    for k in range(5):
        train, test = ds.train_ids(k), ds.test_ids(k)
        assert test == ds.folds[k]
        assert not set(train) & set(test)
        assert len(train) + len(test) == len(ds.queries)
        assert list(train) == [qid for qid in order if qid in set(train)]


def test_fold_index_out_of_range(apibank):
    with pytest.raises(IndexError, match="fold 5"):
        apibank.train_ids(5)
    with pytest.raises(IndexError):
        apibank.test_ids(-1)


def test_train_ids_match_published_train_files(apibank):
    # Only apibank ships train_queries.json; they must be the complements we compute.
    for k in range(5):
        path = apibank.root / "dataset/train_and_test/apibank" / f"fold_{k}" / "train_queries.json"
        assert {r["id"] for r in json.loads(path.read_text())} == set(apibank.train_ids(k))


def test_qrels(mftr):
    _, ds = mftr
    qrels = ds.qrels()
    assert list(qrels) == [q.id for q in ds.queries]
    for q in ds.queries:
        assert qrels[q.id] == {t: 1 for t in q.labels}
        assert all(t in ds.raw_tools for t in q.labels)
    qrels[ds.queries[0].id]["x"] = 1
    assert "x" not in ds.qrels()[ds.queries[0].id]


def test_perfect_run_scores_one(mftr):
    _, ds = mftr
    run = {q.id: {t: 1.0 for t in q.labels} for q in ds.queries}
    assert evaluate(ds.qrels(), run, ["ndcg@10", "mrr"]).mean == {"ndcg@10": 1.0, "mrr": 1.0}


def test_standardized_tools_only_for_apibank(mftr):
    folder, ds = mftr
    if folder == "mftr-apibank":
        assert ds.standardized_tools is not None
        assert [t.id for t in ds.standardized_tools] == [t.id for t in ds.raw_tools]
    else:
        assert ds.standardized_tools is None


def test_hard_negatives(mftr):
    folder, ds = mftr
    if folder not in WITH_HARD_NEGATIVES:
        assert ds.hard_negatives is None
        return
    assert ds.hard_negatives is not None
    assert set(ds.hard_negatives) == {q.id for q in ds.queries}
    qrels = ds.qrels()
    for qid, negatives in ds.hard_negatives.items():
        assert 97 <= len(negatives) <= 100
        assert not set(negatives) & set(qrels[qid])
        assert all(t in ds.raw_tools for t in negatives)
    raw = json.loads((ds.root / "dataset/hard_negatives/bm25_origin" / f"{ds.name}.json").read_text())
    first = ds.queries[0].id
    assert ds.hard_negatives[first] == tuple(pair[0] for pair in raw[first])


def test_learned_params(mftr):
    _, ds = mftr
    params = ds.learned_params()
    assert len(params) == 5
    assert all(isinstance(p, ScoringParams) for p in params)
    assert len(ds.learned_params("all-MiniLM-L6-v2")) == 5
    assert ds.learned_params("bm25__0") == params


def test_learned_params_values(apibank):
    path = apibank.root / "weight/apibank/bm25__0/fold_2_learned_params.json"
    raw = json.loads(path.read_text())
    p = apibank.learned_params("bm25")[2]
    assert list(p.weights) == raw["base_weight"][0]
    assert (p.bias, p.tau, p.w_req, p.w_opt, p.alpha) == (
        raw["base_bias"][0], raw["tau"], raw["w_req"], raw["w_opt"], raw["alpha"]
    )


def test_unknown_retriever_lists_available(apibank):
    with pytest.raises(DatasetError, match="no-such-model") as info:
        apibank.learned_params("no-such-model")
    assert "bm25" in str(info.value) and "all-MiniLM-L6-v2" in str(info.value)
    assert len(apibank.retrievers()) == 9


def test_raw_documentation(mftr):
    _, ds = mftr
    raw = json.loads((ds.root / "dataset/from_toolret" / ds.name / "tools.json").read_text())
    record = raw[len(raw) // 2]
    doc = ds.raw_documentation(record["id"])
    assert doc == record["documentation"]
    doc["description"] = "changed"
    assert ds.raw_documentation(record["id"]) == record["documentation"]
    with pytest.raises(KeyError, match="nope"):
        ds.raw_documentation("nope")


# ---------------------------------------------------------------- MFTR bad folders


def _write(path: Path, payload: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(payload), encoding="utf-8")


def _query(i: int, labels: list[int], rewrite: bool = False) -> dict[str, Any]:
    record: dict[str, Any] = {
        "id": f"fake_query_{i}",
        "query": f"query {i}",
        "labels": [{"id": f"fake_tool_{t}", "relevance": 1} for t in labels],
    }
    if rewrite:
        record["rewritten_query"] = {
            "tool_needs": [{"user_intent": f"intent {i}", "tool_description": "d",
                            "expected_response": "r"}],
            "extracted_arguments": {"x": "an x"},
        }
    return record


def _fake(root: Path, folds: list[list[int]], labels: dict[int, list[int]] | None = None) -> Path:
    """A two-tool, four-query MFTR folder; ``folds`` lists the query numbers per fold."""
    base = root / "dataset"
    tools = [{"id": f"fake_tool_{t}", "type": "web",
              "documentation": {"name": f"t{t}", "description": f"tool {t}", "parameters": {}}}
             for t in range(2)]
    _write(base / "from_toolret/fake/tools.json", tools)
    _write(base / "from_toolret/fake/queries.json", [_query(i, [i % 2]) for i in range(4)])
    labels = labels or {}
    for k, fold in enumerate(folds):
        _write(base / f"train_and_test/fake/fold_{k}/test_queries.json",
               [_query(i, labels.get(i, [i % 2]), rewrite=True) for i in fold])
    params = {"base_weight": [[0.1, 0.2, 0.3, 0.4]], "base_bias": [0.0], "tau": 0.5,
              "w_req": 0.1, "w_opt": 0.0, "alpha": 15.0}
    _write(root / "weight/fake/bm25__0/fold_0_learned_params.json", params)
    return root


def test_fake_dataset_loads(tmp_path):
    ds = MftrDataset.load(_fake(tmp_path, [[3, 1], [0, 2]]))
    assert ds.name == "fake"
    assert ds.folds == (("fake_query_3", "fake_query_1"), ("fake_query_0", "fake_query_2"))
    assert ds.train_ids(0) == ("fake_query_0", "fake_query_2")
    assert ds.queries[2].rewritten.arguments == {"x": "an x"}
    assert ds.hard_negatives is None and ds.standardized_tools is None


def test_missing_folder_names_path(tmp_path):
    with pytest.raises(DatasetError, match="nowhere"):
        MftrDataset.load(tmp_path / "nowhere")
    with pytest.raises(DatasetError, match="from_toolret"):
        MftrDataset.load(tmp_path)
    assert issubclass(DatasetError, ToolsiftError)


def test_missing_tools_file(tmp_path):
    root = _fake(tmp_path, [[0, 1], [2, 3]])
    (root / "dataset/from_toolret/fake/tools.json").unlink()
    with pytest.raises(DatasetError, match=r"tools\.json"):
        MftrDataset.load(root)


@pytest.mark.parametrize(
    ("folds", "labels", "message"),
    [
        ([[0, 1], [2]], None, r"1 missing \['fake_query_3'\]"),
        ([[0, 1], [2, 3, 1]], None, "more than one test fold"),
        ([[0, 1], [2, 3, 4]], None, r"1 unknown \['fake_query_4'\]"),
        ([[0, 1], [2, 3]], {2: [1]}, "different text or labels"),
    ],
)
def test_fold_mismatch(tmp_path, folds, labels, message):
    with pytest.raises(DatasetError, match=message):
        MftrDataset.load(_fake(tmp_path, folds, labels))


def test_missing_fold_params(tmp_path):
    ds = MftrDataset.load(_fake(tmp_path, [[0, 1], [2, 3]]))
    with pytest.raises(DatasetError, match="fold_1_learned_params.json"):
        ds.learned_params("bm25")


# ------------------------------------------------------------------------ UltraTool


def test_ultratool_counts(ultratool):
    assert len(ultratool.queries) == 1000
    assert len(ultratool.tools) == 1323  # README: union of test.json and tool_creation
    assert ultratool.conflicts == ()
    gold = {name for q in ultratool.queries for name in q.labels}
    assert len(gold) == 436
    assert all(name in ultratool.tools for name in gold)


def test_ultratool_query(ultratool):
    q = ultratool.queries[0]
    assert q.id == "ultratool_q0"
    assert q.question.startswith("I need you to help me create a file called 'Work_Tasks.txt'")
    assert q.steps == (
        "Create file",
        ("Get file creation information (File path: Desktop/Work_Tasks.txt, "
         "File content: Preparation for Tomorrow's Meeting)"),
        "Use file writing tool to create and write content",
        "Confirm file creation and content writing success",
    )
    assert q.step_tools == (None, None, "file_write", None)
    assert q.labels == ("file_write",)
    assert q.domain == "Document"
    assert list(q.tool_steps()) == [("Use file writing tool to create and write content",
                                     "file_write")]
    assert ultratool.queries[-1].id == "ultratool_q999"


def test_ultratool_steps_and_labels_agree(ultratool):
    for q in ultratool.queries:
        assert len(q.steps) == len(q.step_tools)
        assert all(s and not s[0].isdigit() for s in q.steps), q.id
        assert {t for t in q.step_tools if t is not None} == set(q.labels), q.id


def test_ultratool_tool_conversion(ultratool):
    tool = ultratool.tools.get("file_write")
    assert tool.id == tool.name == "file_write"
    assert tool.description.startswith("Used to write content to a specified file.")
    assert [(p.name, p.type, p.required) for p in tool.parameters] == [
        ("file_path", "string", True), ("content", "string", True)
    ]
    assert tool.response == (
        "Returns an object with: status (boolean): Whether the write operation was successful."
    )
    assert tool.source["name"] == "file_write"


def test_ultratool_qrels(ultratool):
    qrels = ultratool.qrels()
    assert len(qrels) == 1000
    assert qrels["ultratool_q1"] == {"file_write": 1, "check_file_content": 1, "file_delete": 1}


def test_ultratool_missing_folder(tmp_path):
    with pytest.raises(DatasetError, match="English-dataset"):
        UltraToolDataset.load(tmp_path)


def test_ultratool_bad_line(tmp_path):
    english = tmp_path / "data/English-dataset"
    (english / "test_set").mkdir(parents=True)
    (english / "test.json").write_text('{"question": "q", "plan": [], "tools": []}\n{oops\n')
    (english / "test_set/tool_creation.json").write_text("")
    with pytest.raises(DatasetError, match=r"test\.json:2: invalid JSON"):
        UltraToolDataset.load(tmp_path)
