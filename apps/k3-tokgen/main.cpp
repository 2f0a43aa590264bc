// k3-tokgen: writes a Hugging Face tokenizer.json for a Kimi tiktoken
// vocabulary, checks our encoder on a corpus, and encodes/decodes from the
// shell. Thin: flags here, all work in k3/tok.
#include <unistd.h>

#include <CLI/CLI.hpp>
#include "../cli_parse.h"
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "../app_errors.h"
#include "k3/io/error.h"
#include "k3/io/input_file.h"
#include "k3/io/output_file.h"
#include "k3/tok/hf_tokenizer_json.h"
#include "k3/tok/tokenizer.h"
#include "k3/io/json_text.h"
#include "k3/tok/chat_encoder.h"
#include "k3/tok/chat_output_message.h"
#include "k3/tok/chat_request.h"
#include "k3/tok/corpus_check.h"
#include "k3/tok/id_list_input.h"
#include "k3/tok/id_text.h"
#include "k3/tok/regex_pretokenizer.h"

namespace fs = std::filesystem;
using k3::tok::Tokenizer;

namespace {

// SOURCE is a snapshot directory, or a tiktoken.model path optionally followed
// by a tokenizer_config.json path.
Tokenizer loadSource(const std::vector<std::string>& source) {
  if (source.empty() || source.size() > 2)
    k3::fail(k3::ErrorKind::Usage, "expected a snapshot directory or TIKTOKEN_MODEL [TOKENIZER_CONFIG]");
  if (source.size() == 1 && fs::is_directory(source[0])) return Tokenizer::fromDirectory(source[0]);
  return Tokenizer::fromFiles(source[0], source.size() == 2 ? source[1] : std::string());
}

std::string defaultOutput(const std::vector<std::string>& source) {
  fs::path base = fs::is_directory(source[0]) ? fs::path(source[0]) : fs::path(source[0]).parent_path();
  return (base / "tokenizer.json").string();
}

// Standard input, capped like a file of that kind would be (< /dev/zero ends
// with a one-line error, not bad_alloc).
std::string readStdin(const k3::InputCap& cap) { return k3::readStreamCapped(STDIN_FILENO, "<stdin>", cap); }

// The files SOURCE names: -o must not replace one of them.
std::vector<k3::FileId> sourceFiles(const std::vector<std::string>& source) {
  std::vector<std::string> paths = source;
  if (source.size() == 1 && fs::is_directory(source[0]))
    paths = {source[0] + "/tiktoken.model", source[0] + "/tokenizer_config.json"};
  std::vector<k3::FileId> ids;
  for (const auto& p : paths)
    if (k3::FileId id = k3::fileIdOf(p); id.ino != 0) ids.push_back(id);
  return ids;
}

// encode's positionals: SOURCE, then the text. A directory SOURCE is one
// argument, a TIKTOKEN_MODEL may be followed by its TOKENIZER_CONFIG.
struct EncodeArgs {
  std::vector<std::string> source;
  std::optional<std::string> text;
};
EncodeArgs splitEncodeArgs(const std::vector<std::string>& args) {
  const size_t sourceLen = !args.empty() && fs::is_directory(args[0]) ? 1 : std::min<size_t>(args.size(), 2);
  if (args.size() > sourceLen + 1)
    k3::fail(k3::ErrorKind::Usage, "encode: expected SOURCE [TEXT], got ", args.size(), " arguments (quote the text)");
  EncodeArgs e;
  e.source.assign(args.begin(), args.begin() + static_cast<std::ptrdiff_t>(sourceLen));
  if (args.size() > sourceLen) e.text = args.back();
  return e;
}

// Temp + fsync + rename (k3::AtomicOutput): never over an input or a special file.
void writeAtomically(const std::string& path, const std::string& bytes, const std::vector<k3::FileId>& inputs) {
  if (path == "-") {
    std::fwrite(bytes.data(), 1, bytes.size(), stdout);
    return;
  }
  k3::AtomicOutput out(path, inputs);
  out.write(bytes);
  out.commit();
}

// Each subcommand's flags, filled by the parse.
struct EncodeFlags {
  std::vector<std::string> args;  // SOURCE [TEXT]
  std::string text;
  bool textGiven = false, allowSpecial = false, json = false;
};
struct DecodeFlags {
  std::vector<std::string> source, ids;
  bool json = false;
};
struct ChatFlags {
  std::vector<std::string> source;
  std::string file;
  bool json = false, text = false, jsonl = false;
};
struct ParseFlags {
  std::vector<std::string> args;  // SOURCE (1 or 2 paths) then IDS
  std::string tools;
  bool noThinking = false, json = false;
};
struct BenchFlags {
  std::vector<std::string> source;
  std::string file;
  int repeat = 3;
};
struct WriteFlags {  // no subcommand: write tokenizer.json and/or check a corpus
  std::vector<std::string> source;
  std::string output, corpus;
  bool json = false, noWrite = false;
};

// A SOURCE path that does not exist: when no text came another way it is most
// likely the text itself (`encode tiktoken.model hello` reads "hello" as the
// TOKENIZER_CONFIG), so the error says how text is given.
void checkEncodeSourceExists(const EncodeArgs& e, bool textElsewhere) {
  for (size_t i = 0; i < e.source.size(); ++i) {
    if (fs::exists(e.source[i])) continue;
    const std::string what = i == 0 ? "no such file or directory (SOURCE: a snapshot directory or TIKTOKEN_MODEL)"
                                    : "no such file (after a TIKTOKEN_MODEL comes its TOKENIZER_CONFIG)";
    if (textElsewhere) k3::fail(k3::ErrorKind::Missing, "encode: ", e.source[i], ": ", what);
    k3::fail(k3::ErrorKind::Missing, "encode: ", e.source[i], ": ", what,
             i == 0 ? "; to encode text, give SOURCE first, then the text, -t TEXT or stdin"
                    : "; to encode it as text, use -t TEXT or stdin");
  }
}

int encodeMain(const EncodeFlags& f) {
  const EncodeArgs e = splitEncodeArgs(f.args);
  if (e.text && f.textGiven) k3::fail(k3::ErrorKind::Usage, "encode: the text given twice (TEXT and --text)");
  checkEncodeSourceExists(e, e.text || f.textGiven);
  Tokenizer tok = loadSource(e.source);
  const std::string text = e.text ? *e.text : f.textGiven ? f.text : readStdin(k3::kTextInput);
  std::cout << k3::tok::formatIds(tok.encode(text, f.allowSpecial), f.json) << "\n";
  return 0;
}

int decodeMain(const DecodeFlags& f) {
  Tokenizer tok = loadSource(f.source);
  std::string idText;
  if (f.ids.empty()) {
    idText = readStdin(k3::kIdListInput);
  } else {
    for (const auto& s : f.ids) idText += s + " ";
  }
  std::string bytes = tok.decode(k3::tok::parseIds(idText, f.ids.empty() ? "<stdin>" : "--ids"));
  if (f.json) {
    std::cout << k3::tok::decodeJson(bytes) << "\n";
  } else {
    std::fwrite(bytes.data(), 1, bytes.size(), stdout);
  }
  return 0;
}

int chatMain(const ChatFlags& f) {
  Tokenizer tok = loadSource(f.source);
  const std::string json =
      f.file.empty() ? readStdin(k3::kChatRequestInput) : k3::readInputFile(f.file, k3::kChatRequestInput);
  const std::string origin = f.file.empty() ? "<stdin>" : f.file;
  // As an OpenAI-compatible server does (spec 7.6), the CLI reads role
  // `developer` as `system`; the encoder itself rejects it.
  const k3::tok::ChatRequestReadOptions readOpts{.developerAsSystem = true};
  // The encoder's errors name the field; the file is added here.
  auto render = [&](std::string_view text, const std::string& where) {
    const k3::tok::ChatRequest req = k3::tok::parseChatRequest(text, where, readOpts);
    try {
      return k3::tok::renderChat(tok, req);
    } catch (const k3::Error& e) {
      throw k3::Error(e.kind(), where + ": " + e.what());
    }
  };
  if (f.jsonl) {
    std::istringstream lines(json);
    std::string line, out;
    for (size_t n = 1; std::getline(lines, line); ++n) {
      if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
      try {
        out += k3::tok::formatIds(render(line, origin + ":" + std::to_string(n)).ids, true) + "\n";
      } catch (const k3::Error& e) {
        out += k3::JsonObject(k3::JsonObject::Spacing::Python).add("error", e.what()).str() + "\n";
      }
    }
    std::cout << out;
    return 0;
  }
  const k3::tok::RenderedChat r = render(json, origin);
  if (f.text) std::cout << k3::tok::describeSegments(r.segments) << "\n";
  else std::cout << k3::tok::formatIds(r.ids, f.json) << "\n";
  return 0;
}

int parseMain(const ParseFlags& f) {
  Tokenizer tok = loadSource(std::vector<std::string>(f.args.begin(), f.args.end() - 1));
  std::vector<k3::tok::ToolSpec> tools;
  if (!f.tools.empty())
    tools = k3::tok::parseChatRequest(k3::readInputFile(f.tools, k3::kChatRequestInput), f.tools,
                                      {.developerAsSystem = true})
                .tools;
  const std::vector<uint32_t> ids = k3::tok::readIdList(f.args.back(), "IDS");
  const k3::tok::ParsedChatOutput r = k3::tok::parseChatOutput(tok, ids, tools, !f.noThinking);
  if (r.error) k3::fail(k3::ErrorKind::Format, "malformed model output: ", r.error->message());
  if (f.json) std::cout << k3::tok::assistantChoiceJson(r.message, r.finishReason) << "\n";
  else std::cout << k3::tok::describeAssistantMessage(r.message, r.finishReason);
  if (!r.end.complete) std::cerr << "k3-tokgen: warning: the output stops " << r.end.state << " (finish_reason length)\n";
  return 0;
}

int benchMain(const BenchFlags& f) {
  Tokenizer tok = loadSource(f.source);
  const std::string text = k3::readInputFile(f.file, k3::kTextInput);
  auto bestOf = [&](auto&& fn) {
    double best = 1e300;
    for (int i = 0; i < f.repeat; ++i) {
      auto t0 = std::chrono::steady_clock::now();
      fn();
      best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    }
    return best;
  };
  size_t tokens = 0, pieces = 0, regexPieces = 0;
  double encodeS = bestOf([&] { tokens = tok.encode(text).size(); });
  // Pre-tokenizer alone: the hand-written matcher vs PCRE2 JIT.
  double splitS = bestOf([&] {
    pieces = 0;
    tok.preTokenizer().split(text, [&](std::string_view) { ++pieces; });
  });
  k3::tok::RegexPreTokenizer regex;
  k3::tok::RegexPreTokenizer::Scratch scratch(regex);
  double regexS = bestOf([&] {
    regexPieces = 0;
    regex.split(text, scratch, [&](std::string_view) { ++regexPieces; });
  });
  const double mb = double(text.size()) / 1e6;
  k3::JsonObject j(k3::JsonObject::Spacing::Python);
  j.add("bytes", text.size()).add("tokens", tokens).add("seconds", encodeS).add("mb_per_s", mb / encodeS);
  j.add("pieces", pieces).add("pretokenize_mb_per_s", mb / splitS).add("regex_pieces", regexPieces);
  j.add("regex_pretokenize_mb_per_s", mb / regexS);
  std::cout << j.str() << "\n";
  return 0;
}

// Writes tokenizer.json (unless --check --no-write) and prints what it holds.
void writeTokenizerJson(const WriteFlags& f, const Tokenizer& tok) {
  const std::string path = f.output.empty() ? defaultOutput(f.source) : f.output;
  k3::tok::HfJsonStats stats;
  const std::string text = k3::tok::buildHfTokenizerJson(tok, &stats);
  writeAtomically(path, text, sourceFiles(f.source));
  if (path == "-") return;
  if (f.json) {
    k3::JsonObject j(k3::JsonObject::Spacing::Python);
    j.add("output", path).add("bytes", text.size()).add("vocab", stats.vocab).add("merges", stats.merges);
    j.add("added_tokens", stats.addedTokens).add("unreachable_tokens", stats.unreachable);
    j.add("added_shadowed_by_ranks", stats.addedShadowed);
    std::cout << j.str() << "\n";
  } else {
    std::cout << "wrote " << path << ": " << text.size() << " bytes, " << stats.vocab << " ranks, " << stats.merges
              << " merges, " << stats.addedTokens << " added tokens (" << stats.unreachable
              << " ranks only reachable as whole pieces)\n";
  }
  if (stats.addedShadowed)
    std::cerr << "k3-tokgen: warning: " << stats.addedShadowed
              << " added token(s) have the same text as a rank; Hugging Face will use the rank's id for them\n";
}

int writeMain(const WriteFlags& f) {
  Tokenizer tok = loadSource(f.source);
  int rc = 0;
  if (!f.corpus.empty()) {
    k3::tok::CheckReport rep = k3::tok::checkCorpus(tok, f.corpus);
    std::cout << (f.json ? k3::tok::checkReportJson(rep) : k3::tok::checkReportText(rep)) << std::flush;
    rc = rep.failed() ? 1 : 0;
  }
  if (f.corpus.empty() || !f.noWrite) writeTokenizerJson(f, tok);
  return rc;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"k3-tokgen: Hugging Face tokenizer.json for the Kimi K3 tiktoken vocabulary, corpus checks, "
               "and encode/decode from the shell.\n"
               "  k3-tokgen SOURCE [-o tokenizer.json] [--check CORPUS] [--json]\n"
               "  k3-tokgen encode SOURCE [TEXT] [--allow-special] [--json]  (or -t TEXT; stdin without either)\n"
               "  k3-tokgen decode SOURCE [--ids ID...] [--json]             (ids from stdin without --ids)\n"
               "  k3-tokgen chat SOURCE [-f REQUEST.json] [--json|--text]    (JSON from stdin without -f)\n"
               "  k3-tokgen chat SOURCE --jsonl [-f REQUESTS.jsonl]          (one request per line)\n"
               "  k3-tokgen parse SOURCE IDS [--no-thinking] [--tools REQUEST.json] [--json]\n"
               "                                  (IDS: what the model generated, a comma list or a file)\n"
               "  k3-tokgen bench SOURCE --file TEXT_FILE [--repeat N]\n"
               "SOURCE = snapshot directory (tiktoken.model + optional tokenizer_config.json) or\n"
               "         TIKTOKEN_MODEL [TOKENIZER_CONFIG]"};
  app.set_version_flag("--version", std::string("k3-tokgen ") + K3KIT_VERSION);
  app.require_subcommand(0, 1);

