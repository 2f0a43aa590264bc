#include "k3/serve/metrics.h"

#include <sstream>

#include "k3/io/json_text.h"

namespace k3::serve {

void RequestCounters::count(const std::string& path, int status) {
  std::lock_guard<std::mutex> lock(m_);
  byPathStatus_[{path, status}] += 1;
}

std::map<std::pair<std::string, int>, uint64_t> RequestCounters::snapshot() const {
  std::lock_guard<std::mutex> lock(m_);
  return byPathStatus_;
}

namespace {
void metric(std::ostringstream& o, const char* name, const char* type, const char* help, double v) {
  o << "# HELP " << name << ' ' << help << "\n# TYPE " << name << ' ' << type << '\n' << name << ' ' << v << '\n';
}
}  // namespace

std::string prometheusText(const RequestCounters& requests, const EngineStats& e, size_t queueDepth,
                           size_t queueCapacity) {
  std::ostringstream o;
  o.precision(17);
  o << "# HELP k3_requests_total HTTP requests answered, by path and status.\n# TYPE k3_requests_total counter\n";
  for (const auto& [key, n] : requests.snapshot())
    o << "k3_requests_total{path=\"" << key.first << "\",status=\"" << key.second << "\"} " << n << '\n';
  metric(o, "k3_generations_total", "counter", "Generations run by the engine.", static_cast<double>(e.jobs));
  metric(o, "k3_generations_cancelled_total", "counter", "Generations stopped because the client went away.",
         static_cast<double>(e.cancelled));
  metric(o, "k3_prompt_tokens_total", "counter", "Prompt tokens of finished generations.", static_cast<double>(e.promptTokens));
  metric(o, "k3_cached_tokens_total", "counter", "Prompt tokens reused from the state cache.", static_cast<double>(e.cachedTokens));
  metric(o, "k3_generated_tokens_total", "counter", "Tokens generated.", static_cast<double>(e.generatedTokens));
  metric(o, "k3_prefill_seconds_total", "counter", "Seconds spent feeding prompts.", e.prefillSeconds);
  metric(o, "k3_decode_seconds_total", "counter", "Seconds spent generating.", e.decodeSeconds);
  metric(o, "k3_constrained_generations_total", "counter",
         "Generations decoded under a grammar (response_format, tool_choice required/named, strict tools).",
         static_cast<double>(e.constrained));
  metric(o, "k3_grammar_masked_tokens_total", "counter", "Tokens picked under a grammar mask.", static_cast<double>(e.maskedTokens));
  metric(o, "k3_grammar_mask_seconds_total", "counter", "Seconds spent computing grammar masks (part of decode).", e.maskSeconds);
  metric(o, "k3_tool_arguments_mistyped_total", "counter",
         "Tool-call arguments returned with a type other than the declared one (non-strict tools; passed as written).",
         static_cast<double>(e.mistypedArguments));
  metric(o, "k3_queue_depth", "gauge", "Requests waiting for the engine.", static_cast<double>(queueDepth));
  metric(o, "k3_queue_capacity", "gauge", "Requests that may wait (--queue).", static_cast<double>(queueCapacity));
  metric(o, "k3_expert_reads_total", "counter", "Routed-expert reads from disk (--expert-gb).", static_cast<double>(e.residency.reads));
  metric(o, "k3_expert_read_bytes_total", "counter", "Routed-expert bytes read from disk.", static_cast<double>(e.residency.diskBytes));
  metric(o, "k3_expert_wait_seconds_total", "counter", "Seconds compute waited for expert reads.", e.residency.waitSeconds);
  metric(o, "k3_experts_kept_per_token_layer", "gauge",
         "Routed experts run per token and MoE layer (top-k unless --expert-top-p drops some).",
         e.expertsKeptPerTokenLayer);
  metric(o, "k3_expert_resident_bytes", "gauge", "Routed-expert bytes resident.", static_cast<double>(e.residency.residentBytes));
  metric(o, "k3_state_cache_entries", "gauge", "Checkpoints held by the state cache.", static_cast<double>(e.cache.entries));
  metric(o, "k3_state_cache_bytes", "gauge", "Bytes held by the state cache.", static_cast<double>(e.cache.bytes));
  // The directory tier (--state-cache-dir); all zero without one.
  metric(o, "k3_state_files_written_total", "counter", "Checkpoints written to the state cache directory.",
         static_cast<double>(e.cache.disk.written));
  metric(o, "k3_state_files_skipped_total", "counter",
         "Checkpoints not written: over the writer queue's budget, or bigger than the disk budget.",
         static_cast<double>(e.cache.disk.writeSkipped));
  metric(o, "k3_state_files_loaded_total", "counter", "Checkpoints resumed from the state cache directory.",
         static_cast<double>(e.cache.disk.loaded));
  metric(o, "k3_state_files_refused_total", "counter", "Checkpoint files ignored as unreadable or from another container.",
         static_cast<double>(e.cache.disk.refused));
  metric(o, "k3_state_files_removed_total", "counter", "Checkpoint files removed to hold --state-cache-disk-gb.",
         static_cast<double>(e.cache.disk.removed));
  metric(o, "k3_batch_steps_total", "counter", "Forward steps of the batch.", static_cast<double>(e.steps));
  metric(o, "k3_batch_decode_rows_total", "counter", "Rows of those steps that were decode tokens.",
         static_cast<double>(e.decodeRows));
  metric(o, "k3_batch_prompt_rows_total", "counter", "Rows of those steps that were prompt tokens.",
         static_cast<double>(e.prefillRows));
  size_t busy = 0;
  for (const SlotReport& s : e.slots) busy += s.state != "idle";
  metric(o, "k3_slots", "gauge", "Sequence slots (--parallel).", static_cast<double>(e.slots.size()));
  metric(o, "k3_slots_busy", "gauge", "Slots serving a request.", static_cast<double>(busy));
  o << "# HELP k3_slot_tokens Tokens of each slot's request: prompt, fed, cached, generated.\n"
       "# TYPE k3_slot_tokens gauge\n";
  for (size_t i = 0; i < e.slots.size(); ++i) {
    const SlotReport& s = e.slots[i];
    const std::pair<const char*, size_t> kinds[] = {
        {"prompt", s.promptTokens}, {"fed", s.fedTokens}, {"cached", s.cachedTokens}, {"generated", s.generatedTokens}};
    for (const auto& [kind, n] : kinds)
      o << "k3_slot_tokens{slot=\"" << i << "\",state=\"" << s.state << "\",kind=\"" << kind << "\"} " << n << '\n';
  }
  o << "# HELP k3_slot_tokens_per_second Each slot's generation rate since its first token.\n"
       "# TYPE k3_slot_tokens_per_second gauge\n";
  for (size_t i = 0; i < e.slots.size(); ++i)
    o << "k3_slot_tokens_per_second{slot=\"" << i << "\",state=\"" << e.slots[i].state << "\"} "
      << e.slots[i].tokensPerSecond << '\n';
  return o.str();
}

std::string slotsJson(const EngineStats& e) {
  std::vector<JsonObject> slots;
  for (size_t i = 0; i < e.slots.size(); ++i) {
    const SlotReport& s = e.slots[i];
    JsonObject j;
    j.add("id", i)
        .add("state", s.state)
        .add("prompt_tokens", s.promptTokens)
        .add("fed_tokens", s.fedTokens)
        .add("cached_tokens", s.cachedTokens)
        .add("generated_tokens", s.generatedTokens)
        .add("tokens_per_second", s.tokensPerSecond);
    slots.push_back(std::move(j));
  }
  JsonObject out;
  out.add("slots", std::span<const JsonObject>(slots));
  return out.str();
}

std::string connectionMetricsText(const ConnectionStats& c, size_t maxConnections) {
  std::ostringstream o;
  o.precision(17);
  metric(o, "k3_connections_open", "gauge", "Client connections open (idle, reading or being answered).",
         static_cast<double>(c.open));
  metric(o, "k3_connections_limit", "gauge", "Client connections that may be open (--max-connections).",
         static_cast<double>(maxConnections));
  metric(o, "k3_connections_accepted_total", "counter", "Client connections accepted.", static_cast<double>(c.accepted));
  metric(o, "k3_connections_refused_total", "counter",
         "Connections answered 503 and closed because --max-connections were open.",
         static_cast<double>(c.refusedAtLimit));
  metric(o, "k3_requests_timed_out_total", "counter",
         "Requests not complete within --request-timeout (answered 408, closed).", static_cast<double>(c.timedOut));
  metric(o, "k3_connections_idle_closed_total", "counter",
         "Keep-alive connections closed after --keep-alive-timeout without a request.",
         static_cast<double>(c.idleClosed));
  return o.str();
}

}  // namespace k3::serve
