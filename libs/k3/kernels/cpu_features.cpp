// CPUID checks via __builtin_cpu_supports (which also checks that the OS
// saves the wide registers); F16C straight from CPUID leaf 1 because clang 14
// does not know the "f16c" feature name.
#include "k3/kernels/cpu_features.h"

#include <cpuid.h>

#include <atomic>

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

// limitIsa()'s ceiling (-1: none) and whether bestIsa() has fixed the choice.
static std::atomic<int> isaCeiling{-1};
static std::atomic<bool> isaFixed{false};

// The best supported ISA at most `ceiling` (-1: no ceiling); a ceiling the CPU
// cannot run keeps the best supported.
static Isa resolveIsa(int ceiling) {
  Isa best = isaSupported(Isa::Avx512) ? Isa::Avx512
             : isaSupported(Isa::Avx2) ? Isa::Avx2
                                       : Isa::Scalar;
  if (ceiling < 0) return best;
  const auto asked = static_cast<Isa>(ceiling);
  return isaSupported(asked) ? asked : best;
}

Isa bestIsa() {
  static const Isa isa = [] {
    isaFixed.store(true);
    return resolveIsa(isaCeiling.load());
  }();
  return isa;
}

void limitIsa(Isa ceiling) {
  if (isaFixed.load() && resolveIsa(static_cast<int>(ceiling)) != bestIsa())
    fail(ErrorKind::Internal, "limitIsa(", isaName(ceiling), ") after the kernels chose ", isaName(bestIsa()));
  isaCeiling.store(static_cast<int>(ceiling));
}

Isa parseIsaName(std::string_view name, const char* what) {
  for (Isa isa : {Isa::Scalar, Isa::Avx2, Isa::Avx512})
    if (name == isaName(isa)) return isa;
  fail(ErrorKind::Usage, what, ": '", name, "' is not an instruction set (scalar, avx2 or avx512)");
}

Isa requireIsa(Isa isa, const char* what) {
  if (!isaSupported(isa))
    fail(ErrorKind::Unsupported, what, ": this CPU cannot run the ", isaName(isa), " kernels");
  return isa;
}

}  // namespace k3::kernels
