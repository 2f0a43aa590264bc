#!/usr/bin/python3
"""Embedded multilingual training text for the synthetic K3 tokenizer.

Written for this project (no external source). It mixes English prose with
contractions and mixed case, source code, numbers, Chinese, Japanese, Korean,
Russian, Greek, Arabic, accented Latin, emoji and odd whitespace, so the
trained rank-BPE vocabulary has multi-byte UTF-8 merges of every kind.
"""

_RAW = r"""
The quick brown fox jumps over the lazy dog. The dog didn't mind; it's been a long day.
We'll see what they've got, and I'm sure you'd agree that the weather isn't great today.
She said: "Don't worry, we're almost there!" He replied, "You're right, I'll keep going."
THE QUICK BROWN FOX JUMPS OVER THE LAZY DOG. HTTPServer, iPhone, McDonald, JavaScript, XMLHttpRequest.
The model reads a checkpoint, converts the weights, and writes a container that the runtime loads.
Every layer has an attention block and a mixture of experts; the first layer is dense.
Tokenizers split text into pieces, then merge bytes into tokens by rank. Lower ranks merge first.
In the beginning there was the byte, and the byte was merged with another byte, and there were tokens.
Hello, world! Hello again, World. HELLO WORLD. hello world. Hello-world? hello_world.
It was the best of times, it was the worst of times; the season of light, the season of darkness.
There are 3 apples, 12 oranges, 365 days, 1024 bytes, 65536 values and 3.14159 radians.
On 2026-11-30 at 21:15:07 UTC the job started; it finished at 23:40, after 8,640 seconds.
Call +1 (555) 123-4567 or e-mail support@example.com; see https://example.org/docs?id=42&lang=en.
Prices: $19.99, EUR 25,00, 100% off, 7/8 of the cake, 2^16 = 65536, 0xFF = 255, 1e-5 is small.
The quick brown fox jumps over the lazy dog again and again, because the dog is lazy and the fox is quick.
Weights are stored in bfloat16; experts use four bits with a shared eight bit exponent per group of thirty-two.
Attention is all you need, they said; then they added memory, state, and a delta rule.
What's the time? It's ten past nine. Where're you going? We've been waiting since noon.
Mr. O'Neil's car isn't here, but Ms. D'Angelo's is. They'd rather walk; I'd rather drive.

def tokenize(text: str) -> list[int]:
    ids = []
    for piece in pre_split(text):
        if piece in vocab:
            ids.append(vocab[piece])
        else:
            ids.extend(bpe(piece.encode("utf-8")))
    return ids

class Shard:
    def __init__(self, path, header):
        self.path = path
        self.header = header
        self.offset = 8 + len(header)

    def read(self, name):
        begin, end = self.header[name]["data_offsets"]
        with open(self.path, "rb") as f:
            f.seek(self.offset + begin)
            return f.read(end - begin)

#include <cstdint>
#include <vector>
#include <string>

int main(int argc, char** argv) {
    std::vector<std::string> args(argv, argv + argc);
    for (size_t i = 0; i < args.size(); ++i) {
        if (args[i] == "--bits") { bits = std::stoi(args[i + 1]); }
    }
    uint64_t total = 0;
    for (const auto& t : tensors) total += t.end - t.begin;
    return total == expected ? 0 : 1;
}

for (int i = 0; i < n; i++) { sum += x[i] * w[i]; }
if (x != nullptr && y >= 0) { return x->value + y; } else { return -1; }
const result = await fetch(`/api/v1/items/${id}`); console.log(JSON.stringify(result, null, 2));
SELECT name, COUNT(*) FROM users WHERE age >= 18 GROUP BY name ORDER BY 2 DESC;
{"dtype": "BF16", "shape": [7168, 12288], "data_offsets": [0, 176160768]}
    	mixed tabs	and spaces   
line one
line two

line four after a blank line
windows line\r
endings here\r

人工智能正在改变世界。我们今天学习语言模型的基本原理，包括注意力机制和专家混合。
这是一个测试句子，用来训练分词器。中文没有空格，所以分词器需要合并常见的汉字组合。
模型的权重被存储在多个文件中，每个文件包含一层的参数。转换工具会读取这些文件并写出新的容器。
北京是中国的首都，上海是最大的城市。今天天气很好，我们去公园散步吧。
学习机器学习需要数学、编程和耐心。数据、模型、训练、推理，都是重要的概念。
人工智能正在改变世界。语言模型可以写诗、翻译、回答问题，也可以写代码。

日本語のテキストも少し入れます。ひらがなとカタカナと漢字が混ざっています。
東京は日本の首都です。今日はとても良い天気ですね。コンピューターでプログラムを書きます。
トークナイザーはテキストを小さな部分に分割します。モデルはそれを読んで次の単語を予測します。
ありがとうございます。よろしくお願いします。おはようございます、こんにちは、こんばんは。

한국어 문장도 조금 넣습니다. 오늘 날씨가 정말 좋네요. 언어 모델은 다음 단어를 예측합니다.
서울은 한국의 수도입니다. 감사합니다. 안녕하세요.

Русский текст тоже нужен. Быстрая коричневая лиса прыгает через ленивую собаку.
Модель читает контрольную точку, преобразует веса и записывает контейнер.
Москва — столица России. Сегодня хорошая погода, и мы идём гулять в парк.
Привет, мир! Как дела? Всё хорошо, спасибо. Языковая модель предсказывает следующее слово.

Ελληνικά: Η γρήγορη καφέ αλεπού πηδά πάνω από τον τεμπέλη σκύλο. Καλημέρα κόσμε!
العربية: مرحبا بالعالم. هذا نص قصير للاختبار. النموذج يقرأ الأوزان ويكتبها.
Français : Le cœur a ses raisons que la raison ne connaît point. Où est la bibliothèque ? Très bien, merci.
Deutsch: Größere Äpfel schmecken süßer. Über den Wolken muss die Freiheit wohl grenzenlos sein.
Español: ¿Dónde está el baño? ¡Qué día tan bonito! El niño comió una manzana.
Português: Não há nada como a informação. Ação, coração, canção, atenção.
Tiếng Việt: Xin chào thế giới. Hôm nay trời đẹp quá.
हिन्दी: नमस्ते दुनिया। आज मौसम अच्छा है।
ไทย: สวัสดีชาวโลก วันนี้อากาศดีมาก

Emoji: 😀 😃 😄 😁 😆 😂 🤣 ❤️ 👍 👍🏽 🎉 🚀 🔥 ✨ 🌍 🐍 🦀 👨‍👩‍👧‍👦 🇯🇵 🇺🇸 ✅ ❌ ⚠️
Math: ∑ x² + ∫ f(x) dx ≈ π·r², α β γ δ ε → ∞, √2 ≈ 1.41421356, ≤ ≥ ≠ ± × ÷ ∈ ∉ ∀ ∃.
Symbols: © ® ™ § ¶ † ‡ • … ‰ € £ ¥ ¢ ° ← ↑ → ↓ ↔ ⇒ ⇔ ★ ☆ ♠ ♣ ♥ ♦ — – « » „ “ ” ‘ ’

The quick brown fox jumps over the lazy dog. The dog didn't mind; it's been a long day.
Every layer has an attention block and a mixture of experts; the first layer is dense.
人工智能正在改变世界。我们今天学习语言模型的基本原理。
東京は日本の首都です。ありがとうございます。
Привет, мир! Языковая модель предсказывает следующее слово.
for (int i = 0; i < n; i++) { sum += x[i] * w[i]; }
"""

# The raw text spells CR as a literal backslash-r (editors drop real CRs).
CORPUS = _RAW.replace("\\r\n", "\r\n")
