"""Tests for toolsift.standardize: rule-based four-field docs from raw ToolRet records."""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

import pytest

from toolsift.adapters import load_catalog, toolret_tool
from toolsift.adapters.benchmark import load_queries
from toolsift.schema import Catalog, Parameter, Tool
from toolsift.standardize import schema_of, standardize_catalog, standardize_tool
from toolsift.standardize.rules import clean_text, mentioned_parameters, result_phrases

from .conftest import dataset

DATASETS = ("apibank", "apigen", "gorilla-huggingface", "toolink")
SCHEMAS = {"apibank": "apibank", "apigen": "apigen", "gorilla-huggingface": "gorilla",
           "toolink": "toolink"}
# Regression floors well below today's coverage (apibank .99, apigen .92, gorilla 1.0,
# toolink 1.0): a rule that silently stops matching shows up here.
MIN_RESPONSE_COVERAGE = {"apibank": 0.95, "apigen": 0.85, "gorilla-huggingface": 0.95,
                         "toolink": 0.95}


def tools_path(ds: str):
    return dataset(f"mftr-{ds}") / f"dataset/from_toolret/{ds}/tools.json"


@pytest.fixture(scope="module")
def raw() -> dict[str, Catalog]:
    return {ds: load_catalog(tools_path(ds)) for ds in DATASETS}


@pytest.fixture(scope="module")
def std(raw: dict[str, Catalog]) -> dict[str, Catalog]:
    return {ds: standardize_catalog(cat) for ds, cat in raw.items()}


def record(rid: str, doc: Mapping[str, Any], kind: str = "web") -> dict[str, Any]:
    return {"id": rid, "documentation": dict(doc), "type": kind}


# ------------------------------------------------------------------ real data


@pytest.mark.parametrize("ds", DATASETS)
def test_every_tool_standardizes_and_keeps_identity(ds: str, raw, std) -> None:
    before, after = raw[ds], std[ds]
    assert after.name == before.name
    assert [t.id for t in after] == [t.id for t in before]
    for r, s in zip(before, after):
        assert s.name == r.name
        assert s.tags == r.tags
        assert s.source is r.source  # the raw record itself, not a copy
        assert schema_of(r.source["documentation"]) == SCHEMAS[ds]
        # Names, types, required flags and examples of parameters are the adapter's.
        assert [(p.name, p.type, p.required, p.example) for p in s.parameters] == [
            (p.name, p.type, p.required, p.example) for p in r.parameters
        ]
        assert s.examples == ()


@pytest.mark.parametrize("ds", DATASETS)
def test_descriptions_nonempty_and_clean(ds: str, std) -> None:
    cat = std[ds]
    nonempty = sum(bool(t.description.strip()) for t in cat) / len(cat)
    assert nonempty >= 0.99
    for t in cat:
        d = t.description
        assert d == d.strip() and "  " not in d and "\n" not in d
        assert "```" not in d
        assert not (d.startswith('"') and d.endswith('"'))


def test_response_coverage_report(std) -> None:
    coverage = {ds: sum(bool(t.response) for t in cat) / len(cat) for ds, cat in std.items()}
    print("\nresponse coverage: " + ", ".join(f"{ds} {v:.3f}" for ds, v in coverage.items()))
    for ds, v in coverage.items():
        assert v >= MIN_RESPONSE_COVERAGE[ds], (ds, v)


@pytest.mark.parametrize("ds", DATASETS)
def test_standardizing_twice_changes_nothing(ds: str, std) -> None:
    # The rules read the raw record in `source`, and every text they write survives
    # cleaning unchanged.
    assert standardize_catalog(std[ds]).to_list() == std[ds].to_list()


def test_inputs_not_mutated_and_runs_deterministic(raw) -> None:
    cat = raw["toolink"]
    snapshot = copy.deepcopy(cat.to_list())
    a = standardize_catalog(cat, examples={"toolink_tool_1": ["q1", "q2"]})
    b = standardize_catalog(cat, examples={"toolink_tool_1": ["q1", "q2"]})
    assert cat.to_list() == snapshot
    assert a.to_list() == b.to_list()


