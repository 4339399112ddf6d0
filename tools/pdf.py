"""The book as one PDF, built with no network: ``_build/pdf/attention-executed.pdf``.

``python -m tools.pdf`` (``make pdf``) does it in two steps:

1. Jupyter Book's ``singlehtml`` builder writes every page of ``_toc.yml``, in its
   order, into one HTML page (``_build/singlehtml``), from the outputs stored in the
   notebooks, as the website is built;
2. headless Chromium (the browser of the site check, ``apt-get install chromium``)
   opens that page from a server on 127.0.0.1, with every request off the machine
   refused, waits until MathJax (served from the page's own files) has typeset the
   math and every figure has loaded, opens every solution and deep dive, hides the
   website's navigation, and prints the page to A4 with bookmarks, a contents list
   and page numbers; where the website has been built (``make book``), a copy goes
   beside its pages, where the link in its navigation points.

Before printing, every link to another part of the book is made a link inside the
PDF, and the printed column is measured: a table, a code line, an equation or a
figure wider than the page fails the build, as does a request that would have needed
the network. ``tests/site/test_pdf.py`` checks the PDF itself.
"""

from __future__ import annotations

import argparse
import functools
import http.server
import io
import os
import re
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path
from urllib.parse import urlparse

import yaml

from tools.toc import ROOT, TOC

BUILD = ROOT / "_build"
SINGLE = BUILD / "singlehtml"
PDF = BUILD / "pdf" / "attention-executed.pdf"
# Where the website is built: a copy of the PDF beside its pages is what the link in
# its navigation opens (_templates/pdf-link.html).
WEBSITE = BUILD / "html"
# Sphinx writes the single page under the root document's name, chapters/intro.html,
# but links its styles, scripts and images from the folder above it; the printed
# copy is written where those links hold.
PRINTED_PAGE = "attention-executed.html"
ROOT_DOC = "chapters/intro"
ROOT_PAGE = ROOT_DOC + ".html"

CHROMIUM_CANDIDATES = ("chromium", "chromium-browser", "google-chrome")
CHROMIUM_FLAGS = (
    "--no-sandbox --disable-gpu --disable-quic --no-first-run "
    "--disable-background-networking --disable-component-update --disable-sync"
).split()
# The width of the window the page is laid out in before printing; printing lays it
# out again to the width of the A4 column.
VIEWPORT = {"width": 1000, "height": 1400}
MARGIN = {"top": "16mm", "bottom": "18mm", "left": "16mm", "right": "16mm"}
TIMEOUT_MS = 180_000

# The website's navigation, buttons and footer left out; every chapter on a new
# page; solutions and deep dives open, with no "Click to show"; wide content fitted
# to the column instead of scrolling sideways, which paper cannot do.
PRINT_CSS = """
.bd-header, .bd-sidebar-primary, .bd-sidebar-secondary, .bd-header-article,
.bd-footer, .bd-footer-article, .bd-footer-content, .prev-next-area, .skip-link,
#pst-back-to-top, .headerlink, .copybtn, .toggle-button, .toggle-details__summary,
.sidebar-toggle, .search-button-field, .bd-search, .theme-switch-button,
.header-article-items, .footer-article-items, #jb-print-docs-body {
  display: none !important;
}
html, body { background: white !important; }
.bd-main .bd-content .bd-article h1:first-of-type {
  display: block !important; font-size: 2.6em; margin-top: 3em; text-align: center;
}
.bd-container, .bd-container__inner, .bd-page-width, .bd-main, .bd-content,
.bd-article-container, .bd-article, article.bd-article {
  max-width: none !important; width: auto !important; margin: 0 !important;
  padding: 0 !important; display: block !important; overflow: visible !important;
}
body { font-size: 10.5pt; }
.toctree-wrapper > span[id^="document-"] + section,
nav.pdf-contents + * { break-before: page; }
h1, h2, h3, h4, p.admonition-title, .sd-card-title { break-after: avoid; }
figure, img, tr, mjx-container[display="true"], div.cell_output .output {
  break-inside: avoid;
}
img { max-width: 100% !important; height: auto !important; }
pre, div.highlight pre, div.cell_output pre {
  white-space: pre-wrap !important; overflow-wrap: anywhere;
  overflow: visible !important;
  max-height: none !important;
}
article table, table.table {
  display: table !important; max-width: 100%; overflow: visible !important;
  font-size: 0.85em;
}
article table td, article table th { overflow-wrap: anywhere; }
mjx-container[display="true"] { overflow: visible !important; }
.toggle-hidden, .admonition.dropdown.toggle-hidden > *:not(.admonition-title) {
  display: block !important; visibility: visible !important; height: auto !important;
  opacity: 1 !important;
}
details > *, .toggle-details__container { display: block !important; }
nav.pdf-contents h2 { font-size: 1.5em; margin: 1.5em 0 0.8em; }
nav.pdf-contents ol { list-style: none; padding-left: 0; }
nav.pdf-contents li { margin: 0.35em 0; font-size: 1.1em; }
nav.pdf-contents li.pdf-contents-part { margin-top: 1em; font-weight: bold; }
"""

