"""Skill sources by scheme: ``local`` (a directory or ``.zip``), ``package`` (inside an
installed Python package), ``url`` (an ``http(s)`` ``.zip``). :func:`register` adds a scheme.

A ``.zip`` is extracted into a private temporary directory, checked first: no entry may lead
outside it (absolute names, ``..``), no links, at most :data:`MAX_ZIP_ENTRIES` entries and
:data:`MAX_ZIP_BYTES` bytes unpacked. A download is bounded by :data:`MAX_DOWNLOAD_BYTES`
and :data:`DOWNLOAD_TIMEOUT`. The temporary directory is removed when the skills are closed
(the operator closes) or, failing that, when the process exits.
"""

from __future__ import annotations

import atexit
import os
import shutil
import stat
import tempfile
import threading
import urllib.parse
import urllib.request
import zipfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from importlib.resources import as_file, files
from pathlib import Path, PurePosixPath

from flink_agents.runtime.skill.skill_repository import FileSystemSkillRepository, SkillRepository

MAX_ZIP_ENTRIES = 10_000
MAX_ZIP_BYTES = 256 * 1024 * 1024
MAX_DOWNLOAD_BYTES = 64 * 1024 * 1024
DOWNLOAD_TIMEOUT = 60.0
_PREFIX = "flink-agents-skills-"


@dataclass(frozen=True)
class SkillSourceHandler:
    """How a scheme opens a source (``params`` -> repository) and names it in messages."""

    open: Callable[[Mapping[str, str]], SkillRepository]
    describe_location: Callable[[Mapping[str, str]], str]


_lock = threading.Lock()
_handlers: dict[str, SkillSourceHandler] = {}


def register(
    scheme: str,
    open_source: Callable[[Mapping[str, str]], SkillRepository],
    describe_location: Callable[[Mapping[str, str]], str] | None = None,
) -> None:
    """Add (or replace) the handler of ``scheme``."""
    with _lock:
        _handlers[scheme.lower()] = SkillSourceHandler(
            open_source, describe_location or (lambda params: str(dict(params)))
        )


def get(scheme: str) -> SkillSourceHandler:
    """The handler of ``scheme``.

    Raises:
        ValueError: an unknown scheme (the message lists the known ones).
    """
    with _lock:
        handler = _handlers.get(scheme.lower())
        known = sorted(_handlers)
    if handler is None:
        raise ValueError(
            f"unknown skill source scheme {scheme!r} (known: {', '.join(known)}); a Java-only "
            "scheme such as 'classpath' cannot load in Python"
        )
    return handler


# -- temporary directories -------------------------------------------------------------------


class _TempDir:
    """A private temporary directory removed on :meth:`remove` or at exit."""

    def __init__(self) -> None:
        self.path = Path(tempfile.mkdtemp(prefix=_PREFIX))
        atexit.register(self.remove)

    def remove(self) -> None:
        atexit.unregister(self.remove)
        shutil.rmtree(self.path, ignore_errors=True)


def extract_zip(zip_path: Path) -> FileSystemSkillRepository:
    """The skills of a ``.zip`` (its top level holds the skill directories).

    Raises:
        ValueError: not a zip, an entry leading outside, a link, too many or too large
            entries.
    """
    target = _TempDir()
    try:
        try:
            archive = zipfile.ZipFile(zip_path)
        except zipfile.BadZipFile as exc:
            raise ValueError(f"{zip_path} is not a zip file: {exc}") from None
        with archive:
            members = archive.infolist()
            if len(members) > MAX_ZIP_ENTRIES:
                raise ValueError(f"{zip_path} has more than {MAX_ZIP_ENTRIES} entries")
            total = 0
            for member in members:
                name = PurePosixPath(member.filename)
                if name.is_absolute() or ".." in name.parts or "\\" in member.filename:
                    raise ValueError(f"unsafe zip entry {member.filename!r} in {zip_path}")
                if stat.S_ISLNK(member.external_attr >> 16):
                    raise ValueError(f"zip entry {member.filename!r} in {zip_path} is a link")
                total += member.file_size
                if total > MAX_ZIP_BYTES:
                    raise ValueError(f"{zip_path} unpacks to more than {MAX_ZIP_BYTES} bytes")
            archive.extractall(target.path)
    except BaseException:
        target.remove()
        raise
    return FileSystemSkillRepository(target.path, cleanup=target.remove)


def _copy_dir(source: Path) -> FileSystemSkillRepository:
    target = _TempDir()
    try:
        shutil.copytree(source, target.path, dirs_exist_ok=True, symlinks=True)
    except BaseException:
        target.remove()
        raise
    return FileSystemSkillRepository(target.path, cleanup=target.remove)


# -- the schemes -----------------------------------------------------------------------------


def _param(params: Mapping[str, str], key: str, scheme: str) -> str:
    value = params.get(key)
    if not value:
        raise ValueError(f"a {scheme!r} skill source needs {key!r}")
    return value


def _open_local(params: Mapping[str, str]) -> SkillRepository:
    path = Path(_param(params, "path", "local")).expanduser()
    if path.is_dir():
        return FileSystemSkillRepository(path)
    if path.is_file() and path.suffix.lower() == ".zip":
        return extract_zip(path)
    if not path.exists():
        raise ValueError(f"skill directory {path} does not exist (on this machine)")
    raise ValueError(f"{path} is neither a directory nor a .zip file")


def _open_package(params: Mapping[str, str]) -> SkillRepository:
    package = _param(params, "package", "package")
    resource = _param(params, "resource", "package")
    try:
        traversable = files(package).joinpath(resource)
    except ModuleNotFoundError:
        raise ValueError(f"package {package!r} is not installed") from None
    if not traversable.is_dir() and not traversable.is_file():
        raise ValueError(f"package {package!r} has no resource {resource!r}")
    with as_file(traversable) as path:
        path = Path(path)
        if path.is_dir():
            return _copy_dir(path)  # a copy outlives as_file (a package inside a zip)
        if path.suffix.lower() == ".zip":
            return extract_zip(path)
    raise ValueError(f"{package}/{resource} is neither a directory nor a .zip file")


def _open_url(params: Mapping[str, str]) -> SkillRepository:
    url = _param(params, "url", "url")
    scheme = urllib.parse.urlsplit(url).scheme.lower()
    if scheme not in ("http", "https"):
        raise ValueError(f"skill URL {url!r} must be http or https")
    fd, name = tempfile.mkstemp(prefix=_PREFIX, suffix=".zip")
    try:
        with (
            os.fdopen(fd, "wb") as out,
            urllib.request.urlopen(url, timeout=DOWNLOAD_TIMEOUT) as response,
        ):
            size = 0
            while chunk := response.read(65536):
                size += len(chunk)
                if size > MAX_DOWNLOAD_BYTES:
                    raise ValueError(f"{url} is larger than {MAX_DOWNLOAD_BYTES} bytes")
                out.write(chunk)
        return extract_zip(Path(name))
    finally:
        Path(name).unlink(missing_ok=True)


def _describe_url(params: Mapping[str, str]) -> str:
    # no credentials or query (a token) in messages and logs
    parts = urllib.parse.urlsplit(params.get("url", "?"))
    host = parts.hostname or ""
    if parts.port:
        host += f":{parts.port}"
    return urllib.parse.urlunsplit((parts.scheme, host, parts.path, "", ""))


register("local", _open_local, lambda p: p.get("path", "?"))
register("package", _open_package, lambda p: f"{p.get('package', '?')}/{p.get('resource', '?')}")
register("url", _open_url, _describe_url)
