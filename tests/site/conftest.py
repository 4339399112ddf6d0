"""The built website served on 127.0.0.1 and one headless Chromium for the session;
without Chromium the checks skip, or fail where ``REQUIRE_BROWSER=1``."""

from __future__ import annotations

import asyncio
import functools
import http.server
import os
import threading
from dataclasses import dataclass
from typing import Any

import pytest

from tools.pdf import CHROMIUM_FLAGS, find_chromium
from tools.toc import ROOT

HTML = ROOT / "_build" / "html"
VIEWPORT = {"width": 1280, "height": 900}


def _skip_or_fail(reason: str):
    if os.environ.get("REQUIRE_BROWSER") == "1":
        pytest.fail(f"{reason} (REQUIRE_BROWSER=1, so this is a failure)")
    pytest.skip(f"browser check of the built site SKIPPED: {reason}")


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format, *args):  # noqa: A002 - the base class's name
        pass


@pytest.fixture(scope="session")
def site_url():
    """The address of ``_build/html`` served by a local HTTP server."""
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


@dataclass
class Browser:
    """The session's one browser context, and ``run(coroutine)`` to drive it."""

    context: Any
    loop: asyncio.AbstractEventLoop

    def run(self, coroutine):
        return self.loop.run_until_complete(coroutine)


@pytest.fixture(scope="session")
def browser():
    executable = find_chromium()
    if executable is None:
        _skip_or_fail(
            "no Chromium found (install it with `apt-get install chromium`, "
            "or set CHROMIUM=/path/to/chromium)"
        )
    try:
        from playwright.async_api import async_playwright
    except ImportError:
        _skip_or_fail(
            "the playwright package is not installed (`make test` installs it)"
        )
    loop = asyncio.new_event_loop()
    playwright = loop.run_until_complete(async_playwright().start())
    try:
        chromium = loop.run_until_complete(
            playwright.chromium.launch(
                executable_path=executable, headless=True, args=CHROMIUM_FLAGS
            )
        )
        context = loop.run_until_complete(chromium.new_context(viewport=VIEWPORT))
        yield Browser(context=context, loop=loop)
        loop.run_until_complete(chromium.close())
    finally:
        loop.run_until_complete(playwright.stop())
        loop.close()
