// Before attach() (the model still mapping/loading) the server already
// listens: /health says 503 "loading" so supervisors can watch a 1.5 TB
// model come up, the model routes answer 503 in OpenAI's error envelope,
// and the page is served. (200 after attach: tests/serve/serve_api_test.mjs.)
#include <httplib.h>
#include <gtest/gtest.h>

#include "k3/serve/http_server.h"

namespace {

TEST(HttpServerLoading, HealthAndModelRoutesAnswer503UntilAttached) {
  k3::serve::ServeOptions o;
  o.port = 0;
  k3::serve::HttpServer server(o);
  const int port = server.start();
  ASSERT_GT(port, 0);
  httplib::Client c("127.0.0.1", port);
  auto health = c.Get("/health");
  ASSERT_TRUE(health);
  EXPECT_EQ(health->status, 503);
  EXPECT_NE(health->body.find("loading"), std::string::npos) << health->body;
  auto models = c.Get("/v1/models");
  ASSERT_TRUE(models);
  EXPECT_EQ(models->status, 503);
  EXPECT_NE(models->body.find("\"error\""), std::string::npos) << models->body;
  auto chat = c.Post("/v1/chat/completions", R"({"messages":[{"role":"user","content":"hi"}]})", "application/json");
  ASSERT_TRUE(chat);
  EXPECT_EQ(chat->status, 503);
  auto page = c.Get("/");
  ASSERT_TRUE(page);
  EXPECT_EQ(page->status, 200);
  server.stop();
}

}  // namespace
