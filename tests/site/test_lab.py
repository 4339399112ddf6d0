"""JupyterLab renders the course's MyST (``make lab``): titles, KaTeX math and
collapsed solutions in a copy of Chapter 1, read in Chromium."""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
import subprocess
import sys
import time
import urllib.request

import pytest

from tools.toc import ROOT

pytestmark = pytest.mark.site

NOTEBOOK = "01_toy_attention.ipynb"
SCREENSHOTS = ROOT / "_build" / "screenshots"
START_TIMEOUT_S = 60


def _free_port():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture(scope="module")
def lab_url(tmp_path_factory):
    """The address of a JupyterLab server on a copy of Chapter 1."""
    tmp = tmp_path_factory.mktemp("lab")
    (tmp / "notebooks").mkdir()
    shutil.copy(ROOT / "chapters" / NOTEBOOK, tmp / "notebooks" / NOTEBOOK)
    for extension, name, setting in (
        ("notebook-extension", "tracker", {"windowingMode": "none"}),
        ("apputils-extension", "notification", {"fetchNews": "false"}),
    ):
        folder = tmp / "settings" / "@jupyterlab" / extension
        folder.mkdir(parents=True)
        (folder / f"{name}.jupyterlab-settings").write_text(json.dumps(setting))
    env = {
        **os.environ,
        "JUPYTERLAB_SETTINGS_DIR": str(tmp / "settings"),
        "JUPYTERLAB_WORKSPACES_DIR": str(tmp / "workspaces"),
        "JUPYTER_CONFIG_DIR": str(tmp / "config"),
        "JUPYTER_RUNTIME_DIR": str(tmp / "runtime"),
    }
    port = _free_port()
    server = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "jupyterlab",
            "--no-browser",
            "--allow-root",  # CI containers run as root
            "--LabApp.extension_manager=readonly",
            f"--port={port}",
            "--ServerApp.ip=127.0.0.1",
            "--IdentityProvider.token=",
            "--ServerApp.password=",
            f"--ServerApp.root_dir={tmp / 'notebooks'}",
            "--LabApp.news_url=",
            "--LabServerApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
        ],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + START_TIMEOUT_S
    while True:
        try:
            urllib.request.urlopen(f"{url}/api/status", timeout=2)
            break
        except OSError:
            if time.monotonic() > deadline or server.poll() is not None:
                server.kill()
                pytest.fail(f"JupyterLab did not start on {url}")
            time.sleep(0.5)
    yield url
    server.terminate()
    try:
        server.wait(timeout=20)
    except subprocess.TimeoutExpired:
        server.kill()


async def _look(context, url):
    """What the learner sees of Chapter 1 in JupyterLab."""
    page = await context.new_page()
    try:
        await page.goto(f"{url}/lab/tree/{NOTEBOOK}", wait_until="domcontentloaded")
        await page.wait_for_selector(".jp-Notebook .jp-MarkdownCell", timeout=60_000)
        await page.wait_for_function(
            "document.querySelectorAll('.jp-Notebook .katex').length > 10",
            timeout=60_000,
        )
        await page.wait_for_function(  # the exercises, near the end, rendered too
            "document.querySelector('.jp-Notebook').innerText"
            ".includes('Longer vectors, sharper attention')",
            timeout=60_000,
        )
        seen = await page.evaluate(
            """() => {
              const md = [...document.querySelectorAll('.jp-MarkdownCell')];
              const text = md.map(c => c.innerText).join('\\n');
              const cells = [...document.querySelectorAll('.jp-Notebook .jp-Cell')];
              return {
                text,
                math: document.querySelectorAll('.jp-Notebook .katex').length,
                collapsed: cells.filter(c => c.querySelector(
                  '.jp-Cell-inputWrapper .jp-Placeholder')).length,
                visibleCode: cells.filter(c => c.classList.contains('jp-CodeCell')
                  && !c.querySelector('.jp-Placeholder'))
                  .map(c => c.querySelector('.jp-InputArea-editor')?.innerText || ''),
              };
            }"""
        )
        if os.environ.get("SCREENSHOTS") == "1":
            SCREENSHOTS.mkdir(parents=True, exist_ok=True)
            await page.evaluate(
                """() => [...document.querySelectorAll('.jp-MarkdownCell')]
                  .find(c => c.innerText.includes('The context vector of'))
                  .scrollIntoView({block: 'start'})"""
            )
            await page.wait_for_timeout(500)
            await page.screenshot(path=str(SCREENSHOTS / "lab-chapter-1.png"))
        return seen
    finally:
        await page.close()


@pytest.fixture(scope="module")
def seen(browser, lab_url):
    return browser.run(_look(browser.context, lab_url))


def test_exercises_and_admonitions_show_their_titles(seen):
    text = seen["text"]
    assert "{exercise}" not in text and "{admonition}" not in text, text[:2000]
    assert "{term}" not in text, "a glossary link is shown as raw text"
    assert "{cite" not in text, "a citation is shown as raw text"
    assert ":label:" not in text and ":class:" not in text
    assert "The context vector of “sun!”" in text
    assert "Deep dive: the limits of float32: overflow and underflow" in text


def test_math_is_typeset(seen):
    assert seen["math"] > 10
    assert "$T = 3$" not in seen["text"]


def test_solutions_are_collapsed(seen):
    assert seen["collapsed"] >= 4  # at least one collapsed cell per exercise
    visible = "\n".join(seen["visibleCode"])
    assert not re.search(r"\bour_", visible), "a solution's code is open in JupyterLab"
