"""An accessibility audit of every page of the table of contents with axe-core
(``make site-check``, network cut off as in ``test_site.py``): light and dark mode, at
1280 px and at a phone's 390 px, every collapsed box opened, so that solutions and
deep dives are audited too. Any violation of impact "serious" or "critical" fails.

axe-core comes from the pinned PyPI package ``axe-playwright-python``, which ships its
``axe.min.js``; the script is put into each page from disk, never fetched.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.site.conftest import _skip_or_fail
from tests.site.test_site import OPEN_EVERY_BOX, PAGES, PageLog, load, visit_views

pytestmark = pytest.mark.site

AXE_VERSION = "4.12.1"
MODES = ("light", "dark")
WIDTHS = {1280: 900, 390: 844}
FAILING_IMPACTS = ("serious", "critical")
# WCAG 2.0 and 2.1, levels A and AA, and Deque's best practices.
TAGS = ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa", "best-practice"]
# How many targets and which part of axe's advice each violation's message shows.
TARGETS_SHOWN = 4
# The code blocks' highlighted tokens are half of a chapter's elements and most of
# the audit's time. Their colours are the same at every width, so their contrast is
# audited at 1280 px; at 390 px every other rule still covers the code blocks.
CODE = ".highlight"
WIDTH_OF_FULL_CONTRAST = 1280

VIEWS = [
    (name, mode, width) for name in sorted(PAGES) for mode in MODES for width in WIDTHS
]


def _axe_script() -> str:
    try:
        import axe_playwright_python
    except ImportError:
        _skip_or_fail(
            "the axe-playwright-python package is not installed (`make test` "
            "installs it)"
        )
    return (Path(axe_playwright_python.__file__).parent / "axe.min.js").read_text(
        encoding="utf-8"
    )


# Each violation, in the words a maintainer needs: the rule, its impact, its advice,
# the first targets and the first way to fix the first of them.
AUDIT = """async ([runs, tags]) => {
    const found = [];
    let version = null;
    for (const [context, rules] of runs) {
        const options = {runOnly: {type: 'tag', values: tags}, rules,
                         resultTypes: ['violations']};
        const result = await axe.run(context, options);
        version = result.testEngine.version;
        for (const rule of result.violations) {
            found.push({
                id: rule.id,
                impact: rule.impact,
                help: rule.help,
                url: rule.helpUrl,
                count: rule.nodes.length,
                targets: rule.nodes.map((node) => node.target.join(' ')),
                fix: (rule.nodes[0].failureSummary || '').split('\\n')
                    .map((line) => line.trim()).filter(Boolean).slice(0, 2)
                    .join(' '),
            });
        }
    }
    return {version, theme: document.documentElement.dataset.theme, found};
}"""


# axe-core 4.12.1 reads every stylesheet again for its rule css-orientation-lock, and
# asks for an @import-ed one at its address resolved against the page instead of the
# stylesheet that imports it (https://github.com/dequelabs/axe-core/issues/5268): the
# theme's "../basic.css" is asked for at the site's root, a 404. Each such address is
# sent on to the file the browser itself loaded, so that the rule reads the real one.
MISPLACED_IMPORTS = """() => {
    const moved = {};
    for (const sheet of document.styleSheets) {
        let rules = [];
        try { rules = Array.from(sheet.cssRules); } catch (error) { continue; }
        for (const rule of rules) {
            if (!(rule instanceof CSSImportRule) || !sheet.href) continue;
            const wrong = new URL(rule.href, document.baseURI).href;
            const right = new URL(rule.href, sheet.href).href;
            if (wrong !== right) moved[wrong] = right;
        }
    }
    return moved;
}"""


def _sender(right: str):
    async def send_on(route):
        await route.continue_(url=right)

    return send_on


async def _send_imports_on(page) -> None:
    for wrong, right in (await page.evaluate(MISPLACED_IMPORTS)).items():
        await page.route(wrong, _sender(right))


def _runs(width: int) -> list:
    """axe's runs for one view: (context, rules switched on or off)."""
    if width == WIDTH_OF_FULL_CONTRAST:
        return [[{"exclude": []}, {}]]
    return [
        [{"exclude": []}, {"color-contrast": {"enabled": False}}],
        [{"exclude": [[CODE]]}, {}],
    ]


async def _audit(context, site_url: str, name: str, width: int, script: str) -> dict:
    page = await context.new_page()
    log = PageLog(page, site_url)
    await page.route("**/*", log.route)
    try:
        await load(page, log, f"{site_url}/{name}")
        await page.evaluate("async () => {" + OPEN_EVERY_BOX + "}")
        await _send_imports_on(page)
        await page.evaluate(script)
        audit = await page.evaluate(AUDIT, [_runs(width), TAGS])
    except Exception as error:  # a timeout or a crash is that view's failure
        audit = {"version": None, "theme": None, "found": []}
        log.problems.append(f"the audit could not finish: {error!r}")
    finally:
        await page.close()
    audit["problems"] = log.problems
    return audit


async def _audit_all(browser_context, site_url: str, script: str) -> dict:
    async def audit(context, view):
        name, _, width = view
        return await _audit(context, site_url, name, width, script)

    def setting(view):
        _, mode, width = view
        return mode, width, WIDTHS[width]

    return await visit_views(browser_context, VIEWS, setting, audit)


@pytest.fixture(scope="session")
def audits(browser, site_url) -> dict:
    """Every page in both modes at both widths: ``{(page, mode, width): audit}``."""
    return browser.run(_audit_all(browser.context, site_url, _axe_script()))


def _describe(view, violation: dict) -> str:
    name, mode, width = view
    targets = violation["targets"][:TARGETS_SHOWN]
    more = violation["count"] - len(targets)
    return (
        f"{violation['id']} ({violation['impact']}) on {name}, {mode} mode, "
        f"{width} px: {violation['help']}; {violation['count']} element(s): "
        + ", ".join(targets)
        + (f" and {more} more" if more > 0 else "")
        + f". Fix: {violation['fix']} ({violation['url']})"
    )


@pytest.mark.parametrize(
    "view", VIEWS, ids=[f"{name}-{mode}-{width}" for name, mode, width in VIEWS]
)
def test_no_serious_or_critical_accessibility_violation(view, audits):
    audit = audits[view]
    name, mode, _ = view
    assert not audit["problems"], f"{view}:\n" + "\n".join(audit["problems"])
    assert audit["version"] == AXE_VERSION, f"axe-core {audit['version']} ran"
    assert audit["theme"] == mode, f"{name} is in {audit['theme']} mode"
    failing = [v for v in audit["found"] if v["impact"] in FAILING_IMPACTS]
    assert not failing, "\n".join(_describe(view, v) for v in failing)
