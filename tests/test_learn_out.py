"""``toolsift learn INDEX --usage DB OUT`` never writes into its input (issue 37, item 3).

OUT equal to INDEX, inside it (a generation folder, a new subfolder), or containing it
(its parent), named directly, through ``..`` or through symlinks: refused with one
``toolsift: error:`` line and status 2, and INDEX keeps every byte, loads and answers as
before. (Only the resolved-equal case was refused; ``OUT = INDEX/<generation>`` exited 0
and INDEX then failed to load.)
"""

from __future__ import annotations

import io
import os
from pathlib import Path

import pytest

from toolsift import ToolIndex
from toolsift.cli import main
from toolsift.usage import UsageLog

QUERY = "send an email to my boss"


def _files(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.fixture
def setup(tmp_path, demo_index):
    index = demo_index.save(tmp_path / "data" / "idx")
    db = tmp_path / "usage.db"
    with UsageLog(db) as log:
        for i in range(6):
            log.add_use(run="r", session=f"s{i}", client=f"c{i}", tool_id="send_email", outcome="success",
                        via="record_use", query_text="mail the boss", intent="mail the boss")
    (tmp_path / "link-to-idx").symlink_to(index)
    (tmp_path / "link-to-data").symlink_to(tmp_path / "data")
    return tmp_path, index, db


def _generation(index: Path) -> Path:
    (gen,) = [p for p in index.iterdir() if p.is_dir()]
    return gen


CASES = {
    "equal": lambda t, i: i,
    "equal_dotdot": lambda t, i: i / ".." / i.name,
    "equal_symlink": lambda t, i: t / "link-to-idx",
    "generation_folder": lambda t, i: _generation(i),
    "generation_via_symlink": lambda t, i: t / "link-to-idx" / _generation(i).name,
    "new_subfolder": lambda t, i: i / "learned",
    "subfolder_via_parent_symlink": lambda t, i: t / "link-to-data" / "idx" / "learned",
    "parent": lambda t, i: i.parent,
    "parent_symlink": lambda t, i: t / "link-to-data",
    "grandparent": lambda t, i: t,
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_learn_refuses_out_that_overlaps_index(setup, case, capsys):
    tmp, index, db = setup
    out = CASES[case](tmp, index)
    before = _files(index)
    answer = [h.id for h in ToolIndex.load(index).search(QUERY, k=10)]
    rc = main(["learn", str(index), "--usage", str(db), str(out), "--min-clients", "1"], out=io.StringIO())
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2 and len(err) == 1 and err[0].startswith("toolsift: error: learn: OUT"), err
    assert _files(index) == before
    assert [h.id for h in ToolIndex.load(index).search(QUERY, k=10)] == answer


def test_learn_into_a_sibling_still_works(setup):
    tmp, index, db = setup
    out = tmp / "data" / "learned"
    assert main(["learn", str(index), "--usage", str(db), str(out), "--min-clients", "1"], out=io.StringIO()) == 0
    assert ToolIndex.load(out).search(QUERY, k=1)
    assert os.path.isdir(out) and ToolIndex.load(index).search(QUERY, k=1)
