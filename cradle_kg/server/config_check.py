"""Whether the runtime loads a ``config.json``: run by the graph's readers in a child.

``python -m cradle_kg.server.config_check SOURCE`` reads the file's bytes on stdin and
validates them with the runtime's own loader (:func:`cradle_kg.config.config_from_bytes`,
pydantic and all); it exits 0 when they load, else 1 with the reason on stdout. The query
workers import no pydantic (``tests/server/test_worker_lean.py``), so they ask this child,
once per content of the file (:func:`cradle_kg.server.readers.runtime_refusal`), rather
than keep a second validator that could drift from the runtime's (``tests/security/
test_260``).
"""

from __future__ import annotations

import sys

from ..config import config_from_bytes
from ..errors import CradleError


def main(argv: list[str]) -> int:
    source = argv[1] if len(argv) > 1 else "config.json"
    try:
        config_from_bytes(sys.stdin.buffer.read(), source=source)
    except CradleError as exc:
        sys.stdout.write(exc.message)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
