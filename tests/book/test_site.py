"""The book as a website, checked in a real browser (Debian's Chromium, headless).

Every page of the built site: HTTP 200, no console error, no request to another host, math
rendered by KaTeX, every internal link and anchor resolves, every image loads. Then search,
previous/next navigation, the nav's completeness, the solution policy, and screenshots.
"""

from __future__ import annotations

import html
import re
import subprocess
import sys
import urllib.error
import urllib.request
from functools import lru_cache
from pathlib import Path
from urllib.parse import unquote, urldefrag, urlsplit

import pytest
from playwright.sync_api import TimeoutError as PlaywrightTimeout

from conftest import ROOT, SCREENSHOTS, SITE, nav_chapters, page_path, site_pages

# Search must find this chapter from this term. When lab 04's chapter lands, this line becomes
# ("is_use_oldest", "lab04_<name>/").
SEARCH_TERM, SEARCH_PAGE = ("is_use_oldest", "lab04_ngram_pool/")
# The lab chapter that gets a full-page screenshot next to the landing page's.
SCREENSHOT_CHAPTER = "lab01_prompt_lookup/"

PAGES = site_pages()


def markdown_has_math(path: str) -> bool:
    """Whether the chapter behind a page path writes math ($...$ or $$...$$) outside code."""
    candidates = [ROOT / "book" / "index.md"] if path == "" else [
        ROOT / "book" / (path.rstrip("/") + ".md"), ROOT / "book" / path / "index.md"]
    source = next((c for c in candidates if c.is_file()), None)
    if source is None:
        return False  # a generated page (a repository file): no math of its own
    text = re.sub(r"^(```|~~~).*?^\1", "", source.read_text(), flags=re.S | re.M)
    text = re.sub(r"`[^`\n]*`", "", text)
    return bool(re.search(r"\$\$|\$[^\s$][^$\n]*?\$", text))


def figures_included(path: str) -> list[str]:
    """The generated figures (figures/NAME.md) the chapter behind a page path includes."""
    source = ROOT / "book" / ("index.md" if path == "" else path.rstrip("/") + ".md")
    if not source.is_file():
        return []
    return re.findall(r'^--8<-- "figures/([\w-]+)\.md"', source.read_text(), flags=re.M)


@lru_cache(maxsize=None)
def fetch(url: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url) as r:
            body = r.read()
            text = body.decode("utf-8", "replace") if "html" in r.headers.get("Content-Type", "") else ""
            return r.status, text
    except urllib.error.HTTPError as e:
        return e.code, ""


def test_the_site_has_the_pages_of_the_nav():
    missing = [c for c in nav_chapters() if page_path(c) not in PAGES]
    assert not missing, f"chapters in mkdocs.yml's nav without a built page: {missing}"


def test_every_chapter_is_in_the_nav():
    in_nav = set(nav_chapters())
    chapters = sorted(p.relative_to(ROOT / "book").as_posix()
                      for p in (ROOT / "book").rglob("*.md"))
    missing = [c for c in chapters if c not in in_nav]
    assert not missing, ("chapters missing from mkdocs.yml's nav (add one line each, e.g. "
                         f"'      - Lab 02 — Title: lab02_name.md' under Labs): {missing}")


# A section marker in a lab's source: // --8<-- [start:name] ... // --8<-- [end:name].
SECTION_MARKER = re.compile(r"^\s*//\s*-+8<-+\s*\[(start|end):([^\]\s]+)\]\s*$")


