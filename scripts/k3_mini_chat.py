#!/usr/bin/python3
"""k3-mini's chat conversations: template families over the corpus data, and
their XTML rendering (spec 7.6) to token ids.

Families (thinking on, every assistant turn has a short think channel):
- define: a word is asked about, the answer is its GCIDE sense;
- weather: get_weather is declared, called with typed arguments (city: string,
  optional days: number), the tool result comes back, the answer cites it;
- lookup: the lookup tool is called for a word, its result is the sense.
Cities come from tzdata; a fixed 50 are held out for the tool-use evaluation.
Conversations are OpenAI request dicts; scripts/xtml_ref.py (the project's
reference renderer) turns them into ids, so training ids are exactly what the
encoder produces.
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


# ------------------------------------------------------------------ requests

def request(turns, tools=None, effort=None, add_generation_prompt=False):
    """turns -> an OpenAI chat-completions request dict (rendered by xtml_ref).

    turns: ("user", text) | ("assistant", reasoning, content, calls) |
    ("tool", name, content); calls = [(tool name, [(key, value), ...])]."""
    msgs, n = [], 0
    for t in turns:
        if t[0] == "user":
            msgs.append({"role": "user", "content": t[1]})
        elif t[0] == "assistant":
            m = {"role": "assistant", "reasoning_content": t[1], "content": t[2]}
            if t[3]:
                m["tool_calls"] = []
                for name, args in t[3]:
                    n += 1
                    m["tool_calls"].append({"id": f"call_{n}", "type": "function", "function": {
                        "name": name, "arguments": json.dumps(dict(args))}})
            msgs.append(m)
        else:
            msgs.append({"role": "tool", "tool_call_id": f"call_{n}", "content": t[2]})
    req = {"messages": msgs, "add_generation_prompt": add_generation_prompt,
           "chat_template_kwargs": {"thinking": True, "thinking_effort": effort}}
    if tools:
        req["tools"] = tools
    return req


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
    return [("user", ask), ("assistant", reason, f"\"{word}\" is {art} {pos}: {sense}.", ())]


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
            ("tool", "get_weather", result),
            ("assistant", f"The tool says {city} is {cond} at {temp} °C.", answer, ())]


def lookup_turns(rng, word, pos, sense):
    ask = rng.choice(LOOKUP_ASK).format(w=word)
    return [("user", ask), ("assistant", f"The user wants \"{word}\" looked up. I call lookup.", "",
                            [("lookup", [("word", word)])]),
            ("tool", "lookup", f"{word} ({pos}): {sense}"),
            ("assistant", "The dictionary answered.", f"\"{word}\" ({pos}) means {sense}.", ())]


EFFORTS = (None, None, None, None, None, "max", "max", "max", "low", "high")


def conversations(rng, n, entries, cities):
    """n requests mixing the three families, some two-exchange; half carry a
    thinking-effort turn (k3-run --chat sends effort max), half none."""
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
        out.append(request(turns, tools, rng.choice(EFFORTS)))
    return out
