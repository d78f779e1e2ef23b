"""The closed graph's readers read ``config.json`` as the runtime does (fail closed).

Attack: the query workers re-read the home's ``config.json`` on change to learn the
approvers' token hashes and the declared agents, with ``open`` and ``json.load`` — unlike
the runtime (:class:`cradle_kg.config.ConfigFile`, the strict loader). So

* a ``config.json`` swapped for a FIFO blocked every graph request in ``open`` for ever
  (the runtime's loader opens without blocking and refuses a file that is not regular);
* a ``config.json`` that names ``approvers`` twice — the runtime refuses it and admits no
  one — admitted the *last* list on the graph: the list a reviewer reads first is not the
  one in force, and a token of the second list read the closed graph while the API
  refused it;
* a ``config.json`` grown past the file limit was read whole, on each change.

What must hold: a configuration file that is not a regular file, holds a key twice or is
larger than the runtime reads, admits no approver and no agent on the graph (a 401), at
once and without blocking; the same file made good again admits them again.
"""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path

from cradle_kg.canonical import token_hash
from cradle_kg.inputs import FILE_LIMITS
from cradle_kg.server.readers import MAX_FILE_BYTES, GraphReaders

from .homes import replace_file

BOB = "bob-token-0123456789"
EVE = "eve-token-0123456789"


def _config(*approvers: str) -> str:
    listed = ", ".join(json.dumps({"id": f"human:{t[:3]}", "token_hash": token_hash(t)})
                       for t in approvers)
    return '{"approvers": [' + listed + "]}"


def _readers(config: Path) -> GraphReaders:
    return GraphReaders(who="approvers", approver_hashes=(), config_file=str(config))


def _refusal_within(readers: GraphReaders, token: str, seconds: float) -> str | None:
    answer: list[str | None] = []
    worker = threading.Thread(target=lambda: answer.append(readers.refusal(f"Bearer {token}")),
                              daemon=True)
    worker.start()
    worker.join(seconds)
    assert answer, f"the graph's reader blocked for more than {seconds} s on config.json"
    return answer[0]


def test_a_config_key_given_twice_admits_no_one_on_the_graph(tmp_path: Path) -> None:
    config = tmp_path / "config.json"
    replace_file(config, _config(BOB))
    readers = _readers(config)
    assert readers.refusal(f"Bearer {BOB}") is None
    # the runtime's loader refuses this file (and admits no approver); the graph did not
    replace_file(config, '{"approvers": [], ' + _config(EVE)[1:])
    assert readers.refusal(f"Bearer {EVE}") is not None  # before: read the graph
    assert readers.refusal(f"Bearer {BOB}") is not None
    replace_file(config, _config(BOB))
    assert readers.refusal(f"Bearer {BOB}") is None


def test_a_config_swapped_for_a_fifo_refuses_without_blocking(tmp_path: Path) -> None:
    config = tmp_path / "config.json"
    replace_file(config, _config(BOB))
    readers = _readers(config)
    assert readers.refusal(f"Bearer {BOB}") is None
    config.unlink()
    os.mkfifo(config)
    try:
        assert _refusal_within(readers, BOB, 3.0) is not None  # before: blocked for ever
    finally:
        # a writer end releases a reader still blocked in open() (the unfixed code)
        fd = os.open(config, os.O_WRONLY | os.O_NONBLOCK) if _has_reader(config) else None
        if fd is not None:
            os.close(fd)
    config.unlink()
    replace_file(config, _config(BOB))
    assert readers.refusal(f"Bearer {BOB}") is None


def _has_reader(fifo: Path) -> bool:
    try:
        os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
    except OSError:
        return False
    return True


def test_a_config_past_the_file_limit_admits_no_one(tmp_path: Path) -> None:
    config = tmp_path / "config.json"
    replace_file(config, _config(BOB))
    readers = _readers(config)
    assert readers.refusal(f"Bearer {BOB}") is None
    # the runtime refuses a config.json past the file limit (and admits no one)
    assert FILE_LIMITS.max_bytes == MAX_FILE_BYTES
    replace_file(config, _config(BOB)[:-1] + ', "x": "' + "a" * MAX_FILE_BYTES + '"}')
    assert readers.refusal(f"Bearer {BOB}") is not None


def test_a_config_nested_past_the_stack_admits_no_one(tmp_path: Path) -> None:
    config = tmp_path / "config.json"
    replace_file(config, _config(BOB))
    readers = _readers(config)
    assert readers.refusal(f"Bearer {BOB}") is None
    replace_file(config, _config(BOB)[:-1] + ', "x": ' + "[" * 200_000 + "]" * 200_000 + "}")
    assert readers.refusal(f"Bearer {BOB}") is not None  # before: a RecursionError
