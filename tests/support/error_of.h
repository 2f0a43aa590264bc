// What a call throws, as "<kind>: <message>" (the apps' one-line form), or
// "no error": the io tests compare it with the exact line expected.
#pragma once

#include <functional>
#include <string>

#include "k3/io/error.h"

namespace k3test {

inline std::string errorOf(const std::function<void()>& f) {
  try {
    f();
  } catch (const k3::Error& e) {
    return std::string(k3::errorKindName(e.kind())) + ": " + e.what();
  }
  return "no error";
}

}  // namespace k3test
