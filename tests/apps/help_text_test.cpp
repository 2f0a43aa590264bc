// --help of every app and subcommand (apps/help_format.h): none of CLI11's own
// annotations (`{false}`, `UINT:UINT in [1 - 1099511627776]`, `args(1x)`,
// `TEXT:{...}`, `REQUIRED`), and, for k3-repack, k3-verify and k3-tokgen,
// every option that takes a value says its default or that it is required.
// k3-run's flags belong to its own issue; its help is held to the layout only.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "support/test_env.h"
#include "support/text_shape.h"

namespace {

struct OptionLine {
  std::string names, value, description;
};

// The "Options:" rows: "  NAMES[ VALUE]<2+ spaces>DESCRIPTION"; a long NAMES
// part puts the description on the next line, indented.
std::vector<OptionLine> optionLines(const std::string& help) {
  std::vector<std::string> lines;
  for (size_t pos = 0, nl; (nl = help.find('\n', pos)) != std::string::npos; pos = nl + 1)
    lines.push_back(help.substr(pos, nl - pos));
  std::vector<OptionLine> out;
  bool inOptions = false;
  for (size_t i = 0; i < lines.size(); ++i) {
    const std::string& l = lines[i];
    if (l == "Options:") {
      inOptions = true;
      continue;
    }
    if (!inOptions || l.rfind("  -", 0) != 0) {
      if (!l.empty() && l[0] != ' ') inOptions = false;
      continue;
    }
    const std::string body = l.substr(2);
    const size_t gap = body.find("  ");
    std::string head = body.substr(0, gap);
    std::string desc = gap == std::string::npos ? "" : body.substr(body.find_first_not_of(' ', gap));
    if (gap == std::string::npos && i + 1 < lines.size()) desc = lines[i + 1].substr(lines[i + 1].find_first_not_of(' '));
    const size_t sp = head.find(' ');
    out.push_back({head.substr(0, sp), sp == std::string::npos ? "" : head.substr(sp + 1), desc});
  }
  return out;
}

std::string helpOf(const std::string& tool, std::vector<std::string> args) {
  args.push_back("--help");
  const k3test::RunResult r = k3test::runTool(tool, args);
  EXPECT_EQ(r.exitCode, 0) << tool << " " << r.err;
  EXPECT_EQ(r.err, "");
  return r.out;
}

void expectNoCli11Artefacts(const std::string& what, const std::string& help) {
  for (const char* artefact : {"{false}", "{true}", " in [", "TEXT:", "INT:", "UINT", "FLOAT", "REQUIRED"})
    EXPECT_EQ(help.find(artefact), std::string::npos) << what << " shows '" << artefact << "':\n" << help;
  EXPECT_FALSE(k3test::hasCountNote(help)) << what << " shows CLI11's (Nx):\n" << help;
}

struct HelpCase {
  const char* tool;
  std::vector<std::string> sub;
};

TEST(HelpText, EveryOptionStatesItsDefaultAndNoCli11Artefacts) {
  const std::vector<HelpCase> cases = {
      {"k3-repack", {}},          {"k3-verify", {}},           {"k3-tokgen", {}},          {"k3-tokgen", {"encode"}},
      {"k3-tokgen", {"decode"}},  {"k3-tokgen", {"chat"}},     {"k3-tokgen", {"parse"}},   {"k3-tokgen", {"bench"}},
  };
  for (const HelpCase& c : cases) {
    const std::string what = std::string(c.tool) + (c.sub.empty() ? "" : " " + c.sub[0]);
    const std::string help = helpOf(c.tool, c.sub);
    expectNoCli11Artefacts(what, help);
    const std::vector<OptionLine> options = optionLines(help);
    EXPECT_GE(options.size(), 2u) << what << ":\n" << help;
    for (const OptionLine& o : options) {
      if (o.value.empty()) continue;  // a flag: absent = off
      const bool states = o.description.find("default") != std::string::npos ||
                          o.description.find("(required)") != std::string::npos;
      EXPECT_TRUE(states) << what << " " << o.names << " " << o.value << ": no default in '" << o.description << "'";
    }
  }
}

TEST(HelpText, ValuesAreWordsOrChoicesWithTheirDefaults) {
  const std::string repack = helpOf("k3-repack", {});
  auto row = [](const std::string& help, const std::string& names) {
    for (const OptionLine& o : optionLines(help))
      if (o.names == names) return o;
    ADD_FAILURE() << names << " not in:\n" << help;
    return OptionLine{};
  };
  OptionLine bits = row(repack, "--bits");
  EXPECT_EQ(bits.value, "4|8|16");
  EXPECT_NE(bits.description.find("(default: 8)"), std::string::npos) << bits.description;
  OptionLine io = row(repack, "--io");
  EXPECT_EQ(io.value, "auto|buffered|direct");
  EXPECT_NE(io.description.find("(default: auto)"), std::string::npos) << io.description;
  EXPECT_EQ(row(repack, "--threads").value, "N");
  EXPECT_NE(repack.find("Usage: "), std::string::npos);
  EXPECT_NE(repack.find(" SRC DST"), std::string::npos) << repack;
  const std::string verify = helpOf("k3-verify", {});
  EXPECT_EQ(row(verify, "--io").value, "auto|buffered|direct");
  EXPECT_NE(row(verify, "--io").description.find("(default: auto)"), std::string::npos);
  const std::string bench = helpOf("k3-tokgen", {"bench"});
  EXPECT_NE(row(bench, "--repeat").description.find("(default: 3)"), std::string::npos);
  EXPECT_NE(row(bench, "--file").description.find("(required)"), std::string::npos);
  // A positional of several values: its words, not CLI11's "args(1x)".
  EXPECT_NE(helpOf("k3-tokgen", {"encode"}).find("encode [OPTIONS] SOURCE [TEXT]\n"), std::string::npos)
      << helpOf("k3-tokgen", {"encode"});
}

TEST(HelpText, RunHelpHasTheSharedLayout) {
  const std::string help = helpOf("k3-run", {});
  expectNoCli11Artefacts("k3-run", help);
  EXPECT_GE(optionLines(help).size(), 10u) << help;
}

}  // namespace
