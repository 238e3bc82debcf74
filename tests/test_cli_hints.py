"""Small things a user trips on: progress bars only for long work (with an ETA), `eval`
on a folder of data sets, and queries no tool shares a word with."""

from __future__ import annotations

import time

import anyio
import pytest

from toolsift.cli import main
from toolsift.progress import SHOW_AFTER_S, progress_bar


def test_short_work_shows_no_bar(capsys):
    assert list(progress_bar(range(50), True, "quick")) == list(range(50))
    assert capsys.readouterr().err == ""


@pytest.mark.slow  # needs over a second of real work (~4 s)
def test_long_work_shows_a_bar_with_eta(capsys):
    def slow():
        for i in range(4):
            time.sleep(SHOW_AFTER_S / 2)
            yield i

    assert list(progress_bar(slow(), True, "slow", total=4)) == [0, 1, 2, 3]
    err = capsys.readouterr().err
    assert "slow:" in err and "<" in err  # tqdm's "elapsed<remaining"
    assert list(progress_bar(slow(), False, "off", total=4)) == [0, 1, 2, 3]
    assert capsys.readouterr().err == ""


def test_eval_on_a_folder_of_datasets_lists_them(tmp_path, capsys):
    (tmp_path / "mftr-a" / "dataset" / "from_toolret").mkdir(parents=True)
    (tmp_path / "ultra" / "data" / "English-dataset").mkdir(parents=True)
    (tmp_path / "notes").mkdir()
    assert main(["eval", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert f"{tmp_path} is a folder of data sets, not one data set; it holds: mftr-a, ultra" in err
    assert "notes" not in err


@pytest.fixture(scope="module")
def demo_index(tmp_path_factory):
    from toolsift.adapters import demo_catalog_path

    # A BM25 index: "no shared word" is a lexical notion (the hybrid default's dense half
    # gives every tool a cosine).
    out = tmp_path_factory.mktemp("idx") / "index"
    assert main(["index", str(demo_catalog_path()), str(out), "--preset", "bm25"]) == 0
    return out


def test_search_without_a_shared_word_suggests_dense(demo_index, capsys):
    capsys.readouterr()
    assert main(["search", str(demo_index), "xyzzy plugh qwertz"]) == 0
    out = capsys.readouterr().out
    assert "no tool matches any word of this query" in out and "hybrid" in out
    assert main(["search", str(demo_index), "send an email"]) == 0
    assert "no tool matches" not in capsys.readouterr().out


def test_library_and_find_tools_report_no_match(demo_index):
    from toolsift import ToolIndex
    from toolsift.gateway import Gateway

    index = ToolIndex.load(demo_index)
    hits = index.search("xyzzy plugh qwertz", k=3)
    assert hits and not any(h.matched for h in hits)  # the library's signal: an attribute
    gateway = Gateway(index)
    found = anyio.run(lambda: gateway.find_tools("xyzzy plugh qwertz"))
    assert found["tools"] == [] and "rephrase" in found["note"].lower()
    found = anyio.run(lambda: gateway.find_tools("send an email"))
    assert found["tools"] and "note" not in found


def test_search_on_the_default_preset_says_nothing_matched(tmp_path, capsys):
    from toolsift.adapters import demo_catalog_path

    out_dir = tmp_path / "hybrid"
    assert main(["index", str(demo_catalog_path()), str(out_dir)]) == 0
    capsys.readouterr()
    assert main(["search", str(out_dir), "xyzzy plugh qwertz"]) == 0
    out = capsys.readouterr().out
    # The hybrid index does not send the user to the hybrid preset it already is.
    assert "closer in meaning than random text" in out and "--preset bm25" not in out
    assert main(["search", str(out_dir), "snap a photo of the porch"]) == 0
    out = capsys.readouterr().out
    assert "no tool matches" not in out and "get_camera_snapshot" in out
