"""Build the real git repository UptimeHarbor is deployed from, with a known history.

    good              healthy everywhere, tests green
    outage            renames `db_url` to `database_url` in config.json: /health 500, tests red
    green_not_fixed   edits the test to expect the new key: tests GREEN, /health still 500
    fix               the app reads `database_url`: tests green, /health 200 (on main)
    fix_staging_only  (branch off green_not_fixed) restores `db_url` in staging only:
                      tests green, staging healthy, production still 500

``green_not_fixed`` is "green tests != incident resolved"; ``fix_staging_only`` is the
commit that passes staging verification and fails the post-deploy check in production.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..gitutil import git

APP_SOURCE = Path(__file__).with_name("harbor_app.py")

TEST_SOURCE = '''"""The repository's own unit tests (run by the run_tests tool in isolation)."""

import json
import unittest
from pathlib import Path

import app

EXPECTED_KEY = "@@KEY@@"


class ConfigTest(unittest.TestCase):
    def test_every_environment_has_a_database_setting(self):
        config = json.loads(Path(app.HERE, "config.json").read_text(encoding="utf-8"))
        for name, section in config["environments"].items():
            self.assertIn(EXPECTED_KEY, section, name)

    def test_page_names_the_service(self):
        self.assertIn("UptimeHarbor", app.render_page("hello"))


if __name__ == "__main__":
    unittest.main()
'''

COMMIT_TAGS = ("good", "outage", "green_not_fixed", "fix", "fix_staging_only")


@dataclass(frozen=True)
class RepoFixture:
    path: Path
    commits: dict[str, str]

    def __getitem__(self, tag: str) -> str:
        return self.commits[tag]


def _config(key: str, *, staging_extra: dict[str, str] | None = None) -> str:
    envs: dict[str, dict[str, Any]] = {
        "staging": {key: "postgres://db.staging.internal/harbor"},
        "production": {key: "postgres://db.prod.internal/harbor"},
    }
    if staging_extra:
        envs["staging"].update(staging_extra)
    return json.dumps({"greeting": "All harbors up.", "environments": envs}, indent=2) + "\n"


def _app(db_key: str) -> str:
    source = APP_SOURCE.read_text(encoding="utf-8")
    marker = 'DB_KEY = "db_url"'
    if marker not in source:  # pragma: no cover - guards against editing harbor_app.py
        raise RuntimeError("harbor_app.py lost its DB_KEY line")
    return source.replace(marker, f'DB_KEY = "{db_key}"')


def _write(repo: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        target = repo / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")


def _commit(repo: Path, files: dict[str, str], message: str, tick: int) -> str:
    _write(repo, files)
    git(repo, "add", "-A")
    stamp = f"2026-01-01T00:{tick:02d}:00+00:00"
    git(
        repo,
        "commit",
        "-q",
        "-m",
        message,
        env={"GIT_AUTHOR_DATE": stamp, "GIT_COMMITTER_DATE": stamp},
    )
    return git(repo, "rev-parse", "HEAD")


def build_repo(path: Path) -> RepoFixture:
    """Create the repository at ``path`` (must not exist or be empty) and return its commits."""
    path.mkdir(parents=True, exist_ok=True)
    git(path, "init", "-q", "-b", "main")
    git(path, "config", "commit.gpgsign", "false")
    commits: dict[str, str] = {}
    commits["good"] = _commit(
        path,
        {
            ".gitattributes": "REVISION export-subst\n",
            "REVISION": "$Format:%H$\n",
            "app.py": _app("db_url"),
            "config.json": _config("db_url"),
            "tests/test_app.py": TEST_SOURCE.replace("@@KEY@@", "db_url"),
        },
        "uptimeharbor: first release",
        1,
    )
    commits["outage"] = _commit(
        path,
        {"config.json": _config("database_url")},
        "config: rename db_url to database_url",
        2,
    )
    commits["green_not_fixed"] = _commit(
        path,
        {"tests/test_app.py": TEST_SOURCE.replace("@@KEY@@", "database_url")},
        "tests: expect database_url",
        3,
    )
    git(path, "branch", "fix-staging-only")
    commits["fix"] = _commit(
        path, {"app.py": _app("database_url")}, "app: read database_url", 4
    )
    git(path, "checkout", "-q", "fix-staging-only")
    commits["fix_staging_only"] = _commit(
        path,
        {
            "config.json": _config(
                "database_url", staging_extra={"db_url": "postgres://db.staging.internal/harbor"}
            )
        },
        "config: restore db_url (staging)",
        5,
    )
    git(path, "checkout", "-q", "main")
    for tag, sha in commits.items():
        git(path, "tag", tag.replace("_", "-"), sha)
    return RepoFixture(path=path, commits=commits)
