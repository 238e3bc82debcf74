"""Every citation of a results file in README.md and docs/*.md resolves, and the numbers
beside it are in it.

The rule, in full:

1. A citation is a path to a file under ``docs/results/``, written ``docs/results/NAME``
   (anywhere) or ``results/NAME`` (in a page of docs/), as a link target or as text. It
   must name an existing file.
2. The numbers "beside" a citation are those of its sentence. Fenced code blocks are left
   out. In a table the unit is the cell holding the citation (a row's cells may come from
   different runs; the prose around each table says which). Elsewhere a paragraph is
   split into sentences after ``.``, ``!``, ``?``, ``;`` or ``:`` followed by a space and
   a capital letter, ``(``, ``[``, ``*`` or a backtick.
3. Checked numbers are decimals with at least two digits after the point (``.5431``,
   ``0.23``, ``1,221.5`` is read as 1221.5) outside inline code, not touching a letter,
   ``@``, ``/``, ``-``, ``+``, ``−``, ``.`` or a digit (identifiers, versions, dates,
   paths), and not derived from other numbers: a ratio (``×`` right before or after it)
   or a signed difference (``+.013``, ``−.027``) is computed from the cited figures and
   not looked up.
4. A number with ``d`` decimals is in a cited file when that file (any of the sentence's
   cited files) holds a decimal number that rounds to it at ``d`` decimals, directly or
   after a unit change by 1000 (``1.22 s`` for ``1221.2 ms``).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
CITATION = re.compile(r"(?<![\w/.-])((?:docs/)?results/[\w.@+-]+\.(?:md|json|txt|csv))")
NUMBER = re.compile(r"(?<![\w@./×+\-−])(\d[\d,]*\.\d{2,}|\.\d{2,})(?![\w.@×/\-]|\d)")
FILE_NUMBER = re.compile(r"\d*\.\d+")
SENTENCE_END = re.compile(r"(?<=[.!?;:])\s+(?=[A-Z(\[*`])")


def _units(text: str) -> list[str]:
    """Rule 2: the sentences and table cells of a Markdown page, code blocks left out."""
    text = re.sub(r"^```.*?^```", "", text, flags=re.S | re.M)
    units: list[str] = []
    for para in re.split(r"\n\s*\n", text):
        lines = [line.strip() for line in para.splitlines() if line.strip()]
        rows = [line for line in lines if line.startswith("|")]
        units += [cell for row in rows for cell in row.strip("|").split("|")]
        prose = " ".join(line for line in lines if not line.startswith("|"))
        units += SENTENCE_END.split(prose)
    return units


def _target(doc: Path, cited: str) -> Path:
    return ROOT / cited if cited.startswith("docs/") else doc.parent / cited


def _citations() -> list:
    params = []
    for doc in DOCS:
        for unit in _units(doc.read_text(encoding="utf-8")):
            cited = CITATION.findall(unit)
            if cited:
                params.append(pytest.param(doc, unit, cited, id=f"{doc.name}:{cited[0]}"))
    return params


CITATIONS = _citations()


def _numbers(unit: str) -> list[str]:
    """Rule 3: the numbers of a unit that are looked up."""
    bare = CITATION.sub(" ", re.sub(r"`[^`]*`", " ", unit))
    return [m.group(1) for m in NUMBER.finditer(bare)]


def _found(number: str, values: list[float]) -> bool:
    """Rule 4."""
    digits = len(number.rpartition(".")[2])
    x, tol = float(number.replace(",", "")), 0.5 * 10 ** -digits + 1e-9
    return any(abs(v * scale - x) <= tol for v in values for scale in (1, 1000, 0.001))


def test_the_rule_reads_numbers_as_documented():
    unit = "N@10 .5431 / 0.6950 (×1.113, +.013, 1.10×), p50 1.22 s, v0.47 `b=0.75` 2026-11-26 1,221.25 ms"
    assert _numbers(unit) == [".5431", "0.6950", "1.22", "1,221.25"]
    assert _found(".5431", [0.5431189]) and _found("1.22", [1221.2]) and not _found(".5432", [0.5431189])
    assert _units("A is .5 ([x](results/a.md)). B is .6.\n\n| a | .7 [y](results/b.md) |\n") == \
        ["A is .5 ([x](results/a.md)).", "B is .6.", " a ", " .7 [y](results/b.md) ", ""]
    assert len(CITATIONS) >= 40  # the pages cite their results files


@pytest.mark.parametrize("doc, unit, cited", CITATIONS)
def test_citation_resolves_and_holds_its_numbers(doc, unit, cited):
    files = [_target(doc, c) for c in cited]
    missing = [c for c, f in zip(cited, files) if not f.is_file()]
    assert not missing, f"{doc.name} cites a results file that does not exist: {missing}"
    values = [float(v) for f in files for v in FILE_NUMBER.findall(f.read_text(encoding="utf-8", errors="replace"))]
    absent = [n for n in _numbers(unit) if not _found(n, values)]
    assert not absent, f"{doc.name}: {absent} not in {cited}, though cited beside them:\n{unit.strip()}"
