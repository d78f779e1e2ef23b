"""A real YASGUI page (the @zazuko/yasgui bundle from the npm registry) pointed at the
endpoint, in headless Chromium: the query runs, the results table shows the demo's rows.

The page is served from another port than the endpoint, as a YASGUI page would be: the
browser goes through CORS, then the SPARQL protocol, as with any real deployment.
"""

from __future__ import annotations

import functools
import http.server
import json
import shutil
import subprocess
import tarfile
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from .cdp import Browser, browser
from .conftest import DemoHome, free_port, start_server, stop_server

#: a module whose set-up is long (servers, browsers, packs built): run first
pytestmark = pytest.mark.slow

YASGUI = "@zazuko/yasgui@4.6.2"

PAGE = """<!doctype html>
<html><head><meta charset="utf-8">
<link rel="stylesheet" href="yasgui.min.css">
<script src="yasgui.min.js"></script></head>
<body><div id="yasgui"></div>
<script>
  localStorage.clear();
  window.yasgui = new Yasgui(document.getElementById("yasgui"), {
    requestConfig: { endpoint: ENDPOINT, method: "POST" },
    copyEndpointOnNewTab: false,
  });
</script></body></html>
"""


@pytest.fixture(scope="module")
def yasgui_bundle(tmp_path_factory: pytest.TempPathFactory) -> Path:
    npm = shutil.which("npm")
    if npm is None:
        pytest.skip("npm is not installed: the YASGUI bundle comes from the npm registry")
    where = tmp_path_factory.mktemp("yasgui")
    done = subprocess.run([npm, "pack", YASGUI, "--silent"], cwd=where, capture_output=True,
                          text=True, timeout=180, check=False)
    if done.returncode != 0:
        pytest.skip(f"cannot fetch {YASGUI} from the npm registry: {done.stderr.strip()}")
    with tarfile.open(where / done.stdout.strip().splitlines()[-1]) as tar:
        tar.extractall(where, filter="data")
    return where / "package" / "build"


@pytest.fixture(scope="module")
def yasgui_site(yasgui_bundle: Path, demo_home: DemoHome,
                tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    site = tmp_path_factory.mktemp("site")
    port = free_port()
    # the endpoint lets the page's origin read its answers (CORS is off unless named)
    server = start_server(["--home", str(demo_home.path), "--cors-origin",
                           f"http://127.0.0.1:{port}"],
                          tmp_path_factory.mktemp("log") / "serve.log", demo_home.path)
    for name in ("yasgui.min.js", "yasgui.min.css"):
        shutil.copy(yasgui_bundle / name, site / name)
    (site / "index.html").write_text(PAGE.replace("ENDPOINT", json.dumps(server.sparql)))
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(site))
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", port), handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{port}/index.html"
    httpd.shutdown()
    httpd.server_close()
    stop_server(server)


@pytest.fixture
def page(chromium: str) -> Iterator[Browser]:
    with browser(chromium) as b:
        yield b


def test_a_yasgui_page_queries_the_endpoint(yasgui_site: str, page: Browser) -> None:
    page.open(yasgui_site)
    page.wait_for("!!(window.yasgui && window.yasgui.getTab())")
    query = ("PREFIX cradle: <https://w3id.org/cradle#> "
             "SELECT ?decision ?verdict WHERE { ?decision a cradle:Decision ; "
             "cradle:verdict ?verdict } ORDER BY ?decision")
    page.js(f"(() => {{ const tab = window.yasgui.getTab(); tab.setQuery({json.dumps(query)});"
            " tab.query(); return true; })()")
    rows = page.wait_for(
        "(() => { const r = window.yasgui.getTab().getYasr().results;"
        " return r && r.getBindings ? r.getBindings().length : 0; })()", timeout=60)
    assert rows >= 5  # the demo's decisions: allowed, denied, lying tool, approvals...
    text = page.wait_for("document.querySelector('.yasr') && "
                         "document.querySelector('.yasr').innerText", timeout=30)
    assert "Deny" in text and "Allow" in text
