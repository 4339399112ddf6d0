"""Finding one's way around the built website (``make site-check``, network cut off
as in ``test_site.py``): on a phone, on a desktop, with the keyboard, out to Colab."""

from __future__ import annotations

import asyncio
import io
import re
import time

import pytest

from attn_course.plot import contrast_ratio
from tests.site.test_site import (
    OPEN_EVERY_BOX,
    PAGES,
    PAGES_AT_ONCE,
    PageLog,
    load,
    visit_views,
)
from tools.toc import core_chapters

pytestmark = pytest.mark.site

PHONE = {"width": 390, "height": 844}
CHAPTER = "chapters/01_toy_attention.html"
# How long a drawer, a dialog or a folding sidebar may take to settle.
SETTLE_S = 3.0
# WCAG 2.1, 1.4.11: a focus indicator needs 3:1 against the colours next to it.
MIN_RING_CONTRAST = 3.0
# Pixels a ring around a box's title changes at the least (a 3 px ring round a
# 600 px title changes thousands).
MIN_RING_PIXELS = 500

# The page's width against the window's, and where it is too wide, what reaches
# furthest right: elements, and runs of text that do not wrap (a long word), each
# named by its element and the start of its text.
OVERFLOW_FACTS = """() => {
    const found = Array.from(document.querySelectorAll('body *'))
        .map((node) => [node, node.getBoundingClientRect().right, '']);
    const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
    for (let text = walker.nextNode(); text; text = walker.nextNode()) {
        const range = document.createRange();
        range.selectNodeContents(text);
        found.push([text.parentElement, range.getBoundingClientRect().right,
                    text.textContent.trim().slice(0, 50)]);
    }
    const wide = found
        .filter(([, right]) => right > window.innerWidth + 0.5)
        .sort((a, b) => b[1] - a[1])
        .slice(0, 3)
        .map(([node, right, text]) => {
            const name = [node.tagName.toLowerCase(), ...node.classList].join('.');
            return `${name} ${JSON.stringify(text)} to ${Math.round(right)} px`;
        });
    return {
        scroll: document.documentElement.scrollWidth,
        window: window.innerWidth,
        wide,
    };
}"""

# The links among ``selector`` that a reader can see and tap: each is scrolled into
# view (inside its drawer, if any) and must then be the topmost element at its own
# middle, inside the window.
SHOWN_LINKS = """(selector) => Array.from(document.querySelectorAll(selector))
    .filter((link) => {
        link.scrollIntoView({block: 'center', inline: 'nearest'});
        const box = link.getBoundingClientRect();
        if (box.width === 0 || box.height === 0) return false;
        const x = box.left + Math.min(box.width / 2, 20);
        const y = box.top + box.height / 2;
        if (x < 0 || y < 0 || x >= window.innerWidth || y >= window.innerHeight) {
            return false;
        }
        const top = document.elementFromPoint(x, y);
        return top !== null && (top === link || link.contains(top));
    })
    .map((link) => link.getAttribute('href'))"""

CHAPTER_LINKS = "nav.bd-docs-nav a.reference.internal"
# The page's sections (its subsections unfold as the reader scrolls to them).
CONTENTS_LINKS = "nav.page-toc li.toc-h2 > a"
MENU_BUTTON = ".bd-header-article .primary-toggle"
CONTENTS_BUTTON = ".bd-header-article .secondary-toggle"

# The focused element, the ring drawn for it (its own outline, or the outline the
# theme draws around the box's title) and the colours the ring lies on. Each
# background is the element's colour laid over those of its ancestors.
FOCUS_FACTS = """() => {
    const focused = document.activeElement;
    const box = focused.closest('.admonition');
    const title = box && box.querySelector('.admonition-title');
    const ring = (style) => ({
        style: style.outlineStyle, width: parseFloat(style.outlineWidth),
        colour: style.outlineColor,
    });
    const parse = (colour) => {
        const parts = colour.match(/[\\d.]+/g).map(Number);
        return parts.length === 3 ? [...parts, 1] : parts;
    };
    const background = (node) => {
        const layers = [];
        for (let at = node; at; at = at.parentElement) {
            layers.push(parse(getComputedStyle(at).backgroundColor));
        }
        let colour = [255, 255, 255];
        for (const [r, g, b, a] of layers.reverse()) {
            colour = [r * a + colour[0] * (1 - a), g * a + colour[1] * (1 - a),
                      b * a + colour[2] * (1 - a)];
        }
        return colour;
    };
    const before = title && getComputedStyle(title, '::before');
    return {
        tag: focused.tagName.toLowerCase(),
        classes: focused.className,
        box: box ? box.className : null,
        own: ring(getComputedStyle(focused)),
        title: before && before.content !== 'none' ? ring(before) : null,
        backgrounds: box ? [background(title), background(box)] : [],
        theme: document.documentElement.dataset.theme,
    };
}"""