def test_known_tools(std) -> None:
    token = std["apibank"].get("apibank_tool_0")
    assert token.description.startswith("Get user token API")
    assert token.response == "Returns token (str): The token generated upon successful authentication."
    # "." is apibank_tool_39's whole description: the name in words stands in.
    assert std["apibank"].get("apibank_tool_39").description == "Image Caption."
    # toolink_tool_636 documents itself in labelled prose around the stub.
    digits = std["toolink"].get("toolink_tool_636")
    assert digits.description == "This function counts the number of digits in a given integer."
    assert "an integer representing the number of digits in n" in digits.response
    assert digits.parameters[0].description == "An integer n."


# ----------------------------------------------------------- hand-written records


def test_apibank_record() -> None:
    tool = toolret_tool(record("apibank_x", {
        "name": "AddAlarm",
        "description": '"Add an alarm API that takes the \'token\' and \'time\'."',
        "parameters": [
            {"name": "token", "in": "query", "schema": {"type": "str", "default": None},
             "description": "User token."},
            {"name": "time", "in": "query", "schema": {"type": "str", "default": None},
             "description": ""},
        ],
        "responses": {"status": {"type": "str", "description": "success or failed"}},
    }))
    out = standardize_tool(tool)
    assert out.description == "Add an alarm API that takes the 'token' and 'time'."
    assert out.response == "Returns status (str): success or failed."
    assert [(p.name, p.type, p.description, p.required) for p in out.parameters] == [
        ("token", "str", "User token.", True), ("time", "str", "", True)
    ]
    assert out.examples == ()


def test_apibank_parameter_text_from_description() -> None:
    tool = toolret_tool(record("apibank_y", {
        "name": "ModifyPassword",
        "description": "Modify password API. The 'old_password' parameter refers to the existing "
                       "password and the 'new_password' parameter specifies the new password.",
        "parameters": [{"name": "old_password", "schema": {"type": "str"}},
                       {"name": "new_password", "schema": {"type": "str"}}],
    }))
    out = standardize_tool(tool)
    assert {p.name: p.description for p in out.parameters} == {
        "old_password": "The existing password.", "new_password": "The new password."
    }
    assert out.response == ""  # no responses and no result sentence: nothing invented


def test_apigen_record() -> None:
    tool = toolret_tool(record("apigen_x", {
        "name": "stock_quotes",
        "description": "Fetches  real-time quotes for given symbols using the `Twelve Data` API. "
                       "Symbols must be comma separated.",
        "parameters": {
            "symbols": {"description": "Comma separated symbols.", "type": "str", "default": "AAPL"},
            "interval": {"description": "Bar interval.", "type": "str, optional", "default": "1min"},
        },
    }))
    out = standardize_tool(tool)
    assert out.description == ("Fetches real-time quotes for given symbols using the Twelve Data "
                               "API. Symbols must be comma separated.")
    assert out.response == "Returns real-time quotes for given symbols."
    assert [(p.name, p.type, p.required, p.example) for p in out.parameters] == [
        ("symbols", "str", True, "AAPL"), ("interval", "str", False, "1min")
    ]


def test_apigen_without_result_sentence_has_no_response() -> None:
    tool = toolret_tool(record("apigen_y", {
        "name": "convert_currency",
        "description": "Converts an amount from one currency to another.",
        "parameters": {"amount": {"description": "The amount.", "type": "float"}},
    }))
    assert standardize_tool(tool).response == ""


def test_gorilla_record() -> None:
    tool = toolret_tool(record("gorilla_x", {
        "domain": "Natural Language Processing Summarization",
        "framework": "Hugging Face Transformers",
        "functionality": "Transformers",
        "api_call": "pipeline('summarization', model='philschmid/bart-samsum')",
        "api_arguments": {"text": "text to summarize", "max_length": 60},
        "python_environment_requirements": "transformers",
        "example_code": "summarizer(conversation)",
        "performance": {"dataset": "samsum", "accuracy": ""},
        "description": "A BART model trained on SAMSum.\nIt can be used to generate summaries "
                       "of conversations.",
        "name": "philschmid/bart-samsum",
    }, kind="code"))
    out = standardize_tool(tool)
    # "Transformers" is the library, not a functionality: left out.
    assert out.description == ("A BART model trained on SAMSum. It can be used to generate "
                               "summaries of conversations. Domain: Natural Language "
                               "Processing Summarization.")
    assert out.response == ("Returns a summary of the input text. It can be used to generate "
                            "summaries of conversations.")
    assert {p.name: p.description for p in out.parameters} == {
        "text": "Text to summarize.", "max_length": ""
    }


