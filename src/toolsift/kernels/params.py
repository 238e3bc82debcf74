"""Scoring parameters of the MFTR model: field weights, bias and the penalty shape.

The score of a query ``q`` and tool ``t`` is::

    S(q,t) = c(t) · Σ_f w_f · m_f(t) · S_f + b − P(q,t)
    S_param = λ · max_p s_p + (1 − λ) · mean_p s_p
    P(q,t) = Σ_p sigmoid(α(τ − s_p)) · (w_req if p.required else w_opt)

with ``λ = param_max_share``. Without ``renormalize``, ``c(t) = 1`` and ``m_f(t) = 1`` (the
MFTR paper's formula). With it, ``m_f(t)`` is 1 when tool ``t`` has field ``f`` (some
text, at least one parameter) and 0 otherwise, and ``c(t) = Σ_f |w_f| / Σ_f |w_f| m_f(t)``
so a tool's present fields share the whole weight (``c = 1`` if no weighted field is
present).

:class:`ScoringParams` holds ``(w_desc, w_param, w_resp, w_ex)``, ``b``, ``α``, ``τ``,
``w_req`` and ``w_opt``, validated at construction so a bad value never reaches a
kernel. It reads and writes a plain dictionary (our own format) and the learned-params
JSON files published by the MFTR authors.
"""

from __future__ import annotations

import json
import math
import numbers
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, cast

import numpy as np

from ..errors import ConfigError

__all__ = ["WEIGHT_FIELDS", "ScoringParams", "DEFAULT_PARAMS", "PAPER_PARAMS", "COLDSTART_INIT",
           "STRUCTURED_PARAMS", "UNIT_SCALE_TOL", "shipped_params", "shipped_weights", "structured_twin"]

#: Order of :attr:`ScoringParams.weights`; the same order as ``toolsift.schema.FIELDS``.
WEIGHT_FIELDS: tuple[str, ...] = ("description", "parameters", "response", "examples")

_SCALARS: tuple[str, ...] = ("bias", "alpha", "tau", "w_req", "w_opt", "param_max_share")

#: Slack of :meth:`ScoringParams.on_unit_scale`'s checks (sums of rounded JSON floats).
UNIT_SCALE_TOL = 1e-6


def _finite(value: Any, where: str) -> float:
    # bool is an int subclass; True as a weight is almost surely a mistake.
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise ConfigError(f"{where}: expected a real number, got {type(value).__name__}")
    out = float(value)
    if not math.isfinite(out):
        raise ConfigError(f"{where}: must be finite, got {out}")
    return out


