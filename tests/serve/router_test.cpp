// The route table: a path matches the first pattern of its shape; a method
// that pattern has no row for is 405 with the methods it has; {rest...}
// takes slashes and stops at its suffix.
#include "serve/router.hpp"

#include <gtest/gtest.h>

#include "serve/http_types.hpp"

namespace cairn::serve {
namespace {

Reply one(RouteCall&) { return Reply{HttpResponse{.status = 201}}; }
Reply two(RouteCall&) { return Reply{HttpResponse{.status = 202}}; }

Router table() {
  return Router({
      {"GET", "/healthz", one, SessionUse::none, Access::anyone},
      {"HEAD", "/healthz", one, SessionUse::none, Access::anyone},
      {"GET", "/v1/sessions/{id}", one, SessionUse::open},
      {"DELETE", "/v1/sessions/{id}", two},
      {"POST", "/v1/sessions/{id}/refs/{ref}/inputs/{input}", one, SessionUse::open},
      {"POST", "/tasks/{rest...}:cancel", two, SessionUse::none, Access::token, "cancel"},
      {"GET", "/tasks/{rest...}", one},
  });
}

TEST(Router, MatchesByShapeAndNamesTheParameters) {
  const Router router = table();
  RouteMatch match = router.match("POST", "/v1/sessions/s%2F1/refs/main/inputs/r-7");
  ASSERT_NE(match.route, nullptr);
  EXPECT_EQ(match.route->handler, &one);
  EXPECT_EQ(match.params.id, "s%2F1");  // as the path spells it: the API decodes and checks it
  EXPECT_EQ(match.params.ref, "main");
  EXPECT_EQ(match.params.input, "r-7");
  EXPECT_FALSE(match.params.rest);
  EXPECT_EQ(match.name, "/v1/sessions/{id}/refs/{ref}/inputs/{input}");

  match = router.match("DELETE", "/v1/sessions/abc");
  ASSERT_NE(match.route, nullptr);
  EXPECT_EQ(match.route->handler, &two);
  EXPECT_EQ(match.params.id, "abc");

  // An empty segment is still the parameter's (the API refuses the name).
  match = router.match("GET", "/v1/sessions/");
  ASSERT_NE(match.route, nullptr);
  EXPECT_EQ(match.params.id, "");
}

TEST(Router, APathOfNoPatternIsUnknownAndAMethodItLacksIsNotAllowed) {
  const Router router = table();
  for (const char* path : {"/", "", "healthz", "/healthz/", "/v1/sessions", "/v1/sessions/a/b", "//healthz", "/tasks/"}) {
    const RouteMatch match = router.match("GET", path);
    EXPECT_FALSE(match.path_known()) << path;
    EXPECT_EQ(match.route, nullptr) << path;
    EXPECT_EQ(match.name, "unmatched") << path;
  }
  const RouteMatch match = router.match("PUT", "/v1/sessions/abc");
  EXPECT_TRUE(match.path_known());
  EXPECT_EQ(match.route, nullptr);
  EXPECT_EQ(allow_header(match.allowed), "GET, DELETE");
  EXPECT_EQ(match.name, "/v1/sessions/{id}");

  const RouteMatch health = router.match("POST", "/healthz");
  EXPECT_EQ(health.route, nullptr);
  EXPECT_EQ(health.access, Access::anyone);
  EXPECT_EQ(allow_header(health.allowed), "GET, HEAD");
}

TEST(Router, TheRestOfAPathTakesItsSlashesUpToItsSuffix) {
  const Router router = table();
  RouteMatch match = router.match("POST", "/tasks/s/main/run-1:cancel");
  ASSERT_NE(match.route, nullptr);
  EXPECT_EQ(match.route->handler, &two);
  EXPECT_EQ(match.params.rest, "s/main/run-1");
  EXPECT_EQ(match.name, "cancel");

  // The first pattern of the path's shape decides: GET on a cancel is 405,
  // not the task's GET.
  match = router.match("GET", "/tasks/s/main/run-1:cancel");
  EXPECT_EQ(match.route, nullptr);
  EXPECT_EQ(allow_header(match.allowed), "POST");

  match = router.match("GET", "/tasks/s%2Fmain%2Frun-1");
  ASSERT_NE(match.route, nullptr);
  EXPECT_EQ(match.params.rest, "s%2Fmain%2Frun-1");
  // A suffix alone names no task to cancel: the path is the plain
  // pattern's, which takes no POST.
  match = router.match("POST", "/tasks/:cancel");
  EXPECT_EQ(match.route, nullptr);
  EXPECT_EQ(match.params.rest, ":cancel");
}

TEST(Router, EveryErrorCodeHasItsStatus) {
  EXPECT_EQ(http_status(Error{Errc::unknown_ref, ""}), 404);
  EXPECT_EQ(http_status(Error{Errc::busy, ""}), 409);
  EXPECT_EQ(http_status(Error{Errc::closed, ""}), 503);
  EXPECT_EQ(http_status(Error{Errc::internal_error, ""}), 500);
  EXPECT_EQ(http_status(http_error(HttpErrc::unavailable, "")), 503);
  EXPECT_EQ(http_status(http_error(HttpErrc::unsupported_media_type, "")), 415);
  EXPECT_EQ(http_status(Error::recorded("a_code_of_a_later_build", "")), 500);
}

}  // namespace
}  // namespace cairn::serve