def test_gorilla_unknown_task_falls_back_to_pipeline_hint() -> None:
    tool = toolret_tool(record("gorilla_y", {
        "domain": "Multimodal Graph Machine Learning", "framework": "Hugging Face Transformers",
        "functionality": "Graph Classification",
        "api_call": "AutoModel.from_pretrained('clefourrier/graphormer-base-pcqm4mv2')",
        "api_arguments": "pretrained_model_name", "description": "The Graphormer model.",
        "name": "graphormer",
    }, kind="code"))
    out = standardize_tool(tool)
    assert out.response == "Returns a Hugging Face pipeline output for Graph Classification."
    assert "Functionality: Graph Classification." in out.description


def test_toolink_record() -> None:
    tool = toolret_tool(record("toolink_x", {
        "name": "calculate_midterm_score",
        "description": "This method takes two arguments, 'semester_grade' and 'final_weight', "
                       "which are the semester grade and the weight of the final exam, "
                       "respectively. It returns the lowest possible midterm score.",
        "func_description": "```python\ndef calculate_midterm_score(semester_grade, final_weight=50):"
                            "\n    ...\n\treturn lowest_score\n```",
    }, kind="code"))
    out = standardize_tool(tool)
    assert out.description.startswith("This method takes two arguments")
    assert "def " not in out.description
    # The stub's "return lowest_score" adds no word the prose lacks, so it is not repeated.
    assert out.response == "Returns the lowest possible midterm score."
    assert [(p.name, p.description, p.required) for p in out.parameters] == [
        ("semester_grade", "The semester grade.", True),
        ("final_weight", "The weight of the final exam.", False),
    ]


def test_toolink_stub_name_adds_words() -> None:
    tool = toolret_tool(record("toolink_z", {
        "name": "f", "description": "Calculates the work done by the man.",
        "func_description": "def f(force, distance):\n    ...\n    return joules_total\n```",
    }, kind="code"))
    assert standardize_tool(tool).response == (
        "Returns the work done by the man. Returns joules total."
    )


def test_toolink_stub_only_response() -> None:
    tool = toolret_tool(record("toolink_y", {
        "name": "is_even", "description": "Checks a number.",
        "func_description": "def is_even(n: int) -> bool:\n    ...\n    return n % 2 == 0\n```",
    }, kind="code"))
    out = standardize_tool(tool)
    assert out.response == "Returns bool: n % 2 == 0."
    assert [(p.name, p.type) for p in out.parameters] == [("n", "int")]


def test_unknown_shapes_degrade_gracefully() -> None:
    odd = toolret_tool(record("odd_1", {"summary": "whatever", "parameters": None}))
    out = standardize_tool(odd)
    assert out.description == "Odd 1."  # the name in words (name defaults to the id)
    assert out.response == "" and out.parameters == ()
    plain = Tool(id="t", name="get_weather",
                 description="**Gets** the  current weather for a city.",
                 parameters=(Parameter("city", description="  City name. "),),
                 response="", examples=("old example",))
    out = standardize_tool(plain)
    assert out.description == "Gets the current weather for a city."
    assert out.response == "Returns the current weather for a city."
    assert out.parameters[0].description == "City name."
    assert out.examples == ()  # the tool's own examples are not kept
    assert out.source is None
    kept = standardize_tool(Tool(id="u", name="u", response="  A   list of rows. "))
    assert kept.response == "A list of rows."


# --------------------------------------------------------------------- examples


def test_examples_only_from_argument(raw) -> None:
    cat = raw["apigen"]
    assert all(t.examples == () for t in standardize_catalog(cat, examples=None))
    first, second = cat[0].id, cat[1].id
    given = {
        first: ["Find flights", "  find   FLIGHTS ", "Book a hotel", "", "a", "b", "c", "d"],
        second: ("Only one",),
        "not_in_catalog": ["ignored"],
    }
    out = standardize_catalog(cat, examples=given, max_examples=3)
    assert out.get(first).examples == ("Find flights", "Book a hotel", "a")
    assert out.get(second).examples == ("Only one",)
    assert sum(bool(t.examples) for t in out) == 2
    assert given[first][1] == "  find   FLIGHTS "  # the caller's mapping is untouched
    assert all(t.examples == () for t in standardize_catalog(cat, examples=given, max_examples=0))