  WriteFlags wr;
  app.add_option("source", wr.source, "snapshot directory, or TIKTOKEN_MODEL [TOKENIZER_CONFIG]")->option_text("SOURCE");
  app.add_option("-o,--output", wr.output, "tokenizer.json path ('-' = stdout; default: next to tiktoken.model)");
  app.add_option("--check", wr.corpus, "JSON-lines corpus: strings, or {\"text\",\"ids\"[,\"allow_special\"]} (default: no check)");
  app.add_flag("--no-write", wr.noWrite, "with --check: do not write tokenizer.json");
  app.add_flag("--json", wr.json, "machine-readable output");

  EncodeFlags en;
  CLI::App* enc = app.add_subcommand("encode", "print the token ids of TEXT (or stdin)");
  enc->add_option("args", en.args, "SOURCE (snapshot directory or TIKTOKEN_MODEL [TOKENIZER_CONFIG]), then TEXT")
      ->expected(1, 3)
      ->required()
      ->option_text("SOURCE [TEXT]");
  CLI::Option* textOpt = enc->add_option("--text,-t", en.text, "text to encode (instead of TEXT; default: read stdin)");
  enc->add_flag("--allow-special", en.allowSpecial, "match added-token text such as <|open|> as one id");
  enc->add_flag("--json", en.json, "print a JSON array");