@dataclass(frozen=True)
class ScoringParams:
    """Learned or default MFTR scoring parameters.

    Defaults are the untrained values from the MFTR paper: weights ``(.35, .25, .15, .25)``,
    ``bias 0``, ``alpha 15``, ``tau .5``. The paper gives no untrained values for the
    penalty weights; we default to ``w_req = 0.1`` (a tool whose required parameter no
    argument matches loses up to 0.1) and ``w_opt = 0.0`` (unmatched optional parameters
    cost nothing), so an untrained scorer penalises only what a call cannot do without.

    Attributes:
        weights: ``(w_description, w_parameters, w_response, w_examples)``.
        bias: Constant added to every score (does not change a ranking).
        alpha: Steepness of the missing-parameter sigmoid.
        tau: Similarity below which a parameter counts as unmatched.
        w_req: Penalty weight of an unmatched required parameter.
        w_opt: Penalty weight of an unmatched optional parameter.
        param_max_share: ``λ`` in [0, 1]: the parameters field is ``λ·max + (1−λ)·mean``
            over the tool's per-parameter matches. 0 is the MFTR paper's mean, under which
            evidence in one parameter of four is divided by four.
        renormalize: Give each tool's present fields the weight of its absent ones
            (see the module docstring); off in the MFTR paper's formula.

    Raises:
        ConfigError: A value is not a finite real number, ``weights`` does not hold
            exactly four of them, ``param_max_share`` is outside [0, 1] or
            ``renormalize`` is not a bool. The message names the field.
    """

    weights: tuple[float, float, float, float] = (0.35, 0.25, 0.15, 0.25)
    bias: float = 0.0
    alpha: float = 15.0
    tau: float = 0.5
    w_req: float = 0.1
    w_opt: float = 0.0
    param_max_share: float = 0.0
    renormalize: bool = False

    def __post_init__(self) -> None:
        w = self.weights
        if isinstance(w, (str, bytes, Mapping)) or not isinstance(w, (Sequence, np.ndarray)):
            raise ConfigError(
                f"weights: expected a sequence of {len(WEIGHT_FIELDS)} numbers, "
                f"got {type(w).__name__}"
            )
        if len(w) != len(WEIGHT_FIELDS):
            raise ConfigError(
                f"weights: expected {len(WEIGHT_FIELDS)} values {WEIGHT_FIELDS}, got {len(w)}"
            )
        weights = tuple(_finite(v, f"weights[{i}] ({WEIGHT_FIELDS[i]})") for i, v in enumerate(w))
        # Frozen dataclass: normalised values go in through object.__setattr__.
        object.__setattr__(self, "weights", weights)
        for name in _SCALARS:
            object.__setattr__(self, name, _finite(getattr(self, name), name))
        if not 0.0 <= self.param_max_share <= 1.0:
            raise ConfigError(f"param_max_share: must be in [0, 1], got {self.param_max_share}")
        if not isinstance(self.renormalize, bool):
            raise ConfigError(f"renormalize: expected a bool, got {self.renormalize!r}")

    def on_unit_scale(self) -> bool:
        """Whether these parameters score on toolsift's one documented scale
        (docs/scoring.md): weights ``>= 0`` summing to 1, bias 0, ``w_req, w_opt >= 0``.

        Every field score lies in [0, 1] (bounded or linear BM25, ``max(cos, 0)``, their
        hybrid mix, max/mean over parameters), so the score before the penalty then lies
        in [0, 1], and the penalty only lowers it (by at most ``w_req`` per unmatched
        required and ``w_opt`` per unmatched optional parameter). The shipped weights and
        what ``toolsift train`` and usage learning write are on this scale.
        """
        w = np.asarray(self.weights)
        return bool((w >= 0).all() and abs(w.sum() - 1.0) <= UNIT_SCALE_TOL and self.bias == 0.0
                    and self.w_req >= 0 and self.w_opt >= 0)

    def to_unit_scale(self) -> ScoringParams:
        """The same ranking on the unit scale: weights and penalty weights divided by the
        weights' sum, bias 0 (a positive factor and a constant shift change no ranking).

        Raises:
            ConfigError: A weight or penalty weight is negative, or all weights are 0
                (no positive rescaling reaches the unit scale then).
        """
        w = np.asarray(self.weights)
        if (w < 0).any() or self.w_req < 0 or self.w_opt < 0:
            raise ConfigError(f"unit scale: negative weight in weights={list(self.weights)}, "
                              f"w_req={self.w_req}, w_opt={self.w_opt}")
        total = float(w.sum())
        if total <= 0:
            raise ConfigError("unit scale: all field weights are 0")
        unit = cast("tuple[float, float, float, float]", tuple(float(x) / total for x in w))  # len checked
        return replace(self, weights=unit, bias=0.0,
                       w_req=self.w_req / total, w_opt=self.w_opt / total)

    def weights_array(self) -> np.ndarray:
        """Return the weights as a fresh ``float64[4]`` array, in field order."""
        return np.array(self.weights, dtype=np.float64)

    def to_dict(self) -> dict[str, Any]:
        """Return a JSON-ready dictionary that :meth:`from_dict` reads back unchanged."""
        return {"weights": list(self.weights), **{name: getattr(self, name) for name in _SCALARS},
                "renormalize": self.renormalize}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> ScoringParams:
        """Build from a dictionary written by :meth:`to_dict`.

        Missing keys take their defaults, so ``{"tau": 0.4}`` is a valid partial
        override.

        Args:
            d: Mapping with any of ``weights``, ``bias``, ``alpha``, ``tau``, ``w_req``,
                ``w_opt``, ``param_max_share``, ``renormalize``.

        Returns:
            The validated parameters.

        Raises:
            ConfigError: ``d`` is not a mapping, has unknown keys (a typo would otherwise
                silently fall back to a default), or holds a bad value.
        """
        if not isinstance(d, Mapping):
            raise ConfigError(f"scoring params: expected a mapping, got {type(d).__name__}")
        known = ("weights", *_SCALARS, "renormalize")
        unknown = sorted(str(k) for k in d if k not in known)
        if unknown:
            raise ConfigError(
                f"scoring params: unknown key(s) {unknown}; expected some of {list(known)}"
            )
        return cls(**{k: d[k] for k in known if k in d})

    @classmethod
    def from_mftr_json(cls, d: Mapping[str, Any] | str | os.PathLike[str]) -> ScoringParams:
        """Read the MFTR authors' learned-params format.

        The format is ``{"base_weight": [[w_description, w_avg_param, w_response,
        w_examples]], "base_bias": [b], "tau": τ, "w_req": w, "w_opt": w, "alpha": α}``
        (one ``fold_k_learned_params.json`` per retriever and fold). ``alpha`` may be
        absent (the authors fix it at 15) and takes the default then.

        Args:
            d: The parsed JSON object, or a path to the file.

        Returns:
            The validated parameters.

        Raises:
            ConfigError: A key is missing or a value has the wrong shape or is not finite.
                The message names the key (and the file, when given a path).
        """
        if isinstance(d, (str, os.PathLike)):
            path = Path(d)
            try:
                data = json.loads(path.read_text(encoding="utf-8"))
            except (OSError, ValueError) as exc:
                raise ConfigError(f"{path}: cannot read MFTR params: {exc}") from exc
            try:
                return cls.from_mftr_json(data)
            except ConfigError as exc:
                raise ConfigError(f"{path}: {exc}") from exc
        if not isinstance(d, Mapping):
            raise ConfigError(f"MFTR params: expected a JSON object, got {type(d).__name__}")
        for key in ("base_weight", "base_bias", "tau", "w_req", "w_opt"):
            if key not in d:
                raise ConfigError(f"MFTR params: missing key {key!r}")
        return cls(
            weights=cast("tuple[float, float, float, float]", tuple(_unwrap(d["base_weight"], "base_weight",
                                                                            len(WEIGHT_FIELDS)))),
            bias=_unwrap(d["base_bias"], "base_bias", 1)[0],
            alpha=d.get("alpha", cls.alpha),
            tau=d["tau"],
            w_req=d["w_req"],
            w_opt=d["w_opt"],
        )

    def to_mftr_json(self) -> dict[str, Any]:
        """Return the parameters in the MFTR authors' learned-params format."""
        return {
            "base_weight": [list(self.weights)],
            "base_bias": [self.bias],
            "tau": self.tau,
            "w_req": self.w_req,
            "w_opt": self.w_opt,
            "alpha": self.alpha,
        }


