"""Markdown a hostile (or prompt-injected) model could write to run script in the notebook page.

One list, imported by the markdown, math, pane, view and browser tests. Each entry is a whole markdown
document; rendered, none may produce executable markup (see `test_markdown.audit`).
"""

from __future__ import annotations

PAYLOADS: list[str] = [
    # raw HTML, block and inline
    "<script>alert(1)</script>",
    "text <script>alert(1)</script> text",
    "<img src=x onerror=alert(1)>",
    "inline <img src=x onerror=alert(1)> image",
    "<svg onload=alert(1)>",
    "<svg><script>alert(1)</script></svg>",
    '<iframe src="javascript:alert(1)"></iframe>',
    "<iframe srcdoc='<script>alert(1)</script>'></iframe>",
    '<object data="javascript:alert(1)"></object>',
    '<embed src="javascript:alert(1)">',
    "<math><mtext><script>alert(1)</script></mtext></math>",
    '<a href="javascript:alert(1)">click</a>',
    '<div onclick="alert(1)">\n\n*markdown inside*\n\n</div>',
    "<details open ontoggle=alert(1)>",
    '<style>body{background:url("javascript:alert(1)")}</style>',
    '<meta http-equiv="refresh" content="0;url=javascript:alert(1)">',
    '<form action="javascript:alert(1)"><button>go</button></form>',
    "<!-- --><script>alert(1)</script><!-- -->",
    "<scr<script>ipt>alert(1)</script>",
    # links and images with dangerous schemes
    "[click](javascript:alert(1))",
    "[click](JaVaScRiPt:alert(1))",
    "[click](&#106;avascript:alert(1))",
    "[click](&#x6A;&#x61;&#x76;&#x61;script:alert(1))",
    "[click](java&#09;script:alert(1))",
    "[click](<java\tscript:alert(1)>)",
    "[click]( javascript:alert(1))",
    "[click](vbscript:msgbox(1))",
    "[click](data:text/html;base64,PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0Pg==)",
    "![img](data:text/html,<script>alert(1)</script>)",
    "![img](data:image/svg+xml;base64,PHN2ZyBvbmxvYWQ9YWxlcnQoMSk+)",
    "![img](javascript:alert(1))",
    "[click](file:///etc/passwd)",
    # autolinks
    "<javascript:alert(1)>",
    "<JAVASCRIPT:alert(1)>",
    "<data:text/html,<script>alert(1)</script>>",
    "<vbscript:msgbox(1)>",
    # reference links
    "[click][x]\n\n[x]: javascript:alert(1)",
    "![img][y]\n\n[y]: javascript:alert(1)",
    '[ok][z]\n\n[z]: https://example.com "title\\" onmouseover=\\"alert(1)"',
    # attribute breaking
    '[t](https://example.com "a\\" onmouseover=\\"alert(1)")',
    "[t](https://example.com 'x' onmouseover='alert(1)')",
    '![alt" onerror="alert(1)](https://example.com/x.png)',
    '![a" onerror=\'alert(1)\' b="](https://example.com/x.png "t\\" onload=\\"alert(1)")',
    '[x](https://example.com/"onmouseover="alert(1))',
    "[x](https://example.com/?a=<script>alert(1)</script>)",
    # code fences and spans
    '```"><script>alert(1)</script>\ncode\n```',
    "```js onload=alert(1)\nx\n```",
    '``` "onmouseover="alert(1)\nx\n```',
    "`<script>alert(1)</script>`",
    "```html\n<script>alert(1)</script>\n```",
    # tables, lists, quotes carrying the same
    "| a | b |\n|---|---|\n| <script>alert(1)</script> | [x](javascript:alert(1)) |",
    "- [x](javascript:alert(1))\n- <img src=x onerror=alert(1)>",
    "> <iframe src=//evil.example></iframe>\n> [y](vbscript:x)",
    "- [ ] <script>alert(1)</script>",
    # citations: the marker text is fine, the URL list is checked separately
    "See [1] and [2].",
    # LaTeX: the converter copies \\href, \\style, \\class and \\text{...} into its MathML
    "$\\href{javascript:alert(1)}{click}$",
    "$$\\style{background:url(javascript:alert(1))}{x}$$",
    "\\(\\class{jp-Dialog sw-x}{x}\\)",
    "\\[\\text{<script>alert(1)</script>}\\]",
    "$\\text{<img src=x onerror=alert(1)>}$",
    '$$\n\\mathrm{"><svg onload=alert(1)>}\n$$',
    "\\(\\unicode{x3c}script\\unicode{x3e}alert(1)\\)",
    "$\\color{red;background:url(javascript:alert(1))}x$",
    "\\begin{align}\na &= \\href{javascript:alert(1)}{b}\n\\end{align}",
    '$\\operatorname{x" onload="alert(1)}$ and \\(\\toggle{a}{b}\\endtoggle\\)',
    "open formula \\(\\text{<script>alert(1)</script>",
]