def test_examples_argument_validation(raw) -> None:
    cat = raw["apibank"]
    with pytest.raises(TypeError):
        standardize_tool(cat[0], examples="one string")
    with pytest.raises(TypeError):
        standardize_catalog(cat, examples={cat[0].id: "one string"})
    with pytest.raises(ValueError):
        standardize_catalog(cat, max_examples=-1)
    assert standardize_tool(cat[0], examples=["x", "X", " x "]).examples == ("x",)


# ------------------------------------------------------------------ rule units


def test_clean_text() -> None:
    assert clean_text('"Hello  world"') == "Hello world"
    assert clean_text("'a' and 'b'") == "'a' and 'b'"  # not a wrapping pair
    assert clean_text("**Bold** and `code` [link](http://x) __init__") == "Bold and code link __init__"
    assert clean_text("Intro\n```python\ncode()\n```\nmore") == "Intro more"
    assert clean_text("```python\ndef f(): pass\n```") == "def f(): pass"
    assert clean_text("# Title\n- one\n- two<br>end") == "Title one two end"
    for placeholder in ("python", ".", "N/A", "", None, 3):
        assert clean_text(placeholder) == ""


def test_result_phrases() -> None:
    assert result_phrases("Fetches the weather from the OpenWeather API.") == ["Returns the weather"]
    assert result_phrases("Retrieves quotes from a page using the Foo RapidAPI.") == [
        "Returns quotes from a page"
    ]
    assert result_phrases("Rolls dice and returns the results.") == ["Returns the results"]
    assert result_phrases("Checks if a number is prime.") == ["Returns whether a number is prime"]
    assert result_phrases("It makes a GET request.") == []
    assert result_phrases("The results include a score.") == ["The results include a score."]
    assert result_phrases("Converts text to speech.") == []


def test_mentioned_parameters() -> None:
    params = [Parameter("num"), Parameter("y"), Parameter("done", description="kept")]
    text = "Takes 'num', which is an integer, and a float number `y`; 'done' is the flag."
    assert mentioned_parameters(text, params) == {"num": "An integer.", "y": "A float number."}
    # "'num' is divisible by 9" states a fact about the value; it does not describe it.
    assert mentioned_parameters("Returns whether 'num' is divisible by 9.", [Parameter("num")]) == {}
    assert mentioned_parameters("This method takes a list of integers and returns the max.",
                                [Parameter("xs")]) == {"xs": "A list of integers."}
    both = [Parameter("a"), Parameter("b")]
    assert mentioned_parameters("'a' and 'b', which are the width and the height, respectively.",
                                both) == {"a": "The width.", "b": "The height."}
    # A misaligned list ("divisors of 'a'" / "'b'") yields nothing rather than "'b'".
    assert mentioned_parameters("'a' and 'b', which are divisors of 'a' and 'b', respectively.",
                                both) == {}
    assert mentioned_parameters("the share that 'a' represents of 'b'.", both) == {}


# -------------------------------------------------------------- retrieval check


@pytest.mark.parametrize("ds", ["apigen", "toolink", "gorilla-huggingface"])
def test_bm25_ndcg_raw_vs_standardized(ds: str, raw, std) -> None:
    """Sanity check, not a tuning target: raw query text, BM25 ToolIndex, default
    weights, standardized catalogue without examples vs the raw adapter catalogue."""
    import pytrec_eval
    from toolsift import ToolIndex

    queries = load_queries(dataset(f"mftr-{ds}") / f"dataset/from_toolret/{ds}/queries.json")
    qrels = {q.id: {t: 1 for t in q.labels} for q in queries}

    def ndcg(catalog: Catalog) -> float:
        hits = ToolIndex.build(catalog, preset="bm25").search_batch([q.text for q in queries], k=10)
        run = {q.id: {h.id: h.score for h in hs} for q, hs in zip(queries, hits)}
        scores = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg_cut_10"}).evaluate(run)
        return sum(s["ndcg_cut_10"] for s in scores.values()) / len(queries)

    before, after = ndcg(raw[ds]), ndcg(std[ds])
    print(f"\n{ds}: NDCG@10 raw {before:.4f} standardized {after:.4f}")
    assert after >= 0.85 * before
