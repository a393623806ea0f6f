// storeScope: the scope of an experience in a PostgreSQL store, per experience file.
#include "oe/pgstore/scope.hpp"

#include <gtest/gtest.h>

#include <cstdlib>

namespace oe::pgstore {
namespace {

class StoreScope : public ::testing::Test {
 protected:
  // NOLINTNEXTLINE(concurrency-mt-unsafe): the test's own environment, before any thread reads it
  void SetUp() override { unsetenv("OE_STORE_SCOPE"); }
};

TEST_F(StoreScope, ExperienceYamlIsScopedByItsNameAlone) {
  EXPECT_EQ(storeScope("pricing", "/x/experience.yaml"), "pricing");
  EXPECT_EQ(storeScope("pricing", "/elsewhere/experience.yaml"), "pricing");
  EXPECT_EQ(storeScope("", "/x/experience.yaml"), "default");
}

TEST_F(StoreScope, AnotherFileOfTheFolderHasAScopeOfItsOwn) {
  EXPECT_EQ(storeScope("pricing", "/x/b.yaml"), "pricing:b.yaml");
  EXPECT_NE(storeScope("pricing", "/x/a.yaml"), storeScope("pricing", "/x/b.yaml"));
  EXPECT_EQ(storeScope("", "b.yml"), "default:b.yml");
}

TEST_F(StoreScope, TheEnvironmentOverridesEveryFile) {
  // NOLINTNEXTLINE(concurrency-mt-unsafe): as above
  setenv("OE_STORE_SCOPE", "mine", 1);
  EXPECT_EQ(storeScope("pricing", "/x/b.yaml"), "mine");
  EXPECT_EQ(storeScope("pricing", "/x/experience.yaml"), "mine");
}

}  // namespace
}  // namespace oe::pgstore
