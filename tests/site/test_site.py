"""Every page of the built website in headless Chromium, network cut off: no
console errors or failed requests, math typeset, figures loaded (``SCREENSHOTS=1``)."""

from __future__ import annotations

import asyncio
import os
import re
import time
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlparse

import nbformat
import pytest

from tests.test_figures import PATH_LIKE
from tools.toc import ROOT, chapter_notebooks, core_chapters, resolve_entry, toc_entries

HTML = ROOT / "_build" / "html"
SCREENSHOTS = ROOT / "_build" / "screenshots"
# Full-page pictures for a reviewer's eyes cost most of the check's time; they are
# taken when SCREENSHOTS=1 is set (`make screenshots`), not on every test run.
TAKE_SCREENSHOTS = os.environ.get("SCREENSHOTS") == "1"
MATHJAX_TIMEOUT_MS = 20_000
# A page has settled when no request has been open for this long after MathJax
# finished; SETTLE_TIMEOUT_S bounds the wait.
QUIET_S = 0.3
SETTLE_TIMEOUT_S = 20.0
# Pages loading at the same time: a page spends much of its load waiting (for its
# files, MathJax, the screenshot), so more pages than cores keep the cores busy.
PAGES_AT_ONCE = 6
SCREENSHOT_TIMEOUT_MS = 120_000
FROM_DISK = "chapters/01_toy_attention.html"

pytestmark = pytest.mark.site

PAGES = {Path(entry).with_suffix(".html").as_posix(): entry for entry in toc_entries()}

MATH_FACTS = """() => {
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

IMAGE_FACTS = """() => Array.from(document.querySelectorAll('main img')).map((img) => ({
    src: img.getAttribute('src').slice(0, 60),
    complete: img.complete,
    width: img.naturalWidth,
}))"""

# Every figure of a page's article (not the logos of the buttons above it), measured
# with every collapsed box (solutions, deep dives) opened, so that hidden figures are
# measured too. "width" is the display width
# the notebook asked for (myst-nb writes it as style="width: ...px"); "shown" the
# width the browser gives the image.
# Opens every collapsed box of a page (solutions, deep dives) and waits a frame.
OPEN_EVERY_BOX = """
    document.querySelectorAll('details').forEach((box) => { box.open = true; });
    document.querySelectorAll('.toggle-hidden').forEach(
        (box) => box.classList.remove('toggle-hidden'));
    document.querySelectorAll('.toggle-details__container, .toggle-details__content')
        .forEach((box) => { box.style.display = 'block'; });
    await new Promise((done) => requestAnimationFrame(() => setTimeout(done, 50)));
