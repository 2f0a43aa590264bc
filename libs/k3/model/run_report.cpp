#include "k3/model/run_report.h"

#include <algorithm>
#include <cstdio>

#include "k3/io/error.h"
#include "k3/io/process_memory.h"
#include "k3/kernels/cpu_features.h"

namespace k3::model {
namespace {

// Expert streaming figures (--expert-gb): bytes, reads, time with a read in
// flight (throughput = disk bytes over it), time compute waited for a read.
void addResidency(JsonObject& j, const ResidencyStats& r) {
  const double gbs = r.readSeconds > 0 ? static_cast<double>(r.diskBytes) / r.readSeconds / 1e9 : 0.0;
  j.add("expert_budget_bytes", r.budgetBytes)
      .add("expert_resident_bytes", r.residentBytes)
      .add("expert_reads", r.reads)
      .add("expert_unique_reads", r.uniqueReads)
      .add("expert_direct_reads", r.directReads)
      .add("expert_disk_bytes", r.diskBytes)
      .add("expert_read_s", r.readSeconds)
      .add("expert_read_gb_s", gbs)
      .add("expert_wait_s", r.waitSeconds)
      .add("expert_read_queues", r.readQueues);
}

// Seconds by forward phase, then the routed-expert weight bytes the experts
// phase used: "<pass>_phases_s":{"kda":...,...},"<pass>_expert_weight_bytes":N
void addPhases(JsonObject& j, const std::string& pass, const PhaseTimes& t) {
  JsonObject phases;
  for (size_t p = 0; p < kPhaseCount; ++p) {
    const auto phase = static_cast<Phase>(p);
    phases.add(phaseName(phase), t[phase]);
  }
  j.raw(pass + "_phases_s", phases.str());
  j.add(pass + "_expert_weight_bytes", static_cast<unsigned long long>(t.expertBytes));
}

double perSecond(uint64_t tokens, double seconds) { return seconds > 0 ? tokens / seconds : 0.0; }

}  // namespace

JsonObject runStatsJson(const Session& s, const RunReportOptions& o) {
  const SessionStats& st = s.stats();
  JsonObject j;
  j.add("prefill_tokens", st.prefillTokens)
      .add("prefill_passes", st.prefillPasses)
      .fixed("prefill_tok_s", perSecond(st.prefillTokens, st.prefillSeconds), 3)
      .add("decode_tokens", st.decodeTokens)
      .fixed("decode_tok_s", perSecond(st.decodeTokens, st.decodeSeconds), 3)
      .add("peak_rss_bytes", peakRssBytes())
      .add("weights_mapped_bytes", s.weights().mappedBytesTotal())
      .add("weights_huge_page_bytes", s.weights().hugePageBytesTotal())
      .add("expert_bytes_read", s.residency().bytesRead())
      .add("activations", o.activations)
      .add("isa", kernels::isaName(kernels::bestIsa()));
  addResidency(j, s.residency().stats());
  addPhases(j, "prefill", st.prefillPhases);
  addPhases(j, "decode", st.decodePhases);
  j.add("expert_top_p", static_cast<double>(o.expertTopP))
      .add("experts_kept_mean", s.expertsKeptPerTokenLayer())
      .add("expert_bytes_per_token", s.expertBytesPerToken());
  return j;
}

std::string runStatsText(const Session& s, const RunReportOptions& o) {
  const SessionStats& st = s.stats();
  const ResidencyStats rs = s.residency().stats();
  auto line = [](auto... args) {
    const int n = std::snprintf(nullptr, 0, args...);
    std::string out(static_cast<size_t>(n), '\0');
    std::snprintf(out.data(), out.size() + 1, args...);
    return out;
  };
  std::string text = line(
      "[k3-run] prefill %llu tok @ %.2f tok/s | decode %llu tok @ %.2f tok/s | peak RSS %.1f MiB | "
      "expert bytes read %.1f MiB | weights in 2 MiB pages %.0f%% | %s kernels\n",
      static_cast<unsigned long long>(st.prefillTokens), perSecond(st.prefillTokens, st.prefillSeconds),
      static_cast<unsigned long long>(st.decodeTokens), perSecond(st.decodeTokens, st.decodeSeconds),
      peakRssBytes() / 1048576.0, s.residency().bytesRead() / 1048576.0,
      100.0 * static_cast<double>(s.weights().hugePageBytesTotal()) /
          static_cast<double>(std::max<uint64_t>(1, s.weights().mappedBytesTotal())),
      kernels::isaName(kernels::bestIsa()));
  if (s.residency().bounded())
    text += line(
        "[k3-run] experts: budget %.1f MiB, resident %.1f MiB, %llu reads (%llu O_DIRECT) "
        "@ %.2f GB/s, compute waited %.2f s\n",
        rs.budgetBytes / 1048576.0, rs.residentBytes / 1048576.0, static_cast<unsigned long long>(rs.reads),
        static_cast<unsigned long long>(rs.directReads), rs.readSeconds > 0 ? rs.diskBytes / rs.readSeconds / 1e9 : 0.0,
        rs.waitSeconds);
  if (o.expertTopP < 1.0f)
    text += line(
        "[k3-run] expert top-p %g: %.2f experts kept per token and MoE layer, %.1f MiB expert "
        "bytes per token\n",
        static_cast<double>(o.expertTopP), s.expertsKeptPerTokenLayer(), s.expertBytesPerToken() / 1048576.0);
  return text;
}

void addTeacherForced(JsonObject& j, const TeacherForcedResult& r) {
  j.add("positions", r.positions).add("argmax", r.argmax);
  if (r.predicted) j.add("perplexity", r.perplexity()).add("predicted", r.predicted);
}

void addGenerated(JsonObject& j, std::span<const int32_t> promptIds, std::span<const int32_t> tokens, bool stopped) {
  j.add("prompt_ids", promptIds).add("tokens", tokens).add("stopped", stopped);
}

}  // namespace k3::model
