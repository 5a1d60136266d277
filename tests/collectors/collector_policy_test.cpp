// CollectorPolicy, policy_weights and load_policy_weights.

#include "collector_test_fixtures.h"

namespace tdrl::collectors {
namespace {

// ---- CollectorPolicy -------------------------------------------------------------------------

tdnn::TensorDictModule linear_module(int64_t out) {
  return tdnn::TensorDictModule(
      torch::nn::Linear(3, out),
      tdnn::TensorDictModuleOptions().in_keys({"observation"}).out_keys({"action"}));
}

// A policy over linear_module(out), given by shared_ptr (so that the weight tests below do
// not depend on the conversion from a module holder, which has its own tests).
CollectorPolicy linear_policy(int64_t out) {
  CollectorPolicy policy(linear_module(out).ptr());
  EXPECT_NE(policy.weights_module(), nullptr);
  return policy;
}

// A deep copy of the policy's weights (to compare against later).
TensorDict snapshot(const CollectorPolicy& policy) { return policy_weights(policy).clone(); }

TEST(CollectorPolicyTest, NullptrAndDefaultMeanRandomActions) {
  CollectorPolicy none;
  CollectorPolicy null = nullptr;
  EXPECT_TRUE(none.is_random());
  EXPECT_TRUE(null.is_random());
  EXPECT_EQ(null.weights_module(), nullptr);
  EXPECT_TRUE(policy_weights(null).keys().empty());
  EXPECT_NO_THROW(load_policy_weights(null, TensorDict::empty({})));
}

TEST(CollectorPolicyTest, FromModuleHolderCallsForwardAndHoldsItsWeights) {
  auto module = linear_module(2);
  CollectorPolicy policy = module;
  EXPECT_FALSE(policy.is_random());
  EXPECT_EQ(policy.weights_module().get(), module.ptr().get());
  EXPECT_EQ(policy_weights(policy).keys(true, true).size(), 2U);
  TensorDict td({{"observation", torch::ones({5, 3})}}, {5});
  TensorDict out = policy(td);
  ASSERT_TRUE(out.contains(kAction));
  EXPECT_TRUE(torch::allclose(out.get(kAction), module->forward(td.clone()).get(kAction)));
}

TEST(CollectorPolicyTest, FromSharedPtrOfAModuleSubclass) {
  auto module = linear_module(2);
  std::shared_ptr<tdnn::TensorDictModuleImpl> ptr = module.ptr();
  CollectorPolicy policy = ptr;
  EXPECT_FALSE(policy.is_random());
  EXPECT_EQ(policy.weights_module().get(), ptr.get());
  CollectorPolicy from_null = std::shared_ptr<tdnn::TensorDictModuleImpl>();
  EXPECT_TRUE(from_null.is_random());
}

TEST(CollectorPolicyTest, EmptyHolderMeansRandomActions) {
  tdnn::TensorDictModule empty(nullptr);
  CollectorPolicy policy = empty;
  EXPECT_TRUE(policy.is_random());
  EXPECT_EQ(policy.weights_module(), nullptr);
}

TEST(CollectorPolicyTest, FromLambdaHasWeightsOnlyWhenGiven) {
  auto fn = [](TensorDict td) {
    td.set(kAction, torch::zeros({1}));
    return td;
  };
  CollectorPolicy plain = fn;
  EXPECT_FALSE(plain.is_random());
  EXPECT_EQ(plain.weights_module(), nullptr);
  EXPECT_TRUE(policy_weights(plain).keys().empty());
  EXPECT_TRUE(plain(TensorDict::empty({})).contains(kAction));

  torch::nn::Linear linear(3, 2);
  CollectorPolicy with_weights(fn, linear.ptr());
  EXPECT_EQ(with_weights.weights_module().get(), linear.ptr().get());
  const TensorDict weights = policy_weights(with_weights);
  ASSERT_TRUE(weights.contains("weight"));
  EXPECT_EQ(weights.get("weight").data_ptr(), linear->weight.data_ptr());
}

TEST(CollectorPolicyTest, CopiesShareTheModule) {
  auto module = linear_module(2);
  CollectorPolicy policy(module.ptr());
  CollectorPolicy copy = policy;
  EXPECT_EQ(copy.weights_module().get(), module.ptr().get());
  {
    torch::NoGradGuard no_grad;
    for (auto& p : module->parameters()) p.zero_();
  }
  TensorDict td({{"observation", torch::ones({2, 3})}}, {2});
  EXPECT_TRUE(torch::equal(copy(td).get(kAction), torch::zeros({2, 2})));
}

TEST(CollectorPolicyTest, PolicyWeightsAliasTheModuleDetached) {
  auto module = linear_module(2);
  CollectorPolicy policy(module.ptr());
  const TensorDict weights = policy_weights(policy);
  const TensorDict params = tdnn::from_module(*module);
  const auto keys = weights.keys(true, true);
  ASSERT_EQ(keys, params.keys(true, true));
  ASSERT_EQ(keys.size(), 2U);
  for (const auto& key : keys) {
    EXPECT_EQ(weights.get(key).data_ptr(), params.get(key).data_ptr()) << key;
    EXPECT_FALSE(weights.get(key).requires_grad()) << key;
    EXPECT_TRUE(params.get(key).requires_grad()) << key;
  }
  {
    torch::NoGradGuard no_grad;
    for (auto& p : module->parameters()) p.fill_(3.0);
  }
  for (const auto& key : keys) EXPECT_TRUE((weights.get(key) == 3.0).all().item<bool>()) << key;
}

TEST(CollectorPolicyTest, LoadPolicyWeightsCopiesInPlace) {
  torch::manual_seed(0);
  CollectorPolicy source = linear_policy(2);
  CollectorPolicy target = linear_policy(2);
  const TensorDict target_weights = policy_weights(target);
  std::vector<void*> storage;
  for (const auto& key : target_weights.keys(true, true)) {
    storage.push_back(target_weights.get(key).data_ptr());
  }
  load_policy_weights(target, policy_weights(source));
  expect_same(policy_weights(target), policy_weights(source));
  const auto keys = target_weights.keys(true, true);
  for (size_t i = 0; i < keys.size(); ++i) {
    EXPECT_EQ(policy_weights(target).get(keys[i]).data_ptr(), storage[i]) << keys[i];
  }
  // A copy, not an alias: changing the source later leaves the target alone.
  const TensorDict before = snapshot(target);
  {
    torch::NoGradGuard no_grad;
    source.weights_module()->parameters()[0].add_(1.0);
  }
  expect_same(policy_weights(target), before);
}

// A policy whose weights are loaded from another of the same shape, and a snapshot of its
// weights: a refused load must leave them as they were (`expect_unchanged`).
class LoadPolicyWeightsTest : public ::testing::Test {
 protected:
  void expect_unchanged() const { expect_same(policy_weights(target), before); }

