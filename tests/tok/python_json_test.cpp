// Python json.dumps, byte for byte, checked against /usr/bin/python3 itself:
// floats given as exact hex (float.fromhex), and random JSON documents
// (number literals of every shape, big integers, 1e400, escapes, control
// characters, non-ASCII, surrogate-pair escapes, repeated keys) that Python
// loads with json.loads and dumps in the three styles the chat format uses.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <sstream>

#include "k3/io/json_text.h"
#include "k3/tok/json_value.h"
#include "k3/tok/python_json.h"
#include "support/test_env.h"

namespace {

using k3::tok::JsonValue;

std::vector<std::string> lines(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string l; std::getline(in, l);) out.push_back(l);
  return out;
}

// Runs `script` on the input file with Debian's python; returns stdout lines.
std::vector<std::string> python(const std::string& tag, const std::string& script, const std::string& input) {
  const std::string dir = k3test::freshDir(tag);
  k3test::writeFile(dir + "/t.py", script);
  k3test::writeFile(dir + "/in.txt", input);
  k3test::RunResult r = k3test::run({"/usr/bin/python3", dir + "/t.py", dir + "/in.txt"});
  EXPECT_EQ(r.exitCode, 0) << r.err;
  return lines(r.out);
}

std::string hexFloat(double x) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%a", x);
  return buf;
}

TEST(TokPythonJson, FloatReprMatchesPython) {
  std::vector<double> xs = {0.0, -0.0, 1.0, -1.0, 0.1, 0.5, 1e16, 1e15, 9999999999999998.0, 1e-4, 1e-5, 0.00012,
                            1.5e300, 1e308, 5e-324, 2.2250738585072014e-308, 1.7976931348623157e308, 123456789.0,
                            1e22, 1e21, 0.3, 2.0 / 3.0, 100.0, 1234567890123456.7, 12345678901234567.0,
                            INFINITY, -INFINITY, NAN};
  std::mt19937_64 rng(7);
  for (int i = 0; i < 3000; ++i) {
    uint64_t bits = rng();
    double x;
    std::memcpy(&x, &bits, sizeof x);
    if (i % 3 == 0) x = std::ldexp(static_cast<double>(rng() % 100000), static_cast<int>(rng() % 120) - 60);
    if (i % 3 == 1) x = static_cast<double>(rng() % 2000000 - 1000000) * std::pow(10.0, static_cast<int>(rng() % 50) - 25);
    xs.push_back(x);
  }
  std::string in;
  for (double x : xs) in += hexFloat(x) + "\n";
  const auto want = python("pyjson-float",
                           "import json, sys\n"
                           "for l in open(sys.argv[1]):\n"
                           "    l = l.strip()\n"
                           "    x = float('nan') if 'nan' in l else float('inf') * (-1 if l[0] == '-' else 1) if 'inf' in l "
                           "else float.fromhex(l)\n"
                           "    print(json.dumps(x))\n",
                           in);
  ASSERT_EQ(want.size(), xs.size());
  int bad = 0;
  for (size_t i = 0; i < xs.size(); ++i)
    if (k3::tok::pyFloatRepr(xs[i]) != want[i] && ++bad < 5)
      ADD_FAILURE() << hexFloat(xs[i]) << ": ours " << k3::tok::pyFloatRepr(xs[i]) << ", python " << want[i];
  EXPECT_EQ(bad, 0);
}

// Random JSON text: one document per line.
class DocGen {
 public:
  explicit DocGen(uint64_t seed) : rng_(seed) {}
  std::string doc() { return value(0); }

 private:
  size_t pick(size_t n) { return static_cast<size_t>(rng_() % n); }

  std::string number() {
    static const char* const literals[] = {"0", "-0", "1", "-1", "42", "1.0", "-0.0", "0.1", "1e16", "1E16", "1e-5",
                                           "1e+2", "1.5e300", "1e400", "-1e400", "1e-400", "123456789012345678901234567890",
                                           "-98765432109876543210", "9007199254740993", "18446744073709551616",
                                           "0.000123", "3.14159265358979323846", "2.5E-7", "100000000000000000000.0"};
    if (pick(3)) return literals[pick(std::size(literals))];
    std::string s = pick(2) ? "-" : "";
    s += std::to_string(pick(1000000));
    if (pick(2)) s += "." + std::to_string(pick(100000));
    if (pick(2)) s += (pick(2) ? "e" : "E") + std::string(pick(2) ? "-" : "+") + std::to_string(pick(40));
    return s;
  }

  std::string string() {
    static const char* const pieces[] = {"a", "Z", " ", "\\\"", "\\\\", "\\/", "\\n", "\\r", "\\t", "\\b", "\\f",
                                         "\\u0000", "\\u001f", "\\u007f", "\x7f", "\\u00e9", "é", "你好", "😊",
                                         "\\ud83d\\ude00", "\\u2028", "\xe2\x80\xa8", "&", "<|open|>", "'", "ü",
                                         "\\u20AC", "key", "\xc2\x85", "\xef\xbb\xbf"};
    std::string s = "\"";
    for (size_t n = pick(6); n > 0; --n) s += pieces[pick(std::size(pieces))];
    return s + "\"";
  }

