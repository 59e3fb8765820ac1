"""Fixtures for the book's browser tests: the built site served on 127.0.0.1, and Debian's
Chromium driven by Playwright (never a downloaded browser).

Environment: SPECLAB_BOOK_SITE (the built site; tools/book build makes it),
SPECLAB_BOOK_SCREENSHOTS (where screenshots go), SPECLAB_CHROMIUM (default: chromium on PATH).
"""

from __future__ import annotations

import functools
import http.server
import os
import shutil
import threading
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

import pytest
import yaml
from playwright.sync_api import sync_playwright

ROOT = Path(__file__).resolve().parents[2]
SITE = Path(os.environ.get("SPECLAB_BOOK_SITE", ROOT / "build/book/site"))
SCREENSHOTS = Path(os.environ.get("SPECLAB_BOOK_SCREENSHOTS", SITE.parent / "screenshots"))
LOCAL_HOSTS = {"127.0.0.1", "localhost", "[::1]", "::1"}


def site_pages() -> list[str]:
    """URL paths of every HTML page in the built site ("" is the landing page)."""
    if not (SITE / "index.html").is_file():
        raise pytest.UsageError(f"no built site in {SITE}: run tools/book build first")
    pages = []
    for index in sorted(SITE.rglob("index.html")):
        rel = index.parent.relative_to(SITE).as_posix()
        pages.append("" if rel == "." else rel + "/")
    return pages


def nav_chapters() -> list[str]:
    """The Markdown files of mkdocs.yml's nav, in reading order."""
    class Loader(yaml.SafeLoader):
        pass
    Loader.add_constructor("!ENV", lambda loader, node: None)
    config = yaml.load((ROOT / "mkdocs.yml").read_text(), Loader=Loader)

    def walk(items):
        for item in items:
            value = next(iter(item.values())) if isinstance(item, dict) else item
            if isinstance(value, list):
                yield from walk(value)
            else:
                yield value
    return list(walk(config["nav"]))


def page_path(chapter: str) -> str:
    """URL path of a chapter's page ("lab01.md" -> "lab01/", "index.md" -> "")."""
    stem = chapter[: -len(".md")]
    if stem == "index":
        return ""
    return (stem[: -len("/index")] if stem.endswith("/index") else stem) + "/"


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    """Serves the site as a static host would: a folder without an index.html is a 404, not a
    listing of its files (which would make a link to it look fine)."""

    def log_message(self, *args):
        pass

    def list_directory(self, path):
        self.send_error(404, "no index.html in this folder")
        return None


@pytest.fixture(scope="session")
def base_url() -> str:
    handler = functools.partial(_QuietHandler, directory=str(SITE))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/"
    server.shutdown()
    thread.join()


@pytest.fixture(scope="session")
def browser():
    chromium = os.environ.get("SPECLAB_CHROMIUM") or shutil.which("chromium")
    if not chromium:
        pytest.fail("Debian's chromium is not installed: run tools/setup", pytrace=False)
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=chromium, headless=True)
        yield b
        b.close()


@dataclass
class Visit:
    """A page opened in a fresh browser context, with everything it did on the way."""
    page: object
    status: int
    console_errors: list[str] = field(default_factory=list)
    offsite: list[str] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)


@pytest.fixture
def open_page(browser, base_url):
    contexts = []

    def _open(path: str, width: int = 1280, height: int = 900) -> Visit:
        context = browser.new_context(viewport={"width": width, "height": height},
                                      service_workers="block")
        contexts.append(context)
        visit = Visit(page=None, status=0)

        def route(r):
            url = urlsplit(r.request.url)
            if url.scheme in ("http", "https", "ws", "wss") and url.hostname not in LOCAL_HOSTS:
                visit.offsite.append(r.request.url)
                r.abort()  # never let a request leave the machine, even in a failing test
            else:
                r.continue_()

        context.route("**/*", route)
        page = context.new_page()
        page.on("console", lambda m: m.type == "error" and visit.console_errors.append(m.text))
        page.on("pageerror", lambda e: visit.console_errors.append(f"uncaught: {e}"))
        page.on("requestfailed", lambda r: visit.failed.append(f"{r.url} ({r.failure})"))
        page.on("response", lambda r: r.status >= 400 and visit.failed.append(
            f"{r.url} (HTTP {r.status})"))
        response = page.goto(base_url + path, wait_until="load")
        page.wait_for_load_state("networkidle")
        visit.page = page
        visit.status = response.status if response else 0
        return visit

    yield _open
    for c in contexts:
        c.close()
