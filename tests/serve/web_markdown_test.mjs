// The web chat's markdown renderer (the <script id="k3-markdown"> block of
// libs/k3/serve/web/index.html, run here in a bare vm context): hand-written
// expected HTML for what answers use, and the safety rules — model text never
// becomes markup, links only to http(s)/mailto — on known attack strings and
// on random markdown-ish text.
import test from "node:test";
import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";
import vm from "node:vm";

const SOURCE_DIR = process.env.K3_SOURCE_DIR ?? path.resolve(path.dirname(new URL(import.meta.url).pathname), "../..");
const page = fs.readFileSync(path.join(SOURCE_DIR, "libs/k3/serve/web/index.html"), "utf8");
const block = page.match(/<script id="k3-markdown">([\s\S]*?)<\/script>/);
assert.ok(block, "index.html has a <script id=\"k3-markdown\"> block");
const ctx = vm.createContext({});
vm.runInContext(block[1], ctx);
const { render } = ctx.K3Markdown;

const COPY = '<button type="button" class="copy-code" aria-label="Copy code"><svg class="icon" viewBox="0 0 24 24" aria-hidden="true"><rect x="9" y="9" width="11" height="11" rx="2"/><path d="M5 15V6a2 2 0 0 1 2-2h8"/></svg>Copy</button>';
const code = (lang, body) => `<div class="code"><div class="code-head"><span>${lang || "code"}</span>${COPY}</div><pre><code${lang ? ` class="lang-${lang}"` : ""}>${body}</code></pre></div>`;
const A = (href, text) => `<a href="${href}" target="_blank" rel="noopener noreferrer nofollow">${text}</a>`;

const cases = [
  ["plain text", "hello world", "<p>hello world</p>"],
  ["two paragraphs, soft break", "a\nb\n\nc", "<p>a<br>b</p><p>c</p>"],
  ["emphasis", "**bold** *it* _it2_ ~~gone~~ snake_case_name", "<p><strong>bold</strong> <em>it</em> <em>it2</em> <del>gone</del> snake_case_name</p>"],
  ["inline code keeps markup literal", "use `a **b** <c>` here", "<p>use <code>a **b** &lt;c&gt;</code> here</p>"],
  ["double-backtick code", "``a ` b``", "<p><code>a ` b</code></p>"],
  ["backslash escapes", "\\*not em\\*", "<p>*not em*</p>"],
  ["headings shift two levels", "# Title\n### Sub", "<h3>Title</h3><h5>Sub</h5>"],
  ["fenced code", "```js\nconst a = 1 < 2;\n```", code("js", "const a = 1 &lt; 2;")],
  ["unclosed fence (streaming)", "x\n```\npartial", "<p>x</p>" + code("", "partial")],
  ["tilde fence with backticks inside", "~~~\n```\n~~~", code("", "```")],
  ["tight list", "- a\n- b", "<ul><li>a</li><li>b</li></ul>"],
  ["ordered list with start", "3. c\n4. d", '<ol start="3"><li>c</li><li>d</li></ol>'],
  ["nested list", "- a\n  1. x\n  2. y\n- b", "<ul><li>a<ol><li>x</li><li>y</li></ol></li><li>b</li></ul>"],
  ["loose list", "- a\n\n- b", "<ul><li><p>a</p></li><li><p>b</p></li></ul>"],
  ["list then paragraph", "- a\n\nafter", "<ul><li>a</li></ul><p>after</p>"],
  ["block quote", "> quoted\n> more", "<blockquote><p>quoted<br>more</p></blockquote>"],
  ["rule", "a\n\n---\n\nb", "<p>a</p><hr><p>b</p>"],
  ["table with alignment", "| a | b |\n|:-:|--:|\n| 1 | 2 |",
    '<div class="table-wrap"><table><thead><tr><th style="text-align:center">a</th><th style="text-align:right">b</th></tr></thead>' +
    '<tbody><tr><td style="text-align:center">1</td><td style="text-align:right">2</td></tr></tbody></table></div>'],
  ["link", "see [docs](https://example.org/a?b=1&c=2)", `<p>see ${A("https://example.org/a?b=1&amp;c=2", "docs")}</p>`],
  ["autolink", "at https://example.org/x.", `<p>at ${A("https://example.org/x", "https://example.org/x")}.</p>`],
  ["mailto link", "[mail](mailto:a@b.c)", `<p>${A("mailto:a@b.c", "mail")}</p>`],
  ["underscores in a link target stay", "[x](https://e.org/a_b_c)", `<p>${A("https://e.org/a_b_c", "x")}</p>`],
  // Safety: text, never markup.
  ["raw HTML is text", "<b>hi</b> & <script>alert(1)</script>", "<p>&lt;b&gt;hi&lt;/b&gt; &amp; &lt;script&gt;alert(1)&lt;/script&gt;</p>"],
  ["img onerror is text", '<img src=x onerror="alert(1)">', "<p>&lt;img src=x onerror=&quot;alert(1)&quot;&gt;</p>"],
  ["javascript: link is not a link", "[x](javascript:alert(1))", "<p>x</p>"],
  ["mixed-case javascript: link", "[x](JaVaScRiPt:alert(1))", "<p>x</p>"],
  ["data: link", "[x](data:text/html;base64,PHNjcmlwdD4=)", "<p>x</p>"],
  ["relative link", "[x](/v1/models)", "<p>x</p>"],
  ["quote breaking out of href", '[x](https://e.org/"onmouseover="alert(1))', `<p>${A("https://e.org/&quot;onmouseover=&quot;alert(1)", "x")}</p>`],
  ["code fence closing tags", "```\n</code></pre><script>alert(1)</script>\n```", code("", "&lt;/code&gt;&lt;/pre&gt;&lt;script&gt;alert(1)&lt;/script&gt;")],
  ["fence language is sanitised", '```"><img src=x>\nz\n```', code("", "z")],
  ["html in a table cell", "| a |\n|---|\n| <svg onload=alert(1)> |",
    '<div class="table-wrap"><table><thead><tr><th>a</th></tr></thead><tbody><tr><td>&lt;svg onload=alert(1)&gt;</td></tr></tbody></table></div>'],
  ["NUL bytes cannot reach the placeholder scheme", "a\u00000\u0000b `c`", "<p>a\uFFFD0\uFFFDb <code>c</code></p>"],
];

