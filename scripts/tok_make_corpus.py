#!/usr/bin/python3
"""Writes tests/tok/corpus.jsonl: the tokenizer test corpus (one JSON string
per line). Hand-written strings per category, plus deterministic variants
(prefix space, trailing newline, CRLF, case changes, concatenations) so that
boundary rules of the Kimi pattern are exercised in many contexts.
Run: /usr/bin/python3 scripts/tok_make_corpus.py > tests/tok/corpus.jsonl"""
import json
import random
import sys

CHINESE_SIMPLIFIED = [
    "你好，世界！", "今天天气很好，我们去公园散步吧。", "机器学习是人工智能的一个分支。",
    "请把这份文件翻译成英文，谢谢。", "北京是中华人民共和国的首都，人口超过两千万。",
    "他说：“这个问题很难，但是我们可以解决。”", "数据集包含12345条记录和67个字段。",
    "月之暗面发布了新的大语言模型Kimi。", "我的电话号码是138-0013-8000。", "春眠不觉晓，处处闻啼鸟。",
    "中文标点：、。，；：？！…—（）《》【】", "人工智能（AI）正在改变世界", "你好\nKimi", "你好。",
]
CHINESE_TRADITIONAL = [
    "繁體中文的書寫系統歷史悠久。", "臺灣的夜市非常熱鬧，小吃種類繁多。", "我們應該學習電腦與網際網路的知識。",
    "這個軟體的說明書寫得很清楚。", "香港國際機場於一九九八年啟用。", "龜兔賽跑的故事告訴我們不要驕傲。",
    "麵條、餃子和饅頭都是麵食。", "讀書破萬卷，下筆如有神。",
]
JAPANESE = [
    "こんにちは、世界！", "東京は日本の首都です。", "私はプログラミングが大好きです。",
    "カタカナとひらがなと漢字を混ぜて書きます。", "ｶﾀｶﾅの半角文字もあります。", "今日は2024年5月1日（水曜日）です。",
    "吾輩は猫である。名前はまだ無い。", "ラーメンを食べに行きましょうか？", "々〇〆ヶ", "佐々木さんと日々の暮らし",
    "ポケモンＧＯ", "ﾃﾞｰﾀﾍﾞｰｽ", "ゔぁいおりん", "ー・ー",
]
KOREAN = [
    "안녕하세요, 세계!", "대한민국의 수도는 서울입니다.", "저는 한국어를 공부하고 있어요.",
    "오늘 날씨가 정말 좋네요!", "한글은 세종대왕이 만들었습니다.", "ㅋㅋㅋㅋ ㅎㅎ", "韓國語 한국어 漢字",
    "각 각 자모", "서울특별시 강남구 테헤란로 123",
]
ARABIC = [
    "مرحبا بالعالم", "اللغة العربية جميلة جداً.", "الرقم ١٢٣٤٥٦٧٨٩٠ بالأرقام العربية الهندية.",
    "بِسْمِ اللَّهِ الرَّحْمَٰنِ الرَّحِيمِ", "كيف حالك؟ أنا بخير، شكراً!", "۱۲۳ فارسی است", "עברית: שלום עולם",
    "مدينة دبي 2024", "ـــــ كشيدة",
]
CYRILLIC = [
    "Привет, мир!", "Москва — столица России.", "Я люблю программировать на C++.", "ЁЛКИ-ПАЛКИ, вот это да!",
    "Київ — столиця України.", "Добрий день! Як справи?", "Беларуская мова: ў, і.", "МГУ им. Ломоносова",
    "ПроверкаCamelCaseНаКириллице", "Съешь же ещё этих мягких французских булок, да выпей чаю.",
]
EMOJI = [
    "👍", "👍🏽", "👨‍👩‍👧‍👦", "👩🏽‍💻 coding", "🏳️‍🌈 pride", "🇯🇵🇺🇸🇨🇳", "❤️‍🔥", "1️⃣2️⃣3️⃣", "#️⃣",
    "I ❤️ NY", "😀😃😄😁😆😅😂🤣", "🧑‍🤝‍🧑", "✌🏿", "Hello 🌍!", "🐈‍⬛ black cat", "™©®", "☕️ coffee",
    "🤷‍♀️🤷‍♂️", "👁️‍🗨️", "a👍b", "😀\n😀",
]
CODE = [
    "def hello_world():\n    print(\"Hello, world!\")\n",
    "for (int i = 0; i < n; ++i) {\n\tsum += a[i];\n}",
    "#include <iostream>\nint main() { std::cout << \"hi\" << std::endl; return 0; }",
    "const x = arr.map((v) => v * 2).filter(Boolean);",
    "SELECT id, name FROM users WHERE age >= 18 ORDER BY name DESC;",
    "{\"key\": \"value\", \"list\": [1, 2, 3], \"nested\": {\"a\": null}}",
    "<div class=\"container\"><p>Hello &amp; welcome</p></div>",
    "git commit -m \"fix: handle CRLF\" && git push origin main",
    "x = {'a': 1, 'b': [2, 3]}  # comment", "if (a != b && c <= d || !e) return -1;",
    "fn main() -> Result<(), Box<dyn Error>> { Ok(()) }", "$ ls -la /usr/local/bin | grep -v '^d'",
    "https://example.com/path/to/page?query=1&lang=en#section", "user@example.com", "C:\\Windows\\System32\\drivers",
    "getUserName", "iPhone", "HTTPServer", "XMLHttpRequest", "parseJSONString", "snake_case_variable", "SCREAMING_SNAKE",
    "__init__", "self.assertEqual(a, b)", "0x1F600 0b1010 0o777 1e-10 3.14159", "a+=1;b-=2;c*=3;d/=4;",
    "/* block comment */ // line comment", "```python\nprint(1)\n```", "    indented\n        more\n",
    "\t\tdouble tab", "let s = \"unicode: \\u00e9\";", "\"quoted\" 'single' `back`",
    "std::vector<std::pair<int, std::string>> v;", "   ", "  \n  \n",
]
NUMBERS = [
    "12345", "1234567890123", "3.14159265358979", "1,000,000", "-42", "+1 (555) 123-4567", "2024-05-01T12:34:56Z",
    "٠١٢٣٤٥٦٧٨٩", "０１２３４５６７８９", "x² + y³ = z⁴", "½ ¼ ¾", "Ⅻ Ⅳ ⅷ", "①②③", "१२३४", "๑๒๓",
    "1st 2nd 3rd 4th", "100%", "$9.99", "€10,50", "¥1000", "10km/h", "v1.2.3-beta.4", "007", "0.000001",
    "9999999999999999999999", "1 2 3 4 5", "12:00", "〡〢〣", "𝟙𝟚𝟛", "1/2/2024",
]
WHITESPACE = [
    " ", "  ", "    ", "\t", "\t\t\t", "\n", "\n\n", "\n\n\n\n", "\r\n", "\r\n\r\n", "\r", " \n", "\n ", " \n ",
    "a  b", "a   b", "a\tb", "a \t b", "a\n\nb", "a \n\n b", "trailing   ", "   leading", "  both  ",
    "nbsp\u00a0here", "ideographic\u3000space", "nel\u0085char", "line\u2028sep", "para\u2029sep", "em\u2003space",
    "thin\u2009space", "narrow\u202fnbsp", "vt\u000bff\u000c", " \u00a0 \u00a0", "\u3000\u3000中文",
    "end with spaces then newline   \n", "x\n\n\n   y", "tabs\t\n\tand\tnewlines", "word \n",
    "zero\u200bwidth", "joiner\u200dhere", "bom\ufeffinside", "ogham\u1680space",
]
CRLF = [
    "line one\r\nline two\r\n", "Windows\r\nline\r\nendings\r\n\r\n", "mixed\nline\r\nendings\r",
    "CRLF after punctuation.\r\n", "  \r\n  indented\r\n", "a\r\n\r\n\r\nb", "\r\n\r\n", "key: value\r\nkey2: value2",
    "你好\r\n世界", "x;\r\n", "} \r\n", "text\r\n   \r\nmore",
]
CONTRACTIONS = [
    "I'm", "I'M", "i'm", "You're", "YOU'RE", "you'Re", "don't", "DON'T", "Don'T", "it's", "IT'S", "It'S",
    "we've", "WE'VE", "they'll", "THEY'LL", "She'd", "SHE'D", "he'Ll", "can't won't shouldn't",
    "I'd've", "y'all", "rock 'n' roll", "'s", "'S", "'t", "'re", "'ll", "'ve", "'m", "'d", "''s",
    "the cat's toy", "JAMES'S car", "o'clock", "l'homme", "d'Artagnan", "123's", "你好's", "ABC's", "aBc'S",
    "naïve's", "ſ's 'ſ xı'ſ", "It’s curly", "Jean-Paul's", "IʼM", "rock'n'roll'd",
]
LATIN_AND_OTHERS = [
    "Hello world", "The quick brown fox jumps over the lazy dog.", "THE QUICK BROWN FOX", "tHe QuIcK bRoWn",
    "Ünïcödé àccénts", "café naïve résumé", "Straße", "ÆØÅ æøå", "Ǆemal ǅemal ǆemal", "ǈ ǋ ǲ",
    "Ελληνικά: Γειά σου Κόσμε", "ΑΒΓΔ αβγδ", "Τι κάνεις;", "Tiếng Việt có dấu", "Nguyễn Văn A",
    "ภาษาไทยสวัสดีครับ", "हिन्दी भाषा नमस्ते", "বাংলা ভাষা", "தமிழ் மொழி", "ქართული ენა", "Հայերեն լեզու",
    "አማርኛ", "ᓀᐦᐃᔭᐍᐏᐣ", "ᚠᚢᚦᚨᚱᚲ", "𝐀𝐁𝐂 𝑎𝑏𝑐 𝔸𝔹ℂ", "e\u0301e\u0301", "A\u030a", "a\u0308\u0301",
    "ﬁ ﬂ ﬀ", "ℌℑℜ", "ªº", "ʰʲʷ", "ABCdef", "abcDEF", "aBCdEF", "ABCDEFghi", "McDonald", "MacBook Pro",
    "eBay", "YouTube", "iOS", "macOS", "JSONParser", "IPv6Address", "ＡＢＣａｂｃ", "Ⓐⓑ", "!hello", "?World",
    "...", "!!!", "?!?!", "---", "***", "___", "~~~", "«quotes»", "„German“", "‹single›", "§ 12 ¶ 3", "±×÷",
    "→←↑↓", "∀x∈ℝ: x²≥0", "≤≥≠≈", "°C", "µs", "Ω", "K", "Å", "Ⅰ", "@user #tag", "(parenthesized)", "[bracketed]",
]
HAN_EDGE = [
    "漢字々〇、", "々〇", "〇一二三", "⺀⺁⺂", "⼀⼁⼂", "𠀀𠀁𠀂", "𪜀𫝀", "丽丸乁", "〡〢〣〤", "〸〹〺", "〻",
    "中文English混合", "English中文mixed", "中文123数字", "中文,标点", "中文 空格", "日本語とEnglish",
    "漢字ABC漢字", "a漢b", "漢'S", "㐀㐁㐂", "鿰鿱", "豈更車", "〆", "ヶ月", "〃", "〜", "・",
]
SPECIAL_TEXT = [
    "<|open|>", "<|close|>", "<|sep|>", "<|end_of_msg|>", "[BOS]", "[EOS]", "[PAD]", "[UNK]", "[EOT]",
    "<|reserved_token_163700|>", "<|media_begin|>", "<osagent_mode>", "<|open|>message<|sep|>",
    "text before <|open|> and after", "<|ope", "<|open", "|>", "<<|open|>>", "<|open|><|open|>", "[BOS][EOS]",
    "<|im_end|>", "<think>", "</think>",
]


