"""Generated blocks in a book chapter: text between `<!-- PREFIX:NAME -->` and
`<!-- /PREFIX:NAME -->` comes from data files, never typed in. Used by tools/study_lab07 and
tools/cost_tables, whose `check` ctest runs (label `book`)."""
import difflib
import re
import sys


def filled(chapter, prefix, renderers):
    """The chapter's text with every block PREFIX:NAME replaced by renderers[NAME]().
    Exits with a message when a block is missing."""
    text = chapter.read_text(encoding="utf-8")
    for name, render in renderers.items():
        pattern = re.compile(
            rf"(<!-- {prefix}:{name} -->\n)(?:.*?\n)?(<!-- /{prefix}:{name} -->)", re.S)
        if not pattern.search(text):
            sys.exit(f"{chapter}: no '<!-- {prefix}:{name} -->' ... '<!-- /{prefix}:{name} -->' "
                     "block")
        generated = render()
        text = pattern.sub(lambda m: m.group(1) + generated + "\n" + m.group(2), text)
    return text


def check(chapter, want, source, fix):
    """0 when the chapter equals `want`; else prints a diff and `fix` (what to run), returns 1."""
    have = chapter.read_text(encoding="utf-8")
    if want == have:
        print(f"{chapter.name}: the generated blocks match {source}")
        return 0
    sys.stdout.writelines(difflib.unified_diff(
        have.splitlines(True), want.splitlines(True), "chapter", f"from {source}"))
    print(f"\nThe chapter's generated blocks differ from {source}: run {fix}. Never edit them "
          "by hand.")
    return 1


def table(header, rows, align="---:"):
    """A Markdown table. `align`: one alignment row cell for every column, or a list of them."""
    aligns = [align] * len(header) if isinstance(align, str) else list(align)
    out = ["| " + " | ".join(header) + " |", "|" + "|".join(aligns) + "|"]
    out += ["| " + " | ".join(str(c) for c in r) + " |" for r in rows]
    return "\n".join(out)
