"""Markdown building blocks and one Markdown -> self-contained HTML renderer.

The report (and the bench) write Markdown; `html_page` renders the same text
with markdown-it-py (CommonMark + tables) into one HTML file whose figures are
embedded as base64 PNG, with no script, stylesheet link or network reference,
so it reads offline exactly as the Markdown says.
"""

from __future__ import annotations

import base64
import html
import re
from typing import Iterable, Sequence

STYLE = ("body{font-family:system-ui,sans-serif;max-width:1500px;margin:2em auto;padding:0 1em;color:#222}"
         "table{border-collapse:collapse;font-size:13px;display:block;max-width:100%;overflow-x:auto}"
         "td,th{border:1px solid #ccc;padding:3px 6px;"
         "text-align:right}th{background:#f3f3f3}blockquote{background:#fff3cd;border:1px solid #e0c36a;"
         "margin:1em 0;padding:.1em .8em}img{max-width:100%}code{background:#f5f5f5}")


def _cell(x: object) -> str:
    return str(x).replace("|", "\\|").replace("\n", " ")


def table(head: Sequence[str], rows: Iterable[Sequence[object]]) -> str:
    lines = ["| " + " | ".join(_cell(h) for h in head) + " |", "|" + "---|" * len(head)]
    lines += ["| " + " | ".join(_cell(c) for c in r) + " |" for r in rows]
    return "\n".join(lines)


def document(title: str, blocks: Iterable[str]) -> str:
    """A Markdown document: `# title`, then each non-empty block, a blank line between."""
    return "\n\n".join([f"# {title}", *(b for b in blocks if b)]) + "\n"


def banner(text: str) -> str:
    return f"> **{text}**"


def bullets(items: Iterable[object]) -> str:
    return "\n".join(f"- {i}" for i in items)


def figure(name: str, caption: str, folder: str = "figures") -> str:
    return f"![{caption}]({folder}/{name})\n\n*{caption}*"


def slug(heading: str) -> str:
    """A heading's anchor as GitHub makes it (markup dropped, lower case, punctuation out, spaces to
    hyphens), so that a `#anchor` link works in the Markdown on GitHub and in the HTML page alike."""
    text = re.sub(r"<[^>]+>|[`*_]", "", html.unescape(heading)).strip().lower()
    return re.sub(r"\s", "-", re.sub(r"[^\w\s-]", "", text))


def html_page(markdown: str, title: str, images: dict[str, bytes], folder: str = "figures") -> str:
    """The Markdown as one HTML page; every `folder/NAME` image in `images` becomes a data URI."""
    from markdown_it import MarkdownIt

    body = MarkdownIt("commonmark", {"html": False}).enable("table").render(markdown)
    body = re.sub(r"<(h[1-3])>(.*?)</\1>",
                  lambda m: f'<{m.group(1)} id="{slug(m.group(2))}">{m.group(2)}</{m.group(1)}>', body)
    for name, png in images.items():
        uri = "data:image/png;base64," + base64.b64encode(png).decode()
        body = body.replace(f'src="{folder}/{name}"', f'src="{uri}"')
    return (f"<!doctype html><html lang='en'><head><meta charset='utf-8'><title>{html.escape(title)}</title>"
            f"<style>{STYLE}</style></head><body>{body}</body></html>\n")