async def _open(context, site_url: str, name: str):
    page = await context.new_page()
    log = PageLog(page, site_url)
    await page.route("**/*", log.route)
    await load(page, log, f"{site_url}/{name}")
    return page, log


async def _poll(page, script: str, arg, done) -> object:
    """Evaluate ``script`` until ``done(value)`` or SETTLE_S; the last value."""
    deadline = time.monotonic() + SETTLE_S
    while True:
        value = await page.evaluate(script, arg)
        if done(value) or time.monotonic() > deadline:
            return value
        await asyncio.sleep(0.1)


@pytest.fixture(scope="session")
def phone(browser):
    """A browser context with a phone's window, 390 x 844 px."""
    context = browser.run(browser.context.browser.new_context(viewport=PHONE))
    yield context
    browser.run(context.close())


# --- No page scrolls sideways on a phone


async def _overflow(context, site_url: str, name: str) -> dict:
    page, log = await _open(context, site_url, name)
    try:
        closed = await page.evaluate(OVERFLOW_FACTS)
        await page.evaluate("async () => {" + OPEN_EVERY_BOX + "}")
        opened = await page.evaluate(OVERFLOW_FACTS)
        return {"closed": closed, "opened": opened, "problems": log.problems}
    finally:
        await page.close()


async def _overflow_all(context, site_url: str) -> dict[str, dict]:
    slots = asyncio.Semaphore(PAGES_AT_ONCE)

    async def one(name):
        async with slots:
            return await _overflow(context, site_url, name)

    names = sorted(PAGES)
    results = await asyncio.gather(*(one(name) for name in names))
    return dict(zip(names, results, strict=True))


@pytest.fixture(scope="session")
def phone_widths(browser, phone, site_url) -> dict[str, dict]:
    """Every page of the table of contents at 390 px: ``{page: widths}``."""
    return browser.run(_overflow_all(phone, site_url))


@pytest.mark.parametrize("name", sorted(PAGES))
def test_no_page_scrolls_sideways_on_a_phone(name, phone_widths):
    """At 390 px no page is wider than the window, boxes closed or open."""
    widths = phone_widths[name]
    assert not widths["problems"], f"{name}:\n" + "\n".join(widths["problems"])
    for state in ("closed", "opened"):
        facts = widths[state]
        assert facts["scroll"] <= facts["window"], (
            f"{name} (boxes {state}): the page is {facts['scroll']} px wide in a "
            f"{facts['window']} px window; widest: {facts['wide']}"
        )


# --- The menu and contents buttons


def _chapter_hrefs() -> set[str]:
    """The sidebar's links from Chapter 1 to every other core chapter."""
    here = CHAPTER.rsplit("/", 1)[-1]
    return {path.with_suffix(".html").name for path in core_chapters()} - {here}


async def _drawer(context, site_url: str) -> dict:
    page, log = await _open(context, site_url, CHAPTER)
    try:
        before = await page.evaluate(SHOWN_LINKS, CHAPTER_LINKS)
        await page.locator(MENU_BUTTON).click()
        wanted = _chapter_hrefs()
        after = await _poll(
            page, SHOWN_LINKS, CHAPTER_LINKS, lambda hrefs: wanted <= set(hrefs)
        )
        dialog_open = await page.evaluate(
            "() => document.getElementById('pst-primary-sidebar-modal').open"
        )
        await page.keyboard.press("Escape")
        closed = await _poll(page, SHOWN_LINKS, CHAPTER_LINKS, lambda h: not h)
        return {
            "before": before,
            "after": after,
            "dialog_open": dialog_open,
            "after_escape": closed,
            "problems": log.problems,
        }
    finally:
        await page.close()


def test_the_menu_button_opens_the_chapter_drawer_on_a_phone(browser, phone, site_url):
    result = browser.run(_drawer(phone, site_url))
    assert not result["problems"], "\n".join(result["problems"])
    assert not result["before"], (
        f"at 390 px the chapter list is on screen before the menu is opened: "
        f"{result['before']}"
    )
    assert result["dialog_open"], "the menu button did not open the chapter drawer"
    missing = _chapter_hrefs() - set(result["after"])
    assert not missing, (
        f"chapters not shown in the open drawer: {sorted(missing)} "
        f"(shown: {result['after']})"
    )
    assert not result["after_escape"], "Escape did not close the chapter drawer"


