// The chat page served at GET / (libs/k3/serve/web/index.html), embedded in
// the binary at build time (a generated .cpp; nothing is read from disk).
// Thread-safety: constant bytes; safe from any thread.
#pragma once

#include <string_view>

namespace k3::serve {

std::string_view webPage();

}  // namespace k3::serve
