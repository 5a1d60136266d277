#include <tdrl/modules/q_value.h>

#include <cmath>
#include <memory>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <torch/torch.h>

#include <tdrl/modules/mlp.h>
#include <tdrl/specs/tensor_spec.h>
#include <tensordict/errors.h>
#include <tensordict/tensor_dict.h>

#include "support/test_names.h"

namespace tdrl::modules {
namespace {

using namespace tdrl::testing::names;

TensorDict values_td() {
  return TensorDict({{"action_value", torch::tensor({{1.0, 3.0, 2.0}, {0.5, -1.0, 0.0}})}}, {2});
}

TEST(QValueModuleTest, OneHotByDefault) {
  QValueModule qvalue;
  auto td = values_td();
  qvalue(td);
  EXPECT_TRUE(torch::equal(td.get("action"), torch::tensor({{0, 1, 0}, {1, 0, 0}}, torch::kLong)));
  EXPECT_TRUE(torch::equal(td.get("chosen_action_value"), torch::tensor({{3.0}, {0.5}})));
  EXPECT_EQ(qvalue->out_keys(), (Keys{"action", "action_value", "chosen_action_value"}));
}

TEST(QValueModuleTest, CategoricalSpecGivesIndexActions) {
  QValueModule qvalue(QValueModuleOptions().spec(std::make_shared<specs::Categorical>(3)));
  EXPECT_EQ(qvalue->action_space(), "categorical");
  auto td = values_td();
  qvalue(td);
  EXPECT_TRUE(torch::equal(td.get("action"), torch::tensor({1, 0}, torch::kLong)));
}

TEST(QValueModuleTest, OneHotSpecDtypeIsUsed) {
  QValueModule qvalue(QValueModuleOptions().spec(
      std::make_shared<specs::OneHot>(3, specs::OneHotOptions().dtype(torch::kBool))));
  auto td = values_td();
  qvalue(td);
  EXPECT_EQ(td.get("action").scalar_type(), torch::kBool);
}

TEST(QValueModuleTest, MaskedActionsAreNeverChosen) {
  QValueModule qvalue(
      QValueModuleOptions().action_space("categorical").action_mask_key(NestedKey("action_mask")));
  auto td = values_td();
  td.set("action_mask", torch::tensor({{true, false, true}, {false, true, true}}));
  qvalue(td);
  EXPECT_TRUE(torch::equal(td.get("action"), torch::tensor({2, 2}, torch::kLong)));
  EXPECT_TRUE(torch::equal(td.get("chosen_action_value"), torch::tensor({{2.0}, {0.0}})));
  EXPECT_EQ(qvalue->in_keys(), (Keys{"action_value", "action_mask"}));
}

TEST(QValueModuleTest, MaskWithoutAllowedActionThrowsAndWritesNothing) {
  QValueModule qvalue(QValueModuleOptions().action_mask_key(NestedKey("action_mask")));
  auto td = values_td();
  td.set("action_mask", torch::tensor({{true, false, true}, {false, false, false}}));
  EXPECT_THROW(qvalue(td), tensordict::ValueError);
  EXPECT_FALSE(td.contains("action"));
}

TEST(QValueModuleTest, NanActionValuesThrowAndChooseNothing) {
  // argmax would take the NaN for the largest value and the env would step with its action.
  QValueModule qvalue;
  auto td = TensorDict(
      {{"action_value", torch::tensor({{1.0, 3.0, 2.0}, {0.5, std::nan(""), 0.0}})}}, {2});
  try {
    qvalue(td);
    ADD_FAILURE() << "no error";
  } catch (const tensordict::ValueError& e) {
    EXPECT_THAT(e.what(), HasSubstr("'action_value' hold NaN"));
    EXPECT_THAT(e.what(), HasSubstr("batch element 1 of [2]"));
  }
  EXPECT_FALSE(td.contains("action"));
}

TEST(QValueModuleTest, RejectsValuesThatDoNotMatchTheSpec) {
  QValueModule qvalue(QValueModuleOptions().spec(std::make_shared<specs::OneHot>(4)));
  auto td = values_td();
  EXPECT_THAT([&] { qvalue(td); }, ThrowsMessage<tensordict::ShapeError>(HasSubstr(
                                       "have 3 entries per row; the action spec has n=4")));
}

TEST(QValueModuleTest, RejectsValuesWithoutAnActionDim) {
  QValueModule qvalue;
  TensorDict td({{"action_value", torch::zeros({2})}}, {2});
  EXPECT_THROW(qvalue(td), tensordict::ShapeError);
}

TEST(QValueModuleTest, RejectsInconsistentConfiguration) {
  EXPECT_THROW(QValueModule(QValueModuleOptions().action_space("binary")), tensordict::ValueError);
  EXPECT_THROW(QValueModule(QValueModuleOptions().action_space("one_hot").spec(
                   std::make_shared<specs::Categorical>(3))),
               tensordict::ValueError);
  EXPECT_THROW(
      QValueModule(QValueModuleOptions().spec(std::make_shared<specs::Unbounded>(Shape{3}))),
      tensordict::ValueError);
}

TEST(QValueModuleTest, MissingValuesThrowKeyError) {
  QValueModule qvalue;
  TensorDict td({{"observation", torch::zeros({2, 3})}}, {2});
  EXPECT_THROW(qvalue(td), tensordict::KeyError);
}

TEST(QValueModuleTest, Prints) {
  EXPECT_EQ(QValueModule()->to_string(),
            "QValueModule(\n    action_space=one_hot,\n    in_keys=['action_value'],\n"
            "    out_keys=['action', 'action_value', 'chosen_action_value'])");
}

TEST(QValueActorTest, GreedyActionOfTheNetwork) {
  torch::manual_seed(0);
  MLP net(MLPOptions(4, 3).num_cells({16}));
  QValueActor actor(net,
                    QValueActorOptions().qvalue(QValueModuleOptions().action_space("categorical")));
  TensorDict td({{"observation", torch::randn({5, 4})}}, {5});
  actor(td);
  EXPECT_TRUE(torch::equal(td.get("action"), net(td.get("observation")).argmax(-1)));
  EXPECT_EQ(td.get("chosen_action_value").sizes(), (Shape{5, 1}));
  EXPECT_EQ(actor->in_keys(), (Keys{"observation"}));
  EXPECT_EQ(actor->parameters().size(), 4u);
  EXPECT_EQ(actor->qvalue_module()->action_space(), "categorical");
}

}  // namespace
}  // namespace tdrl::modules
