#!/usr/bin/python3
"""k3-mini's chat conversations: template families over the corpus data, and
their XTML rendering (spec 7.6) to token ids.

Families (thinking on, every assistant turn has a short think channel):
- define: a word is asked about, the answer is its GCIDE sense;
- weather: get_weather is declared, called with typed arguments (city: string,
  optional days: number), the tool result comes back, the answer cites it;
- lookup: the lookup tool is called for a word, its result is the sense.
Cities come from tzdata; a fixed 50 are held out for the tool-use evaluation.
"""

import json
import random

TOOLS = [
    {"type": "function", "function": {
        "name": "get_weather", "description": "Get the current weather for a city.",
        "parameters": {"type": "object", "required": ["city"], "properties": {
            "city": {"type": "string", "description": "City name"},
            "days": {"type": "integer", "description": "Forecast length in days"}}}}},
    {"type": "function", "function": {
        "name": "lookup", "description": "Look a word up in the dictionary.",
        "parameters": {"type": "object", "required": ["word"], "properties": {
            "word": {"type": "string", "description": "The word"}}}}},
]

CONDITIONS = ("sunny", "cloudy", "rainy", "windy", "foggy", "snowy", "clear", "stormy")

DEFINE_ASK = ("What does \"{w}\" mean?", "Define {w}.", "What is the meaning of the word {w}?",
              "What does the word {w} mean?", "Can you define \"{w}\" for me?", "Explain the word {w}.")
WEATHER_ASK = ("What's the weather in {c}?", "What is the weather like in {c} today?",
               "Will it rain in {c}?", "How warm is it in {c} right now?",
               "Tell me the weather in {c}.", "Is it cold in {c}?")
FORECAST_ASK = ("Give me the {d}-day forecast for {c}.", "What will the weather be in {c} over the next {d} days?")
LOOKUP_ASK = ("Look up the word {w} in the dictionary.", "Please look up \"{w}\".",
              "Use the dictionary to find the meaning of {w}.")


# ------------------------------------------------------------------ rendering

def _escape(v):
    return v.replace("&", "&amp;").replace('"', "&quot;")


