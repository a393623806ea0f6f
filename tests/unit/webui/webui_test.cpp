// The dashboard's embedded files and routes: every file of host/src/oe/webui/assets is in the
// binary byte for byte, served with its type, an ETag that a revalidation answers with 304, and
// the headers that keep the page to its origin; nothing outside the table is reachable.
#include "oe/webui/webui.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <string>

namespace oe::webui {
namespace {

const std::filesystem::path kAssetDir =
    std::filesystem::path(OE_SOURCE_DIR) / "host" / "src" / "oe" / "webui" / "assets";

std::string readFile(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

std::optional<std::string> header(const httpd::Response& response, std::string_view name) {
  for (const auto& [key, value] : response.headers) {
    if (key == name) {
      return value;
    }
  }
  return std::nullopt;
}

// A GET through the router, as the server makes it: match, params, then the handler.
httpd::Response get(std::string_view path, std::optional<std::string> if_none_match = {}) {
  httpd::Router router;
  addDashboardRoutes(router);
  const auto match = router.match("GET", path);
  if (match.route == nullptr) {
    httpd::Response none;
    none.status = -1;
    return none;
  }
  EXPECT_EQ(match.route->scope, httpd::Scope::kPublic) << path;
  httpd::Request request;
  request.method = "GET";
  request.path = std::string(path);
  request.target = std::string(path);
  request.params = match.params;
  if (if_none_match) {
    request.headers.emplace_back("if-none-match", *if_none_match);
  }
  return match.route->handler(request);
}

void expectSecurityHeaders(const httpd::Response& response, std::string_view what) {
  const auto csp = header(response, "Content-Security-Policy");
  ASSERT_TRUE(csp) << what;
  EXPECT_NE(csp->find("default-src 'self'"), std::string::npos) << *csp;
  EXPECT_NE(csp->find("script-src 'self'"), std::string::npos) << *csp;
  EXPECT_NE(csp->find("frame-ancestors 'none'"), std::string::npos) << *csp;
  EXPECT_EQ(csp->find("unsafe-inline"), std::string::npos) << *csp;
  EXPECT_EQ(csp->find("unsafe-eval"), std::string::npos) << *csp;
  EXPECT_EQ(header(response, "X-Content-Type-Options"), "nosniff") << what;
  EXPECT_EQ(header(response, "Referrer-Policy"), "no-referrer") << what;
  EXPECT_EQ(header(response, "X-Frame-Options"), "DENY") << what;
}

TEST(WebuiTest, EveryFileOfTheAssetFolderIsEmbeddedByteForByte) {
  std::set<std::string> on_disk;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(kAssetDir)) {
    if (entry.is_regular_file()) {
      on_disk.insert(entry.path().lexically_relative(kAssetDir).generic_string());
    }
  }
  std::set<std::string> embedded;
  for (std::string_view path : assetPaths()) {
    embedded.insert(std::string(path));
  }
  EXPECT_EQ(embedded, on_disk);
  for (const auto& path : {"index.html", "app.js", "app.css", "favicon.svg"}) {
    EXPECT_TRUE(on_disk.count(path)) << path;
  }
  std::set<std::string_view> etags;
  for (const std::string& path : on_disk) {
    const auto asset = find(path);
    ASSERT_TRUE(asset) << path;
    EXPECT_EQ(asset->path, path);
    EXPECT_EQ(asset->bytes, readFile(kAssetDir / path)) << path;
    EXPECT_TRUE(std::regex_match(std::string(asset->etag), std::regex("\"[0-9a-f]{32}\"")))
        << asset->etag;
    etags.insert(asset->etag);
  }
  EXPECT_EQ(etags.size(), on_disk.size()) << "two files share an ETag";
}

TEST(WebuiTest, ContentTypesFollowTheExtension) {
  EXPECT_EQ(find("index.html")->content_type, "text/html; charset=utf-8");
  EXPECT_EQ(find("app.js")->content_type, "text/javascript; charset=utf-8");
  EXPECT_EQ(find("app.css")->content_type, "text/css; charset=utf-8");
  EXPECT_EQ(find("favicon.svg")->content_type, "image/svg+xml");
}

TEST(WebuiTest, RootServesTheIndexWithItsHeaders) {
  const httpd::Response response = get("/");
  ASSERT_EQ(response.status, 200);
  EXPECT_EQ(response.content_type, "text/html; charset=utf-8");
  EXPECT_EQ(response.body, find("index.html")->bytes);
  EXPECT_EQ(header(response, "ETag"), find("index.html")->etag);
  EXPECT_EQ(header(response, "Cache-Control"), "no-cache");
  expectSecurityHeaders(response, "/");
}

TEST(WebuiTest, AssetsAreServedWithTypeEtagAndHeaders) {
  for (std::string_view path : assetPaths()) {
    const httpd::Response response = get("/assets/" + std::string(path));
    ASSERT_EQ(response.status, 200) << path;
    EXPECT_EQ(response.body, find(path)->bytes) << path;
    EXPECT_EQ(response.content_type, find(path)->content_type) << path;
    EXPECT_EQ(header(response, "ETag"), find(path)->etag) << path;
    EXPECT_EQ(header(response, "Cache-Control"), "no-cache") << path;
    expectSecurityHeaders(response, path);
  }
}

TEST(WebuiTest, AMatchingIfNoneMatchIsAnswered304) {
  const std::string etag(find("app.js")->etag);
  for (const std::string& value : {etag, "W/" + etag, "\"other\", " + etag, std::string("*")}) {
    const httpd::Response response = get("/assets/app.js", value);
    EXPECT_EQ(response.status, 304) << value;
    EXPECT_TRUE(response.body.empty()) << value;
    EXPECT_EQ(header(response, "ETag"), etag) << value;
    EXPECT_EQ(header(response, "Cache-Control"), "no-cache") << value;
  }
  EXPECT_EQ(get("/", std::string(find("index.html")->etag)).status, 304);
  // Another file's tag, or a stale one, gets the bytes.
  for (const std::string& value :
       {std::string(find("app.css")->etag), std::string("\"0123\""), std::string("")}) {
    const httpd::Response response = get("/assets/app.js", value);
    EXPECT_EQ(response.status, 200) << value;
    EXPECT_EQ(response.body, find("app.js")->bytes) << value;
  }
}

TEST(WebuiTest, UnknownFilesAre404Problems) {
  for (std::string_view path : {"/assets/nope.js", "/assets/app.js.map", "/assets/APP.JS"}) {
    const httpd::Response response = get(path);
    EXPECT_EQ(response.status, 404) << path;
    EXPECT_EQ(response.content_type, "application/problem+json") << path;
    EXPECT_NE(response.body.find("open /"), std::string::npos) << response.body;
    expectSecurityHeaders(response, path);
  }
  EXPECT_FALSE(find("nope.js"));
}

TEST(WebuiTest, PathsThatAreNotPlainAndRelativeAreRefused) {
  ASSERT_TRUE(find("app.js"));
  for (std::string_view path :
       {"", "/app.js", "./app.js", "../app.js", "x/../app.js", "..", ".", "app.js/", "//app.js",
        "..\\app.js", "assets\\app.js", "../../CMakeLists.txt", "../webui.cpp"}) {
    EXPECT_FALSE(find(path)) << path;
  }
  EXPECT_FALSE(find(std::string_view("app.js\0", 7)));
  // Through the route too, as sent: plain or percent-encoded, a `..` reaches find() and stops
  // there.
  for (std::string_view path :
       {"/assets/../webui.cpp", "/assets/../../../CMakeLists.txt", "/assets/./app.js",
        "/assets/%2e%2e/webui.cpp", "/assets/%2E%2E/%2E%2E/CMakeLists.txt",
        "/assets/..%2fwebui.cpp", "/assets/app.js%00"}) {
    // -1: the router itself matched nothing (a NUL), which the server answers with 404 too.
    const int status = get(path).status;
    EXPECT_TRUE(status == 404 || status == -1) << path << ": " << status;
  }
}

TEST(WebuiTest, OnlyGetIsRouted) {
  httpd::Router router;
  addDashboardRoutes(router);
  const auto match = router.match("POST", "/");
  EXPECT_EQ(match.route, nullptr);
  EXPECT_EQ(match.allowed_methods, std::vector<std::string>{"GET"});
}

// The page loads only files that exist, and no script of its own inline (the CSP would refuse
// it); the script builds every element from data with textContent, never from HTML text.
TEST(WebuiTest, ThePageRefersOnlyToEmbeddedFilesAndHasNoInlineScript) {
  const std::string index(find("index.html")->bytes);
  const std::regex reference("(?:src|href)=\"/assets/([^\"]+)\"");
  int references = 0;
  for (auto it = std::sregex_iterator(index.begin(), index.end(), reference);
       it != std::sregex_iterator(); ++it) {
    EXPECT_TRUE(find((*it)[1].str())) << (*it)[1].str();
    ++references;
  }
  EXPECT_GE(references, 3);
  const std::regex script("<script([^>]*)>");
  for (auto it = std::sregex_iterator(index.begin(), index.end(), script);
       it != std::sregex_iterator(); ++it) {
    EXPECT_NE((*it)[1].str().find("src="), std::string::npos) << "inline script: " << it->str();
  }
  EXPECT_EQ(index.find(" style="), std::string::npos);
  EXPECT_FALSE(std::regex_search(index, std::regex(" on[a-z]+="))) << "an inline event handler";
  const std::string js(find("app.js")->bytes);
  for (std::string_view sink : {"innerHTML", "outerHTML", "insertAdjacentHTML", "document.write",
                                "eval(", "new Function"}) {
    EXPECT_EQ(js.find(sink), std::string::npos) << "app.js uses " << sink;
  }
}

}  // namespace
}  // namespace oe::webui