def test_every_lab_chapter_shows_its_contracts_and_starting_points():
    """The preface promises that each lab chapter shows the contract you implement (from the lab's
    header) and where you start (from starter.cpp). So each lab's header and starter mark
    sections, every marked section is included by the lab's chapter, and the built page shows
    the starter's TODOs. (A snippet that names a missing section already fails the build.)"""
    problems = []
    labs = sorted(p for p in (ROOT / "labs").glob("lab[0-9][0-9]_*") if p.is_dir())
    assert labs, "no labs/labNN_* folders found"
    for lab in labs:
        chapter = ROOT / "book" / f"{lab.name}.md"
        if not chapter.is_file():
            problems.append(f"{lab.name}: no chapter book/{chapter.name}")
            continue
        text = chapter.read_text(encoding="utf-8")
        for source in sorted(lab.glob("*.h")) + [lab / "starter.cpp"]:
            rel = source.relative_to(ROOT).as_posix()
            open_names, names = [], []
            for line in source.read_text(encoding="utf-8").splitlines():
                m = SECTION_MARKER.match(line)
                if not m:
                    continue
                if m.group(1) == "start":
                    open_names.append(m.group(2))
                    names.append(m.group(2))
                elif m.group(2) in open_names:
                    open_names.remove(m.group(2))
                else:
                    problems.append(f"{rel}: [end:{m.group(2)}] without its start")
            problems += [f"{rel}: [start:{n}] without its end" for n in open_names]
            if not names:
                problems.append(f"{rel} marks no section for book/{chapter.name} to show")
            problems += [f"book/{chapter.name} does not include {rel}:{n} "
                         f"(add --8<-- \"{rel}:{n}\" where the chapter introduces it)"
                         for n in names if f'--8<-- "{rel}:{n}"' not in text]
        page = SITE / lab.name / "index.html"
        todo = f"TODO({lab.name[:5]})"
        if page.is_file() and todo not in html.unescape(re.sub(r"<[^>]+>", "", page.read_text())):
            problems.append(f"/{lab.name}/ shows no {todo} from the starter")
    assert not problems, "\n  ".join(["lab chapters without their excerpts:"] + problems)


def test_every_lab_test_suite_is_a_section_of_its_chapter():
    """Test suites follow the chapter (STYLE.md): tests/labNN/*.cpp names each TEST_SUITE
    "labNN / <a heading of book/labNN_*.md>", so a failing case points at the section to read and
    the grader's report groups cases the way the chapter does."""
    problems = []
    for lab in sorted(p for p in (ROOT / "labs").glob("lab[0-9][0-9]_*") if p.is_dir()):
        prefix = lab.name[:5] + " / "
        chapter = ROOT / "book" / f"{lab.name}.md"
        headings = set(re.findall(r"^#{2,3} (.+?)\s*$", chapter.read_text(encoding="utf-8"),
                                  re.MULTILINE)) if chapter.is_file() else set()
        for source in sorted((ROOT / "tests" / lab.name[:5]).glob("*.cpp")):
            rel = source.relative_to(ROOT).as_posix()
            for suite in re.findall(r'TEST_SUITE\("([^"]*)"\)', source.read_text(encoding="utf-8")):
                if not suite.startswith(prefix):
                    problems.append(f"{rel}: suite '{suite}' does not start with '{prefix}'")
                elif suite[len(prefix):] not in headings:
                    problems.append(f"{rel}: suite '{suite}' is not a heading of book/{chapter.name}")
    assert not problems, "\n  ".join(["test suites that do not follow their chapter:"] + problems)


@pytest.mark.parametrize("path", PAGES, ids=lambda p: p or "index")
def test_page(open_page, base_url, path):
    visit = open_page(path)
    page = visit.page
    problems = []  # every check runs, and the failure lists all that went wrong on the page

    def check(ok, what, detail=None):
        if not ok:
            problems.append(what if detail is None else f"{what}: {detail}")

    check(visit.status == 200, "HTTP status", visit.status)
    check(not visit.console_errors, "console errors", visit.console_errors)
    check(not visit.offsite, "requests to hosts other than this machine", visit.offsite)
    check(not visit.failed, "requests that failed", visit.failed)

    # Math: every arithmatex span/div holds KaTeX output, nothing is left raw, in the article or
    # around it (the navigation and the table of contents show the headings too).
    math = page.evaluate("""() => {
        const boxes = [...document.querySelectorAll('.arithmatex')];
        const c = document.body.cloneNode(true);  // the page's text: code and rendered math removed
        c.querySelectorAll('pre, code, .katex, script, style').forEach(e => e.remove());
        return {boxes: boxes.length,
                rendered: boxes.filter(b => b.querySelector('.katex')).length,
                text: c.textContent};
    }""")
    check(math["rendered"] == math["boxes"], "math left unrendered",
          f"{math['boxes'] - math['rendered']} of {math['boxes']}")
    raw = [t for t in ("$$", "\\(", "\\[") if t in math["text"]]
    raw += re.findall(r"\$[^\s$][^$\n]*?\$", math["text"])
    check(not raw, "raw math left in the page text", raw)
    if markdown_has_math(path):
        check(math["boxes"] > 0, "the chapter writes math but the page has none")

    # Code excerpts: each one shows code, and no include line was left as text (a snippet line
    # that pymdownx.snippets did not expand, e.g. an escaped one, shows up literally).
    code = page.evaluate("""() => {
        const blocks = [...document.querySelectorAll('article pre')];
        const a = document.querySelector('article');
        return {empty: blocks.filter(b => b.textContent.trim() === '').length,
                blocks: blocks.length,
                text: a ? a.textContent : ''};
    }""")
    check(code["empty"] == 0, "empty code blocks (an excerpt whose section is empty?)",
          f"{code['empty']} of {code['blocks']}")
    check(not re.search(r'-+8<-+\s*"', code["text"]), "an include line shown as text",
          re.findall(r'.{0,20}-+8<-+\s*"[^"\n]*"?', code["text"]))

    # Figures: every generated figure the chapter includes is on the page.
    srcs = page.evaluate("() => [...document.images].map(i => i.src)")
    for figure in figures_included(path):
        check(any(f"/figures/{figure}." in s for s in srcs), "a figure the chapter includes is "
              "missing from the page", f"figures/{figure}.md (is the generated file empty?)")

    # Images (figures included) load and have a size.
    broken = page.evaluate("""() => [...document.images]
        .filter(i => !i.complete || i.naturalWidth === 0).map(i => i.src)""")
    check(not broken, "images that did not load", broken)

    # Every internal link resolves, anchors included.
    hrefs = page.evaluate("() => [...document.querySelectorAll('a[href]')].map(a => a.href)")
    bad = []
    for href in sorted(set(hrefs)):
        url = urlsplit(href)
        if url.scheme not in ("http", "https") or url.netloc != urlsplit(base_url).netloc:
            continue
        target, fragment = urldefrag(href)
        status, body = fetch(target)
        if status != 200:
            bad.append(f"{href} -> HTTP {status}")
        elif fragment and body and f'id="{html.escape(unquote(fragment))}"' not in body:
            bad.append(f"{href} -> no element with id '{unquote(fragment)}'")
    check(not bad, "broken internal links", bad)
    assert not problems, f"/{path}:\n  " + "\n  ".join(problems)