def tools_json(tools):
    return json.dumps(tools, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


class Renderer:
    """XTML segments -> ids with a k3_mini_tok.Tokenizer (each text piece its own segment)."""

    def __init__(self, tok):
        self.tok = tok
        self.o, self.c, self.s = tok.special("<|open|>"), tok.special("<|close|>"), tok.special("<|sep|>")
        self.eom = tok.special("<|end_of_msg|>")

    def seg(self, text):
        return self.tok.encode(text) if text else []

    def open(self, tag, attrs=()):
        ids = [self.o] + self.seg(tag)
        for k, v in attrs:
            ids += self.seg(" " + k) + self.seg('="') + self.seg(_escape(v)) + self.seg('"')
        return ids + [self.s]

    def close(self, tag):
        return [self.c] + self.seg(tag) + [self.s]

    def message(self, attrs, body):
        return self.open("message", attrs) + body + self.close("message") + [self.eom]

    def assistant_body(self, reasoning, content, calls=()):
        body = self.open("think") + self.seg(reasoning) + self.close("think")
        body += self.open("response") + self.seg(content) + self.close("response")
        if calls:
            body += self.open("tools")
            for i, (name, args) in enumerate(calls, start=1):
                body += self.open("call", [("tool", name), ("index", str(i))])
                for k, v in args:
                    t = ("boolean" if isinstance(v, bool) else "null" if v is None else
                         "number" if isinstance(v, (int, float)) else "string" if isinstance(v, str) else
                         "object" if isinstance(v, dict) else "array")
                    val = v if t == "string" else json.dumps(v, ensure_ascii=False)
                    body += self.open("argument", [("key", k), ("type", t)]) + self.seg(val)
                    body += self.close("argument")
                body += self.close("call")
            body += self.close("tools")
        return body

    def conversation(self, turns, tools=None):
        """turns: ("user", text) | ("assistant", reasoning, content, calls) | ("tool", name, index, content)."""
        ids = []
        if tools:
            decl = ("# Tools\nHere are the available tools, described in JSONSchema.\n\n"
                    "```json\n" + tools_json(tools) + "\n```")
            ids += self.message([("role", "system"), ("type", "tool-declare")], self.seg(decl))
        for t in turns:
            if t[0] == "user":
                ids += self.message([("role", "user")], self.seg(t[1]))
            elif t[0] == "assistant":
                ids += self.message([("role", "assistant")], self.assistant_body(*t[1:]))
            else:
                ids += self.message([("role", "tool"), ("tool", t[1]), ("index", str(t[2]))], self.seg(t[3]))
        return ids

    def generation_prompt(self):
        return self.open("message", [("role", "assistant")]) + self.open("think")


# ------------------------------------------------------------------ families

def split_cities(cities, n_held=50, seed=19):
    rng = random.Random(seed)
    c = list(cities)
    rng.shuffle(c)
    return sorted(c[n_held:]), sorted(c[:n_held])


def define_turns(rng, word, pos, sense):
    art = "an" if pos[0] in "aeiou" else "a"
    ask = rng.choice(DEFINE_ASK).format(w=word)
    reason = f"The user asks what \"{word}\" means. It is {art} {pos}; I give its main sense."
    return [("user", ask), ("assistant", reason, f"\"{word.capitalize()}\" is {art} {pos}: {sense}.", ())]


def weather_turns(rng, city):
    temp, cond = rng.randint(-15, 38), rng.choice(CONDITIONS)
    if rng.random() < 0.3:
        days = rng.randint(2, 7)
        ask = rng.choice(FORECAST_ASK).format(c=city, d=days)
        args = [("city", city), ("days", days)]
        reason = f"The user wants a {days}-day forecast for {city}. I call get_weather with the city and days."
        result = json.dumps({"city": city, "days": days, "temperature_c": temp, "condition": cond})
        answer = f"Over the next {days} days {city} will be mostly {cond}, around {temp} °C."
    else:
        ask = rng.choice(WEATHER_ASK).format(c=city)
        args = [("city", city)]
        reason = f"The user wants the weather in {city}. I call get_weather."
        result = json.dumps({"city": city, "temperature_c": temp, "condition": cond})
        answer = f"It is {temp} °C and {cond} in {city}."
    return [("user", ask), ("assistant", reason, "", [("get_weather", args)]),
            ("tool", "get_weather", 1, result),
            ("assistant", f"The tool says {city} is {cond} at {temp} °C.", answer, ())]


def lookup_turns(rng, word, pos, sense):
    ask = rng.choice(LOOKUP_ASK).format(w=word)
    return [("user", ask), ("assistant", f"The user wants \"{word}\" looked up. I call lookup.", "",
                            [("lookup", [("word", word)])]),
            ("tool", "lookup", 1, f"{word} ({pos}): {sense}"),
            ("assistant", "The dictionary answered.", f"\"{word.capitalize()}\" ({pos}) means {sense}.", ())]


def conversations(rng, n, entries, cities):
    """n conversations (turns, tools) mixing the three families, some two-exchange."""
    out = []
    for _ in range(n):
        turns, tools = [], None
        for _ in range(1 if rng.random() < 0.7 else 2):
            r = rng.random()
            if r < 0.4:
                turns += define_turns(rng, *rng.choice(entries)[:3])
            elif r < 0.85:
                turns += weather_turns(rng, rng.choice(cities))
                tools = TOOLS
            else:
                turns += lookup_turns(rng, *rng.choice(entries)[:3])
                tools = TOOLS
        if tools is None and rng.random() < 0.3:
            tools = TOOLS  # tools declared, none needed: answered directly
        out.append((turns, tools))
    return out
