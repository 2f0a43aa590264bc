// The one rule by which a kernel picks its instruction set: every kernel
// family declares scalar:: (the reference, baseline x86-64), avx2:: (AVX2 +
// FMA, *_avx2.cpp) and, where 16 lanes pay, avx512:: (*_avx512.cpp) versions
// of the same signature, and its public function calls
// K3_KERNEL(name)(args…) / K3_KERNEL3(name)(args…), which follow bestIsa()
// (decided once per process, so every token of a run goes through the same
// arithmetic), or K3_KERNEL_FOR(isa, name) / K3_KERNEL3_FOR(isa, name) where
// the public function takes the ISA (codec's quantizers and the matvec
// kernels' entry points, so tests can run every path). A family without avx512:: runs avx2:: on AVX-512 machines.
// Callers (layers, the forward, the converter) call only the public
// functions, never a scalar::/avx2:: version directly.
// Thread-safety: safe from any thread; bestIsa() is decided once per process.
#pragma once

#include "k3/kernels/cpu_features.h"

namespace k3::kernels {

// `isa` must be supported (requireIsa() for a caller's choice; bestIsa() always is).
template <typename Fn>
Fn pickKernel(Isa isa, Fn scalarFn, Fn avx2Fn) {
  return isa == Isa::Scalar ? scalarFn : avx2Fn;
}

template <typename Fn>
Fn pickKernel(Isa isa, Fn scalarFn, Fn avx2Fn, Fn avx512Fn) {
  return isa == Isa::Avx512 ? avx512Fn : pickKernel(isa, scalarFn, avx2Fn);
}

}  // namespace k3::kernels

// Where scalar::/avx2::/avx512:: resolve to the family's namespaces.
#define K3_KERNEL_FOR(isa, name) ::k3::kernels::pickKernel((isa), &scalar::name, &avx2::name)
#define K3_KERNEL3_FOR(isa, name) ::k3::kernels::pickKernel((isa), &scalar::name, &avx2::name, &avx512::name)
#define K3_KERNEL(name) K3_KERNEL_FOR(::k3::kernels::bestIsa(), name)
#define K3_KERNEL3(name) K3_KERNEL3_FOR(::k3::kernels::bestIsa(), name)