# Open every box, make links to the book's own pages links inside the page, and add
# a contents list under the book's title. Returns what it changed and what it could
# not keep.
PREPARE_JS = r"""async ([rootDoc, parts, standIns]) => {
    const walker = document.createTreeWalker(
        document.querySelector('article'), NodeFilter.SHOW_TEXT);
    for (let text = walker.nextNode(); text; text = walker.nextNode()) {
        for (const [char, standIn] of Object.entries(standIns)) {
            if (text.data.includes(char)) {
                text.data = text.data.split(char).join(standIn);
            }
        }
    }
    document.querySelectorAll('details').forEach((box) => { box.open = true; });
    document.querySelectorAll('.toggle-hidden').forEach(
        (box) => box.classList.remove('toggle-hidden'));
    document.querySelectorAll('.admonition.dropdown').forEach(
        (box) => box.classList.remove('dropdown'));

    // The introduction, the root page, has no marker of its own.
    const first = document.querySelector('article section');
    if (first && !document.getElementById('document-' + rootDoc)) {
        const marker = document.createElement('span');
        marker.id = 'document-' + rootDoc;
        first.parentNode.insertBefore(marker, first);
    }
    const here = new URL(window.location.href);
    const unresolved = [];
    let inside = 0;
    let unlinked = 0;
    document.querySelectorAll('article a[href]').forEach((link) => {
        const url = new URL(link.getAttribute('href'), here);
        if (url.origin !== here.origin) { return; }
        const target = decodeURIComponent(url.hash.slice(1));
        const path = url.pathname.replace(/^\//, '');
        if (target && document.getElementById(target)) {
            link.setAttribute('href', '#' + target);
            inside += 1;
        } else if (!target &&
                   (path.startsWith('_images/') || path === 'genindex.html')) {
            // A figure's full-size file and the website's index: no page of the
            // PDF, so the text stays and the link goes.
            link.removeAttribute('href');
            unlinked += 1;
        } else {
            unresolved.push(link.getAttribute('href'));
            link.removeAttribute('href');
        }
    });

    const starts = Array.from(
        document.querySelectorAll('.toctree-wrapper > span[id^="document-"]'));
    const nav = document.createElement('nav');
    nav.className = 'pdf-contents';
    nav.innerHTML = '<h2>Contents</h2><ol></ol>';
    const list = nav.querySelector('ol');
    const titles = [];
    starts.forEach((start) => {
        const section = start.nextElementSibling;
        const heading = section && section.querySelector('h1, h2');
        if (!heading) { return; }
        const part = parts[start.id.slice('document-'.length)];
        if (part) {
            const item = document.createElement('li');
            item.className = 'pdf-contents-part';
            item.textContent = part;
            list.appendChild(item);
        }
        const item = document.createElement('li');
        const link = document.createElement('a');
        link.href = '#' + section.id;
        const clone = heading.cloneNode(true);
        clone.querySelectorAll('.headerlink').forEach((node) => node.remove());
        link.textContent = clone.textContent.trim();
        titles.push(link.textContent);
        item.appendChild(link);
        list.appendChild(item);
    });
    const title = document.querySelector('article h1');
    title.parentNode.insertBefore(nav, title.nextSibling);
    await Promise.all(Array.from(document.images).map(
        (img) => img.decode().catch(() => null)));
    // Every heading's text, in order, for the PDF's bookmarks: math as the text of
    // its MathML, no permalink sign.
    const headings = Array.from(document.querySelectorAll(
        'article h1, article h2, article h3, article h4, article h5, article h6'))
        .filter((heading) => heading.getClientRects().length > 0)
        .map((heading) => {
            const clone = heading.cloneNode(true);
            clone.querySelectorAll('.headerlink').forEach((node) => node.remove());
            clone.querySelectorAll('mjx-container').forEach((math) => {
                const mml = math.querySelector('mjx-assistive-mml');
                math.replaceWith(mml ? mml.textContent : '');
            });
            return clone.textContent.replace(/\s+/g, ' ').trim();
        });
    return {inside, unlinked, unresolved, titles, headings};
}"""