def _unwrap(value: Any, key: str, n: int) -> list[Any]:
    # The authors store torch parameters: a 1×n matrix for weights, a 1-vector for bias.
    # Accept the flat form too, since a hand-written file is likely to use it.
    try:
        arr = np.asarray(value, dtype=object)
    except ValueError as exc:  # ragged nesting
        raise ConfigError(f"MFTR params: {key}: ragged nesting ({exc})") from exc
    shape = arr.shape
    if arr.ndim == 2 and arr.shape[0] == 1:
        arr = arr[0]
    elif arr.ndim == 0 and n == 1:
        arr = arr.reshape(1)
    if arr.ndim != 1 or arr.shape[0] != n:
        want = f"[[{n} numbers]]" if n > 1 else "[number]"
        raise ConfigError(f"MFTR params: {key}: expected {want}, got shape {shape}")
    return [_finite(v, f"MFTR params: {key}[{i}]") for i, v in enumerate(arr)]


#: The MFTR paper's untrained formula and weights (mean pooling, no renormalisation); see
#: :class:`ScoringParams` for the choice of ``w_req``/``w_opt``. The MFTR reference setup
#: (``IndexConfig.reference()``) uses these.
PAPER_PARAMS = ScoringParams()

#: The untrained cold-start formula (docs/coldstart.md): the paper's weights, the
#: parameters field pooled by max. The starting point of the shipped weights' training.
COLDSTART_INIT = ScoringParams(param_max_share=1.0)

