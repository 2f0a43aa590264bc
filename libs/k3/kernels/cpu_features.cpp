// CPUID checks via __builtin_cpu_supports (which also checks that the OS
// saves the wide registers); F16C straight from CPUID leaf 1 because clang 14
// does not know the "f16c" feature name.
#include "k3/kernels/cpu_features.h"

#include <cpuid.h>

#include <cstdlib>
#include <cstring>

#include "k3/io/error.h"

namespace k3::kernels {

static bool hasF16c() {
  unsigned eax, ebx, ecx, edx;
  return __get_cpuid(1, &eax, &ebx, &ecx, &edx) && (ecx & bit_F16C);
}

const char* isaName(Isa isa) {
  switch (isa) {
    case Isa::Scalar: return "scalar";
    case Isa::Avx2: return "avx2";
    case Isa::Avx512: return "avx512";
  }
  return "?";
}

// Asked once per ISA: cpuid is a VM exit under virtualisation, far too slow
// for the per-call checks of the kernel entry points.
static bool probeIsa(Isa isa) {
  switch (isa) {
    case Isa::Scalar:
      return true;
    case Isa::Avx2:
      return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
             hasF16c() && __builtin_cpu_supports("bmi2");
    case Isa::Avx512:
      return probeIsa(Isa::Avx2) && __builtin_cpu_supports("avx512f") &&
             __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl") &&
             __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vnni") &&
             __builtin_cpu_supports("avx512bf16") && __builtin_cpu_supports("avx512vbmi");
  }
  return false;
}

bool isaSupported(Isa isa) {
  static const bool supported[3] = {probeIsa(Isa::Scalar), probeIsa(Isa::Avx2), probeIsa(Isa::Avx512)};
  const auto i = static_cast<unsigned>(isa);
  return i < 3 && supported[i];
}

static Isa detectBestIsa() {
  Isa best = isaSupported(Isa::Avx512) ? Isa::Avx512
             : isaSupported(Isa::Avx2) ? Isa::Avx2
                                       : Isa::Scalar;
  const char* want = std::getenv("K3_ISA");
  if (!want || !*want) return best;
  Isa asked = best;
  if (std::strcmp(want, "scalar") == 0) asked = Isa::Scalar;
  if (std::strcmp(want, "avx2") == 0) asked = Isa::Avx2;
  if (std::strcmp(want, "avx512") == 0) asked = Isa::Avx512;
  return isaSupported(asked) ? asked : best;
}

Isa bestIsa() {
  static const Isa isa = detectBestIsa();
  return isa;
}

Isa requireIsa(Isa isa, const char* what) {
  if (!isaSupported(isa))
    fail(ErrorKind::Unsupported, what, ": this CPU cannot run the ", isaName(isa), " kernels");
  return isa;
}

}  // namespace k3::kernels