# Whatever is wider than the printed column, which paper would cut off.
TOO_WIDE_JS = """() => {
    const column = document.querySelector('article.bd-article') || document.body;
    const right = column.getBoundingClientRect().right + 1;
    const found = [];
    const selector = 'table, pre, img, figure, mjx-container[display="true"], ' +
        'div.cell_output, div.cell_input';
    column.querySelectorAll(selector).forEach((node) => {
        const box = node.getBoundingClientRect();
        if (box.width === 0) { return; }
        if (box.right > right || node.scrollWidth > node.clientWidth + 1) {
            const name = [node.tagName.toLowerCase(), ...node.classList].join('.');
            const text = (node.textContent || node.getAttribute('src') || '')
                .trim().slice(0, 60);
            found.push(`${name} ${JSON.stringify(text)}: ` +
                `${Math.round(Math.max(box.right, box.left + node.scrollWidth))} px ` +
                `against a column ending at ${Math.round(right)} px`);
        }
    });
    return found;
}"""

MATH_LEFT_JS = """() => {
    const main = document.querySelector('article') || document.body;
    const waiting = Array.from(main.querySelectorAll('.math'))
        .filter((node) => !node.querySelector('mjx-container')).length;
    const errors = main.querySelectorAll('mjx-merror').length;
    return {waiting, errors};
}"""

# The checks print these emoji; where no installed font has them (a server without
# a colour emoji font), the PDF shows a sign that the book's own fonts have.
EMOJI_STAND_INS = {"\u2705": "\u2714", "\u23f3": "\u25f7"}

FOOTER = (
    '<div style="width: 100%; font-size: 8pt; color: #555; padding: 0 16mm; '
    'display: flex; justify-content: space-between;">'
    "<span>Attention, Executed</span>"
    '<span><span class="pageNumber"></span> / <span class="totalPages"></span></span>'
    "</div>"
)


def part_captions(toc_path: Path = TOC) -> dict[str, str]:
    """The caption of each part of ``_toc.yml``, by the first page of the part."""
    toc = yaml.safe_load(toc_path.read_text(encoding="utf-8"))
    return {
        part["chapters"][0]["file"]: part["caption"]
        for part in toc.get("parts", [])
        if part.get("caption") and part.get("chapters")
    }


def missing_glyphs(stand_ins: dict[str, str] = EMOJI_STAND_INS) -> dict[str, str]:
    """The stand-ins for the characters that no installed font draws (fontconfig,
    which Chromium uses on Linux, is asked); every one where it cannot be asked."""
    if shutil.which("fc-list") is None:
        return dict(stand_ins)
    return {
        char: stand_in
        for char, stand_in in stand_ins.items()
        if not subprocess.run(
            ["fc-list", f":charset={ord(char):x}", "family"],
            capture_output=True,
            text=True,
        ).stdout.strip()
    }


class BuildError(RuntimeError):
    """The PDF could not be made as the course needs it."""


def find_chromium() -> str | None:
    """``$CHROMIUM``, else the first Chromium on ``PATH``."""
    explicit = os.environ.get("CHROMIUM")
    if explicit:
        return explicit
    return next(filter(None, map(shutil.which, CHROMIUM_CANDIDATES)), None)


def build_single_page(root: Path = ROOT) -> Path:
    """Every page of the book in one HTML page, as ``SINGLE / PRINTED_PAGE``."""
    jupyter_book = Path(sys.executable).parent / "jupyter-book"
    subprocess.run(
        [str(jupyter_book), "build", str(root), "--builder", "singlehtml", "-q"],
        check=True,
    )
    page = SINGLE / PRINTED_PAGE
    shutil.copyfile(SINGLE / ROOT_PAGE, page)
    return page


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format, *args):  # noqa: A002 - the base class's name
        pass


