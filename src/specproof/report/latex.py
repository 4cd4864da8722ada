"""Proof transcripts as standalone LaTeX documents.

A transcript is rendered once, as Markdown, from a checked certificate (:mod:`specproof.report.transcript`);
:func:`to_latex` turns that Markdown into a LaTeX document that compiles on its own with pdflatex
(packages: geometry, longtable, booktabs, inputenc, fontenc, textcomp, amssymb), so the LaTeX shows
exactly what the Markdown shows. The Markdown is read with markdown-it-py (CommonMark with GFM tables),
the parser the transcript tests use; it is needed only here.

Text is escaped for LaTeX: its ten special characters, and every character outside ASCII that the
standard packages cannot typeset is written as ``<U+XXXX>`` (token texts of real vocabularies hold
any script), so no document text can become a LaTeX command.
"""

from __future__ import annotations

from typing import Any

__all__ = ["to_latex", "escape"]

_SPECIAL = {
    "\\": r"\textbackslash{}",
    "{": r"\{",
    "}": r"\}",
    "$": r"\$",
    "&": r"\&",
    "#": r"\#",
    "^": r"\textasciicircum{}",
    "_": r"\_",
    "%": r"\%",
    "~": r"\textasciitilde{}",
    "<": r"\textless{}",
    ">": r"\textgreater{}",
    "|": r"\textbar{}",
}
#: Characters outside ASCII that transcripts use, and how pdflatex typesets them.
_UNICODE = {
    "−": "$-$",
    "·": r"$\cdot$",
    "…": r"\ldots{}",
    "½": r"$\frac{1}{2}$",
    "Σ": r"$\Sigma$",
    "α": r"$\alpha$",
    "γ": r"$\gamma$",
    "≤": r"$\leq$",
    "≥": r"$\geq$",
    "≈": r"$\approx$",
    "—": "---",
    "–": "--",
    "’": "'",
    "‘": "`",
    "“": "``",
    "”": "''",
    "×": r"$\times$",
    "→": r"$\rightarrow$",
    "∞": r"$\infty$",
    "é": r"\'e",
    "è": r"\`e",
    "ü": r"\"u",
    "ö": r"\"o",
    "ä": r"\"a",
    "\u00a0": "~",
}

_PREAMBLE = r"""\documentclass[10pt]{article}
\usepackage[T1]{fontenc}
\usepackage[utf8]{inputenc}
\usepackage{textcomp}
\usepackage{amssymb}
\usepackage[margin=1.8cm]{geometry}
\usepackage{longtable}
\usepackage{booktabs}
\setlength{\parindent}{0pt}
\setlength{\parskip}{0.5em}
\sloppy
"""


def escape(text: str) -> str:
    """``text`` as LaTeX text: special characters escaped, unknown non-ASCII as ``<U+XXXX>``.

    >>> print(escape("p(x) = 1/2 & q_x # 100% {a} 中"))
    p(x) = 1/2 \\& q\\_x \\# 100\\% \\{a\\} \\textless{}U+4E2D\\textgreater{}
    """
    out = []
    for char in text:
        if char in _SPECIAL:
            out.append(_SPECIAL[char])
        elif char in _UNICODE:
            out.append(_UNICODE[char])
        elif ord(char) < 128:
            out.append(char if char.isprintable() else " ")
        else:
            out.append(rf"\textless{{}}U+{ord(char):04X}\textgreater{{}}")
    return "".join(out)


def _inline(tokens: list[Any]) -> str:
    parts = []
    for tok in tokens:
        if tok.type == "text":
            parts.append(escape(tok.content))
        elif tok.type == "code_inline":
            parts.append(r"\texttt{" + escape(tok.content) + "}")
        elif tok.type == "strong_open":
            parts.append(r"\textbf{")
        elif tok.type == "em_open":
            parts.append(r"\emph{")
        elif tok.type in ("strong_close", "em_close"):
            parts.append("}")
        elif tok.type == "softbreak":
            parts.append(" ")
        elif tok.type == "hardbreak":
            parts.append(r"\\" + "\n")
        elif tok.type == "image":
            parts.append(r"\emph{(figure: \texttt{" + escape(tok.attrs.get("src", "")) + "})}")
        elif tok.type in ("link_open", "link_close", "html_inline"):
            parts.append(escape(tok.content) if tok.type == "html_inline" else "")
        else:
            parts.append(escape(tok.content))
    return "".join(parts)


