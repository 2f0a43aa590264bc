// The httplib::Stream a worker hands to cpp-httplib for one request: reads
// come from the complete request the connection loop already holds in
// memory, writes go to the client's socket under a per-write timeout.
// Thread-safety: one worker thread uses it for one request.
#pragma once

#include <httplib.h>

#include <string>
#include <string_view>

namespace k3::serve {

struct PeerAddress {
  std::string remoteIp, localIp;
  int remotePort = 0, localPort = 0;
};

class RequestStream : public httplib::Stream {
 public:
  RequestStream(std::string_view request, int fd, const PeerAddress& peer, int writeTimeoutMs)
      : request_(request), fd_(fd), peer_(peer), writeTimeoutMs_(writeTimeoutMs) {}

  bool is_readable() const override { return !request_.empty(); }
  bool is_writable() const override;
  ssize_t read(char* ptr, size_t size) override;
  ssize_t write(const char* ptr, size_t size) override;
  void get_remote_ip_and_port(std::string& ip, int& port) const override;
  void get_local_ip_and_port(std::string& ip, int& port) const override;
  socket_t socket() const override { return fd_; }
  bool writeFailed() const { return writeFailed_; }

 private:
  std::string_view request_;  // what is left to read
  int fd_;
  const PeerAddress& peer_;
  int writeTimeoutMs_;
  bool writeFailed_ = false;
};

}  // namespace k3::serve
