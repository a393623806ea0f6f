// The OpenAPI document against (a) the structure OpenAPI 3.1 requires and (b) the routes: the
// router's routes, the document's paths and methods, and docs/serve.md's route table name the
// same set, both ways.
//
// (a) is structural checks, not the official 3.1 meta-schema: that schema is JSON Schema 2020-12
// ($dynamicRef, unevaluatedProperties), which valijson (draft 7) cannot evaluate, and no copy of
// it is vendored here. The checks below are the meta-schema's rules this document can break.
#include "oe/service/openapi.hpp"

#include <gtest/gtest.h>

#include <fstream>
#include <regex>
#include <set>

#include "oe/service/parts.hpp"
#include "oe/service/run_queue.hpp"
#include "oe/service/service.hpp"
#include "oe/service/trigger_service.hpp"
#include "unit/service/service_fixture.hpp"

namespace oe::service::test {
namespace {

using RouteKey = std::pair<std::string, std::string>;  // method, OpenAPI path

// Every route `oe serve` answers: the command's router (buildRouter's own routes and
// standardParts'), over a real queue and trigger store in `root`.
struct FullRouter {
  std::unique_ptr<RunQueue> queue;
  ServiceContext context;
  std::unique_ptr<TriggerService> triggers;
  std::unique_ptr<httpd::Router> router;
};
std::unique_ptr<FullRouter> fullRouter(const std::filesystem::path& root) {
  auto full = std::make_unique<FullRouter>();
  auto queue = RunQueue::open(RunQueue::defaultPath(root).string());
  EXPECT_TRUE(queue.ok()) << (queue ? "" : queue.error().message);
  full->queue = std::move(queue).value();
  full->context.root = std::filesystem::canonical(root);
  full->context.queue = full->queue.get();
  auto triggers = TriggerService::start(full->context);
  EXPECT_TRUE(triggers.ok()) << (triggers ? "" : triggers.error().message);
  full->triggers = std::move(triggers).value();
  full->router = std::make_unique<httpd::Router>(
      buildRouter(full->context, standardParts(*full->triggers, OE_EXE)));
  return full;
}

std::set<RouteKey> documentRoutes(const Json& document) {
  std::set<RouteKey> out;
  for (const auto& [path, item] : document["paths"].items()) {
    for (const auto& [method, operation] : item.items()) {
      std::string upper = method;
      for (char& c : upper) {
        c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
      }
      out.insert({upper, path});
    }
  }
  return out;
}

// docs/serve.md's table: `| METHOD[, METHOD] | `path` [and `path`] | scope | what |`.
std::set<RouteKey> serveMdRoutes() {
  std::ifstream in(std::string(OE_SOURCE_DIR) + "/docs/serve.md");
  std::set<RouteKey> out;
  static const std::regex kRow(R"(^\| ([A-Z, ]+) \| (.+?) \| (public|read|admin)[^|]*\|)");
  static const std::regex kPath("`(/[^`]*)`");
  static const std::regex kMethod("[A-Z]+");
  for (std::string line; std::getline(in, line);) {
    std::smatch row;
    if (!std::regex_search(line, row, kRow)) {
      continue;
    }
    const std::string methods = row[1].str();
    const std::string paths = row[2].str();
    for (auto m = std::sregex_iterator(methods.begin(), methods.end(), kMethod);
         m != std::sregex_iterator(); ++m) {
      for (auto p = std::sregex_iterator(paths.begin(), paths.end(), kPath);
           p != std::sregex_iterator(); ++p) {
        out.insert({m->str(), openApiPath((*p)[1].str())});
      }
    }
  }
  return out;
}

TEST(OpenApiTest, TheDocumentHasTheShapeOpenApi31Requires) {
  // A copy: a member the document lacks then reads as null (a failure, not undefined behaviour).
  Json doc = openApiDocument();
  EXPECT_EQ(doc["openapi"], "3.1.0");
  ASSERT_TRUE(doc["info"].is_object());
  EXPECT_TRUE(doc["info"]["title"].is_string());
  EXPECT_TRUE(doc["info"]["version"].is_string());
  const std::set<std::string> top = {"openapi", "info",        "jsonSchemaDialect", "servers",
                                     "paths",   "webhooks",    "components",        "security",
                                     "tags",    "externalDocs"};
  for (const auto& [key, value] : doc.items()) {
    EXPECT_TRUE(top.count(key) > 0 || key.rfind("x-", 0) == 0) << "top-level " << key;
  }
  Json& schemes = doc["components"]["securitySchemes"];
  EXPECT_EQ(schemes["bearer"]["type"], "http");
  EXPECT_EQ(schemes["bearer"]["scheme"], "bearer");
  const std::set<std::string> methods = {"get",     "put",  "post",  "delete",
                                         "options", "head", "patch", "trace"};
  const std::set<std::string> locations = {"path", "query", "header", "cookie"};
  static const std::regex kStatus("^([1-5][0-9][0-9]|[1-5]XX|default)$");
  static const std::regex kTemplate(R"(\{([^}]+)\})");
  std::set<std::string> operation_ids;
  std::vector<std::string> refs;
  const std::function<void(const Json&)> collectRefs = [&](const Json& node) {
    if (node.is_object()) {
      for (const auto& [key, value] : node.items()) {
        if (key == "$ref" && value.is_string()) {
          refs.push_back(value);
        } else {
          collectRefs(value);
        }
      }
    } else if (node.is_array()) {
      for (const auto& item : node) {
        collectRefs(item);
      }
    }
  };
  collectRefs(doc);
  for (auto& [path, item] : doc["paths"].items()) {
    EXPECT_EQ(path.rfind('/', 0), 0U) << path;
    std::set<std::string> templated;
    for (auto it = std::sregex_iterator(path.begin(), path.end(), kTemplate);
         it != std::sregex_iterator(); ++it) {
      templated.insert((*it)[1].str());
    }
    for (auto& [method, op] : item.items()) {
      SCOPED_TRACE(method + " " + path);
      EXPECT_TRUE(methods.count(method) > 0);
      ASSERT_TRUE(op.is_object());
      EXPECT_TRUE(operation_ids.insert(op.value("operationId", "")).second)
          << "operationId repeated or missing";
      std::set<std::string> path_params;
      std::set<std::pair<std::string, std::string>> seen;
      for (auto& param : op["parameters"]) {
        ASSERT_TRUE(param["name"].is_string());
        ASSERT_TRUE(locations.count(param.value("in", "")) > 0) << param.dump();
        EXPECT_TRUE(param.contains("schema")) << param.dump();
        EXPECT_TRUE(
            seen.insert({param["name"].get<std::string>(), param["in"].get<std::string>()}).second)
            << "repeated parameter";
        if (param["in"] == "path") {
          EXPECT_EQ(param.value("required", false), true) << "a path parameter is required";
          path_params.insert(param["name"].get<std::string>());
        }
      }
      EXPECT_EQ(path_params, templated) << "path parameters and the template differ";
      ASSERT_TRUE(op["responses"].is_object());
      EXPECT_FALSE(op["responses"].empty());
      bool has_success = false;
      for (auto& [status, response] : op["responses"].items()) {
        EXPECT_TRUE(std::regex_match(status, kStatus)) << status;
        EXPECT_TRUE(response["description"].is_string()) << status;
        if (status[0] == '2') {
          has_success = true;
        } else {
          EXPECT_TRUE(response["content"].contains("application/problem+json")) << status;
        }
      }
      EXPECT_TRUE(has_success);
      if (op.contains("requestBody")) {
        EXPECT_TRUE(op["requestBody"]["content"].is_object());
      }
      const bool is_public = op.value("x-oe-scope", "") == "public";
      EXPECT_EQ(op.contains("security") && op["security"].empty(), is_public);
      EXPECT_EQ(op["responses"].contains("401"), !is_public);
    }
  }
  for (const auto& ref : refs) {
    ASSERT_EQ(ref.rfind("#/components/schemas/", 0), 0U) << ref;
    EXPECT_TRUE(doc["components"]["schemas"].contains(ref.substr(21))) << ref;
  }
}

TEST(OpenApiTest, TheDocumentTheTableAndServeMdNameTheSameRoutes) {
  std::set<RouteKey> table;
  for (const auto& route : documentedRoutes()) {
    table.insert({route.method, openApiPath(route.pattern)});
  }
  const auto doc = documentRoutes(openApiDocument());
  EXPECT_EQ(table, doc);
  const auto md = serveMdRoutes();
  ASSERT_GT(md.size(), 25U) << "docs/serve.md's route table was not read";
  for (const auto& key : md) {
    EXPECT_EQ(doc.count(key), 1U) << "docs/serve.md has " << key.first << " " << key.second
                                  << "; the OpenAPI document does not";
  }
  for (const auto& key : doc) {
    EXPECT_EQ(md.count(key), 1U) << "the OpenAPI document has " << key.first << " " << key.second
                                 << "; docs/serve.md does not";
  }
}

TEST(OpenApiTest, EveryRouteTheRouterAnswersIsDocumentedAndTheOtherWayRound) {
  oe::test::TempDir root;
  const auto full = fullRouter(root.path());
  const auto& router = full->router;
  const auto doc = documentRoutes(openApiDocument());
  std::set<RouteKey> served;
  for (const auto& route : router->routes()) {
    const RouteKey key{route.method, openApiPath(route.pattern)};
    served.insert(key);
    EXPECT_EQ(doc.count(key), 1U) << "undocumented route " << key.first << " " << key.second;
  }
  for (const auto& key : doc) {
    EXPECT_TRUE(served.count(key) > 0)
        << "documented route not served: " << key.first << " " << key.second;
  }
  // The scope each route asks for is the one documented.
  for (const auto& route : router->routes()) {
    for (const auto& documented : documentedRoutes()) {
      if (documented.method == route.method && documented.pattern == route.pattern) {
        EXPECT_EQ(documented.scope, route.scope) << route.method << " " << route.pattern;
      }
    }
  }
}

TEST(OpenApiTest, ServedPublicly) {
  httpd::Router router;
  addOpenApiRoute(router);
  const auto match = router.match("GET", "/api/openapi.json");
  ASSERT_NE(match.route, nullptr);
  EXPECT_EQ(match.route->scope, httpd::Scope::kPublic);
  const auto response = match.route->handler(httpd::Request{});
  EXPECT_EQ(response.status, 200);
  EXPECT_EQ(Json::parse(response.body)["openapi"], "3.1.0");
}

}  // namespace
}  // namespace oe::service::test