for (const [name, src, want] of cases) {
  test(`markdown: ${name}`, () => assert.equal(render(src), want));
}

// Every tag and attribute the renderer may produce; anything else came from the input.
const TAGS = new Set(["p", "br", "strong", "em", "del", "code", "pre", "h3", "h4", "h5", "h6", "ul", "ol", "li",
  "blockquote", "hr", "a", "div", "span", "button", "table", "thead", "tbody", "tr", "th", "td", "svg", "rect", "path"]);
const ATTRS = {
  href: /^(https?:\/\/|mailto:)/i, target: /^_blank$/, rel: /^noopener noreferrer nofollow$/,
  class: /^(code|code-head|copy-code|icon|table-wrap|lang-[\w+#.-]+)$/, type: /^button$/, "aria-label": /^Copy code$/,
  "aria-hidden": /^true$/, style: /^text-align:(center|right)$/, start: /^\d+$/,
  viewBox: /^[\d ]+$/, x: /^\d+$/, y: /^\d+$/, width: /^\d+$/, height: /^\d+$/, rx: /^\d+$/, d: /^[\w .-]+$/,
};

function checkSafe(html) {
  const noTags = html.replace(/<\/?([a-zA-Z][a-zA-Z0-9]*)((?:\s+[\w-]+="[^"]*")*)\s*\/?>/g, (m, tag, attrs) => {
    assert.ok(TAGS.has(tag), `unexpected tag <${tag}> in ${html}`);
    for (const [, name, value] of attrs.matchAll(/([\w-]+)="([^"]*)"/g)) {
      assert.ok(ATTRS[name], `unexpected attribute ${name} in ${html}`);
      assert.match(value, ATTRS[name], `bad ${name}="${value}"`);
    }
    return "";
  });
  // What is left is text: no raw markup characters, only entities.
  assert.doesNotMatch(noTags, /[<>"]/, `raw markup character left in ${html}`);
  assert.doesNotMatch(noTags, /&(?!amp;|lt;|gt;|quot;|#39;)/, `bare & left in ${html}`);
}

test("markdown: the attack strings above render only allowed markup", () => {
  for (const [, src] of cases) checkSafe(render(src));
});

test("markdown: random markdown-ish text renders only allowed markup", () => {
  const atoms = ["<", ">", "&", '"', "'", "`", "```", "*", "**", "_", "~~", "[", "]", "(", ")", "|", "\\", "-", "1.", "#",
    ">", "\n", "\n\n", " ", "  ", "a", "b c", "https://e.org/", "javascript:", "mailto:x", "<script>", "onerror=", "&amp;", "\t"];
  let seed = 12345;
  const rnd = (n) => { seed = (seed * 1103515245 + 12345) & 0x7fffffff; return seed % n; };
  for (let k = 0; k < 3000; k++) {
    let s = "";
    const len = 1 + rnd(40);
    for (let j = 0; j < len; j++) s += atoms[rnd(atoms.length)];
    checkSafe(render(s));
  }
});
