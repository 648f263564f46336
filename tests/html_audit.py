"""The auditor of rendered HTML: what in a piece of markup could run script or leak the opener.

Every test of what reaches a page (the renderer, the panes, the saved markdown form) asks
`audit(markup) == []`: no forbidden tag, no event handler, no attribute outside the allowed
set, no URL outside http(s) and mailto, and inside `<math>` layout MathML only.
"""

from __future__ import annotations

import re
from html.parser import HTMLParser
from typing import Optional

_SAFE_SCHEMES = {"http", "https", "mailto"}
_FORBIDDEN_TAGS = {
    "script",
    "iframe",
    "object",
    "embed",
    "svg",
    "style",
    "form",
    "base",
    "meta",
    "link",
    "frame",
    "frameset",
    "applet",
    "template",
    "noscript",
    "textarea",
    "select",
    "button",
}
_URL_ATTRIBUTES = {
    "href",
    "src",
    "action",
    "formaction",
    "srcset",
    "xlink:href",
    "data",
    "poster",
    "background",
    "cite",
}
_ALLOWED_ATTRIBUTES = {
    "href",
    "src",
    "alt",
    "title",
    "class",
    "style",
    "target",
    "rel",
    "type",
    "disabled",
    "checked",
    "start",
}


# Inside <math>: layout MathML only (no maction, no annotation-xml, no href, style or class), and
# the TeX annotation. Typeset math comes from the kernel; anything else there is a finding.
_MATHML_TAGS = set(
    [
        "math",
        "semantics",
        "annotation",
        "mrow",
        "mi",
        "mn",
        "mo",
        "ms",
        "mtext",
        "mspace",
        "msub",
        "msup",
        "msubsup",
        "mfrac",
        "msqrt",
        "mroot",
        "mstyle",
        "mtable",
        "mtr",
        "mtd",
        "mover",
        "munder",
        "munderover",
        "mpadded",
        "mphantom",
        "menclose",
        "merror",
        "mmultiscripts",
        "mprescripts",
        "none",
    ]
)
_MATHML_ATTRIBUTES = set(
    [
        "xmlns",
        "display",
        "alttext",
        "encoding",
        "mathvariant",
        "displaystyle",
        "scriptlevel",
        "stretchy",
        "fence",
        "separator",
        "lspace",
        "rspace",
        "minsize",
        "maxsize",
        "movablelimits",
        "accent",
        "accentunder",
        "width",
        "height",
        "depth",
        "linethickness",
        "rowspacing",
        "columnspacing",
        "columnalign",
        "rowalign",
        "columnlines",
        "rowlines",
        "frame",
        "framespacing",
        "notation",
        "symmetric",
        "largeop",
        "form",
        "mathcolor",
        "mathsize",
        "voffset",
        "align",
    ]
)


class _Audit(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.problems: list[str] = []
        self.math = 0

    def handle_endtag(self, tag: str) -> None:
        if tag == "math" and self.math:
            self.math -= 1

    def _check_math(self, tag: str, attrs: list[tuple[str, Optional[str]]]) -> None:
        if tag not in _MATHML_TAGS:
            self.problems.append(f"<{tag}> inside <math>")
        for name, value in attrs:
            if name not in _MATHML_ATTRIBUTES:
                self.problems.append(f"{name}= on <{tag}> inside <math>")
            elif name == "encoding" and value != "application/x-tex":
                self.problems.append(f"encoding={value!r}")
            elif name == "xmlns" and value != "http://www.w3.org/1998/Math/MathML":
                self.problems.append(f"xmlns={value!r}")
            elif name != "alttext" and re.search(r"javascript|url\(|expression|[<>\"']", value or "", re.I):
                self.problems.append(f"{name}={value!r} on <{tag}>")

    def handle_starttag(self, tag: str, attrs: list[tuple[str, Optional[str]]]) -> None:
        if tag == "math":
            self.math += 1
        if self.math:
            self._check_math(tag, attrs)
            return
        if tag in _FORBIDDEN_TAGS:
            self.problems.append(f"<{tag}>")
        for name, value in attrs:
            value = value or ""
            if name.startswith("on"):
                self.problems.append(f"{name}= on <{tag}>")
            if name not in _ALLOWED_ATTRIBUTES:
                self.problems.append(f"unexpected attribute {name} on <{tag}>")
            if name in _URL_ATTRIBUTES:
                bare = re.sub(r"[\x00-\x20\x7f]", "", value).lower()
                scheme = re.match(r"([^:/?#]*):", bare)
                if scheme and scheme.group(1) not in _SAFE_SCHEMES:
                    self.problems.append(f"{name}={value!r} on <{tag}>")
            if name == "style" and not re.fullmatch(r"text-align:(left|right|center)", value):
                self.problems.append(f"style={value!r}")
            if name == "target" and value == "_blank":
                rel = dict(attrs).get("rel") or ""
                if "noopener" not in rel:
                    self.problems.append("target=_blank without rel=noopener")

    handle_startendtag = handle_starttag


def audit(markup: str) -> list[str]:
    """What in `markup` could run script or leak the opener: empty means safe."""
    auditor = _Audit()
    auditor.feed(markup)
    auditor.close()
    return auditor.problems
