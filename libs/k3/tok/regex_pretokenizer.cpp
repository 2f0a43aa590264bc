#include "k3/tok/regex_pretokenizer.h"

#include "k3/tok/pretokenizer.h"
#include "k3/tok/unicode_tables.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <cstdio>

#include "k3/io/error.h"

namespace k3::tok {

namespace {

void appendHexCp(std::string& out, char32_t c) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "\\x{%x}", static_cast<unsigned>(c));
  out += buf;
}

// The ranges of a class, for use inside [...].
std::string rangesOf(const unicode::CodePointRange* r, size_t n) {
  std::string out;
  for (size_t i = 0; i < n; ++i) {
    appendHexCp(out, r[i].lo);
    if (r[i].hi != r[i].lo) {
      out.push_back('-');
      appendHexCp(out, r[i].hi);
    }
  }
  return out;
}

}  // namespace

std::string kimiPatternPcre2() {
  // Built with appends only (GCC 12 warns falsely on chains of operator+).
  using namespace unicode;
  std::string ln = rangesOf(kLetter, kLetterCount);
  ln += rangesOf(kNumber, kNumberCount);
  std::string ws = rangesOf(kSpace, kSpaceCount);
  std::string s1 = rangesOf(kUpperLike, kUpperLikeCount);
  std::string s2 = rangesOf(kLowerLike, kLowerLikeCount);
  const char* contraction = "(?i:'s|'t|'re|'ve|'m|'ll|'d)?";
  std::string p;
  p.append("[").append(rangesOf(kHan, kHanCount)).append("]+");                                  // H
  p.append("|[^\\r\\n").append(ln).append("]?[").append(s1).append("]*[").append(s2).append("]+");  // A
  p.append(contraction);
  p.append("|[^\\r\\n").append(ln).append("]?[").append(s1).append("]+[").append(s2).append("]*");  // B
  p.append(contraction);
  p.append("|[").append(rangesOf(kNumber, kNumberCount)).append("]{1,3}");                        // C
  p.append("| ?[^").append(ws).append(ln).append("]+[\\r\\n]*");                                 // D
  p.append("|[").append(ws).append("]*[\\r\\n]+");                                              // E
  p.append("|[").append(ws).append("]+(?![^").append(ws).append("])");                             // F
  p.append("|[").append(ws).append("]+");                                                          // G
  return p;
}

struct RegexPreTokenizer::Code {
  pcre2_code* re = nullptr;
  ~Code() { pcre2_code_free(re); }
};

struct RegexPreTokenizer::Scratch::Impl {
  pcre2_match_data* md = nullptr;
  pcre2_match_context* mc = nullptr;
  pcre2_jit_stack* stack = nullptr;
  ~Impl() {
    pcre2_match_data_free(md);
    pcre2_match_context_free(mc);
    pcre2_jit_stack_free(stack);
  }
};

RegexPreTokenizer::RegexPreTokenizer() : code_(std::make_unique<Code>()) {
  int err = 0;
  PCRE2_SIZE errOffset = 0;
  std::string pattern = kimiPatternPcre2();
  code_->re = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(),
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

RegexPreTokenizer::~RegexPreTokenizer() = default;
RegexPreTokenizer::RegexPreTokenizer(RegexPreTokenizer&&) noexcept = default;
RegexPreTokenizer& RegexPreTokenizer::operator=(RegexPreTokenizer&&) noexcept = default;

RegexPreTokenizer::Scratch::Scratch(const RegexPreTokenizer& pt) : impl_(std::make_unique<Impl>()) {
  impl_->md = pcre2_match_data_create_from_pattern(pt.code_->re, nullptr);
  impl_->mc = pcre2_match_context_create(nullptr);
  // Backtracking over long letter runs uses the JIT stack: allow it to grow
  // (memory is only committed on use).
  impl_->stack = pcre2_jit_stack_create(32 * 1024, 256 * 1024 * 1024, nullptr);
  if (!impl_->md || !impl_->mc || !impl_->stack) fail(ErrorKind::Internal, "tokenizer: PCRE2 allocation failed");
  pcre2_jit_stack_assign(impl_->mc, nullptr, impl_->stack);
}

RegexPreTokenizer::Scratch::~Scratch() = default;

bool RegexPreTokenizer::next(std::string_view text, size_t pos, Scratch& scratch, size_t& start, size_t& end) const {
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

std::vector<std::string> RegexPreTokenizer::splitToStrings(std::string_view text) const {
  std::vector<std::string> out;
  Scratch scratch(*this);
  split(text, scratch, [&](std::string_view p) { out.emplace_back(p); });
  return out;
}

}  // namespace k3::tok
