"""MkDocs hooks for the SpecLab book (mkdocs.yml lists this file under `hooks:`).

They do four jobs, all at build time, so the site needs nothing from the network:
- copy KaTeX (Debian package libjs-katex, fonts included) into the site under assets/katex/;
- add the figures that tools/book_site/plots.py generated (SPECLAB_BOOK_GENERATED) under figures/;
- turn links from a chapter to a repository file (`../labs/.../prompt_lookup.h`) into links to a
  generated page that shows that file, so the same Markdown works on GitHub and in the site;
- enforce the solution policy: the book never includes or links anything under solutions/.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from mkdocs.exceptions import PluginError
from mkdocs.structure.files import File, Files, InclusionLevel

KATEX_DIR = Path(os.environ.get("SPECLAB_KATEX_DIR", "/usr/share/javascript/katex"))
SOURCE_PREFIX = "source"  # generated pages for repository files live under this folder
FORBIDDEN = "solutions/"  # the book never shows reference solutions (see book/preface.md)

# A Markdown link or image target: ](target) or ](target "title").
LINK_RE = re.compile(r"\]\(\s*<?([^)\s>]+)>?(\s+\"[^\"]*\")?\s*\)")
# A snippet include line: --8<-- "path" or --8<-- "path:section".
SNIPPET_RE = re.compile(r"""^\s*-{1,}8<-{1,}\s+["']([^"']+)["']""", re.MULTILINE)
# Section markers inside source files, hidden on the generated source pages.
MARKER_RE = re.compile(r"^\s*(//|#)\s*-{1,}8<-{1,}\s*\[(start|end):[^\]]*\]\s*$")
LANGUAGES = {".h": "cpp", ".hpp": "cpp", ".cpp": "cpp", ".cc": "cpp", ".py": "python",
             ".md": "markdown", ".txt": "text", ".cmake": "cmake", ".json": "json",
             ".yml": "yaml", ".yaml": "yaml", "": "bash"}


def _repo_root(config) -> Path:
    return Path(config["config_file_path"]).resolve().parent


def _docs_dir(config) -> Path:
    return Path(config["docs_dir"]).resolve()


def _generated_dir() -> Path | None:
    value = os.environ.get("SPECLAB_BOOK_GENERATED")
    return Path(value).resolve() if value else None


def _outside_fences(markdown: str):
    """Yields (start, end) spans of `markdown` that are not inside fenced code blocks."""
    pos, fence = 0, None
    start = 0
    for line in markdown.splitlines(keepends=True):
        stripped = line.lstrip()
        marker = stripped[:3]
        if fence is None and marker in ("```", "~~~"):
            fence = marker
            yield start, pos
        elif fence is not None and stripped.startswith(fence):
            fence = None
            start = pos + len(line)
        pos += len(line)
    if fence is None:
        yield start, pos


def _repo_target(page_src: Path, target: str, config) -> tuple[Path, str] | None:
    """For a link from `page_src` to a file of the repository outside the book, returns the file
    and its path relative to the repository root; None for any other link."""
    if re.match(r"^[a-z][a-z0-9+.-]*:", target) or target.startswith(("#", "/")):
        return None
    path_part = target.split("#", 1)[0]
    if not path_part:
        return None
    resolved = (page_src.parent / path_part).resolve()
    root, docs = _repo_root(config), _docs_dir(config)
    if resolved == docs or docs in resolved.parents or root not in resolved.parents:
        return None
    if resolved.is_dir() and (resolved / "README.md").is_file():
        resolved = resolved / "README.md"
    if not resolved.is_file():
        return None  # MkDocs reports the broken link itself (strict mode fails the build)
    return resolved, resolved.relative_to(root).as_posix()


def _check_policy(text: str, where: str) -> None:
    for m in SNIPPET_RE.finditer(text):
        if FORBIDDEN in m.group(1):
            raise PluginError(f"{where}: includes '{m.group(1)}'. The book never shows reference "
                              f"solutions; include the lab's header or starter instead.")
    for start, end in _outside_fences(text):
        for m in LINK_RE.finditer(text, start, end):
            if FORBIDDEN in m.group(1):
                raise PluginError(f"{where}: links to '{m.group(1)}'. The book never shows "
                                  f"reference solutions; link the lab's header or starter.")


def _source_page(rel: str, abs_path: Path) -> str:
    lines = abs_path.read_text(encoding="utf-8").splitlines()
    body = "\n".join(line for line in lines if not MARKER_RE.match(line))
    fence = "`" * max(3, 1 + max((len(r) for r in re.findall(r"`+", body)), default=0))
    language = LANGUAGES.get(abs_path.suffix, "text")
    return ("---\nsearch:\n  exclude: true\n---\n\n"  # search finds chapters, not listings
            f"# `{rel}`\n\n"
            f"The repository's `{rel}` as it was when this book was built. "
            f"Open it in your editor to change it.\n\n"
            f"{fence}{language}\n{body}\n{fence}\n")


def on_config(config):
    if not (KATEX_DIR / "katex.min.js").is_file() or not (KATEX_DIR / "fonts").is_dir():
        raise PluginError(f"KaTeX not found in {KATEX_DIR}: install the Debian package "
                          f"libjs-katex (tools/setup does), or set SPECLAB_KATEX_DIR.")
    generated = _generated_dir()
    if generated is None or not generated.is_dir():
        raise PluginError("SPECLAB_BOOK_GENERATED does not name the folder of generated figures: "
                          "build the book with tools/book build, not with mkdocs directly.")
    return config


def on_files(files: Files, config) -> Files:
    # KaTeX, fonts included (Debian's fonts/ is a symlink, which os.walk follows).
    for folder, _, names in os.walk(KATEX_DIR, followlinks=True):
        for name in sorted(names):
            if name.endswith(".mjs"):
                continue
            abs_path = Path(folder) / name
            rel = abs_path.relative_to(KATEX_DIR).as_posix()
            files.append(File.generated(config, f"assets/katex/{rel}",
                                        abs_src_path=str(abs_path.resolve())))
    # Figures made by plots.py.
    figures = _generated_dir() / "figures"
    if figures.is_dir():
        for svg in sorted(figures.glob("*.svg")):
            files.append(File.generated(config, f"figures/{svg.name}", abs_src_path=str(svg)))
    # Pages for the repository files that chapters link to.
    wanted: dict[str, Path] = {}
    for page_file in files.documentation_pages():
        if page_file.abs_src_path is None:
            continue
        page_src = Path(page_file.abs_src_path)
        text = page_src.read_text(encoding="utf-8")
        _check_policy(text, page_file.src_uri)
        for start, end in _outside_fences(text):
            for m in LINK_RE.finditer(text, start, end):
                hit = _repo_target(page_src, m.group(1), config)
                if hit:
                    wanted[hit[1]] = hit[0]
    for rel, abs_path in sorted(wanted.items()):
        files.append(File.generated(config, f"{SOURCE_PREFIX}/{rel}.md",
                                    content=_source_page(rel, abs_path),
                                    inclusion=InclusionLevel.NOT_IN_NAV))
    return files


def on_page_markdown(markdown: str, page, config, files) -> str:
    if page.file.abs_src_path is None:
        return markdown
    _check_policy(markdown, page.file.src_uri)
    page_src = Path(page.file.abs_src_path)
    docs = _docs_dir(config)

    def rewrite(m: re.Match) -> str:
        hit = _repo_target(page_src, m.group(1), config)
        if not hit:
            return m.group(0)
        generated = docs / SOURCE_PREFIX / f"{hit[1]}.md"
        link = os.path.relpath(generated, page_src.parent)
        return f"]({Path(link).as_posix()}{m.group(2) or ''})"

    out, last = [], 0
    for start, end in _outside_fences(markdown):
        out.append(markdown[last:start])
        out.append(LINK_RE.sub(rewrite, markdown[start:end]))
        last = end
    out.append(markdown[last:])
    return "".join(out)