async def _contents(context, site_url: str) -> dict:
    page, log = await _open(context, site_url, CHAPTER)
    try:
        sections = await page.locator(CONTENTS_LINKS).count()
        before = await page.evaluate(SHOWN_LINKS, CONTENTS_LINKS)
        await page.locator(CONTENTS_BUTTON).click()
        after = await _poll(
            page, SHOWN_LINKS, CONTENTS_LINKS, lambda hrefs: len(hrefs) == sections
        )
        dialog_open = await page.evaluate(
            "() => document.getElementById('pst-secondary-sidebar-modal').open"
        )
        return {
            "sections": sections,
            "before": before,
            "after": after,
            "dialog_open": dialog_open,
            "problems": log.problems,
        }
    finally:
        await page.close()


def test_the_contents_button_opens_the_page_contents_on_a_phone(
    browser, phone, site_url
):
    result = browser.run(_contents(phone, site_url))
    assert not result["problems"], "\n".join(result["problems"])
    assert result["sections"] >= 3, f"Chapter 1 lists {result['sections']} sections"
    assert not result["before"], "the page contents are on screen before the tap"
    assert result["dialog_open"], "the contents button did not open the contents"
    assert len(result["after"]) == result["sections"], (
        f"{len(result['after'])} of {result['sections']} section links shown "
        "after the contents button was tapped"
    )


async def _fold(context, site_url: str) -> dict:
    page, log = await _open(context, site_url, CHAPTER)
    try:
        wanted = _chapter_hrefs()
        shown = []
        shown.append(await page.evaluate(SHOWN_LINKS, CHAPTER_LINKS))
        for _ in range(2):
            await page.locator(MENU_BUTTON).click()
            folding = bool(shown[-1])
            shown.append(
                await _poll(
                    page,
                    SHOWN_LINKS,
                    CHAPTER_LINKS,
                    (lambda h: not h) if folding else (lambda h: wanted <= set(h)),
                )
            )
        dialog_open = await page.evaluate(
            "() => document.getElementById('pst-primary-sidebar-modal').open"
        )
        return {"shown": shown, "dialog_open": dialog_open, "problems": log.problems}
    finally:
        await page.close()


def test_the_menu_button_folds_the_sidebar_on_a_desktop(browser, site_url):
    """At 1280 px the menu button hides the chapters and shows them again."""
    result = browser.run(_fold(browser.context, site_url))
    assert not result["problems"], "\n".join(result["problems"])
    wanted = _chapter_hrefs()
    start, folded, unfolded = (set(hrefs) for hrefs in result["shown"])
    assert wanted <= start, f"chapters missing from the sidebar: {wanted - start}"
    assert not folded, f"the menu button left the sidebar showing: {sorted(folded)}"
    assert wanted <= unfolded, "a second click did not bring the sidebar back"
    assert not result["dialog_open"], "at 1280 px the menu opened the phone's drawer"


# --- A focus ring on the toggles of solutions and deep dives


def _rgb(colour: str) -> tuple[float, ...]:
    """A CSS rgb() colour as matplotlib's (r, g, b) in 0..1; see-through fails."""
    values = [float(v) for v in re.findall(r"[\d.]+", colour)]
    if len(values) == 4 and values[3] < 1:
        raise AssertionError(f"the focus ring is see-through: {colour}")
    return tuple(v / 255 for v in values[:3])


def _pixels_changed(first: bytes, second: bytes) -> int:
    from PIL import Image, ImageChops

    one = Image.open(io.BytesIO(first)).convert("RGB")
    two = Image.open(io.BytesIO(second)).convert("RGB")
    difference = ImageChops.difference(one, two).convert("L")
    return sum(difference.point(lambda v: 255 if v > 24 else 0).histogram()[255:])


# Every toggle of solutions and deep dives on a page, in the order of the page.
TOGGLES = ".admonition.dropdown button.toggle-button"

# Moves the keyboard's focus to just before toggle ``index`` of the page, with the
# toggle in the middle of the window: a Tab press then lands on the toggle itself.
BEFORE_TOGGLE = """([selector, index]) => {
    const button = document.querySelectorAll(selector)[index];
    const box = button.closest('.admonition');
    box.scrollIntoView({block: 'center', behavior: 'instant'});
    const mark = document.createElement('span');
    mark.id = 'before-toggle';
    mark.tabIndex = -1;
    button.before(mark);
    mark.focus();
}"""
ON_THE_TOGGLE = """([selector, index]) => {
    document.getElementById('before-toggle').remove();
    return document.activeElement === document.querySelectorAll(selector)[index];
}"""

