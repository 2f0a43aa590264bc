// SIGINT/SIGTERM as an orderly stop for a long-lived server: block them in
// every thread (call first, before any thread starts), then wait for one.
// Thread-safety: process-wide by nature (signal masks): block first, on the
// main thread before any other starts; one waiter.
#pragma once

namespace k3::serve {

void blockStopSignals();
int waitForStopSignal();  // returns the signal number

}  // namespace k3::serve
