#include "k3/serve/stop_signal.h"

#include <pthread.h>
#include <signal.h>

namespace k3::serve {

namespace {
sigset_t stopSet() {
  sigset_t s;
  sigemptyset(&s);
  sigaddset(&s, SIGINT);
  sigaddset(&s, SIGTERM);
  return s;
}
}  // namespace

void blockStopSignals() {
  const sigset_t s = stopSet();
  pthread_sigmask(SIG_BLOCK, &s, nullptr);
}

int waitForStopSignal() {
  const sigset_t s = stopSet();
  int sig = 0;
  while (sigwait(&s, &sig) != 0) {
  }
  return sig;
}

}  // namespace k3::serve