_HEADINGS = {"h1": r"\section*", "h2": r"\subsection*", "h3": r"\subsubsection*"}


def to_latex(markdown: str, title: str = "Proof transcript") -> str:
    """A standalone LaTeX document showing the Markdown text ``markdown``.

    Parameters
    ----------
    markdown : str
        A transcript from :func:`specproof.report.transcript.render` (any CommonMark with GFM tables
        works: headings, paragraphs, lists, tables, code spans and blocks, bold, emphasis).
    title : str, optional
        The PDF title (escaped).

    Returns
    -------
    str
        LaTeX source, ending in a newline; identical for identical inputs.

    Raises
    ------
    ModuleNotFoundError
        If markdown-it-py is not installed (``pip install 'specproof[report]'``).

    Examples
    --------
    >>> tex = to_latex("# T\\n\\n| a | b |\\n|---|---|\\n| 1/2 | x_y |\\n")
    >>> tex.splitlines()[-12:-2]
    ['\\\\section*{T}', '', '\\\\begin{longtable}{ll}', '\\\\toprule', 'a & b \\\\\\\\', '\\\\midrule', '\\\\endhead', '1/2 & x\\\\_y \\\\\\\\', '\\\\bottomrule', '\\\\end{longtable}']
    """
    from markdown_it import MarkdownIt

    tokens = MarkdownIt("commonmark").enable("table").parse(markdown)
    body: list[str] = []
    row: list[str] = []
    for i, tok in enumerate(tokens):
        kind = tok.type
        if kind == "heading_open":
            body.append(_HEADINGS.get(tok.tag, r"\paragraph*") + "{" + _inline(tokens[i + 1].children or []) + "}\n\n")
        elif kind == "inline" and tokens[i - 1].type == "paragraph_open":
            body.append(_inline(tok.children or []) + "\n")
        elif kind == "paragraph_close" and not tok.hidden:
            body.append("\n")
        elif kind == "bullet_list_open":
            body.append(r"\begin{itemize}" + "\n")
        elif kind == "bullet_list_close":
            body.append(r"\end{itemize}" + "\n\n")
        elif kind == "ordered_list_open":
            body.append(r"\begin{enumerate}" + "\n")
        elif kind == "ordered_list_close":
            body.append(r"\end{enumerate}" + "\n\n")
        elif kind == "list_item_open":
            body.append(r"\item ")
        elif kind in ("fence", "code_block"):
            body.append(
                r"\begin{verbatim}"
                + "\n"
                + "".join(c if ord(c) < 128 else "?" for c in tok.content)
                + r"\end{verbatim}"
                + "\n\n"
            )
        elif kind == "table_open":
            columns = _table_columns(tokens, i)
            body.append(r"\begin{longtable}{" + "l" * columns + "}\n" + r"\toprule" + "\n")
        elif kind == "tr_open":
            row = []
        elif kind in ("th_open", "td_open"):
            row.append(_inline(tokens[i + 1].children or []) if tokens[i + 1].type == "inline" else "")
        elif kind == "tr_close":
            body.append(" & ".join(row) + r" \\" + "\n")
        elif kind == "thead_close":
            body.append(r"\midrule" + "\n" + r"\endhead" + "\n")
        elif kind == "table_close":
            body.append(r"\bottomrule" + "\n" + r"\end{longtable}" + "\n\n")
    text = "".join(body)
    return (
        _PREAMBLE
        + r"\title{"
        + escape(title)
        + "}\n"
        + r"\date{}"
        + "\n"
        + r"\begin{document}"
        + "\n\n"
        + text.rstrip("\n")
        + "\n\n"
        + r"\end{document}"
        + "\n"
    )


def _table_columns(tokens: list[Any], start: int) -> int:
    """The number of cells in a table's header row."""
    count = 0
    for tok in tokens[start:]:
        if tok.type == "th_open":
            count += 1
        elif tok.type == "thead_close":
            return count
    return max(count, 1)
