// Which SIMD instruction sets the kernels may use on this CPU. The library is
// compiled for baseline x86-64; *_avx2.cpp / *_avx512.cpp files are compiled with
// ISA flags and are only ever called after these checks say the CPU has them.
#pragma once

namespace k3::kernels {

enum class Isa {
  Scalar,  // portable reference, baseline x86-64
  Avx2,    // AVX2 + FMA + F16C
  Avx512,  // AVX-512 F/BW/VL/DQ + VNNI, BF16, VBMI (Zen 4/5, Sapphire Rapids and later)
};

const char* isaName(Isa isa);

// True when this CPU (and OS) can run kernels built for `isa`.
bool isaSupported(Isa isa);

// The best supported ISA, decided once per process (immutable afterwards).
// The environment variable K3_ISA=scalar|avx2|avx512 lowers it (for A/B runs
// and tests); asking for an unsupported ISA falls back to the best supported.
Isa bestIsa();

// Throws k3::Error(Unsupported) naming `what` if the CPU cannot run `isa`.
Isa requireIsa(Isa isa, const char* what);

}  // namespace k3::kernels
