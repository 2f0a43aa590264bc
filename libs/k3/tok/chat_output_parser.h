// Streaming parser of what the model generates after the XTML generation
// prompt (spec §7.6 "What the model writes"):
//   [OPEN(think)] reasoning CLOSE(think) OPEN(response) content CLOSE(response)
//   [OPEN(tools) OPEN(call, tool=NAME, index=i) arguments CLOSE(call)… CLOSE(tools)]
//   CLOSE(message) <|end_of_msg|>
// (without thinking the prompt opened the response, so it starts at content).
// It works on token ids: only <|open|>, <|close|>, <|sep|> and <|end_of_msg|>
// are structure, so no text can forge a marker. Fed one id at a time, it emits
// events; text events are never a partial UTF-8 character, a tool call is
// emitted once its CLOSE(call) arrived, and anything off-grammar is one
// Malformed event (never content, never dropped), after which the parser
// ignores further input. See docs/CHAT.md "Parsing the model's output".
// Thread-safety: not thread-safe; one per generation (it keeps the grammar
// state between ids).
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "k3/tok/chat_message.h"
#include "k3/tok/chat_output_arguments.h"
#include "k3/tok/chat_output_error.h"
#include "k3/tok/chat_output_marker.h"
#include "k3/tok/tokenizer.h"
#include "k3/tok/utf8_stream.h"
#include "k3/tok/xtml_specials.h"

namespace k3::tok {

struct ChatOutputEvent {
  enum class Kind {
    Reasoning,  // text: a delta of the think channel
    Content,    // text: a delta of the response channel
    ToolCall,   // call + index: one complete call
    Done,       // <|end_of_msg|> ended the message
    Malformed,  // error: the first grammar violation; nothing follows
  };
  Kind kind = Kind::Content;
  std::string text;       // Reasoning / Content: valid UTF-8, never empty
  ToolCall call;          // ToolCall: id (prefix + index), name, arguments (a JSON object's text, or a raw block's text)
  int index = 0;          // ToolCall: the call's index attribute, 1, 2, …
  size_t mistyped = 0;    // ToolCall: arguments whose type differs from the declared one (passed as written)
  ChatOutputError error;  // Malformed
};

// What finish() found when generation stopped.
struct ChatOutputEnd {
  bool complete = false;  // the message ended with <|end_of_msg|>
  bool malformed = false;  // a Malformed event was emitted
  std::string state;      // when neither: where generation stopped, e.g. "inside tool call 2 (get_weather)"
};

class ChatOutputParser {
 public:
  // `tools`: the declared tools (names and parameter types calls are checked
  // against; copied). `startInThink`: the generation prompt opened think
  // (thinking on) rather than response. Call ids are callIdPrefix + index.
  // Throws k3::Error(Missing) when the tokenizer lacks an XTML special.
  ChatOutputParser(const Tokenizer& tok, std::span<const ToolSpec> tools, bool startInThink,
                   std::string callIdPrefix = "call_");
  // The pending call points into tools_: a copy would point into the source,
  // a move keeps tools_' buffer and so stays valid.
  ChatOutputParser(const ChatOutputParser&) = delete;
  ChatOutputParser& operator=(const ChatOutputParser&) = delete;
  ChatOutputParser(ChatOutputParser&&) = default;

  // Feeds the next generated id; appends the events it completes to `events`.
  void feed(uint32_t id, std::vector<ChatOutputEvent>& events);
  // Generation stopped (length limit or end of input): emits the held-back
  // text (an incomplete character becomes U+FFFD) and says whether the
  // message was complete. An unfinished tool call is not emitted.
  ChatOutputEnd finish(std::vector<ChatOutputEvent>& events);

  bool done() const { return where_ == Where::Done; }
  bool failed() const { return where_ == Where::Failed; }
  size_t position() const { return pos_; }  // ids fed so far

 private:
  enum class Where { Think, AfterThink, Response, AfterResponse, Tools, Call, Argument, Json, AfterTools, AfterMessage, Done, Failed };

  void text(std::string_view bytes, std::vector<ChatOutputEvent>& events);
  void marker(std::vector<ChatOutputEvent>& events);
  void open(const MarkerHeader& h, std::vector<ChatOutputEvent>& events);
  void close(const MarkerHeader& h, std::vector<ChatOutputEvent>& events);
  void flushText(std::vector<ChatOutputEvent>& events);
  void malformed(size_t position, std::string expected, std::string found, std::vector<ChatOutputEvent>& events);
  std::string expectedHere() const;
  std::string callName() const;

  const Tokenizer& tok_;
  std::vector<ToolSpec> tools_;
  std::string callIdPrefix_;
  XtmlSpecials sp_;

  Where where_;
  size_t pos_ = 0;
  Utf8Holdback held_;  // reasoning/content bytes that may start an incomplete character

  // A marker between <|open|>/<|close|> and <|sep|>.
  bool inMarker_ = false;
  bool markerIsOpen_ = false;
  size_t markerPos_ = 0;
  std::string markerBytes_;

  // The call being generated (Call, Argument, Json).
  int nextIndex_ = 1;
  size_t callPos_ = 0;
  const ToolSpec* callTool_ = nullptr;  // into tools_
  std::optional<ToolArguments> callArgs_;
  std::optional<std::string> callRaw_;  // an OPEN(json, type=object) block's text
  size_t argPos_ = 0;
  std::string argKey_, argType_, argValue_;
};

}  // namespace k3::tok
