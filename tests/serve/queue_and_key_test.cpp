// The bounded FIFO in front of the engine, and the API key comparison.
#include <gtest/gtest.h>

#include <memory>
#include <thread>

#include "k3/io/error.h"
#include "k3/serve/request_queue.h"
#include "k3/serve/serve_options.h"

namespace {

using namespace k3::serve;

TEST(RequestQueue, BoundedFifoRefusesWhenFullAndHandsBackOnClose) {
  RequestQueue<int> q(2);
  EXPECT_TRUE(q.tryPush(std::make_shared<int>(1)));
  EXPECT_TRUE(q.tryPush(std::make_shared<int>(2)));
  EXPECT_FALSE(q.tryPush(std::make_shared<int>(3)));  // full: the caller answers 429
  EXPECT_EQ(q.depth(), 2u);
  EXPECT_EQ(*q.pop(), 1);  // first in, first out
  EXPECT_TRUE(q.tryPush(std::make_shared<int>(4)));
  EXPECT_EQ(*q.pop(), 2);
  auto left = q.close();
  ASSERT_EQ(left.size(), 1u);
  EXPECT_EQ(*left[0], 4);
  EXPECT_EQ(q.pop(), nullptr);
  EXPECT_FALSE(q.tryPush(std::make_shared<int>(5)));
}

TEST(RequestQueue, PopWaitsForAPushOrClose) {
  RequestQueue<int> q(1);
  std::shared_ptr<int> got;
  std::thread t([&] { got = q.pop(); });
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_TRUE(q.tryPush(std::make_shared<int>(7)));
  t.join();
  ASSERT_TRUE(got);
  EXPECT_EQ(*got, 7);
  std::thread u([&] { got = q.pop(); });
  q.close();
  u.join();
  EXPECT_EQ(got, nullptr);
}

TEST(ServeOptions, KeyCompareAndSafeDefaults) {
  EXPECT_TRUE(sameKey("secret", "secret"));
  EXPECT_FALSE(sameKey("secreT", "secret"));
  EXPECT_FALSE(sameKey("secret1", "secret"));
  EXPECT_FALSE(sameKey("secre", "secret"));
  EXPECT_FALSE(sameKey("", ""));  // no key configured never matches
  const ServeOptions defaults;
  EXPECT_EQ(defaults.host, "127.0.0.1");
  EXPECT_NO_THROW(checkServeOptions(defaults));
  for (const std::string host : {"0.0.0.0", "192.168.1.2", "::"}) {
    ServeOptions o;
    o.host = host;
    EXPECT_THROW(checkServeOptions(o), k3::Error) << host;
    o.apiKey = host + "-key";
    EXPECT_NO_THROW(checkServeOptions(o)) << host;
  }
}

// --host must be an IP address; loopback is 127.0.0.0/8, ::1 and ::ffff:127.x
// (a name that merely starts with "127." is neither, and needs no DNS to be refused).
TEST(ServeOptions, HostMustBeAnIpAddress) {
  for (const char* host : {"127.0.0.1", "127.1.2.3", "::1", "::ffff:127.0.0.1"}) {
    EXPECT_TRUE(isLoopbackAddress(host)) << host;
    ServeOptions o;
    o.host = host;
    EXPECT_NO_THROW(checkServeOptions(o)) << host;
  }
  for (const char* host : {"127.example.com", "127.0.0.1.nip.io", "localhost", "127.0.0", "", "127.0.0.1 "}) {
    EXPECT_FALSE(isLoopbackAddress(host)) << host;
    ServeOptions o;
    o.host = host;
    o.apiKey = std::string(host) + "-key";  // even with a key: not an address
    try {
      checkServeOptions(o);
      ADD_FAILURE() << "accepted --host '" << host << "'";
    } catch (const k3::Error& e) {
      EXPECT_NE(std::string(e.what()).find("is not an IP address"), std::string::npos) << e.what();
    }
  }
  EXPECT_FALSE(isLoopbackAddress("128.0.0.1"));
  EXPECT_FALSE(isLoopbackAddress("::2"));
}

// RFC 9110 11.1: the auth scheme is case-insensitive; the token is not.
TEST(ServeOptions, BearerSchemeInAnyCase) {
  for (const char* h : {"Bearer sk-1", "bearer sk-1", "BEARER sk-1", "bEaReR   sk-1", "Bearer sk-1 "})
    EXPECT_EQ(bearerToken(h), "sk-1") << h;
  for (const char* h : {"", "Bearer", "Bearersk-1", "Basic sk-1", "Bearer: sk-1", "Token sk-1"})
    EXPECT_EQ(bearerToken(h), "") << h;
  EXPECT_EQ(bearerToken("Bearer SK-1"), "SK-1");  // the key keeps its case
}

}  // namespace
