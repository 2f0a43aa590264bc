// Python json.dumps(v, ensure_ascii=False), byte for byte, for the values
// Moonshot's encoder serialises: tool declarations and response-format
// schemas (sort_keys=True, separators (",", ":")) and typed call arguments
// (default separators ", " and ": ", keys in the caller's order).
// Thread-safety: pure functions; safe from any thread.
#pragma once

#include <string>

#include "k3/tok/json_value.h"

namespace k3::tok {

struct PyDumpsStyle {
  bool sortKeys = false;
  bool compact = false;  // (",", ":") instead of (", ", ": ")
  bool literalFloats = false;  // floats as their source literal (JSON text, not Python's repr)
};

void appendPyDumps(std::string& out, const JsonValue& v, PyDumpsStyle style);
std::string pyDumps(const JsonValue& v, PyDumpsStyle style);

// float.__repr__ as json.dumps writes floats: the shortest digits that
// round-trip, exponent form when the decimal exponent is < -4 or >= 16
// ("1e-05", "1e+16", "1.5e+300"), otherwise positional with at least one
// fractional digit ("100.0", "-0.0"); "Infinity", "-Infinity", "NaN".
std::string pyFloatRepr(double x);

}  // namespace k3::tok
