"""Markdown and HTML from one list of blocks, so the two renderings of the report cannot drift apart.

Blocks: ("h1"|"h2"|"h3", text), ("p", text), ("ul", [text]), ("table", headers, rows),
("img", src, alt, caption), ("lead", text) / ("small", text) (a paragraph set larger / smaller), ("details", summary, [blocks]) (folded in HTML, a <details> element in
Markdown too), ("answer", [blocks]) (the first screen: a framed section in HTML, plain in Markdown).
Text may hold `code` and **bold**; everything else is escaped in HTML.
"""

import html
import re

CSS = """body{font-family:system-ui,-apple-system,'Segoe UI',sans-serif;max-width:1150px;margin:1.5em auto;
padding:0 1em;color:#222;line-height:1.4}
h1{font-size:1.6em;border-bottom:2px solid #444}h2{font-size:1.25em;border-bottom:1px solid #bbb;margin-top:1.6em}
h3{font-size:1.05em}table{border-collapse:collapse;font-size:0.85em;margin:0.6em 0}
th,td{border:1px solid #ccc;padding:2px 7px;text-align:right}th{background:#f0f0f0}
td:first-child,th:first-child{text-align:left}code{background:#f4f4f4;padding:0 3px;font-size:0.9em}
figure{margin:0.8em 0}figure img{max-width:100%;border:1px solid #ddd}
figcaption{font-size:0.8em;color:#444}li{margin:0.15em 0}
section.answer{border:2px solid #444;border-radius:6px;padding:0.2em 1em 0.6em;margin:0.6em 0 1.2em;background:#fafafa}
section.answer h2{margin-top:0.5em}section.answer p.lead{font-size:1.08em}section.answer table{font-size:0.8em}
section.answer td,section.answer th{text-align:left}p.small{font-size:0.8em;color:#444}
section.answer td:nth-child(4),section.answer td:nth-child(5){text-align:right;white-space:nowrap}
section.answer td:nth-child(6){white-space:nowrap}section.answer ul{margin:0.3em 0;padding-left:1.3em}
details{margin:0.5em 0}summary{cursor:pointer;color:#245;font-size:0.92em}"""

_INLINE = re.compile(r"(`[^`]+`|\*\*[^*]+\*\*)")


def _inline_html(text):
    out = []
    for part in _INLINE.split(text):
        if part.startswith("`") and part.endswith("`") and len(part) > 1:
            out.append(f"<code>{html.escape(part[1:-1])}</code>")
        elif part.startswith("**") and part.endswith("**") and len(part) > 3:
            out.append(f"<b>{html.escape(part[2:-2])}</b>")
        else:
            out.append(html.escape(part))
    return "".join(out)


def _md_cell(text):
    return str(text).replace("|", "\\|").replace("\n", " ")


def to_markdown(blocks):
    out = []
    for b in blocks:
        kind = b[0]
        if kind == "details":
            out.append(f"<details><summary>{b[1]}</summary>\n\n" + to_markdown(b[2]).rstrip("\n")
                       + "\n\n</details>")
        elif kind == "answer":
            out.append(to_markdown(b[1]).rstrip("\n"))
        elif kind in ("h1", "h2", "h3"):
            out.append("#" * int(kind[1]) + " " + b[1])
        elif kind in ("p", "lead", "small"):
            out.append(b[1])
        elif kind == "ul":
            out.append("\n".join(f"- {item}" for item in b[1]))
        elif kind == "table":
            headers, rows = b[1], b[2]
            lines = ["| " + " | ".join(_md_cell(h) for h in headers) + " |",
                     "|" + "|".join("---" for _ in headers) + "|"]
            lines += ["| " + " | ".join(_md_cell(c) for c in row) + " |" for row in rows]
            out.append("\n".join(lines))
        elif kind == "img":
            _, src, alt, caption = b
            out.append(f"![{alt}]({src})\n\n*{caption}*" if caption else f"![{alt}]({src})")
        else:
            raise ValueError(f"unknown block {kind}")
    return "\n\n".join(out) + "\n"


def to_html(blocks, title):
    out = ["<!DOCTYPE html>", "<html lang=\"en\"><head><meta charset=\"utf-8\">",
           f"<title>{html.escape(title)}</title><style>{CSS}</style></head><body>"]
    out += _html_blocks(blocks)
    out.append("</body></html>")
    return "\n".join(out) + "\n"


def _html_blocks(blocks):
    out = []
    for b in blocks:
        kind = b[0]
        if kind == "details":
            out.append(f"<details><summary>{_inline_html(b[1])}</summary>")
            out += _html_blocks(b[2])
            out.append("</details>")
        elif kind == "answer":
            out.append("<section class=\"answer\" id=\"answer\">")
            out += _html_blocks(b[1])
            out.append("</section>")
        elif kind == "lead":
            out.append(f"<p class=\"lead\">{_inline_html(b[1])}</p>")
        elif kind == "small":
            out.append(f"<p class=\"small\">{_inline_html(b[1])}</p>")
        elif kind in ("h1", "h2", "h3"):
            out.append(f"<{kind}>{_inline_html(b[1])}</{kind}>")
        elif kind == "p":
            out.append(f"<p>{_inline_html(b[1])}</p>")
        elif kind == "ul":
            out.append("<ul>" + "".join(f"<li>{_inline_html(i)}</li>" for i in b[1]) + "</ul>")
        elif kind == "table":
            headers, rows = b[1], b[2]
            head = "".join(f"<th>{_inline_html(str(h))}</th>" for h in headers)
            body = "".join("<tr>" + "".join(f"<td>{_inline_html(str(c))}</td>" for c in row) + "</tr>"
                           for row in rows)
            out.append(f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>")
        elif kind == "img":
            _, src, alt, caption = b
            cap = f"<figcaption>{_inline_html(caption)}</figcaption>" if caption else ""
            out.append(f"<figure><img src=\"{html.escape(src)}\" alt=\"{html.escape(alt)}\">{cap}</figure>")
        else:
            raise ValueError(f"unknown block {kind}")
    return out
