#include "k3/tok/grammar_matcher.h"

#include <algorithm>

namespace k3::tok {
namespace {

constexpr uint32_t kRoot = UINT32_MAX;
constexpr int kMaxForkDepth = 64;  // Choice/Repeat nesting followed without consuming a symbol

// String/RawString states (GrammarFrame::b); a UTF-8 continuation is
// kUtf8 | remaining << 8 | lo << 16 | hi << 24.
// A \u escape of a surrogate must be a high one (D800-DBFF) followed by
// \u and a low one (DC00-DFFF): one character, as json.loads reads it.
enum : uint32_t { kStrOpen = 0, kStrBody, kStrEscape, kStrHex1, kStrHex2, kStrHexD, kStrHex3, kStrHex4,
                  kStrHighHex3, kStrHighHex4, kStrLowBackslash, kStrLowU, kStrLowD, kStrLowC, kStrLowHex3, kStrLowHex4,
                  kStrClosed, kUtf8 = 32 };
// Number states (b); a counts the digits of the current part.
enum : uint32_t { kNumStart, kNumMinus, kNumZero, kNumInt, kNumDot, kNumFrac, kNumExp, kNumExpSign, kNumExpDigits };
constexpr uint32_t kMaxIntDigits = 15, kMaxFracDigits = 15, kMaxExpDigits = 2;

bool isDigit(int c) { return c >= '0' && c <= '9'; }
bool isHex(int c) { return isDigit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'); }

// A UTF-8 lead byte: the state expecting its continuation, or 0 if `c` cannot lead.
uint32_t utf8Lead(int c) {
  auto cont = [](uint32_t rem, uint32_t lo, uint32_t hi) { return kUtf8 | rem << 8 | lo << 16 | hi << 24; };
  if (c >= 0xC2 && c <= 0xDF) return cont(1, 0x80, 0xBF);
  if (c == 0xE0) return cont(2, 0xA0, 0xBF);
  if (c == 0xED) return cont(2, 0x80, 0x9F);  // no surrogates
  if (c >= 0xE1 && c <= 0xEF) return cont(2, 0x80, 0xBF);
  if (c == 0xF0) return cont(3, 0x90, 0xBF);
  if (c >= 0xF1 && c <= 0xF3) return cont(3, 0x80, 0xBF);
  if (c == 0xF4) return cont(3, 0x80, 0x8F);
  return 0;
}

// A continuation byte in a UTF-8 state: the next state, or 0 (refused).
uint32_t utf8Next(uint32_t b, int c) {
  const uint32_t rem = (b >> 8) & 0xFF, lo = (b >> 16) & 0xFF, hi = b >> 24;
  if (c < static_cast<int>(lo) || c > static_cast<int>(hi)) return 0;
  return rem == 1 ? kStrBody : (kUtf8 | (rem - 1) << 8 | 0x80u << 16 | 0xBFu << 24);
}

}  // namespace

void GrammarState::add(const GrammarFrame& f) {
  for (uint32_t i = 0; i < n; ++i)
    if (t[i] == f) return;
  if (n < kMaxThreads) t[n++] = f;
}

GrammarMatcher::GrammarMatcher(std::shared_ptr<const Grammar> g) : g_(std::move(g)) {
  cur_.n = 1;
  cur_.t[0] = GrammarFrame{g_->root(), 0, 0, kRoot};
}

uint32_t GrammarMatcher::push(const GrammarFrame& f) {
  arena_.push_back(f);
  return static_cast<uint32_t>(arena_.size() - 1);
}

void GrammarMatcher::step(const GrammarState& in, int sym, GrammarState& out) {
  out.n = 0;
  out.accepted = false;
  for (uint32_t i = 0; i < in.n; ++i) feedThread(in.t[i], sym, out, 0);
}

bool GrammarMatcher::feed(int sym) {
  const size_t m = mark();
  GrammarState next;
  step(cur_, sym, next);
  if (next.n == 0) {
    rollback(m);
    return false;
  }
  cur_ = next;
  return true;
}

bool GrammarMatcher::feedBytes(std::string_view bytes) {
  const size_t m = mark();
  const GrammarState saved = cur_;
  for (char c : bytes)
    if (!feed(static_cast<uint8_t>(c))) {
      cur_ = saved;
      rollback(m);
      return false;
    }
  return true;
}

bool GrammarMatcher::accepts(std::string_view bytes) {
  const size_t m = mark();
  const GrammarState saved = cur_;
  const bool ok = feedBytes(bytes);
  cur_ = saved;
  rollback(m);
  return ok;
}

bool GrammarMatcher::acceptsSymbol(int sym) {
  const size_t m = mark();
  GrammarState out;
  step(cur_, sym, out);
  rollback(m);
  return out.n > 0;
}

bool GrammarMatcher::accepting() {
  const size_t m = mark();  // what the probe pushes is rolled back: the state is unchanged
  GrammarState out;
  step(cur_, kSymEnd, out);
  rollback(m);
  return out.accepted;
}

bool GrammarMatcher::inFreeText() const {
  return cur_.n == 1 && g_->node(cur_.t[0].node).kind == GrammarNode::Kind::FreeText;
}

uint32_t GrammarMatcher::frameRest(const GrammarFrame& f) const {
  using Kind = GrammarNode::Kind;
  const GrammarNode& n = g_->node(f.node);
  switch (n.kind) {
    case Kind::Seq: {
      uint64_t m = 0;
      for (size_t k = f.a; k < n.kids.size(); ++k) m += g_->minLength(n.kids[k]);
      return static_cast<uint32_t>(std::min<uint64_t>(m, kUnbounded));
    }
    case Kind::Choice: return g_->minLength(f.node);
    case Kind::Repeat:
      return f.a >= n.min ? 0 : static_cast<uint32_t>(std::min<uint64_t>(uint64_t{n.min - f.a} * g_->minLength(n.kids[0]), kUnbounded));
    case Kind::Literal: return g_->trieMinLength(f.a == 0 ? n.trie : f.a - 1);
    case Kind::Ws:
    case Kind::FreeText: return 0;
    case Kind::Number: {
      static constexpr uint32_t rest[] = {1, 1, 0, 0, 1, 0, 1, 1, 0};  // by number state
      return f.b < 9 ? rest[f.b] : 0;
    }
    case Kind::String:
    case Kind::RawString: {
      const bool raw = n.kind == Kind::RawString;
      const uint32_t need = n.min > f.a ? n.min - f.a : 0;
      const uint32_t close = raw ? 0 : 1;
      const uint32_t b = f.b;
      if (b == kStrClosed) return 0;
      if (b == kStrOpen) return raw ? need : need + 2;
      if ((b & 0xFF) == kUtf8) return ((b >> 8) & 0xFF) + need + close;
      uint32_t pending = 0;  // bytes that end the escape in progress
      switch (b) {
        case kStrEscape: pending = 1; break;
        case kStrHex1: pending = 4; break;
        case kStrHex2:
        case kStrHexD: pending = 3; break;
        case kStrHex3: pending = 2; break;
        case kStrHex4: pending = 1; break;
        case kStrHighHex3: pending = 2 + 6; break;
        case kStrHighHex4: pending = 1 + 6; break;
        case kStrLowBackslash: pending = 6; break;
        case kStrLowU: pending = 5; break;
        case kStrLowD: pending = 4; break;
        case kStrLowC: pending = 3; break;
        case kStrLowHex3: pending = 2; break;
        case kStrLowHex4: pending = 1; break;
        default: break;
      }
      return pending + need + close;
    }
  }
  return 0;
}

uint32_t GrammarMatcher::minToComplete(const GrammarState& s) const {
  uint64_t best = kUnbounded;
  for (uint32_t i = 0; i < s.n; ++i) {
    uint64_t m = frameRest(s.t[i]);
    for (uint32_t p = s.t[i].parent; p != kRoot && m < best; p = arena_[p].parent) m += frameRest(arena_[p]);
    best = std::min(best, m);
  }
  return static_cast<uint32_t>(best);
}

bool GrammarMatcher::inStringText(bool& raw, uint32_t& room, uint32_t& need) const {
  if (cur_.n != 1) return false;
  const GrammarFrame& f = cur_.t[0];
  const GrammarNode& n = g_->node(f.node);
  raw = n.kind == GrammarNode::Kind::RawString;
  if (!raw && !(n.kind == GrammarNode::Kind::String && f.b == kStrBody)) return false;
  if (raw && f.b != kStrOpen && f.b != kStrBody) return false;
  room = n.max == kUnbounded ? kUnbounded : n.max - f.a;
  need = n.min > f.a ? n.min - f.a : 0;
  return true;
}

void GrammarMatcher::feedThread(GrammarFrame t, int sym, GrammarState& out, int depth) {
  using Kind = GrammarNode::Kind;
  if (depth > kMaxForkDepth) return;
  const bool isByte = sym < 256;
  for (int guard = 0; guard < 4096; ++guard) {
    const GrammarNode& n = g_->node(t.node);
    bool pop = false;
    switch (n.kind) {
      case Kind::Seq:
        if (t.a < n.kids.size()) {
          const uint32_t kid = n.kids[t.a];
          uint32_t parent = t.parent;
          if (t.a + 1 < n.kids.size()) {  // the last kid ends the Seq: it takes the Seq's parent
            GrammarFrame rest = t;
            rest.a += 1;
            parent = push(rest);
          }
          t = GrammarFrame{kid, 0, 0, parent};
          continue;
        }
        pop = true;
        break;
      case Kind::Choice:
        for (uint32_t kid : n.kids) feedThread(GrammarFrame{kid, 0, 0, t.parent}, sym, out, depth + 1);
        return;
      case Kind::Repeat:
        if (t.a < n.max) {
          GrammarFrame rest = t;
          rest.a += 1;
          const uint32_t parent = push(rest);
          feedThread(GrammarFrame{n.kids[0], 0, 0, parent}, sym, out, depth + 1);
        }
        if (t.a < n.min) return;
        pop = true;
        break;
      case Kind::Literal: {
        const uint32_t at = t.a == 0 ? n.trie : t.a - 1;
        const Grammar::TrieNode& tn = g_->trie(at);
        for (const auto& [s, next] : tn.next)
          if (s == sym) {
            t.a = next + 1;
            out.add(t);
            return;
          }
        if (!tn.terminal) return;
        pop = true;
        break;
      }
      case Kind::Ws:
        if ((sym == ' ' || sym == '\n' || sym == '\t' || sym == '\r') && t.a < n.max) {
          t.a += 1;
          out.add(t);
          return;
        }
        pop = true;
        break;
      case Kind::FreeText:
        if (isByte) {
          out.add(t);
          return;
        }
        pop = true;
        break;
      case Kind::String:
      case Kind::RawString: {
        const bool raw = n.kind == Kind::RawString;
        uint32_t& b = t.b;
        if (raw && b == kStrOpen) b = kStrBody;
        if (b == kStrClosed) {
          pop = true;
          break;
        }
        if (!isByte) {
          if (raw && b == kStrBody && t.a >= n.min) {
            pop = true;
            break;
          }
          return;
        }
        const int c = sym;
        if (b == kStrOpen) {
          if (c != '"') return;
          b = kStrBody;
        } else if ((b & 0xFF) == kUtf8) {
          b = utf8Next(b, c);
          if (b == 0) return;
        } else if (b == kStrBody) {
          if (!raw && c == '"') {
            if (t.a < n.min) return;
            b = kStrClosed;
          } else {
            if (t.a >= n.max) return;  // a new character
            if (c < 0x20) {
              if (!raw || (c != '\t' && c != '\n' && c != '\r')) return;
            } else if (c == '\\' && !raw) {
              b = kStrEscape;
            } else if (c >= 0x80) {
              b = utf8Lead(c);
              if (b == 0) return;
            }
            t.a += 1;
          }
        } else if (b == kStrEscape) {
          if (c == 'u') b = kStrHex1;
          else if (c == '"' || c == '\\' || c == '/' || c == 'b' || c == 'f' || c == 'n' || c == 'r' || c == 't') b = kStrBody;
          else return;
        } else if (b == kStrHex1) {
          if (!isHex(c)) return;
          b = (c == 'd' || c == 'D') ? kStrHexD : kStrHex2;
        } else if (b == kStrHexD) {
          if (c >= '0' && c <= '7') b = kStrHex3;
          else if (c == '8' || c == '9' || c == 'a' || c == 'b' || c == 'A' || c == 'B') b = kStrHighHex3;
          else return;  // not hex, or a lone low surrogate
        } else if (b == kStrLowD) {
          if (c != 'd' && c != 'D') return;
          b = kStrLowC;
        } else if (b == kStrLowC) {
          if (!((c >= 'c' && c <= 'f') || (c >= 'C' && c <= 'F'))) return;
          b = kStrLowHex3;
        } else if (b == kStrLowBackslash || b == kStrLowU) {
          if (c != (b == kStrLowBackslash ? '\\' : 'u')) return;
          b += 1;
        } else {  // the remaining hex digits
          if (!isHex(c)) return;
          b = b == kStrHex2 ? kStrHex3 : b == kStrHex3 ? kStrHex4 : b == kStrHighHex3 ? kStrHighHex4
            : b == kStrHighHex4 ? kStrLowBackslash : b == kStrLowHex3 ? kStrLowHex4 : kStrBody;
        }
        out.add(t);
        return;
      }
      case Kind::Number: {
        const bool integer = n.min == 1;
        const int c = sym;
        uint32_t& s = t.b;
        bool take = true;
        switch (s) {
          case kNumStart:
            if (c == '-') s = kNumMinus;
            else if (c == '0') s = kNumZero;
            else if (c >= '1' && c <= '9') s = kNumInt, t.a = 1;
            else return;
            break;
          case kNumMinus:
            if (c == '0') s = kNumZero;
            else if (c >= '1' && c <= '9') s = kNumInt, t.a = 1;
            else return;
            break;
          case kNumZero:
          case kNumInt:
            if (s == kNumInt && isDigit(c) && t.a < kMaxIntDigits) t.a += 1;
            else if (!integer && c == '.') s = kNumDot;
            else if (!integer && (c == 'e' || c == 'E')) s = kNumExp;
            else take = false;
            break;
          case kNumDot:
            if (!isDigit(c)) return;
            s = kNumFrac, t.a = 1;
            break;
          case kNumFrac:
            if (isDigit(c) && t.a < kMaxFracDigits) t.a += 1;
            else if (c == 'e' || c == 'E') s = kNumExp;
            else take = false;
            break;
          case kNumExp:
            if (c == '+' || c == '-') s = kNumExpSign;
            else if (isDigit(c)) s = kNumExpDigits, t.a = 1;
            else return;
            break;
          case kNumExpSign:
            if (!isDigit(c)) return;
            s = kNumExpDigits, t.a = 1;
            break;
          case kNumExpDigits:
            if (isDigit(c) && t.a < kMaxExpDigits) t.a += 1;
            else take = false;
            break;
          default: return;
        }
        if (take) {
          out.add(t);
          return;
        }
        pop = true;  // only complete states get here
        break;
      }
    }
    if (!pop) return;
    if (t.parent == kRoot) {
      if (sym == kSymEnd) out.accepted = true;
      return;
    }
    t = arena_[t.parent];
  }
}

}  // namespace k3::tok
