// The grammar of a constrained K3 chat answer (what the model writes after
// the generation prompt, spec §7.6), from the request's structure options:
//   response_format json_object / json_schema: the response channel holds
//     one JSON value (an object / valid under the schema);
//   tool_choice "required" / a named function: the response channel is
//     empty and the answer opens a tools block with at least one call (a
//     named function: exactly one call, of that function);
//   any tool declared strict: calls may only name declared tools and their
//     arguments follow the schema.
// Whenever a grammar is built, every call's arguments follow its tool's
// parameters schema when that schema is in the subset (grammar_schema.h);
// a strict tool outside it is an error, a non-strict one gets free
// arguments (none, or one raw JSON object block). At most kMaxCalls calls.
// With thinking on, the reasoning is free text: the grammar only requires
// that it ends with CLOSE(think) OPEN(response). No other special token is
// ever allowed; the answer ends CLOSE(message) <|end_of_msg|>.
// Thread-safety: pure; the grammar is immutable and shared.
#pragma once

#include <memory>

#include "k3/tok/chat_message.h"
#include "k3/tok/grammar.h"

namespace k3::tok {

inline constexpr int kMaxCalls = 8;

// nullptr when the request constrains nothing. Throws k3::Error(Usage)
// "<field path>: what" for a schema outside the subset or an impossible
// combination.
std::shared_ptr<const Grammar> chatOutputGrammar(const ChatRequest& req);

}  // namespace k3::tok
