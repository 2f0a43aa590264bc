// The --help layout shared by the four apps. CLI11's default formatter prints
// its own type annotations (`INT:{4,8,16}`, `UINT:UINT in [1 - 1099511627776]`),
// a negatable flag's default as `--think,--no-think{false}` and a positional
// taking several values as `args(1x)`; none of that means anything to a user.
// Here an option shows its value as a word (`N`, `X`, `TEXT`) or its choices
// (`4|8|16`), a required option says so, and every option taking a value
// states its default, from the bound variable's value at parse time, unless
// its description already says what the default is.
#pragma once

#include <CLI/CLI.hpp>

#include <algorithm>
#include <cctype>
#include <memory>
#include <string>
#include <vector>

namespace k3app {

class HelpFormatter : public CLI::Formatter {
 public:
  HelpFormatter() { column_width(32); }

  std::string make_option_name(const CLI::Option* opt, bool positional) const override {
    if (positional) return positionalName(opt);
    std::string names;
    for (const auto& s : opt->get_snames()) names += (names.empty() ? "-" : ",-") + s;
    for (const auto& l : opt->get_lnames()) names += (names.empty() ? "--" : ",--") + l;
    return names;
  }

  std::string make_option_opts(const CLI::Option* opt) const override {
    if (opt->get_positional() || takesNoValue(opt)) return "";  // the name says it; a flag takes none
    std::string v = valueLabel(opt);
    if (opt->get_expected_max() >= CLI::detail::expected_max_vector_size) v += " ...";
    return " " + v;
  }

  std::string make_option_desc(const CLI::Option* opt) const override {
    std::string d = opt->get_description();
    if (opt->get_required()) return opt->get_positional() ? d : d + " (required)";
    if (const std::string def = shownDefault(opt); !def.empty()) d += " (default: " + def + ")";
    return d;
  }

  // A positional in the usage line: its name, "..." when it takes several values.
  std::string make_option_usage(const CLI::Option* opt) const override {
    std::string n = positionalName(opt);
    if (opt->get_option_text().empty() && opt->get_expected_max() > 1) n += "...";
    return opt->get_required() ? n : "[" + n + "]";
  }

  // The value word: an option's own text, else its choices, else its type as a word.
  static std::string valueLabel(const CLI::Option* opt) {
    if (!opt->get_option_text().empty()) return opt->get_option_text();
    const std::string type = opt->get_type_name();  // "INT", "TEXT:{a,b}", "UINT:POSITIVE", ...
    for (size_t at = type.find(':'); at != std::string::npos; at = type.find(':', at + 1)) {
      if (type.compare(at + 1, 1, "{") != 0) continue;
      const size_t end = type.find('}', at);
      if (end == std::string::npos) break;
      std::string choices = type.substr(at + 2, end - at - 2);
      std::replace(choices.begin(), choices.end(), ',', '|');
      return choices;
    }
    const std::string base = type.substr(0, type.find(':'));
    if (base == "INT" || base == "UINT") return "N";
    if (base == "FLOAT") return "X";
    return base.empty() ? "VALUE" : base;
  }

 private:
  static bool takesNoValue(const CLI::Option* opt) { return opt->get_expected_max() == 0; }  // a flag

  static std::string positionalName(const CLI::Option* opt) {
    return opt->get_option_text().empty() ? opt->get_name(true, false) : opt->get_option_text();
  }

  // The default worth printing: none for flags, none when the description
  // already names it, none for an empty value (nothing, not "").
  static std::string shownDefault(const CLI::Option* opt) {
    if (takesNoValue(opt)) return "";
    std::string lower = opt->get_description();
    std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return std::tolower(c); });
    if (lower.find("default") != std::string::npos) return "";
    const std::string def = opt->get_default_str();
    if (def.empty() || def == "[]" || def == "\"\"") return "";
    return def;
  }
};

// Installs HelpFormatter on app and every subcommand, and records each
// option's current value as its default (CLI11 captures it only on request).
inline void useHelpFormatter(CLI::App& app) {
  app.formatter(std::make_shared<HelpFormatter>());
  for (CLI::Option* opt : app.get_options())
    if (opt->get_default_str().empty()) opt->capture_default_str();
  for (CLI::App* sub : app.get_subcommands([](CLI::App*) { return true; })) useHelpFormatter(*sub);
}

}  // namespace k3app
