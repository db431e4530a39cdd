"""MkDocs hooks of fcl's documentation (`mkdocs.yml`: `hooks`).

- The site's home page is the repository's README.md, its links turned into site links.
- The committed figures (`figures/*.png`, `figures/drift/*.png`) and the stored results' READMEs become part of the site,
  so a page shows a figure where it discusses it and links resolve under `mkdocs build --strict`.
- The configuration reference between the GENERATED markers of `docs/configuration.md` is made
  from the config fields (`fcl.config.key_rows`, the source of `fcl run --help` too);
  `python docs/hooks.py` rewrites the committed copy, and a test checks it is current.
"""
from __future__ import annotations

import html
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BEGIN = "<!-- GENERATED: python docs/hooks.py writes this reference from fcl/config.py -->"
END = "<!-- END GENERATED -->"
# files outside docs/ that the site carries: source path -> site path
EXTRA_PAGES = {"README.md": "index.md", "results/README.md": "stored-results.md",
               "results-pretrained/README.md": "stored-results-pretrained.md",
               "results/drift_correction/README.md": "stored-results-drift-correction.md",
               "results-drift/README.md": "stored-results-drift.md",
               "results-lowrank/README.md": "stored-results-lowrank.md",
               "results-auto/README.md": "stored-results-auto.md",
               "fcl/weights/README.md": "pretrained-weights.md"}


def config_reference() -> str:
    """One Markdown table per config section: key, default, allowed values, meaning."""
    sys.path.insert(0, str(ROOT))
    from fcl.config import key_rows

    sections: dict[str, list[str]] = {}
    for key, default, allowed, help in key_rows():
        section = key.split(".")[0] if "." in key else ""
        cell = lambda text: html.escape(str(text), quote=False).replace("|", "\\|")
        sections.setdefault(section, []).append(
            f"| `{key}` | `{default!r}` | {cell(allowed)} | {cell(help)} |")
    out = []
    for section, rows in sections.items():
        out += [f"### `{section}`" if section else "### Top level", "",
                "| key | default | allowed | meaning |", "|---|---|---|---|", *rows, ""]
    return "\n".join(out).rstrip() + "\n"


def with_reference(markdown: str) -> str:
    """`markdown` with the text between the GENERATED markers replaced by `config_reference()`."""
    head, sep, rest = markdown.partition(BEGIN)
    if not sep:
        return markdown
    _, sep, tail = rest.partition(END)
    if not sep:
        raise ValueError(f"docs/configuration.md: {BEGIN!r} without {END!r}")
    return f"{head}{BEGIN}\n\n{config_reference()}\n{END}{tail}"


def site_links(markdown: str, src: str) -> str:
    """Links of a page that lives outside docs/ (README.md, results/README.md) or that points
    outside docs/ (`../figures/x.png`, `../results/README.md`), rewritten to the site's paths."""
    base = Path(src).parent
    def fix(match: re.Match) -> str:
        target = match.group(2)
        if re.match(r"[a-z]+://|#|mailto:", target):
            return match.group(0)
        path, _, anchor = target.partition("#")
        resolved = Path(*_normalise((base / path).parts))
        text = str(resolved)
        if text.startswith("docs/"):
            text = text[len("docs/"):]
        else:
            text = EXTRA_PAGES.get(text, text)
        return f"{match.group(1)}({text}{'#' + anchor if anchor else ''})"
    return re.sub(r"(!?\[[^\]]*\])\(([^)\s]+)\)", fix, markdown)


def _normalise(parts: tuple[str, ...]) -> list[str]:
    out: list[str] = []
    for part in parts:
        if part == "..":
            out.pop()
        elif part not in ("", "."):
            out.append(part)
    return out


# --- MkDocs events -------------------------------------------------------------------------

def on_files(files, config):
    from mkdocs.structure.files import File

    for src, dest in EXTRA_PAGES.items():
        files.append(File.generated(config, dest, abs_src_path=str(ROOT / src)))
    for png in sorted((ROOT / "figures").glob("**/*.png")):       # figures/drift/ too
        name = png.relative_to(ROOT / "figures").as_posix()
        files.append(File.generated(config, f"figures/{name}", abs_src_path=str(png)))
    return files


def on_page_markdown(markdown, page, config, files):
    src = next((s for s, d in EXTRA_PAGES.items() if d == page.file.src_uri),
               f"docs/{page.file.src_uri}")
    markdown = site_links(markdown, src)
    if page.file.src_uri == "configuration.md":
        markdown = with_reference(markdown)
    return markdown


if __name__ == "__main__":
    page = ROOT / "docs" / "configuration.md"
    page.write_text(with_reference(page.read_text()))
    print(f"wrote the configuration reference into {page.relative_to(ROOT)}")
