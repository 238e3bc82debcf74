"""Result tables (like the MFTR paper's Table 2), JSON summaries and Recall@K plots."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path

from .metrics import EvalResult

__all__ = ["format_table", "summary_json", "plot_recall"]

_SHORT = {"ndcg": "N", "recall": "R", "mrr": "MRR"}


def _label(metric: str) -> str:
    name, _, k = metric.partition("@")
    return f"{_SHORT.get(name, name)}@{k}" if k else _SHORT.get(name, name)


def format_table(results: Mapping[str, EvalResult], metrics: Sequence[str], *,
                 title: str = "", seconds: Mapping[str, float] | None = None) -> str:
    """A fixed-width text table: one row per method, one column per metric."""
    width = max([len("method")] + [len(m) for m in results])
    head = f"{'method':<{width}}  " + " ".join(f"{_label(m):>7}" for m in metrics)
    if seconds:
        head += f"  {'time':>8}"
    lines = [title] if title else []
    lines += [head, "-" * len(head)]
    for name, res in results.items():
        row = f"{name:<{width}}  " + " ".join(f"{res.mean[m]:>7.4f}" for m in metrics)
        if seconds:
            row += f"  {seconds.get(name, float('nan')):>7.2f}s"
        lines.append(row)
    return "\n".join(lines)


def summary_json(results: Mapping[str, EvalResult]) -> dict[str, dict[str, float]]:
    """``{method: {metric: value}}``."""
    return {name: dict(res.mean) for name, res in results.items()}


def plot_recall(curves: Mapping[str, Sequence[float]], path: str | os.PathLike, *, title: str = "") -> Path:
    """Recall@K curves (K = 1..len) per method, written as a PNG (atomically).

    Raises:
        ImportError: matplotlib is not installed (``pip install 'toolsift[plot]'``).
    """
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ImportError("--plot needs matplotlib: pip install 'toolsift[plot]'") from exc
    path = Path(path)
    fig, ax = plt.subplots(figsize=(6, 4), dpi=120)
    for name, ys in curves.items():
        ax.plot(range(1, len(ys) + 1), ys, marker="o", markersize=3, label=name)
    from matplotlib.ticker import MaxNLocator

    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_xlabel("K")
    ax.set_ylabel("Recall@K")
    ax.set_ylim(0, 1)
    ax.grid(alpha=0.3)
    ax.legend()
    if title:
        ax.set_title(title)
    fig.tight_layout()
    tmp = path.with_name(f".{path.name}.tmp.png")
    fig.savefig(tmp)
    plt.close(fig)
    os.replace(tmp, path)
    return path
