"""The documentation site: built with ``mkdocs build --strict`` (broken links and anchors
fail it), served over HTTP on 127.0.0.1 and opened in headless chromium as a reader would."""

from __future__ import annotations

import html
import os
import re
import subprocess
import sys
import threading
import urllib.request
from collections.abc import Iterator
from functools import partial
from html.parser import HTMLParser
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from tests.browser import run_headless

ROOT = Path(__file__).resolve().parents[2]


class _Quiet(SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The site built from this checkout, served at the returned base URL."""
    out = tmp_path_factory.mktemp("site")
    built = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(out)],
        cwd=ROOT,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert built.returncode == 0, built.stderr[-4000:]
    server = ThreadingHTTPServer(("127.0.0.1", 0), partial(_Quiet, directory=str(out)))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)


class _Headings(HTMLParser):
    """The text of the h1/h2 headings of a page's article, and its image sources."""

    def __init__(self) -> None:
        super().__init__()
        self.headings: list[tuple[str, str]] = []
        self.images: list[str] = []
        self._open: str | None = None
        self._text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in ("h1", "h2"):
            self._open, self._text = tag, []
        elif tag == "img":
            self.images += [v for k, v in attrs if k == "src" and v]

    def handle_endtag(self, tag: str) -> None:
        if tag == self._open:
            text = " ".join("".join(self._text).split()).rstrip("¶").strip()
            self.headings.append((tag, text))
            self._open = None

    def handle_data(self, data: str) -> None:
        if self._open:
            self._text.append(data)


def _dom(url: str, profile: Path) -> str:
    result = run_headless(url, profile, "--dump-dom", "--virtual-time-budget=3000")
    assert "</html>" in result.stdout, result.stderr[-2000:]
    return result.stdout


def test_getting_started_renders_with_its_headings_and_a_screenshot(
    site: str, tmp_path: Path
) -> None:
    url = f"{site}/getting-started/"
    shot = tmp_path / "getting-started.png"
    # One browser run: the DOM after the page's scripts ran, and a screenshot.
    result = run_headless(
        url,
        tmp_path / "profile",
        "--dump-dom",
        f"--screenshot={shot}",
        "--window-size=1280,1600",
        "--hide-scrollbars",
        "--virtual-time-budget=3000",
    )
    dom = result.stdout
    assert "</html>" in dom, result.stderr[-2000:]
    parser = _Headings()
    parser.feed(dom)
    article = [text for tag, text in parser.headings if tag in ("h1", "h2")]
    assert article[:1] == ["Getting started"] or "Getting started" in article
    for heading in (
        "Requirements",
        "The two commands",
        "Install in your own project",
        "A first agent",
        "A first Flink job",
    ):
        assert heading in article, (heading, article)
    # The theme's scripts ran in the browser: the page is served as `no-js`, and its
    # script marks the document `js`.
    opening = re.search(r"<html[^>]*>", dom)
    assert opening is not None and re.search(r'class="[^"]*\bjs\b', opening.group(0)), opening
    assert "make demo" in html.unescape(dom) and "make test" in html.unescape(dom)
    # The navigation holds every part of the manual.
    for label in ("User guide", "Reference", "Architecture", "Benchmarks", "Troubleshooting"):
        assert label in dom, label

    assert shot.exists(), result.stderr[-2000:]
    from PIL import Image

    with Image.open(shot) as image:
        assert image.size == (1280, 1600)
        colors = image.convert("RGB").getcolors(maxcolors=1_000_000)
    # A rendered page (text, the header bar, code blocks), not a blank or error page.
    assert colors is not None and len(colors) > 50


def test_the_benchmark_page_shows_its_figures(site: str, tmp_path: Path) -> None:
    dom = _dom(f"{site}/benchmarks/", tmp_path / "profile")
    parser = _Headings()
    parser.feed(dom)
    figures = [src for src in parser.images if src.endswith(".png")]
    assert len(figures) >= 3, parser.images
    for src in figures:
        with urllib.request.urlopen(f"{site}/benchmarks/{src}", timeout=30) as response:
            assert response.headers["Content-Type"] == "image/png"
            assert response.read(8) == b"\x89PNG\r\n\x1a\n"


def test_every_page_of_the_nav_is_served(site: str) -> None:
    with urllib.request.urlopen(f"{site}/", timeout=30) as response:
        home = response.read().decode()
    links = set(re.findall(r'href="(\.\./|\./)?([a-z][a-z0-9/_-]*/)"', home))
    assert len(links) >= 20, links  # the nav: getting started, the guide, the reference...
    for _, path in sorted(links):
        with urllib.request.urlopen(f"{site}/{path}", timeout=30) as response:
            assert response.status == 200, path


def test_pages_load_nothing_from_other_hosts(site: str) -> None:
    """No web fonts, scripts or styles from the internet: the site works offline."""
    for path in ("", "getting-started/", "reference/options/"):
        with urllib.request.urlopen(f"{site}/{path}", timeout=30) as response:
            page = response.read().decode()
        loads = re.findall(r"<(?:link|script|img)\b[^>]*\b(?:href|src)=\"(https?://[^\"]+)", page)
        assert loads == [], (path, loads)