def test_search_lists_the_chapter(open_page):
    visit = open_page("")
    page = visit.page
    page.locator("label.md-search__icon, .md-search__input").first.click()
    page.locator("input.md-search__input").press_sequentially(SEARCH_TERM, delay=20)
    results = page.locator("a.md-search-result__link")
    try:  # each keystroke searches: wait for the whole term's result, not the first one shown
        page.locator(f'a.md-search-result__link[href*="{SEARCH_PAGE}"]').first.wait_for(
            timeout=15000)
    except PlaywrightTimeout:
        pass  # the assertion below lists what was found
    hrefs = results.evaluate_all("els => els.map(e => e.href)")
    assert any(SEARCH_PAGE in h for h in hrefs), (
        f"searching {SEARCH_TERM!r} did not list {SEARCH_PAGE}: {hrefs}")
    assert visit.console_errors == [] and visit.offsite == []


# The search previews' text with typeset math taken out, and how much typeset math each holds.
PREVIEWS_JS = """() => [...document.querySelectorAll('.md-search-result__article')].map(a => {
    const c = a.cloneNode(true);
    c.querySelectorAll('.katex').forEach(e => e.remove());
    return {text: c.textContent, math: a.querySelectorAll('.katex').length};
})"""


def test_search_previews_render_their_math(open_page):
    """The search index stores each section's text with its math delimiters; the previews in the
    result list must show typeset math, not \\(\\alpha\\)."""
    visit = open_page("")
    page = visit.page
    page.locator("label.md-search__icon, .md-search__input").first.click()
    page.locator("input.md-search__input").press_sequentially("acceptance rate", delay=20)
    # Each keystroke searches and the previews are typeset as they are added: wait until the
    # list holds typeset math and no raw math, not for a fixed time.
    typeset = f"""() => {{ const p = ({PREVIEWS_JS})();
        return p.some(x => x.math > 0) && p.every(x => !x.text.includes('\\\\(') &&
                                                     !x.text.includes('\\\\[')); }}"""
    try:
        page.wait_for_function(typeset, timeout=15000)
    except PlaywrightTimeout:
        pass  # the assertions below say what is wrong
    previews = page.evaluate(PREVIEWS_JS)
    raw = [p["text"][:120] for p in previews if "\\(" in p["text"] or "\\[" in p["text"]]
    assert previews and not raw, f"search previews with raw math: {raw}"
    assert sum(p["math"] for p in previews) > 0, "no preview shows typeset math"
    assert visit.console_errors == [] and visit.offsite == []