"""
FIGURE_FACTS = (
    """async () => {"""
    + OPEN_EVERY_BOX
    + """
    const images = document.querySelectorAll('article.bd-article img');
    return Array.from(images).map((img) => {
        const figure = img.closest('figure');
        const caption = figure && figure.querySelector('figcaption');
        return {
            src: img.getAttribute('src').slice(-40),
            alt: img.getAttribute('alt') || '',
            caption: caption ? caption.textContent.trim() : null,
            width: parseFloat(img.style.width) || Number(img.getAttribute('width')),
            shown: img.getBoundingClientRect().width,
            natural: img.naturalWidth,
        };
    });
}"""
)
# No figure may be shown below this share of its intended width at 1280 px.
MIN_SHOWN = 0.75


class PageLog:
    """Everything that went wrong while one page loaded, and its open requests."""

    def __init__(self, page, site_url: str):
        self.problems: list[str] = []
        self.origin = urlparse(site_url).netloc
        self.open_requests: set = set()
        self.last_change = time.monotonic()
        page.on("console", self._on_console)
        page.on("pageerror", lambda error: self.problems.append(f"page error: {error}"))
        page.on("request", self._on_request)
        page.on("requestfinished", self._on_request_done)
        page.on("requestfailed", self._on_request_failed)
        page.on("response", self._on_response)

    async def route(self, route):
        """Let requests to the site itself through; refuse every other host."""
        url = urlparse(route.request.url)
        if url.scheme in ("data", "blob") or url.netloc == self.origin:
            await route.continue_()
        else:
            self.problems.append(f"request off the site (no network): {url.geturl()}")
            await route.abort("internetdisconnected")

    def _on_console(self, message):
        if message.type == "error":
            self.problems.append(f"console error: {message.text}")

    def _on_request(self, request):
        self.open_requests.add(request)
        self.last_change = time.monotonic()

    def _on_request_done(self, request):
        self.open_requests.discard(request)
        self.last_change = time.monotonic()

    def _on_request_failed(self, request):
        self._on_request_done(request)
        self.problems.append(f"failed request: {request.url} ({request.failure})")

    def _on_response(self, response):
        if response.status >= 400:
            self.problems.append(f"HTTP {response.status}: {response.url}")

    async def settled(self):
        """Wait until no request has been open for QUIET_S seconds."""
        deadline = time.monotonic() + SETTLE_TIMEOUT_S
        while self.open_requests or time.monotonic() - self.last_change < QUIET_S:
            if time.monotonic() > deadline:
                urls = sorted(request.url for request in self.open_requests)
                self.problems.append(
                    f"requests still open after {SETTLE_TIMEOUT_S:.0f} s: {urls}"
                )
                return
            await asyncio.sleep(0.05)


@dataclass
class Visit:
    """What one page showed: its problems, math and figures."""

    problems: list[str] = field(default_factory=list)
    math: dict | None = None
    images: list[dict] | None = None
    figures: list[dict] | None = None


async def load(page, log: PageLog, url: str) -> None:
    """Open ``url`` and wait until MathJax is done and the requests are quiet."""
    response = await page.goto(url, wait_until="load")
    if url.startswith("http") and (response is None or not response.ok):
        status = response.status if response is not None else "no response"
        log.problems.append(f"the page did not load ({status})")
    if await page.locator('script[src*="mathjax"]').count():
        # MathJax typesets after load; wait until it says it has finished.
        await page.wait_for_function(
            "() => window.MathJax && MathJax.startup && MathJax.startup.promise",
            timeout=MATHJAX_TIMEOUT_MS,
            polling=100,
        )
        await page.evaluate("() => MathJax.startup.promise")
    await log.settled()


async def _visit(context, url, origin_url, screenshot, screenshot_turn) -> Visit:
    page = await context.new_page()
    log = PageLog(page, origin_url)
    await page.route("**/*", log.route)
    visit = Visit(problems=log.problems)
    try:
        await load(page, log, url)
        visit.math = await page.evaluate(MATH_FACTS)
        visit.images = await page.evaluate(IMAGE_FACTS)
        if screenshot is not None:
            # Full-page pictures of long pages are heavy on two cores: one at a time.
            async with screenshot_turn:
                await page.screenshot(
                    path=str(screenshot), full_page=True, timeout=SCREENSHOT_TIMEOUT_MS
                )
        visit.figures = await page.evaluate(FIGURE_FACTS)
    except Exception as error:  # a timeout or a crash is that page's failure
        log.problems.append(f"the check could not finish: {error!r}")
    finally:
        await page.close()
    return visit


async def visit_views(browser_context, views, setting, visit) -> dict:
    """``{view: await visit(context, view)}`` for every view, PAGES_AT_ONCE at a
    time. ``setting(view)`` is the ``(colour mode, width, height)`` the view is seen
    in; each setting gets one browser context of its own, closed at the end."""
    contexts = {}
    for mode, width, height in sorted({setting(view) for view in views}):
        contexts[mode, width, height] = await browser_context.browser.new_context(
            viewport={"width": width, "height": height}, color_scheme=mode
        )
    slots = asyncio.Semaphore(PAGES_AT_ONCE)

    async def one(view):
        async with slots:
            return await visit(contexts[setting(view)], view)

    try:
        results = await asyncio.gather(*(one(view) for view in views))
    finally:
        for context in contexts.values():
            await context.close()
    return dict(zip(views, results, strict=True))


async def _visit_all(context, site_url: str) -> dict[str, Visit]:
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    slots = asyncio.Semaphore(PAGES_AT_ONCE)
    screenshot_turn = asyncio.Lock()
    jobs = {
        name: (
            f"{site_url}/{name}",
            site_url,
            SCREENSHOTS / (name.replace("/", "__") + ".png")
            if TAKE_SCREENSHOTS
            else None,
        )
        for name in sorted(PAGES)
    }
    # Readers also open _build/html straight from disk.
    disk = (HTML / FROM_DISK).as_uri()
    jobs["file://" + FROM_DISK] = (disk, disk, None)

    async def one(args):
        async with slots:
            return await _visit(context, *args, screenshot_turn)

    results = await asyncio.gather(*(one(args) for args in jobs.values()))
    return dict(zip(jobs, results, strict=True))


@pytest.fixture(scope="session")
def visits(browser, site_url) -> dict[str, Visit]:
    """Every page once, and Chapter 1 from disk (``file://<name>``): {name: Visit}."""
    return browser.run(_visit_all(browser.context, site_url))


@pytest.fixture(params=sorted(PAGES), ids=sorted(PAGES))
def visited(request, visits):
    name = request.param
    return name, visits[name]


def test_page_loads_cleanly(visited):
    name, visit = visited
    assert not visit.problems, f"{name}:\n" + "\n".join(visit.problems)


def test_math_is_typeset(visited):
    name, visit = visited
    facts = _checked(name, visit, "math")
    assert facts["typeset"] >= facts["math"], (
        f"{name}: {facts['math']} math elements but only {facts['typeset']} typeset "
        "by MathJax"
    )
    assert not facts["raw"], f"{name}: raw TeX delimiters left in text: {facts['raw']}"
    source = next(p for p in resolve_entry(PAGES[name]) if p.exists())
    if "$" in source.read_text(encoding="utf-8"):
        assert facts["typeset"] > 0, f"{name}: the source has math, the page none"


def test_figures_have_loaded(visited):
    name, visit = visited
    broken = [
        i
        for i in _checked(name, visit, "images")
        if not i["complete"] or i["width"] == 0
    ]
    assert not broken, f"{name}: figures that did not load: {broken}"
    if _is_notebook(PAGES[name]):
        assert visit.images, f"{name}: a chapter notebook must show at least one figure"


def _checked(name, visit, facts):
    assert getattr(visit, facts) is not None, f"{name}: not checked:\n" + "\n".join(
        visit.problems
    )
    return getattr(visit, facts)


def test_every_figure_has_a_numbered_caption_and_alt_text(visited):
    name, visit = visited
    problems = []
    for image in _checked(name, visit, "figures"):
        if image["caption"] is None:
            problems.append(f"{image['src']}: not in a figure with a caption")
        elif not re.match(r"Fig\. \d+(\.\d+)*", image["caption"]):
            problems.append(
                f"{image['src']}: caption not numbered: {image['caption']!r}"
            )
        alt = image["alt"]
        if len(alt.split()) < 5 or re.search(PATH_LIKE, alt):
            problems.append(f"{image['src']}: alt text is not a description: {alt!r}")
    assert not problems, f"{name}:\n" + "\n".join(problems)


def test_no_figure_is_shown_below_three_quarters_of_its_size(visited):
    """At 1280 px every figure shows at >= 75 % of its width, drawn at twice it."""
    name, visit = visited
    problems = []
    for image in _checked(name, visit, "figures"):
        if not image["width"]:
            problems.append(f"{image['src']}: no intended width (re-run make outputs)")
            continue
        share = image["shown"] / image["width"]
        if share < MIN_SHOWN:
            problems.append(
                f"{image['src']}: shown at {share:.0%} of its {image['width']} px"
            )
        if image["natural"] < 2 * image["width"] - 1:
            problems.append(
                f"{image['src']}: {image['natural']} px for {image['width']} px: not 2x"
            )
    assert not problems, f"{name}:\n" + "\n".join(problems)


def _is_notebook(entry: str) -> bool:
    return any(p.suffix == ".ipynb" and p.exists() for p in resolve_entry(entry))


def test_every_toc_page_was_built():
    missing = [page for page in PAGES if not (HTML / page).exists()]
    assert not missing, f"pages in _toc.yml with no built HTML: {missing}"


def test_every_page_states_the_licences_in_its_footer():
    for page in PAGES:
        footer = (HTML / page).read_text(encoding="utf-8").split("<footer", 1)[-1]
        assert "CC BY 4.0" in footer and "MIT" in footer, f"{page}: no licence"


def test_a_chapter_works_opened_from_disk(visits):
    """Readers open _build/html/index.html straight from disk: math and figures too."""
    visit = visits["file://" + FROM_DISK]
    assert not visit.problems, "\n".join(visit.problems)
    assert visit.math["typeset"] > 0, (
        "no math was typeset when the page was opened from disk"
    )
    widths = [image["width"] for image in visit.images]
    assert widths and min(widths) > 0, f"figures did not load from disk: {widths}"


def test_downloaded_notebooks_use_plain_markdown():
    """The download button hands out each chapter with plain Markdown, outputs kept."""
    for path in chapter_notebooks():
        page = (HTML / "chapters" / path.name).with_suffix(".html").read_text()
        link = f"_sources/chapters/{path.name}"
        assert link in page, f"{path.name}: the page has no download link to {link}"
        copy = nbformat.read(HTML / link, as_version=4)
        markdown = "\n".join(c.source for c in copy.cells if c.cell_type == "markdown")
        for myst in ("```{", ":::{", "{ref}`", "{numref}`", "{term}`", "\n% "):
            assert myst not in markdown, f"{path.name}: {myst!r} left in plain Markdown"
        if path in core_chapters():
            chapter = int(path.name.split("_")[0])
            assert f"> **Exercise {chapter}.1:" in markdown, path.name
        assert any(c.get("outputs") for c in copy.cells if c.cell_type == "code")