  DecodeFlags de;
  CLI::App* dec = app.add_subcommand("decode", "write the bytes of token ids (args or stdin)");
  dec->add_option("source", de.source, "snapshot directory or TIKTOKEN_MODEL [TOKENIZER_CONFIG]")
      ->expected(1, 2)
      ->option_text("SOURCE");
  dec->add_option("--ids", de.ids, "token ids (default: read stdin, separated by spaces/commas/brackets)");
  dec->add_flag("--json", de.json, "print {\"text\": ...} (invalid UTF-8 replaced by U+FFFD)");

  ChatFlags ch;
  CLI::App* chat = app.add_subcommand(
      "chat", "print the XTML prompt ids of an OpenAI chat-completions request (docs/CHAT.md)");
  chat->add_option("source", ch.source, "snapshot directory or TIKTOKEN_MODEL [TOKENIZER_CONFIG]")
      ->expected(1, 2)
      ->option_text("SOURCE");
  chat->add_option("--file,-f", ch.file,
                   "request JSON: {\"messages\", \"tools\", \"tool_choice\", \"response_format\", "
                   "\"chat_template_kwargs\": {\"thinking\", \"thinking_effort\"}, \"reasoning_effort\", "
                   "\"add_generation_prompt\"}; the legacy {\"messages\", \"thinking\"} too (default: stdin)");
  auto* jsonFlag = chat->add_flag("--json", ch.json, "print a JSON array");
  auto* textFlag = chat->add_flag("--text", ch.text, "print the rendered text, specials as is, text segments as \u2039...\u203a");
  chat->add_flag("--jsonl", ch.jsonl,
                 "batch: one request per input line; prints one line each, the ids as a JSON array or "
                 "{\"error\": MESSAGE}")
      ->excludes(textFlag);
  textFlag->excludes(jsonFlag);