def test_next_and_previous_follow_the_nav(open_page, base_url):
    order = [page_path(c) for c in nav_chapters()]
    visit = open_page(order[0])
    page = visit.page
    for expected in order[1:]:
        page.locator("a.md-footer__link--next").click()
        page.wait_for_load_state("load")
        assert page.url == base_url + expected
    assert page.locator("a.md-footer__link--next").count() == 0, "the last page has a next link"
    for expected in reversed(order[:-1]):
        page.locator("a.md-footer__link--prev").click()
        page.wait_for_load_state("load")
        assert page.url == base_url + expected
    assert page.locator("a.md-footer__link--prev").count() == 0, "the first page has a prev link"
    assert visit.console_errors == [] and visit.offsite == []


def solution_lines() -> dict[str, list[str]]:
    """Lines of each reference solution that appear in no other source file of the repository
    (labs, engine, tests, tools): the code a student is meant to write."""
    out = {}
    given = set()
    for folder in ("labs", "mini_engine", "tests", "tools", "bench"):
        for f in (ROOT / folder).rglob("*"):
            if f.suffix in (".h", ".cpp", ".cu", ".inc"):
                given |= {" ".join(line.split()) for line in f.read_text().splitlines()}
    given_text = list(given)
    for solution in sorted((ROOT / "solutions").glob("*/solution.cpp")):
        lines = []
        for line in solution.read_text().splitlines():
            norm = " ".join(line.split())
            # A fragment of a line found elsewhere (e.g. "throw std::invalid_argument(") is not
            # distinctive either.
            if (len(norm) >= 24 and not norm.startswith("//") and norm not in given
                    and not any(norm in g for g in given_text)):
                lines.append(norm)
        out[solution.parent.name] = lines
    return out


def test_no_solution_code_in_the_book():
    texts = []
    for f in SITE.rglob("*"):
        if f.suffix in (".html", ".json"):
            text = re.sub(r"<[^>]+>", "", f.read_text(encoding="utf-8", errors="replace"))
            texts.append(" ".join(html.unescape(text).split()))
    site_text = "\n".join(texts)
    checked = 0
    for lab, lines in solution_lines().items():
        assert lines, f"no distinctive lines found in solutions/{lab}/solution.cpp"
        leaked = [line for line in lines if line in site_text]
        assert leaked == [], f"solutions/{lab}/solution.cpp appears in the site"
        checked += len(lines)
    assert checked > 0


def test_the_build_refuses_to_include_a_solution():
    sys.path.insert(0, str(ROOT / "tools" / "book_site"))
    import hooks
    from mkdocs.exceptions import PluginError
    with pytest.raises(PluginError, match="never shows reference solutions"):
        hooks._check_policy('--8<-- "solutions/lab01_prompt_lookup/solution.cpp"\n', "x.md")
    with pytest.raises(PluginError, match="never shows reference solutions"):
        hooks._check_policy("[the answer](../solutions/lab01_prompt_lookup/solution.cpp)\n",
                            "x.md")
    hooks._check_policy('--8<-- "labs/lab01_prompt_lookup/starter.cpp"\n', "x.md")


@pytest.mark.parametrize("args, code, message", [
    (["--help"], 0, "tools/book build [--build-dir DIR]"),
    (["build", "--build-dir"], 2, "book: --build-dir needs a value"),
    (["build", "--build-dir", ""], 2, "book: --build-dir needs a value"),
    (["serve", "--port", "80x"], 2, "book: --port must be a number from 1 to 65535, got '80x'"),
    (["serve", "--port", "0"], 2, "book: --port must be a number from 1 to 65535, got '0'"),
    (["publish"], 2, "book: unknown command 'publish'"),
])
def test_tools_book_refuses_bad_arguments_before_building(args, code, message):
    # '--build-dir' with no value died on "$2: unbound variable", and '--help' was an unknown
    # command.
    p = subprocess.run([str(ROOT / "tools" / "book"), *args], capture_output=True, text=True,
                       timeout=60)
    assert p.returncode == code, p.stderr
    assert message in p.stdout + p.stderr
    assert "unbound variable" not in p.stderr


@pytest.mark.parametrize("name, path", [("landing", ""), ("chapter", SCREENSHOT_CHAPTER)])
def test_screenshot(open_page, name, path):
    visit = open_page(path)
    page = visit.page
    page.evaluate("document.fonts.ready")
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    out = SCREENSHOTS / f"{name}.png"
    page.screenshot(path=str(out), full_page=True)
    assert out.stat().st_size > 10_000
    print(f"screenshot: {out}")