  std::string value(int depth) {
    const size_t k = pick(depth > 3 ? 5 : 7);
    if (k == 0) return pick(2) ? "true" : "false";
    if (k == 1) return "null";
    if (k == 2 || k == 3) return number();
    if (k == 4) return string();
    const std::string sp = pick(3) ? "" : " ";
    std::string out;
    const size_t n = pick(4);
    if (k == 5) {
      out = "[";
      for (size_t i = 0; i < n; ++i) out += (i ? "," + sp : "") + value(depth + 1);
      return out + "]";
    }
    out = "{";
    for (size_t i = 0; i < n; ++i) {
      // A small key set, so repeated keys (dict: first place, last value) occur.
      static const char* const keys[] = {"\"a\"", "\"b\"", "\"é\"", "\"B\"", "\"\\u00e9\"", "\"z1\"", "\"\"", "\"😊\""};
      out += (i ? "," + sp : "") + std::string(keys[pick(std::size(keys))]) + ":" + sp + value(depth + 1);
    }
    return out + "}";
  }

  std::mt19937_64 rng_;
};

TEST(TokPythonJson, DumpsMatchesPythonOnRandomDocuments) {
  DocGen gen(11);
  std::vector<std::string> docs;
  for (int i = 0; i < 2000; ++i) docs.push_back(gen.doc());
  std::string in;
  for (const auto& d : docs) in += d + "\n";
  const auto want = python("pyjson-docs",
                           "import json, sys\n"
                           "for l in open(sys.argv[1], encoding='utf-8'):\n"
                           "    v = json.loads(l)\n"
                           "    print(json.dumps(v, ensure_ascii=False).replace('\\u2028', '<LS>').replace('\\x85', '<NEL>'))\n"
                           "    print(json.dumps(v, sort_keys=True, separators=(',', ':'), ensure_ascii=False)"
                           ".replace('\\u2028', '<LS>').replace('\\x85', '<NEL>'))\n"
                           "    print(json.dumps(v))\n",
                           in);
  ASSERT_EQ(want.size(), 3 * docs.size());
  auto visible = [](std::string s) {  // the same line-separator marking as the script
    for (auto [from, to] : {std::pair<std::string, std::string>{"\xe2\x80\xa8", "<LS>"}, {"\xc2\x85", "<NEL>"}})
      for (size_t p; (p = s.find(from)) != std::string::npos;) s.replace(p, from.size(), to);
    return s;
  };
  int bad = 0;
  for (size_t i = 0; i < docs.size(); ++i) {
    const JsonValue v = k3::tok::parseJson(docs[i], "doc");
    const std::string plain = visible(k3::tok::pyDumps(v, {}));
    const std::string canonical = visible(k3::tok::pyDumps(v, {.sortKeys = true, .compact = true}));
    // ensure_ascii=True: the existing writer's escaping inside the same structure.
    std::string ascii;
    if (v.kind == JsonValue::Kind::String) ascii = k3::jsonString(v.text);
    if (plain != want[3 * i] || canonical != want[3 * i + 1] || (!ascii.empty() && ascii != want[3 * i + 2])) {
      if (++bad < 5)
        ADD_FAILURE() << docs[i] << "\n ours   " << plain << "\n python " << want[3 * i] << "\n ours   " << canonical
                      << "\n python " << want[3 * i + 1] << "\n ascii  " << ascii << "\n python " << want[3 * i + 2];
    }
  }
  EXPECT_EQ(bad, 0);
}

TEST(TokPythonJson, ValueKeepsDictSemanticsAndLiterals) {
  const JsonValue v = k3::tok::parseJson(R"({"b": 1, "a": 2, "b": 3, "n": 123456789012345678901234567890, "z": -0})", "t");
  ASSERT_EQ(v.members.size(), 4u);
  EXPECT_EQ(v.members[0].first, "b");
  EXPECT_EQ(v.members[0].second.text, "3");  // first place, last value
  EXPECT_EQ(k3::tok::pyDumps(v, {}), R"({"b": 3, "a": 2, "n": 123456789012345678901234567890, "z": 0})");
  EXPECT_EQ(k3::tok::pyDumps(v, {.sortKeys = true, .compact = true}),
            R"({"a":2,"b":3,"n":123456789012345678901234567890,"z":0})");
}

TEST(TokPythonJson, RefusesWhatIsNotJson) {
  for (const char* bad : {"", "{", "[1,]", "{\"a\" 1}", "[1 2]", "01", "1.", ".5", "NaN", "Infinity", "{} x", "[1]]",
                          "\"\\ud800\"", "\"\xff\"", "tru", "nul", "{'a': 1}", "\"a\nb\""}) {
    JsonValue v;
    EXPECT_FALSE(k3::tok::tryParseJson(bad, v)) << bad;
  }
  JsonValue v;
  EXPECT_TRUE(k3::tok::tryParseJson("  {\"a\": [1, {\"b\": null}]}\n", v));
  EXPECT_TRUE(k3::tok::tryParseJson("5", v));
  EXPECT_EQ(v.kind, JsonValue::Kind::Int);
}

}  // namespace