  // Seeds before the policies below are initialised (members are, in declaration order).
  struct Seed {
    Seed() { torch::manual_seed(0); }
  } seed;
  CollectorPolicy source = linear_policy(2);
  CollectorPolicy target = linear_policy(2);
  const TensorDict before = snapshot(target);
};

TEST_F(LoadPolicyWeightsTest, MissingKeyThrowsKeyErrorAndChangesNothing) {
  TensorDict weights = snapshot(source);
  const NestedKey dropped = weights.keys(true, true).back();
  weights.del_(dropped);
  const std::string message =
      error_message<tensordict::KeyError>([&] { load_policy_weights(target, weights); });
  EXPECT_THAT(message, HasSubstr(dropped.to_string()));
  EXPECT_THAT(message, HasSubstr("missing from the weights"));
  expect_unchanged();
}

TEST_F(LoadPolicyWeightsTest, ExtraKeyThrowsKeyErrorAndChangesNothing) {
  TensorDict weights = snapshot(source);
  weights.set("zzz_extra", torch::zeros({2}));
  const std::string message =
      error_message<tensordict::KeyError>([&] { load_policy_weights(target, weights); });
  EXPECT_THAT(message, HasSubstr("'zzz_extra'"));
  EXPECT_THAT(message, HasSubstr("not a weight of the policy"));
  expect_unchanged();
}

TEST_F(LoadPolicyWeightsTest, WrongShapeThrowsShapeErrorAndChangesNothing) {
  CollectorPolicy narrow = linear_policy(1);
  const std::string message = error_message<tensordict::ShapeError>(
      [&] { load_policy_weights(target, policy_weights(narrow)); });
  EXPECT_THAT(message, HasSubstr("load_policy_weights"));
  EXPECT_THAT(message, HasSubstr("[2] Float in the policy but [1] Float in the weights"));
  expect_unchanged();
}

TEST_F(LoadPolicyWeightsTest, WrongDtypeThrowsAndChangesNothing) {
  EXPECT_THROW(load_policy_weights(target, policy_weights(source).to(torch::kFloat64)),
               tensordict::Error);
  expect_unchanged();
}

TEST(CollectorPolicyTest, LoadPolicyWeightsIntoAPolicyWithoutWeightsThrowsValueError) {
  CollectorPolicy plain = [](TensorDict td) { return td; };
  CollectorPolicy module = linear_policy(2);
  const std::string message = error_message<tensordict::ValueError>(
      [&] { load_policy_weights(plain, policy_weights(module)); });
  EXPECT_THAT(message, HasSubstr("the policy has no weights module"));
  EXPECT_NO_THROW(load_policy_weights(plain, TensorDict::empty({})));
}

}  // namespace
}  // namespace tdrl::collectors
