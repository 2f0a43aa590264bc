// Internal: <immintrin.h> for the AVX-512 kernel files, or the scalar model
// of the intrinsics when tests compile those files for emulation.
// Includes only: no code, no state (thread-safe trivially).
#pragma once

#ifdef K3_AVX512_EMULATION
// Tests compile this file against a scalar model of the intrinsics so the
// lane logic is checked on CPUs without AVX-512 (tests/kernels/avx512_emu_test.cpp).
#include K3_AVX512_EMULATION
#else
// GCC 12.2 false positive (PR105593): the _mm512_undefined_* helpers inside
// many AVX-512 intrinsics self-initialise and trip -Wuninitialized.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <immintrin.h>
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif
#endif
