#include "k3/tok/pretokenizer.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include "k3/io/error.h"

namespace k3::tok {

const char* const kKimiPattern =
    R"([\p{Han}]+|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}&&[^\p{Han}]]*[\p{Ll}\p{Lm}\p{Lo}\p{M}&&[^\p{Han}]]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}&&[^\p{Han}]]+[\p{Ll}\p{Lm}\p{Lo}\p{M}&&[^\p{Han}]]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

// Unicode White_Space, as Rust regex's \s (see header).
#define K3_WS R"(\t\n\x{0B}\f\r\x{20}\x{85}\x{A0}\x{1680}\x{2000}-\x{200A}\x{2028}\x{2029}\x{202F}\x{205F}\x{3000})"
#define K3_S1 R"((?:(?!\p{sc:Han})[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]))"
#define K3_S2 R"((?:(?!\p{sc:Han})[\p{Ll}\p{Lm}\p{Lo}\p{M}]))"
#define K3_CONTRACTION R"((?i:'s|'t|'re|'ve|'m|'ll|'d)?)"

const char* const kKimiPatternPcre2 =
    R"(\p{sc:Han}+)"
    R"(|[^\r\n\p{L}\p{N}]?)" K3_S1 "*" K3_S2 "+" K3_CONTRACTION
    R"(|[^\r\n\p{L}\p{N}]?)" K3_S1 "+" K3_S2 "*" K3_CONTRACTION
    R"(|\p{N}{1,3})"
    R"(| ?[^)" K3_WS R"(\p{L}\p{N}]+[\r\n]*)"
    R"(|[)" K3_WS R"(]*[\r\n]+)"
    R"(|[)" K3_WS R"(]+(?![^)" K3_WS R"(]))"
    R"(|[)" K3_WS R"(]+)";

struct PreTokenizer::Code {
  pcre2_code* re = nullptr;
  ~Code() { pcre2_code_free(re); }
};

struct PreTokenizer::Scratch::Impl {
  pcre2_match_data* md = nullptr;
  pcre2_match_context* mc = nullptr;
  pcre2_jit_stack* stack = nullptr;
  ~Impl() {
    pcre2_match_data_free(md);
    pcre2_match_context_free(mc);
    pcre2_jit_stack_free(stack);
  }
};

PreTokenizer::PreTokenizer() : code_(std::make_unique<Code>()) {
  int err = 0;
  PCRE2_SIZE errOffset = 0;
  code_->re = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(kKimiPatternPcre2), PCRE2_ZERO_TERMINATED,
                            PCRE2_UTF | PCRE2_UCP | PCRE2_MATCH_INVALID_UTF, &err, &errOffset, nullptr);
  if (!code_->re) {
    PCRE2_UCHAR msg[256];
    pcre2_get_error_message(err, msg, sizeof msg);
    fail(ErrorKind::Internal, "tokenizer pattern: PCRE2 compile error at ", errOffset, ": ",
         reinterpret_cast<const char*>(msg));
  }
  int rc = pcre2_jit_compile(code_->re, PCRE2_JIT_COMPLETE);
  if (rc != 0) fail(ErrorKind::Unsupported, "tokenizer pattern: PCRE2 JIT unavailable (error ", rc, ")");
}

PreTokenizer::~PreTokenizer() = default;
PreTokenizer::PreTokenizer(PreTokenizer&&) noexcept = default;
PreTokenizer& PreTokenizer::operator=(PreTokenizer&&) noexcept = default;

PreTokenizer::Scratch::Scratch(const PreTokenizer& pt) : impl_(std::make_unique<Impl>()) {
  impl_->md = pcre2_match_data_create_from_pattern(pt.code_->re, nullptr);
  impl_->mc = pcre2_match_context_create(nullptr);
  // Letter runs repeat a group with a lookahead, which backtracks through the
  // JIT stack: size it for very long runs (memory is only committed on use).
  impl_->stack = pcre2_jit_stack_create(32 * 1024, 256 * 1024 * 1024, nullptr);
  if (!impl_->md || !impl_->mc || !impl_->stack) fail(ErrorKind::Internal, "tokenizer: PCRE2 allocation failed");
  pcre2_jit_stack_assign(impl_->mc, nullptr, impl_->stack);
}

PreTokenizer::Scratch::~Scratch() = default;

bool PreTokenizer::next(std::string_view text, size_t pos, Scratch& scratch, size_t& start, size_t& end) const {
  Scratch::Impl& s = *scratch.impl_;
  int rc = pcre2_jit_match(code_->re, reinterpret_cast<PCRE2_SPTR>(text.data()), text.size(), pos, 0, s.md, s.mc);
  if (rc == PCRE2_ERROR_NOMATCH) return false;
  if (rc < 0) {
    PCRE2_UCHAR msg[256];
    pcre2_get_error_message(rc, msg, sizeof msg);
    fail(ErrorKind::Unsupported, "tokenizer: pre-tokenizer match failed at byte ", pos, ": ",
         reinterpret_cast<const char*>(msg));
  }
  const PCRE2_SIZE* ov = pcre2_get_ovector_pointer(s.md);
  start = ov[0];
  end = ov[1];
  if (end == start) {  // cannot happen with this pattern; never loop forever
    end = start + 1;
  }
  return true;
}

std::vector<std::string> PreTokenizer::splitToStrings(std::string_view text) const {
  std::vector<std::string> out;
  Scratch scratch(*this);
  split(text, scratch, [&](std::string_view p) { out.emplace_back(p); });
  return out;
}

}  // namespace k3::tok
