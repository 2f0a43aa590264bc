// What k3-run reports after a run: the session's throughput, memory, expert
// streaming and phase figures, as one JSON object (--json) or as the
// "[k3-run] ..." lines on stderr, plus the mode fields (teacher-forced
// argmax and perplexity, or the generated ids) the JSON object ends with.
// Thread-safety: pure builders over a Session the caller no longer feeds.
#pragma once

#include <span>
#include <string>
#include <vector>

#include "k3/io/json_text.h"
#include "k3/model/session.h"
#include "k3/model/teacher_forcing.h"

namespace k3::model {

struct RunReportOptions {
  std::string activations = "f32";  // --activations, echoed in the report
  float expertTopP = 1.0f;          // --expert-top-p; the text report shows its effect when < 1
};

// The session's figures as the start of k3-run's --json object; callers
// append their mode's fields (below) and print str().
JsonObject runStatsJson(const Session& s, const RunReportOptions& o);

// The same figures as the "[k3-run] ..." lines (each ending in '\n').
std::string runStatsText(const Session& s, const RunReportOptions& o);

// --ids / --perplexity: "positions", "argmax", and with a score
// "perplexity" and "predicted".
void addTeacherForced(JsonObject& j, const TeacherForcedResult& r);

// Generation: "prompt_ids", "tokens", "stopped".
void addGenerated(JsonObject& j, std::span<const int32_t> promptIds, std::span<const int32_t> tokens, bool stopped);

}  // namespace k3::model
