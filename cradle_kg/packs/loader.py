"""Loading a pack: its folder becomes a Python package under a synthetic name.

The name carries the id, the version and a digest of the three (id, version, folder)
(``cradle_pack_customs_hs_router__1_0_0__<12 hex>``), so two versions of one pack can be
loaded side by side, and two packs whose names read alike never share one module. The
built-in packs load through exactly this code, like a third-party pack.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import os
import re
import stat
import sys
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

from ..errors import ManifestError
from .manifest import Manifest, read_manifest
from .static import inside

#: the synthetic package names' prefix (:func:`package_name`): the modules :class:`_PackFinder`
#: imports from their source alone
_PACKAGE_PREFIX = "cradle_pack_"


def package_name(manifest: Manifest, folder: Path) -> str:
    """The module name the pack folder is imported under: one per id, version and folder.

    INVARIANT: the readable part folds `.` and `-` into `_` (a module name has neither),
    so it alone named `acme.ab-c` and `acme.ab.c` (or versions `1.0.0-rc.1` and
    `1.0.0-rc-1`, or one id@version in two homes of one process) alike: the second pack
    found the first one's module in ``sys.modules`` and registered *its* code under its
    own manifest (``tests/security/test_512``). The digest keeps them apart."""
    slug = re.sub(r"[^0-9a-zA-Z]+", "_", manifest.id)
    version = re.sub(r"[^0-9a-zA-Z]+", "_", manifest.version)
    digest = hashlib.sha256("\0".join((manifest.id, manifest.version, str(folder)))
                            .encode("utf-8", "surrogateescape")).hexdigest()[:12]
    return f"{_PACKAGE_PREFIX}{slug}__{version}__{digest}"


#: what :func:`pack_digest` leaves out: the caches Python and the test and lint tools
#: write beside the pack's own files
_NOT_THE_PACK = ("__pycache__", ".pytest_cache", ".mypy_cache", ".ruff_cache")


def pack_digest(folder: Path) -> str:
    """``sha256:`` of the pack folder's files: each one's path (relative, ``/``-separated)
    and the sha256 of its bytes, in path order; a link's own text (never followed: a link
    out of the folder is not the pack's, and is named as a link), any other kind of entry
    its kind. The caches of Python and its tools (``__pycache__``, ``.pytest_cache`` …)
    are left out; every other file counts — code, manifest, policies, data a tool reads,
    tests and documentation alike, a ``*.pyc`` outside ``__pycache__`` too (Python writes
    its caches only there: one beside the sources is a file the pack ships). A pack's
    modules are compiled from their sources alone (:class:`_SourceOnlyLoader`): no
    bytecode this leaves out runs (``tests/security/test_588``).

    What a journal records of each pack a decision was made under, beside its
    ``id@version``: the version alone does not say which code decided (a pack edited in
    place, a reinstall under the same version), and replay refuses a run whose pack's
    digest is not this (``tests/security/test_555``)."""
    lines: list[bytes] = []
    for here, dirs, files in os.walk(folder, followlinks=False):
        base = Path(here)
        for name in sorted([*dirs, *files]):
            path = base / name
            rel = _framed(path.relative_to(folder).as_posix())
            try:
                info = path.lstat()
            except OSError as exc:
                raise ManifestError(f"`{path}`: cannot read the pack's file: {exc}") from exc
            if stat.S_ISDIR(info.st_mode):
                continue
            if stat.S_ISLNK(info.st_mode):
                what = b"link " + _framed(os.readlink(path))
            elif stat.S_ISREG(info.st_mode):
                what = b"file " + _file_sha256(path).encode()
            else:
                what = b"other " + str(stat.S_IFMT(info.st_mode)).encode()
            lines.append(rel + b"\0" + what + b"\n")
        dirs[:] = sorted(d for d in dirs if d not in _NOT_THE_PACK
                         and not (base / d).is_symlink())
    return "sha256:" + hashlib.sha256(b"".join(sorted(lines))).hexdigest()


def _framed(text: str) -> bytes:
    """A name or a link's text as one field of :func:`pack_digest`'s line: its backslashes
    and newlines escaped, so that a line is one file and the lines read back one way — a
    link to ``abc`` beside a file ``M\\nRULES`` and a link to ``abc\\nM`` beside ``RULES``
    were the same bytes (``tests/security/test_575``). A name without either (every
    shipped pack's) is written as it is, its digest unchanged."""
    raw = text.encode("utf-8", "surrogateescape")
    return raw.replace(b"\\", b"\\\\").replace(b"\n", b"\\n")


class _SourceOnlyLoader(importlib.machinery.SourceFileLoader):
    """A pack's module compiled from its source file, never from bytecode: no
    ``__pycache__`` entry is read (nor written).

    INVARIANT: the code that runs is the code :func:`pack_digest` hashes — the digest leaves
    bytecode out, and Python ran a ``__pycache__`` pyc whose header names the source's mtime
    and size, or an unchecked hash-based one, instead of the source: a pack decided by
    bytecode under its source's digest (``tests/security/test_588``)."""

    def path_stats(self, path: str) -> dict[str, Any]:
        # SourceLoader.get_code reads a cache only when it can stat the source for it
        raise OSError("a pack's module is compiled from its source")


class _PackFinder(importlib.abc.MetaPathFinder):
    """Finds a pack package's submodules in its folders as Python's path finder would,
    with a source file or an extension module only: a module held only as bytecode
    (``checks.pyc`` without ``checks.py``, which the digest does not hash) is not found
    (``tests/security/test_588``). First on ``sys.meta_path``, for the pack names alone."""

    _LOADERS = ((_SourceOnlyLoader, importlib.machinery.SOURCE_SUFFIXES),
                (importlib.machinery.ExtensionFileLoader,
                 importlib.machinery.EXTENSION_SUFFIXES))

    def find_spec(self, fullname: str, path: Any = None,
                  target: Any = None) -> importlib.machinery.ModuleSpec | None:
        if not fullname.startswith(_PACKAGE_PREFIX) or "." not in fullname or path is None:
            return None
        for entry in path:
            finder = importlib.machinery.FileFinder(str(entry), *self._LOADERS)
            spec = finder.find_spec(fullname, target)
            if spec is not None:
                return spec
        raise ModuleNotFoundError(f"No module named {fullname!r} (a pack's module is "
                                  "imported from its source file)", name=fullname)


def _source_only_imports() -> None:
    """:class:`_PackFinder` first on ``sys.meta_path`` (once per process)."""
    if not any(isinstance(f, _PackFinder) for f in sys.meta_path):
        sys.meta_path.insert(0, _PackFinder())


def _file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    try:
        with path.open("rb") as f:
            for chunk in iter(lambda: f.read(1 << 16), b""):
                digest.update(chunk)
    except OSError as exc:
        raise ManifestError(f"`{path}`: cannot read the pack's file: {exc}") from exc
    return digest.hexdigest()


@dataclass
class Pack:
    manifest: Manifest
    path: Path
    _module: ModuleType | None = None
    _digest: str | None = None

    @property
    def ref(self) -> str:
        return self.manifest.ref

    @property
    def id(self) -> str:
        return self.manifest.id

    @property
    def version(self) -> str:
        return self.manifest.version

    def file(self, rel: str) -> Path:
        """A file the manifest names; refused when it (or a symlink on the way) leaves the
        pack folder — a pack cannot make the runtime read the operator's other files."""
        path = self.path / rel
        if not inside(self.path, path):
            raise ManifestError(f"{self.path / 'manifest.yaml'}: `{rel}` is outside the pack "
                                "folder")
        return path

    def digest(self) -> str:
        """:func:`pack_digest` of the pack's folder (read once per :class:`Pack`)."""
        if self._digest is None:
            self._digest = pack_digest(self.path)
        return self._digest

    def files(self, names: list[str]) -> list[Path]:
        return [self.file(n) for n in names]

    def ontology_files(self) -> list[Path]:
        return self.files(self.manifest.ontology)

    def shape_files(self) -> list[Path]:
        return self.files(self.manifest.shapes)

    def policy_files(self) -> list[Path]:
        return self.files(self.manifest.policies)

    def query_files(self) -> dict[str, Path]:
        return {name: self.file(rel) for name, rel in self.manifest.queries.items()}

    def example_files(self) -> list[Path]:
        out: list[Path] = []
        for entry in self.manifest.examples:
            target = self.file(entry)
            found = sorted(target.glob("*.json")) if target.is_dir() else [target]
            out.extend(self.file(str(f.relative_to(self.path))) for f in found)
        return out

    def module(self) -> ModuleType:
        """Import the pack folder as a package (once).

        TRUST: this executes the pack's code with the runtime's privileges. Only loading an
        enabled pack, ``pack run`` and ``pack test`` get here — never ``pack validate``.
        """
        if self._module is not None:
            return self._module
        name = package_name(self.manifest, self.path)
        if name in sys.modules:
            self._module = sys.modules[name]
            return self._module
        init = self.path / "__init__.py"
        if not init.is_file():
            raise ManifestError(f"`{self.path}`: a pack with Python code needs `__init__.py`")
        _source_only_imports()
        spec = importlib.util.spec_from_file_location(
            name, init, loader=_SourceOnlyLoader(name, str(init)),
            submodule_search_locations=[str(self.path)])
        if spec is None or spec.loader is None:
            raise ManifestError(f"`{self.path}`: cannot import the pack package")
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        try:
            spec.loader.exec_module(module)
        except Exception as exc:
            del sys.modules[name]
            raise ManifestError(f"`{init}`: importing the pack failed: "
                                f"{type(exc).__name__}: {exc}") from exc
        self._module = module
        return module

    def resolve(self, entry: str) -> Any:
        """``module:attribute`` relative to the pack package."""
        module_name, _, attr = entry.partition(":")
        base = self.module().__name__
        try:
            module = importlib.import_module(f"{base}.{module_name}")
        except Exception as exc:
            raise ManifestError(f"{self.path / 'manifest.yaml'}: `{entry}`: cannot import "
                                f"`{module_name}`: {type(exc).__name__}: {exc}") from exc
        try:
            return getattr(module, attr)
        except AttributeError:
            raise ManifestError(f"{self.path / 'manifest.yaml'}: `{entry}`: module "
                                f"`{module_name}` has no `{attr}`") from None


def load_pack(path: Path) -> Pack:
    folder = path.resolve()
    return Pack(read_manifest(folder), folder)