# Where toggle ``index``'s box is in the window, and its title.
THE_BOX = """([selector, index]) => {
    const box = document.querySelectorAll(selector)[index].closest('.admonition');
    const {x, y, width} = box.getBoundingClientRect();
    const title = box.querySelector('.admonition-title');
    return {bounds: {x, y, width}, title: title ? title.textContent.trim() : ''};
}"""


async def _one_toggle(page, index: int) -> dict:
    await page.evaluate(BEFORE_TOGGLE, [TOGGLES, index])
    await page.keyboard.press("Tab")
    reached = await page.evaluate(ON_THE_TOGGLE, [TOGGLES, index])
    facts = await page.evaluate(FOCUS_FACTS)
    box = await page.evaluate(THE_BOX, [TOGGLES, index])
    bounds = box["bounds"]
    clip = {
        "x": max(bounds["x"] - 8, 0),
        "y": max(bounds["y"] - 8, 0),
        "width": bounds["width"] + 16,
        "height": 64,
    }
    focused = await page.screenshot(clip=clip)
    await page.evaluate("() => document.activeElement.blur()")
    await page.wait_for_timeout(100)
    plain = await page.screenshot(clip=clip)
    facts.update(
        reached=reached,
        heading=box["title"],
        changed=_pixels_changed(focused, plain),
    )
    return facts


async def _page_toggles(context, site_url: str, name: str) -> dict:
    page, log = await _open(context, site_url, name)
    try:
        count = await page.locator(TOGGLES).count()
        toggles = [await _one_toggle(page, index) for index in range(count)]
        return {"toggles": toggles, "problems": log.problems}
    except Exception as error:  # a timeout or a crash is that page's failure
        return {"toggles": [], "problems": [*log.problems, repr(error)]}
    finally:
        await page.close()


async def _every_toggle(browser_context, site_url: str) -> dict:
    async def toggles(context, view):
        return await _page_toggles(context, site_url, view[0])

    return await visit_views(
        browser_context, TOGGLE_VIEWS, lambda view: (view[1], 1280, 900), toggles
    )


MODES = ("light", "dark")
TOGGLE_VIEWS = [
    (f"chapters/{path.with_suffix('.html').name}", mode)
    for path in core_chapters()
    for mode in MODES
]


@pytest.fixture(scope="session")
def toggles(browser, site_url) -> dict:
    """Every toggle of every chapter, focused with Tab: ``{(page, mode): facts}``."""
    return browser.run(_every_toggle(browser.context, site_url))


def _ring_problem(facts: dict, mode: str) -> str | None:
    """Why this focused toggle shows no visible focus ring, or None."""
    if facts["theme"] != mode:
        return f"the page is in {facts['theme']} mode"
    if not facts["reached"] or facts["tag"] != "button":
        return f"Tab did not reach the toggle (focus on a {facts['tag']})"
    rings = [r for r in (facts["own"], facts["title"]) if r is not None]
    drawn = [r for r in rings if r["style"] != "none" and r["width"] >= 2]
    if not drawn:
        return f"no outline of 2 px or more: {rings}"
    ring = _rgb(drawn[0]["colour"])
    ratios = [
        contrast_ratio(ring, tuple(v / 255 for v in background))
        for background in facts["backgrounds"]
    ]
    if min(ratios) < MIN_RING_CONTRAST:
        return (
            f"focus ring {drawn[0]['colour']} has contrast {min(ratios):.2f} with "
            f"its background (needs {MIN_RING_CONTRAST})"
        )
    # The ring is on screen: focusing the toggle changes a ring's worth of pixels.
    if facts["changed"] < MIN_RING_PIXELS:
        return f"focus changed only {facts['changed']} pixels"
    return None


@pytest.mark.parametrize(
    "view", TOGGLE_VIEWS, ids=[f"{name}-{mode}" for name, mode in TOGGLE_VIEWS]
)
def test_every_toggle_reached_with_tab_shows_a_focus_ring(view, toggles):
    """Each toggle of a solution or a deep dive, reached with Tab, shows a ring of
    3:1 contrast that changes the pixels around its title."""
    name, mode = view
    result = toggles[view]
    assert not result["problems"], f"{name}:\n" + "\n".join(result["problems"])
    assert result["toggles"], f"{name}: no toggle of a solution or a deep dive"
    problems = [
        f"toggle {index + 1} ({facts['box']}: {facts['heading']!r}): {problem}"
        for index, facts in enumerate(result["toggles"])
        if (problem := _ring_problem(facts, mode))
    ]
    assert not problems, (
        f"{name}, {mode} mode, {len(problems)} of {len(result['toggles'])} "
        "toggles:\n" + "\n".join(problems)
    )