def long_pieces(rng):
    out = [
        "a" * 3000, "A" * 2000, "ab" * 1500, "Ab" * 1000, "1" * 1000, "1234567890" * 50, "!" * 1000,
        " " * 1000, "\n" * 500, "\t" * 300, " " * 500 + "x", "x" + " " * 500, "-=" * 400, "漢" * 1000,
        "の" * 800, "한" * 600, "😀" * 300, "é" * 700, "\r\n" * 300, "Supercalifragilisticexpialidocious" * 20,
        "https://example.com/" + "/".join("seg%d" % i for i in range(200)),
        "".join(rng.choice("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/") for _ in range(4000)),
        "".join(rng.choice("0123456789abcdef") for _ in range(3000)),
        "".join(rng.choice("aeiou") for _ in range(5000)),
        "".join(rng.choice("AEIOUaeiou") for _ in range(3000)),
        "".join(rng.choice(" \t\n") for _ in range(800)),
        "".join(rng.choice("的一是不了人我在有他这为之大来以个中上们") for _ in range(2000)),
    ]
    return out


def variants(s, rng):
    yield s
    yield " " + s
    yield s + "\n"
    if len(s) < 200:
        yield s.upper()
        yield "\t" + s + "  "
        yield s.replace("\n", "\r\n") + "\r\n"


def main():
    rng = random.Random(20261130)
    groups = [CHINESE_SIMPLIFIED, CHINESE_TRADITIONAL, JAPANESE, KOREAN, ARABIC, CYRILLIC, EMOJI, CODE, NUMBERS,
              WHITESPACE, CRLF, CONTRACTIONS, LATIN_AND_OTHERS, HAN_EDGE, SPECIAL_TEXT]
    base = [s for g in groups for s in g]
    lines = []
    for s in base:
        lines.extend(variants(s, rng))
    lines.extend(long_pieces(rng))
    # Mixed-script paragraphs: random concatenations with random separators.
    seps = [" ", "", "\n", "\r\n", "  ", "\t", ", ", "。", "'s ", " 'LL "]
    short = [s for s in base if len(s) < 80]
    for _ in range(150):
        k = rng.randint(2, 6)
        lines.append("".join(rng.choice(short) + rng.choice(seps) for _ in range(k)))
    seen = set()
    for s in lines:
        if s and s not in seen:
            seen.add(s)
            sys.stdout.write(json.dumps(s, ensure_ascii=False) + "\n")


if __name__ == "__main__":
    main()
