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

}  // namespace
