#include "k3/io/sha256.h"

#include <openssl/evp.h>

#include <utility>

#include "k3/io/error.h"

namespace k3 {

static EVP_MD_CTX* ctxOf(void* p) { return static_cast<EVP_MD_CTX*>(p); }

Sha256::Sha256() {
  ctx_ = EVP_MD_CTX_new();
  if (!ctx_) fail(ErrorKind::Internal, "sha256: EVP_MD_CTX_new failed");
  reset();
}

Sha256::~Sha256() {
  if (ctx_) EVP_MD_CTX_free(ctxOf(ctx_));
}

Sha256::Sha256(Sha256&& other) noexcept : ctx_(std::exchange(other.ctx_, nullptr)) {}

Sha256& Sha256::operator=(Sha256&& other) noexcept {
  if (this != &other) {
    if (ctx_) EVP_MD_CTX_free(ctxOf(ctx_));
    ctx_ = std::exchange(other.ctx_, nullptr);
  }
  return *this;
}

void Sha256::reset() {
  if (EVP_DigestInit_ex(ctxOf(ctx_), EVP_sha256(), nullptr) != 1)
    fail(ErrorKind::Internal, "sha256: EVP_DigestInit_ex failed");
}

void Sha256::update(const void* data, size_t len) {
  if (len == 0) return;
  if (EVP_DigestUpdate(ctxOf(ctx_), data, len) != 1)
    fail(ErrorKind::Internal, "sha256: EVP_DigestUpdate failed");
}

Sha256Digest Sha256::finish() {
  Sha256Digest d{};
  unsigned int n = 0;
  if (EVP_DigestFinal_ex(ctxOf(ctx_), d.data(), &n) != 1 || n != d.size())
    fail(ErrorKind::Internal, "sha256: EVP_DigestFinal_ex failed");
  return d;
}

std::string Sha256::finishHex() { return hex(finish()); }

std::string Sha256::hex(const Sha256Digest& d) {
  static const char* digits = "0123456789abcdef";
  std::string s(64, '0');
  for (size_t i = 0; i < d.size(); ++i) {
    s[2 * i] = digits[d[i] >> 4];
    s[2 * i + 1] = digits[d[i] & 15];
  }
  return s;
}

std::string Sha256::hexOf(const void* data, size_t len) {
  Sha256 h;
  h.update(data, len);
  return h.finishHex();
}

}  // namespace k3