_WEIGHTS_DIR = Path(__file__).resolve().parents[1] / "data" / "weights"


def shipped_weights(name: str = "default") -> dict[str, Any]:
    """A shipped weights file as written: ``params``, ``trained_on``, ``index_config``
    (the index settings the weights were trained with, e.g. ``hybrid_weight``), ...

    Args:
        name: ``"default"`` (BM25 fields, learned on all five shared benchmarks, raw
            queries, raw tools), ``"lodo-<set>"`` (learned on the other four only; for
            honest evaluation on ``<set>``, e.g. ``"lodo-mftr-apibank"``), or the same
            with a ``hybrid-`` prefix (learned with hybrid description/response/examples
            fields, e.g. ``"hybrid-default"``); with ``structured-`` after the
            optional ``hybrid-`` (``"structured-default"``,
            ``"structured-lodo-<set>"``, ``"hybrid-structured-default"``): learned on
            the MFTR authors' LLM-rewritten queries (tool needs and extracted
            arguments), for structured queries (see :func:`structured_twin`).

    Raises:
        ConfigError: No such file, or it does not hold valid parameters.
    """
    if not isinstance(name, str) or not name.replace("-", "").replace("_", "").isalnum():
        raise ConfigError(f"shipped weights: bad name {name!r}")
    path = _WEIGHTS_DIR / f"{name}.json"
    if not path.is_file():
        known = sorted(p.stem for p in _WEIGHTS_DIR.glob("*.json"))
        raise ConfigError(f"shipped weights: no {name!r} (available: {', '.join(known) or 'none'})")
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
        doc["params"] = ScoringParams.from_dict(doc["params"])
        return doc
    except (ValueError, KeyError, TypeError) as exc:
        raise ConfigError(f"{path}: not a shipped weights file: {exc}") from exc


def shipped_params(name: str = "default") -> ScoringParams:
    """Scoring parameters shipped in the package (see :func:`shipped_weights` for the
    names).

    Raises:
        ConfigError: No such file, or it does not hold valid parameters.
    """
    return shipped_weights(name)["params"]


#: The scoring parameters of a new index: the shipped cross-dataset weights
#: (``data/weights/default.json``, made by scripts/train_default_weights.py).
DEFAULT_PARAMS = shipped_params() if (_WEIGHTS_DIR / "default.json").is_file() else COLDSTART_INIT

#: The scoring parameters of structured queries (tool needs, extracted arguments) on a new
#: index: ``data/weights/structured-default.json`` (scripts/train_structured_weights.py),
#: ``None`` if not shipped.
STRUCTURED_PARAMS: ScoringParams | None = (shipped_params("structured-default")
                                          if (_WEIGHTS_DIR / "structured-default.json").is_file() else None)

_TWINS: dict[ScoringParams, ScoringParams] | None = None


def structured_twin(params: ScoringParams) -> ScoringParams | None:
    """The shipped structured-query weights that belong with shipped raw-query weights:
    file ``[hybrid-]structured-<name>`` for ``params`` equal to file ``[hybrid-]<name>``'s
    (``default``, ``hybrid-default``, ``lodo-<set>``...), else ``None``: weights of your
    own are not second-guessed, they score every query.

    This is what an :class:`~toolsift.config.IndexConfig` without explicit
    ``structured_params`` uses for structured queries.
    """
    global _TWINS
    if params == DEFAULT_PARAMS:
        return STRUCTURED_PARAMS
    if _TWINS is None:  # read once, on first use by a non-default index
        out: dict[ScoringParams, ScoringParams] = {}
        for prefix in ("", "hybrid-"):
            for path in sorted(_WEIGHTS_DIR.glob(f"{prefix}structured-*.json")):
                raw = prefix + path.stem[len(prefix) + len("structured-"):]
                if (_WEIGHTS_DIR / f"{raw}.json").is_file():
                    out.setdefault(shipped_params(raw), shipped_params(path.stem))
        _TWINS = out
    return _TWINS.get(params)