  ParseFlags pa;
  CLI::App* parse = app.add_subcommand(
      "parse", "parse what the model generated after the generation prompt into an assistant message (docs/CHAT.md)");
  parse->add_option("args", pa.args, "SOURCE (1 or 2 paths) then IDS: ids separated by commas/spaces, a file of them, or - for stdin")
      ->expected(2, 3)
      ->required()
      ->option_text("SOURCE IDS");
  parse->add_flag("--no-thinking", pa.noThinking, "the prompt opened the response channel, not think");
  parse->add_option("--tools", pa.tools, "an OpenAI request whose tools the calls are checked against (default: none)");
  parse->add_flag("--json", pa.json, "print the OpenAI choice {\"index\", \"message\", \"finish_reason\"}");

  BenchFlags be;
  CLI::App* bench = app.add_subcommand("bench", "encode throughput of FILE (best of --repeat runs), as JSON");
  bench->add_option("source", be.source, "snapshot directory or TIKTOKEN_MODEL [TOKENIZER_CONFIG]")
      ->expected(1, 2)
      ->option_text("SOURCE");
  bench->add_option("--file", be.file, "text file to encode")->required();
  bench->add_option("--repeat", be.repeat, "runs; the fastest is reported")->check(CLI::PositiveNumber);

  // --json on the command or subcommand asked for: errors come as the JSON error object too.
  const k3app::ErrorPolicy errors{.app = "k3-tokgen", .json = [&] { return wr.json || en.json || de.json || ch.json || pa.json; }};
  if (const auto rc = k3app::parseCommandLine(app, errors, argc, argv)) return *rc;
  return k3app::runReportingErrors(errors, [&] {
    if (*enc) {
      en.textGiven = textOpt->count() > 0;
      return encodeMain(en);
    }
    if (*dec) return decodeMain(de);
    if (*chat) return chatMain(ch);
    if (*parse) return parseMain(pa);
    if (*bench) return benchMain(be);
    if (wr.source.empty()) {
      std::cerr << app.help() << "\n";
      return 2;
    }
    return writeMain(wr);
  });
}
