#!/usr/bin/python3
"""`k3-tokgen chat` on bad requests: a one-line error naming the field and a
non-zero exit (2 for a request the format cannot express, 1 for text that is
not JSON), nothing on stdout; and --jsonl keeps going, one line per request.
Covers errors the encoder (not the reader) finds: a tool result with no
matching call and no name."""
import json
import os
import subprocess

from kimi_test_files import BIN, CONFIG, MODEL
TOKGEN = [os.path.join(BIN, "k3-tokgen"), "chat", MODEL, CONFIG]

USER = {"role": "user", "content": "hi"}
CASES = [  # (request bytes, exit code, text the error must contain)
    (b'{"messages": [', 1, "<stdin>: not valid JSON"),
    (b'{"messages": [{"role": "user", "content": "\xc3\x28"}]}', 1, "<stdin>: not valid JSON"),
    (json.dumps({"messages": [USER, {"role": "tool", "tool_call_id": "c9", "content": "x"}]}).encode(), 2,
     "messages[1]: tool result: tool_call_id 'c9' matches no call of the preceding assistant, and it has no name"),
    (json.dumps({"messages": [USER, {"role": "tool", "content": "x"}]}).encode(), 2,
     "messages[1]: tool result with no tool_call_id and no name"),
    (json.dumps({"messages": [USER, USER, USER, {"role": "assistant", "tool_calls": [
        {"id": "a", "function": {"name": "f", "arguments": "{}"}},
        {"id": "b", "function": {"name": "f", "arguments": '"text"'}}]}]}).encode(), 2,
     "messages[3].tool_calls[1].function.arguments: JSON but not an object (string)"),
    (json.dumps({"messages": [{"role": "robot", "content": "x"}]}).encode(), 2, "messages[0].role: unknown role 'robot'"),
    (json.dumps({"messages": [USER], "chat_template_kwargs": {"thinking_effort": "medium"}}).encode(), 2,
     "chat_template_kwargs.thinking_effort: 'medium'"),
    (json.dumps({"messages": [USER], "reasoning_effort": 3}).encode(), 2,
     "reasoning_effort: expected a string, got integer"),
]


def main():
    for body, code, want in CASES:
        r = subprocess.run(TOKGEN, input=body, capture_output=True)
        err = r.stderr.decode("utf-8", "replace")
        assert r.returncode == code, (body, r.returncode, err)
        assert r.stdout == b"", (body, r.stdout)
        assert err.count("\n") == 1 and want in err and err.startswith("k3-tokgen: <stdin>: "), (body, err)
    # Batch: every bad line gets its error, the good one its ids, in order.
    lines = [b for b, _, _ in CASES] + [json.dumps({"messages": [USER], "thinking": False}).encode()]
    r = subprocess.run(TOKGEN + ["--jsonl"], input=b"\n".join(lines) + b"\n", capture_output=True, check=True)
    out = [json.loads(l) for l in r.stdout.decode("utf-8").splitlines()]
    assert len(out) == len(lines), out
    for (_, _, want), got in zip(CASES, out):
        assert want.replace("<stdin>: ", "") in got["error"], (want, got)
    assert out[-1][-3:] == [163587, 12092, 163589], out[-1]
    # The developer role is read as system by the CLI, as a server does.
    dev = subprocess.run(TOKGEN + ["--text"], capture_output=True, check=True, input=json.dumps(
        {"messages": [{"role": "developer", "content": "d"}], "thinking": False}).encode()).stdout.decode("utf-8")
    assert dev.startswith("<|open|>\u2039message\u203a\u2039 role\u203a\u2039=\"\u203a\u2039system\u203a"), dev
    print("%d error cases ok" % len(CASES))


if __name__ == "__main__":
    main()
