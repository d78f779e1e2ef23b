"""``cradle-kg pack init``: a pack prepares a home (its ``init:`` hook), then the home
enables it.

The hook is ``module:function`` in the manifest, called with the pack's context, the data
directory (or None) and the clock to set (or None); it builds the pack's own state under the
home and returns a :class:`~cradle_kg.config.RuntimeConfig` of the identities and
permissions the home needs. Only after it returned is the home's ``config.json`` changed:
those identities merged in (by id) and the pack added to ``packs`` — so a refused hook
leaves the configuration as it was, and every later ``Runtime(home)`` loads the pack.

TRUST: this runs the pack's code (like loading it).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from ..config import RuntimeConfig, load_config, update_config
from ..errors import CradleError, InputError
from ..home import Home
from .declarations import PackContext
from .loader import Pack
from .registry import PackRegistry


@dataclass(frozen=True)
class Initialized:
    pack: str
    home: Path
    agents: tuple[str, ...]
    permissions: int


def parse_clock(text: str | None) -> datetime | None:
    if text is None:
        return None
    try:
        return datetime.fromisoformat(text)
    except ValueError:
        raise InputError(f"`{text}` is not an ISO-8601 date-time",
                         hint="like `2024-05-15T15:00:00-05:00`") from None


def init_pack(root: Path, ref: str | Pack, *, data: Path | None = None,
              now: str | None = None, enable: bool = True) -> Initialized:
    """``ref``: a pack's id, ``id@version`` or folder, or the pack itself. ``enable=False``:
    the identities are merged, ``packs`` is left as it is (``pack test`` loads the pack
    from its folder, not by its id)."""
    home = Home(root)
    clock = parse_clock(now)
    if data is not None and not data.exists():
        raise InputError(f"`{data}`: no such data directory")
    load_config(home.config)  # a broken config fails before the hook runs
    pack = ref if isinstance(ref, Pack) else PackRegistry.discover(root).get(ref)
    if not pack.manifest.init:
        raise InputError(f"pack `{pack.ref}` declares no `init` hook",
                         hint="enable it by adding its id to `packs` in config.json")
    hook = pack.resolve(pack.manifest.init)
    root.mkdir(parents=True, exist_ok=True)
    ctx = PackContext(pack_id=pack.id, version=pack.version, folder=pack.path, home=root,
                      clock=lambda: datetime.now(UTC))
    try:
        extra = hook(ctx, data, clock)
    except CradleError:
        raise
    except Exception as exc:  # a pack's bug is one line, and the home is left as it was
        raise InputError(f"pack `{pack.ref}`: `init` failed: {type(exc).__name__}: {exc}") \
            from exc
    if not isinstance(extra, RuntimeConfig):
        raise InputError(f"pack `{pack.ref}`: `init` returned `{type(extra).__name__}`, not a "
                         "RuntimeConfig")
    # read again under the lock: what another command saved while the hook ran stays
    update_config(home.config, lambda now: _enabled(now.merged_with(extra), pack.id, pack.ref)
                  if enable else now.merged_with(extra))
    return Initialized(pack=pack.ref, home=root, agents=tuple(a.id for a in extra.agents),
                       permissions=len(extra.permissions))


def _enabled(config: RuntimeConfig, pack_id: str, ref: str) -> RuntimeConfig:
    if pack_id in config.packs or ref in config.packs:
        return config
    return config.model_copy(update={"packs": (*config.packs, pack_id)})
