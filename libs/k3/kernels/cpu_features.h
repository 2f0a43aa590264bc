// Which SIMD instruction sets the kernels may use on this CPU. The library is
// compiled for baseline x86-64; *_avx2.cpp / *_avx512.cpp files are compiled with
// ISA flags and are only ever called after these checks say the CPU has them.
// Thread-safety: every function may be called from any thread; limitIsa()
// belongs at the top of main, before any thread or kernel starts.
#pragma once

#include <string_view>

namespace k3::kernels {

enum class Isa {
  Scalar,  // portable reference, baseline x86-64
  Avx2,    // AVX2 + FMA + F16C
  Avx512,  // AVX-512 F/BW/VL/DQ + VNNI, BF16, VBMI (Zen 4/5, Sapphire Rapids and later)
};

const char* isaName(Isa isa);

// True when this CPU (and OS) can run kernels built for `isa`.
bool isaSupported(Isa isa);

// The ISA the kernels use: the best this CPU supports, lowered to the
// ceiling given to limitIsa(). Fixed at its first call, immutable afterwards
// (the dispatch macros of isa_dispatch.h ask it at every kernel call).
Isa bestIsa();

// The caller's ISA choice (the apps' --isa / K3_ISA): lowers bestIsa() to
// `ceiling`; a ceiling above what the CPU supports keeps the best supported.
// It is process-wide, as the CPU is, so it is set once, before the first
// bestIsa(): a later call that would change the choice throws
// k3::Error(Internal) (one that keeps it is accepted). The library itself reads no environment.
void limitIsa(Isa ceiling);

// "scalar" | "avx2" | "avx512"; anything else throws k3::Error(Usage) naming `what`.
Isa parseIsaName(std::string_view name, const char* what);

// Throws k3::Error(Unsupported) naming `what` if the CPU cannot run `isa`.
Isa requireIsa(Isa isa, const char* what);

}  // namespace k3::kernels
