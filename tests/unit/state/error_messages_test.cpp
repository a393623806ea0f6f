// Upstream's error-messages.test for the state store (reference §3.6, §11.3): the substrings a
// user (and upstream's test suite) relies on.
#include <gtest/gtest.h>

#include "oe/state/state_store.hpp"
#include "support/temp_dir.hpp"

namespace oe::state {
namespace {

class StateErrorMessagesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    schema_.fields.push_back({"n", spec::FieldType::kNumber, spec::MergeStrategy::kLastWins, {}});
    schema_.index.emplace("n", 0);
    auto store = StateStore::open(dir_ / "state.sqlite", schema_);
    ASSERT_TRUE(store.ok());
    store_ = std::move(*store);
  }

  test::TempDir dir_;
  spec::StateSpec schema_;
  std::unique_ptr<StateStore> store_;
};

TEST_F(StateErrorMessagesTest, UndeclaredWriteNamesNodeFieldAndStateSchema) {
  auto r = store_->write({{"mystery", 1}}, WriteMeta{"r1", "writer"});
  ASSERT_FALSE(r.ok());
  const std::string& m = r.error().message;
  EXPECT_NE(m.find("Node \"writer\" wrote to undeclared state field \"mystery\""),
            std::string::npos);
  EXPECT_NE(m.find("state.schema"), std::string::npos);
}

TEST_F(StateErrorMessagesTest, TypeMismatchSaysDeclaredTypeAndWhatToDo) {
  auto r = store_->write({{"n", "x"}}, WriteMeta{"r1", "writer"});
  ASSERT_FALSE(r.ok());
  const std::string& m = r.error().message;
  EXPECT_NE(m.find("declared as type number in state.schema"), std::string::npos);
  EXPECT_NE(m.find("Fix the node's output"), std::string::npos);
  EXPECT_NE(m.find("update state.schema"), std::string::npos);
  EXPECT_NE(m.find("\"n\""), std::string::npos);
}

}  // namespace
}  // namespace oe::state
