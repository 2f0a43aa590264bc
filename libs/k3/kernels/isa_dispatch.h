// The one rule by which a kernel picks its instruction set: every kernel
// family declares scalar:: (the reference, baseline x86-64), avx2:: (AVX2 +
// FMA, *_avx2.cpp) and, where 16 lanes pay, avx512:: (*_avx512.cpp) versions
// of the same signature, and its public function calls
// K3_KERNEL(name)(args…) / K3_KERNEL3(name)(args…). The choice follows
// quant::bestIsa(), decided once per process, so every token of a run goes
// through the same arithmetic. Callers (layers, the forward) call only the
// public functions, never a scalar::/avx2:: version directly.
#pragma once

#include "k3/quant/cpu_features.h"

namespace k3::kernels {

// The path the public kernels take on this CPU.
inline quant::Isa activeIsa() { return quant::bestIsa(); }

template <typename Fn>
Fn pickKernel(Fn scalarFn, Fn avx2Fn) {
  return activeIsa() == quant::Isa::Scalar ? scalarFn : avx2Fn;
}

template <typename Fn>
Fn pickKernel(Fn scalarFn, Fn avx2Fn, Fn avx512Fn) {
  return activeIsa() == quant::Isa::Avx512 ? avx512Fn : pickKernel(scalarFn, avx2Fn);
}

}  // namespace k3::kernels

// Inside namespace k3::kernels, where scalar::/avx2::/avx512:: resolve.
#define K3_KERNEL(name) ::k3::kernels::pickKernel(&scalar::name, &avx2::name)
#define K3_KERNEL3(name) ::k3::kernels::pickKernel(&scalar::name, &avx2::name, &avx512::name)
