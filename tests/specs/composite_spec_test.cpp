// Composite: nested keys, the batch-shape invariant, TensorDict sampling, checking and
// projection, expansion, copies, printing and equality.

#include <tdrl/specs/composite.h>

#include <cstdint>
#include <sstream>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <tensordict/errors.h>

#include "support/seeded.h"
#include "support/test_names.h"

namespace tdrl::specs {
namespace {

using namespace tdrl::testing::names;

using tdrl::testing::seeded;

TensorSpecPtr box(Shape shape) {
  return std::make_shared<Bounded>(BoundedOptions().low(-1.0).high(1.0).shape(std::move(shape)));
}

TensorSpecPtr unbounded(Shape shape) { return std::make_shared<Unbounded>(std::move(shape)); }

// A transition spec with batch shape [4]: observation, action, and next.{observation, reward}.
CompositePtr transition_spec() {
  auto spec = Composite::make(
      {{"observation", unbounded({4, 3})},
       {"action", std::make_shared<Categorical>(2, CategoricalOptions().shape({4}))}},
      {4});
  spec->set({"next", "observation"}, unbounded({4, 3}));
  spec->set({"next", "reward"}, box({4, 1}));
  return spec;
}

// ---- Keys ---------------------------------------------------------------------------------------

TEST(CompositeTest, ConstructorAddsItemsInOrder) {
  const Composite spec({{"b", unbounded({})}, {"a", unbounded({2})}});
  EXPECT_THAT(spec.keys(), ElementsAre(NestedKey("b"), NestedKey("a")));
  EXPECT_EQ(spec.size(), 2u);
  std::vector<std::string> seen;
  for (const auto& item : spec) seen.push_back(item.first.front());
  EXPECT_THAT(seen, ElementsAre("b", "a"));
}

TEST(CompositeTest, SetCreatesIntermediateCompositesWithTheParentShape) {
  Composite spec({}, {4});
  spec.set({"next", "reward"}, unbounded({4, 1}));
  const CompositePtr next = spec.get_composite("next");
  EXPECT_EQ(next->shape(), Shape({4}));
  EXPECT_EQ(next->get("reward")->shape(), Shape({4, 1}));
  EXPECT_EQ(spec.get({"next", "reward"}), next->get("reward"));
}

TEST(CompositeTest, GetCompositeAliasesTheNestedSpec) {
  const auto spec = transition_spec();
  spec->get_composite("next")->set("done",
                                   std::make_shared<Binary>(1, BinaryOptions().shape({4, 1})));
  EXPECT_TRUE(spec->contains({"next", "done"}));
}

TEST(CompositeTest, SetReplacesAnExistingKeyKeepingItsPosition) {
  Composite spec({{"a", unbounded({})}, {"b", unbounded({})}});
  spec.set("a", std::make_shared<Categorical>(3));
  EXPECT_THAT(spec.keys(), ElementsAre(NestedKey("a"), NestedKey("b")));
  EXPECT_EQ(*spec.get("a"), Categorical(3));
}

TEST(CompositeTest, GetOfAMissingKeyListsTheAvailableKeys) {
  const auto spec = transition_spec();
  EXPECT_THAT(
      [&] {
        spec->get({"next", "rewards"});
      },
      ThrowsMessage<KeyError>(AllOf(HasSubstr("Composite::get"), HasSubstr("('next', 'rewards')"),
                                    HasSubstr("under 'next'"),
                                    HasSubstr("['reward', 'observation']"))));
}

TEST(CompositeTest, GetOfACompositeAndGetCompositeOfALeafThrowTypeError) {
  const auto spec = transition_spec();
  EXPECT_THAT([&] { spec->get("next"); },
              ThrowsMessage<TypeError>(AllOf(HasSubstr("'next'"), HasSubstr("get_composite"))));
  EXPECT_THAT(
      [&] { spec->get_composite("action"); },
      ThrowsMessage<TypeError>(AllOf(HasSubstr("Categorical leaf spec"), HasSubstr("use get"))));
}

TEST(CompositeTest, FindReturnsNullWhenAbsentAndContainsAnswers) {
  const auto spec = transition_spec();
  EXPECT_EQ(spec->find("missing"), nullptr);
  EXPECT_EQ(spec->find({"observation", "deeper"}), nullptr);
  EXPECT_EQ(spec->find_composite("missing"), nullptr);
  EXPECT_NE(spec->find({"next", "reward"}), nullptr);
  EXPECT_FALSE(spec->find_value("missing").has_value());
  EXPECT_TRUE(spec->contains("next"));
  EXPECT_FALSE(spec->contains({"next", "done"}));
}

TEST(CompositeTest, KeysIncludeNestedAndLeavesOnly) {
  const auto spec = transition_spec();
  EXPECT_THAT(spec->keys(),
              ElementsAre(NestedKey("observation"), NestedKey("action"), NestedKey("next")));
  EXPECT_THAT(spec->keys(true),
              ElementsAre(NestedKey("observation"), NestedKey("action"), NestedKey("next"),
                          NestedKey({"next", "observation"}), NestedKey({"next", "reward"})));
  EXPECT_THAT(spec->keys(true, true),
              ElementsAre(NestedKey("observation"), NestedKey("action"),
                          NestedKey({"next", "observation"}), NestedKey({"next", "reward"})));
}

TEST(CompositeTest, DelRemovesAKeyAndThrowsForAMissingOne) {
  const auto spec = transition_spec();
  spec->del_({"next", "reward"});
  EXPECT_FALSE(spec->contains({"next", "reward"}));
  EXPECT_TRUE(spec->contains({"next", "observation"}));
  EXPECT_THAT([&] { spec->del_("nope"); },
              ThrowsMessage<KeyError>(AllOf(HasSubstr("Composite::del_"), HasSubstr("'nope'"))));
}

// ---- set's checks -------------------------------------------------------------------------------

TEST(CompositeTest, SetRejectsAChildWhoseShapeDoesNotStartWithTheBatchShape) {
  Composite spec({}, {4});
  EXPECT_THAT(
      [&] { spec.set("observation", unbounded({3})); },
      ThrowsMessage<ShapeError>(AllOf(HasSubstr("Composite::set"), HasSubstr("'observation'"),
                                      HasSubstr("shape [3]"), HasSubstr("Composite's shape [4]"))));
  EXPECT_THAT(
      [&] {
        Composite({{"x", unbounded({2, 4})}}, {4});
      },
      ThrowsMessage<ShapeError>(HasSubstr("'x'")));
  EXPECT_TRUE(spec.is_empty());
}

TEST(CompositeTest, FailedNestedSetCreatesNoIntermediate) {
  Composite spec({}, {4});
  EXPECT_THROW(spec.set({"next", "reward"}, unbounded({1})), ShapeError);
  EXPECT_FALSE(spec.contains("next"));
}

TEST(CompositeTest, SetThroughALeafOrOfANullSpecThrows) {
  const auto spec = transition_spec();
  EXPECT_THAT(
      [&] {
        spec->set({"action", "x"}, unbounded({4}));
      },
      ThrowsMessage<KeyError>(AllOf(HasSubstr("walks through 'action'"), HasSubstr("leaf spec"))));
  EXPECT_THAT([&] { spec->set("x", TensorSpecPtr()); },
              ThrowsMessage<ValueError>(HasSubstr("is null")));
}

TEST(CompositeTest, SetRejectsAChildOnAnotherDevice) {
  Composite spec({}, {}, torch::Device(torch::kCPU));
  EXPECT_THAT(
      [&] {
        spec.set("x",
                 std::make_shared<Unbounded>(Shape{1}, UnboundedOptions().device(torch::kCUDA)));
      },
      ThrowsMessage<DeviceError>(
          AllOf(HasSubstr("'x'"), HasSubstr("is on cuda"), HasSubstr("Composite is on cpu"))));
  EXPECT_THROW(spec.set("nested", Composite::make()), DeviceError);
  spec.set("nested", Composite::make({}, {}, torch::Device(torch::kCPU)));
  EXPECT_TRUE(spec.contains("nested"));
}

TEST(CompositeTest, SetRejectsACompositeThatContainsItsNewParent) {
  const auto outer = Composite::make();
  const auto inner = Composite::make();
  outer->set("inner", inner);
  EXPECT_THAT([&] { inner->set("loop", outer); },
              ThrowsMessage<ValueError>(HasSubstr("store a clone()")));
  EXPECT_THROW(outer->set("self", outer), ValueError);
}

// ---- Values -------------------------------------------------------------------------------------

TEST(CompositeTest, RandBuildsATensorDictOfTheBatchShapeInTheSpec) {
  const auto spec = transition_spec();
  torch::Generator gen = seeded(0);
  const TensorDict td = spec->rand(gen);
  EXPECT_EQ(td.batch_size(), Shape({4}));
  EXPECT_EQ(td.get({"next", "reward"}).sizes(), c10::IntArrayRef({4, 1}));
  EXPECT_EQ(td.get("action").scalar_type(), torch::kInt64);
  EXPECT_TRUE(spec->is_in(td));
}

TEST(CompositeTest, RandIsDeterministicForAFixedGenerator) {
  const auto spec = transition_spec();
  torch::Generator a = seeded(3);
  torch::Generator b = seeded(3);
  EXPECT_TRUE((spec->rand(a) == spec->rand(b)).all());
}

TEST(CompositeTest, ZeroBuildsZerosForEveryLeaf) {
  const auto spec = transition_spec();
  const TensorDict td = spec->zero();
  EXPECT_EQ(td.keys(true, true).size(), 4u);
  EXPECT_TRUE((td == 0).all());
  EXPECT_EQ(td.get_tensordict("next").batch_size(), Shape({4}));
}

TEST(CompositeTest, IsInIgnoresKeysTheSpecDoesNotName) {
  const auto spec = transition_spec();
  const TensorDict td = spec->zero();
  td.set("extra", torch::full({4}, 100.0));
  EXPECT_TRUE(spec->is_in(td));
}

TEST(CompositeTest, IsInRejectsAMissingKeyOrAValueOutsideItsSpec) {
  const auto spec = transition_spec();
  const TensorDict missing = spec->zero();
  missing.del_({"next", "reward"});
  EXPECT_FALSE(spec->is_in(missing));
  const TensorDict out_of_bounds = spec->zero();
  out_of_bounds.set({"next", "reward"}, torch::full({4, 1}, 2.0f));
  EXPECT_FALSE(spec->is_in(out_of_bounds));
  const TensorDict wrong_kind = spec->zero();
  wrong_kind.set("next", torch::zeros({4}));
  EXPECT_FALSE(spec->is_in(wrong_kind));
}

TEST(CompositeTest, AssertIsInNamesTheNestedKeyPath) {
  const auto spec = transition_spec();
  const TensorDict td = spec->zero();
  td.set({"next", "reward"}, torch::tensor({{0.0f}, {0.0f}, {3.0f}, {0.0f}}));
  EXPECT_THAT(
      [&] { spec->assert_is_in(td); },
      ThrowsMessage<ValueError>(AllOf(HasSubstr("('next', 'reward')"),
                                      HasSubstr("element [2, 0] is 3"), HasSubstr("[-1, 1]"))));
  EXPECT_NO_THROW(spec->assert_is_in(spec->zero()));
}

TEST(CompositeTest, AssertIsInNamesAMissingKeyAndAKindMismatch) {
  const auto spec = transition_spec();
  const TensorDict missing = spec->zero();
  missing.del_({"next", "observation"});
  EXPECT_THAT(
      [&] { spec->assert_is_in(missing); },
      ThrowsMessage<KeyError>(AllOf(HasSubstr("('next', 'observation')"), HasSubstr("is missing"),
                                    HasSubstr("UnboundedContinuous of shape [4, 3]"))));
  const TensorDict wrong_kind = spec->zero();
  wrong_kind.set("next", torch::zeros({4}));
  EXPECT_THAT([&] { spec->assert_is_in(wrong_kind); },
              ThrowsMessage<TypeError>(
                  AllOf(HasSubstr("'next' holds a tensor"), HasSubstr("expects a TensorDict"))));
}

TEST(CompositeTest, ProjectReturnsANewTensorDictAndLeavesTheInputUnchanged) {
  const auto spec = transition_spec();
  const TensorDict td = spec->zero();
  td.set({"next", "reward"}, torch::full({4, 1}, 5.0f));
  td.set("action", torch::tensor({0, 1, 7, -2}));
  const TensorDict projected = spec->project(td);
  EXPECT_TRUE(spec->is_in(projected));
  EXPECT_TRUE(torch::equal(projected.get("action"), torch::tensor({0, 1, 1, 0})));
  EXPECT_TRUE((projected.get({"next", "reward"}) == 1.0).all().item<bool>());
  EXPECT_TRUE((td.get({"next", "reward"}) == 5.0).all().item<bool>());
  EXPECT_EQ(td.get("action")[2].item<int64_t>(), 7);
}

TEST(CompositeTest, ProjectCarriesOverKeysTheSpecDoesNotNameAndNeedsEveryKeyItNames) {
  const auto spec = transition_spec();
  const TensorDict td = spec->zero();
  td.set("info", torch::arange(4));
  const TensorDict projected = spec->project(td);
  EXPECT_TRUE(projected.get("info").is_same(td.get("info")));
  td.del_("action");
  EXPECT_THAT([&] { spec->project(td); },
              ThrowsMessage<KeyError>(
                  AllOf(HasSubstr("Composite::project"), HasSubstr("'action' is missing"))));
}

// ---- New specs ----------------------------------------------------------------------------------

TEST(CompositeTest, ExpandPrependsBatchDimsToEveryChild) {
  const auto spec = transition_spec();
  const CompositePtr expanded = spec->expand({2, 4});
  EXPECT_EQ(expanded->shape(), Shape({2, 4}));
  EXPECT_EQ(expanded->get({"next", "reward"})->shape(), Shape({2, 4, 1}));
  EXPECT_EQ(expanded->get_composite("next")->shape(), Shape({2, 4}));
  EXPECT_EQ(expanded->get("action")->shape(), Shape({2, 4}));
  torch::Generator gen = seeded(1);
  const TensorDict td = expanded->rand(gen);
  EXPECT_EQ(td.batch_size(), Shape({2, 4}));
  EXPECT_TRUE(expanded->is_in(td));
  EXPECT_EQ(spec->shape(), Shape({4}));
}

TEST(CompositeTest, ExpandRejectsAShapeThatDoesNotEndWithTheBatchShape) {
  const auto spec = transition_spec();
  EXPECT_THAT(
      [&] {
        spec->expand({4, 2});
      },
      ThrowsMessage<ShapeError>(AllOf(HasSubstr("Composite::expand"), HasSubstr("new shape [4, 2]"),
                                      HasSubstr("Composite's shape [4]"))));
}

TEST(CompositeTest, CloneIsEqualAndIndependent) {
  const auto spec = transition_spec();
  const CompositePtr copy = spec->clone();
  EXPECT_EQ(*copy, *spec);
  copy->get_composite("next")->del_("reward");
  EXPECT_TRUE(spec->contains({"next", "reward"}));
  EXPECT_NE(*copy, *spec);
}

TEST(CompositeTest, ToSetsTheDeviceOfTheCompositeAndEveryChild) {
  const auto spec = transition_spec();
  const CompositePtr on_cpu = spec->to(torch::kCPU);
  EXPECT_EQ(on_cpu->device(), torch::Device(torch::kCPU));
  EXPECT_EQ(on_cpu->get_composite("next")->device(), torch::Device(torch::kCPU));
  EXPECT_EQ(on_cpu->get({"next", "reward"})->device(), torch::Device(torch::kCPU));
  EXPECT_EQ(on_cpu->rand().device(), torch::Device(torch::kCPU));
  EXPECT_FALSE(spec->device().has_value());
}

TEST(CompositeTest, EqualityIgnoresKeyOrderButNotSpecsShapeOrDevice) {
  const Composite a({{"x", unbounded({})}, {"y", std::make_shared<Categorical>(2)}});
  const Composite b({{"y", std::make_shared<Categorical>(2)}, {"x", unbounded({})}});
  const Composite c({{"y", std::make_shared<Categorical>(3)}, {"x", unbounded({})}});
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
  EXPECT_NE(Composite({}, {4}), Composite({}, {}));
  EXPECT_NE(Composite(), Composite({}, {}, torch::Device(torch::kCPU)));
}

// ---- Printing -----------------------------------------------------------------------------------

TEST(CompositePrintingTest, NestedCompositePrintsLikeTorchRL) {
  Composite spec({{"action", std::make_shared<Categorical>(2)}}, {}, torch::Device(torch::kCPU));
  spec.set({"next", "reward"}, std::make_shared<Unbounded>(Shape{1}));
  EXPECT_EQ(spec.to_string(),
            "Composite(\n"
            "    action: Categorical(\n"
            "        shape=torch.Size([]),\n"
            "        space=CategoricalBox(n=2),\n"
            "        device=cpu,\n"
            "        dtype=torch.int64,\n"
            "        domain=discrete),\n"
            "    next: Composite(\n"
            "        reward: UnboundedContinuous(\n"
            "            shape=torch.Size([1]),\n"
            "            space=None,\n"
            "            device=cpu,\n"
            "            dtype=torch.float32,\n"
            "            domain=continuous),\n"
            "        device=cpu,\n"
            "        shape=torch.Size([])),\n"
            "    device=cpu,\n"
            "    shape=torch.Size([]))");
  EXPECT_EQ(printed(spec), spec.to_string());
}

TEST(CompositePrintingTest, EmptyCompositePrintsDeviceAndShapeOnly) {
  EXPECT_EQ(Composite({}, {4}).to_string(),
            "Composite(\n"
            "    device=None,\n"
            "    shape=torch.Size([4]))");
}

}  // namespace
}  // namespace tdrl::specs