def print_page(page: Path, pdf: Path, chromium: str) -> dict:
    """Print ``page`` (a file in a folder with its ``_static`` and ``_images``) to
    ``pdf``; returns what :data:`PREPARE_JS` reported."""
    from playwright.sync_api import sync_playwright

    handler = functools.partial(_QuietHandler, directory=str(page.parent))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    origin = f"127.0.0.1:{server.server_address[1]}"
    problems: list[str] = []

    def route(request_route):
        url = urlparse(request_route.request.url)
        if url.netloc == origin and url.path.endswith("/searchindex.js"):
            # The website's search, which paper has no use for: the single page
            # has no index of its own.
            request_route.fulfill(body="", content_type="text/javascript")
        elif url.scheme in ("data", "blob") or url.netloc == origin:
            request_route.continue_()
        else:
            problems.append(f"a request off the machine: {url.geturl()}")
            request_route.abort("internetdisconnected")

    try:
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(
                executable_path=chromium, headless=True, args=CHROMIUM_FLAGS
            )
            tab = browser.new_page(viewport=VIEWPORT)
            tab.set_default_timeout(TIMEOUT_MS)
            tab.on("requestfailed", lambda r: problems.append(f"failed: {r.url}"))
            tab.route("**/*", route)
            tab.emulate_media(media="print")
            tab.goto(f"http://{origin}/{page.name}", wait_until="load")
            tab.wait_for_function("() => window.MathJax && MathJax.startup")
            tab.evaluate("() => MathJax.startup.promise")
            math = tab.evaluate(MATH_LEFT_JS)
            if math["waiting"] or math["errors"]:
                problems.append(
                    f"math not typeset: {math['waiting']} left as TeX, "
                    f"{math['errors']} MathJax errors"
                )
            tab.add_style_tag(content=PRINT_CSS)
            report = tab.evaluate(
                PREPARE_JS, [ROOT_DOC, part_captions(), missing_glyphs()]
            )
            if report["unresolved"]:
                nowhere = sorted(set(report["unresolved"]))
                problems.append(f"links to no place in the book: {nowhere}")
            # The width of the printed column: A4 less the margins, at 96 px an inch.
            tab.set_viewport_size({"width": 673, "height": 1000})
            problems += tab.evaluate(TOO_WIDE_JS)
            if problems:
                raise BuildError("\n".join(problems))
            pdf.parent.mkdir(parents=True, exist_ok=True)
            tab.pdf(
                path=str(pdf),
                format="A4",
                margin=MARGIN,
                print_background=True,
                display_header_footer=True,
                header_template="<span></span>",
                footer_template=FOOTER,
                outline=True,
                tagged=True,
            )
            browser.close()
    finally:
        server.shutdown()
        server.server_close()
    retitle_bookmarks(pdf, report["headings"])
    return report


# Chromium writes the first line of a heading that starts a page twice into its
# bookmark ("2.2. 2.2. NotationNotation"), and joins wrapped lines with no space.
REPEATED_START = re.compile(r"^((?:\d+\.)+ ?)?\1?(.{4,}?)\2(.*)$", re.S)


def _squeezed(text: str) -> str:
    return re.sub(r"\s+", "", text)


def retitle_bookmarks(pdf: Path, headings: list[str]) -> int:
    """Give the bookmarks of ``pdf`` the text of the page's headings, where they
    are the same headings in the same order (else only undo the repeated starts);
    written as an update appended to the file. Returns how many changed."""
    from pypdf import PdfWriter
    from pypdf.generic import NameObject, TextStringObject

    writer = PdfWriter(pdf, incremental=True)
    items = []

    def walk(item):
        while item is not None:
            node = item.get_object()
            items.append(node)
            if "/First" in node:
                walk(node["/First"])
            item = node.get("/Next")

    if "/Outlines" in writer.root_object:
        walk(writer.root_object["/Outlines"].get("/First"))
    titles = []
    for node in items:
        title = str(node["/Title"])
        repeated = REPEATED_START.match(title)
        if repeated:
            title = (repeated.group(1) or "") + repeated.group(2) + repeated.group(3)
        titles.append(title)
    same = len(titles) == len(headings) and all(
        _squeezed(heading).startswith(_squeezed(title)[:6])
        for title, heading in zip(titles, headings, strict=True)
    )
    changed = 0
    for node, new in zip(items, headings if same else titles, strict=True):
        if new != str(node["/Title"]):
            node[NameObject("/Title")] = TextStringObject(new)
            changed += 1
    if changed:
        update = io.BytesIO()
        writer.write(update)
        pdf.write_bytes(update.getvalue())
    return changed


def build(pdf: Path = PDF, *, rebuild_html: bool = True) -> dict:
    """The single page built (unless ``rebuild_html`` is false) and printed."""
    chromium = find_chromium()
    if chromium is None:
        raise BuildError(
            "no Chromium found: install it (`apt-get install chromium`) or set "
            "CHROMIUM=/path/to/chromium"
        )
    page = build_single_page() if rebuild_html else SINGLE / PRINTED_PAGE
    report = print_page(page, pdf, chromium)
    if pdf == PDF and (WEBSITE / "index.html").exists():
        shutil.copyfile(pdf, WEBSITE / pdf.name)
    return report


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--output", type=Path, default=PDF, help="the PDF to write")
    parser.add_argument(
        "--no-html",
        action="store_true",
        help="print the single page already in _build/singlehtml",
    )
    args = parser.parse_args(argv)
    start = time.monotonic()
    try:
        report = build(args.output, rebuild_html=not args.no_html)
    except BuildError as error:
        print(f"The PDF was not written:\n{error}", file=sys.stderr)
        return 1
    from pypdf import PdfReader

    pages = len(PdfReader(args.output).pages)
    size = args.output.stat().st_size / 1e6
    print(
        f"The book as a PDF is at {args.output}: {pages} pages, {size:.1f} MB, "
        f"{len(report['titles'])} chapters and pages, {report['inside']} links "
        f"inside the book ({time.monotonic() - start:.0f} s)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
