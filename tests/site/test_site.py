"""Browser check of the built website, with the network cut off.

Run after ``jupyter-book build`` (``make site-check``; ``make test`` does both). Each
page of the table of contents is served from ``_build/html`` on 127.0.0.1 and opened in
headless Chromium, where every request to any other host is refused. A page passes when
it loads with no console errors and no failed requests, its math is typeset by the
MathJax copy served from the site itself, and every figure has loaded.

Where Chromium is missing the checks are skipped with the reason, unless the variable
``REQUIRE_BROWSER=1`` is set (as CI does), which turns the skip into a failure.
"""

from __future__ import annotations

import functools
import http.server
import os
import shutil
import threading
from pathlib import Path
from urllib.parse import urlparse

import pytest
from notebooks import ROOT, resolve_entry, toc_entries

HTML = ROOT / "_build" / "html"
SCREENSHOTS = ROOT / "_build" / "screenshots"
CHROMIUM_CANDIDATES = ("chromium", "chromium-browser", "google-chrome")
CHROMIUM_FLAGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
MATHJAX_TIMEOUT_MS = 20_000

pytestmark = pytest.mark.site


PAGES = {Path(entry).with_suffix(".html").as_posix(): entry for entry in toc_entries()}


def _find_chromium() -> str | None:
    explicit = os.environ.get("CHROMIUM")
    if explicit:
        return explicit
    return next(filter(None, map(shutil.which, CHROMIUM_CANDIDATES)), None)


def _skip_or_fail(reason: str):
    if os.environ.get("REQUIRE_BROWSER") == "1":
        pytest.fail(f"{reason} (REQUIRE_BROWSER=1, so this is a failure)")
    pytest.skip(f"browser check of the built site SKIPPED: {reason}")


@pytest.fixture(scope="module")
def site_url():
    if not (HTML / "index.html").exists():
        pytest.fail(
            f"{HTML / 'index.html'} is missing; build the site with `make book`"
        )
    handler = functools.partial(_QuietHandler, directory=str(HTML))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format, *args):  # noqa: A002 - the base class's name
        pass


@pytest.fixture(scope="module")
def browser():
    executable = _find_chromium()
    if executable is None:
        _skip_or_fail(
            "no Chromium found (install it with `apt-get install chromium`, "
            "or set CHROMIUM=/path/to/chromium)"
        )
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        _skip_or_fail(
            "the playwright package is not installed (`make test` installs it)"
        )
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=executable, headless=True, args=CHROMIUM_FLAGS
        )
        yield browser
        browser.close()


class PageLog:
    """Everything that went wrong while one page loaded."""

    def __init__(self, page, site_url: str):
        self.problems: list[str] = []
        origin = urlparse(site_url).netloc
        page.on("console", self._on_console)
        page.on("pageerror", lambda error: self.problems.append(f"page error: {error}"))
        page.on("requestfailed", self._on_request_failed)
        page.on("response", self._on_response)
        page.route("**/*", lambda route: self._route(route, origin))

    def _route(self, route, origin: str):
        url = urlparse(route.request.url)
        if url.scheme in ("data", "blob") or url.netloc == origin:
            route.continue_()
        else:
            self.problems.append(f"request off the site (no network): {url.geturl()}")
            route.abort("internetdisconnected")

    def _on_console(self, message):
        if message.type == "error":
            self.problems.append(f"console error: {message.text}")

    def _on_request_failed(self, request):
        self.problems.append(f"failed request: {request.url} ({request.failure})")

    def _on_response(self, response):
        if response.status >= 400:
            self.problems.append(f"HTTP {response.status}: {response.url}")


@pytest.fixture(params=sorted(PAGES), ids=sorted(PAGES))
def loaded_page(request, browser, site_url):
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    log = PageLog(page, site_url)
    response = page.goto(f"{site_url}/{request.param}", wait_until="load")
    assert response is not None and response.ok, f"{request.param} did not load"
    page.wait_for_load_state("networkidle")
    if page.locator('script[src*="mathjax"]').count():
        # MathJax typesets after load; wait until it says it has finished.
        page.wait_for_function(
            "() => window.MathJax && MathJax.startup && MathJax.startup.promise",
            timeout=MATHJAX_TIMEOUT_MS,
        )
        page.evaluate("() => MathJax.startup.promise")
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    shot = SCREENSHOTS / (request.param.replace("/", "__") + ".png")
    page.screenshot(path=str(shot), full_page=True)
    yield request.param, page, log
    context.close()


def test_page_loads_cleanly(loaded_page):
    name, _, log = loaded_page
    assert not log.problems, f"{name}:\n" + "\n".join(log.problems)


def test_math_is_typeset(loaded_page):
    name, page, _ = loaded_page
    facts = page.evaluate(
        """() => {
            const main = document.querySelector('main') || document.body;
            const math = main.querySelectorAll('.math, span.math, div.math').length;
            const typeset = main.querySelectorAll('mjx-container').length;
            const prose = main.cloneNode(true);
            prose.querySelectorAll('pre, code, script, style, mjx-container')
                .forEach((node) => node.remove());
            const text = prose.textContent;
            const raw = ['\\\\(', '\\\\[', '$$'].filter((mark) => text.includes(mark));
            return {math, typeset, raw};
        }"""
    )
    assert facts["typeset"] >= facts["math"], (
        f"{name}: {facts['math']} math elements but only {facts['typeset']} typeset "
        "by MathJax"
    )
    assert not facts["raw"], f"{name}: raw TeX delimiters left in text: {facts['raw']}"
    source = next(p for p in resolve_entry(PAGES[name]) if p.exists())
    if "$" in source.read_text(encoding="utf-8"):
        assert facts["typeset"] > 0, f"{name}: the source has math, the page none"


def test_figures_have_loaded(loaded_page):
    name, page, _ = loaded_page
    images = page.evaluate(
        """() => Array.from(document.querySelectorAll('main img')).map((img) => ({
            src: img.getAttribute('src').slice(0, 60),
            complete: img.complete,
            width: img.naturalWidth,
        }))"""
    )
    broken = [image for image in images if not image["complete"] or image["width"] == 0]
    assert not broken, f"{name}: figures that did not load: {broken}"
    if _is_notebook(PAGES[name]):
        assert images, f"{name}: a chapter notebook must show at least one figure"


def _is_notebook(entry: str) -> bool:
    return any(p.suffix == ".ipynb" and p.exists() for p in resolve_entry(entry))


def test_every_toc_page_was_built():
    missing = [page for page in PAGES if not (HTML / page).exists()]
    assert not missing, f"pages in _toc.yml with no built HTML: {missing}"


def test_a_chapter_works_opened_from_disk(browser):
    """Readers open _build/html/index.html straight from disk: math and figures too."""
    page_path = HTML / "chapters" / "01_toy_attention.html"
    context = browser.new_context()
    page = context.new_page()
    log = PageLog(page, page_path.as_uri())
    page.goto(page_path.as_uri(), wait_until="load")
    page.wait_for_function(
        "() => window.MathJax && MathJax.startup && MathJax.startup.promise",
        timeout=MATHJAX_TIMEOUT_MS,
    )
    page.evaluate("() => MathJax.startup.promise")
    typeset = page.locator("mjx-container").count()
    widths = page.evaluate(
        "() => Array.from(document.querySelectorAll('main img'), i => i.naturalWidth)"
    )
    context.close()
    assert not log.problems, "\n".join(log.problems)
    assert typeset > 0, "no math was typeset when the page was opened from disk"
    assert widths and min(widths) > 0, f"figures did not load from disk: {widths}"
