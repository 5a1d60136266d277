#include <tdrl/losses/cql.h>
#include <tdrl/losses/iql.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <sstream>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <torch/torch.h>

#include <tdrl/replay/replay_buffer.h>
#include <tdrl/replay/storages.h>
#include <tensordict/errors.h>

#include "losses/hand_case.h"
#include "losses/off_policy_fixtures.h"
#include "support/build_paths.h"
#include "support/temp_dir.h"

namespace tdrl::losses {
namespace {

using ::testing::HasSubstr;
using ::testing::ThrowsMessage;
using namespace tdrl::losses::testing;

double logsumexp(const std::vector<double>& v) {
  const double m = *std::max_element(v.begin(), v.end());
  double sum = 0;
  for (double x : v) sum += std::exp(x - m);
  return m + std::log(sum);
}

// ---- IQL -----------------------------------------------------------------------------------

TEST(IQLLossTest, HandWorkedCaseMatchesThePlainFormula) {
  HandCase c;
  const double expectile = 0.7, beta = 3.0;
  auto loss = std::make_shared<IQLLoss>(hand_actor().actor, hand_critics(c), hand_value(),
                                        IQLLossOptions().expectile(expectile).temperature(beta));
  loss->make_value_estimator(ValueEstimatorType::kTD0, ValueEstimatorOptions().gamma(c.gamma));
  auto batch = c.batch();
  const auto out = loss->forward(batch);
  const double n = static_cast<double>(c.s.size());
  double loss_value = 0, loss_actor = 0, loss_qvalue = 0, entropy = 0;
  for (size_t i = 0; i < c.s.size(); ++i) {
    const double diff = c.min_q(c.s[i], c.a[i]) - c.value(c.s[i]);
    loss_value += (diff < 0 ? 1 - expectile : expectile) * diff * diff / n;
    const double lp = c.log_prob(c.s[i], c.a[i]);
    loss_actor -= std::min(std::exp(beta * diff), 100.0) * lp / n;
    entropy -= lp / n;
    const double y = c.r[i] + c.gamma * (c.term[i] ? 0.0 : 1.0) * c.value(c.s_next[i]);
    for (const auto& q : c.qs) loss_qvalue += huber(q(c.s[i], c.a[i]) - y) / n;
  }
  EXPECT_NEAR(out.get("loss_value").item<double>(), loss_value, 1e-5);
  EXPECT_NEAR(out.get("loss_actor").item<double>(), loss_actor, 1e-4);
  EXPECT_NEAR(out.get("loss_qvalue").item<double>(), loss_qvalue, 1e-5);
  EXPECT_NEAR(out.get("entropy").item<double>(), entropy, 1e-4);
  EXPECT_EQ(batch.get("td_error").sizes(), (std::vector<int64_t>{3}));
}

struct IqlNets {
  TanhNormalActor actor = make_tanh_normal_actor(3, 2);
  modules::ValueOperator q1 = make_critic(3, 2, {16});
  modules::ValueOperator q2 = make_critic(3, 2, {16});
  modules::ValueOperator value{modules::MLP(modules::MLPOptions(3, 1).num_cells({16}))};
  std::shared_ptr<IQLLoss> loss(IQLLossOptions options = {}) const {
    return std::make_shared<IQLLoss>(actor.actor, std::vector<modules::ValueOperator>{q1, q2},
                                     value, options);
  }
};

TEST(IQLLossTest, EachTermTrainsOnlyItsOwnNetwork) {
  torch::manual_seed(0);
  IqlNets nets;
  auto loss = nets.loss();
  const auto batch = random_batch(6, 3, 2);
  loss->forward(batch).get("loss_actor").backward();
  EXPECT_TRUE(all_have_grad(*nets.actor.actor));
  EXPECT_TRUE(has_no_gradient(*nets.value));
  EXPECT_TRUE(has_no_gradient(*nets.q1));
  clear_grads(*loss);
  loss->forward(batch).get("loss_value").backward();
  EXPECT_TRUE(all_have_grad(*nets.value));
  EXPECT_TRUE(has_no_gradient(*nets.actor.actor));
  EXPECT_TRUE(has_no_gradient(*nets.q2));
  clear_grads(*loss);
  loss->forward(batch).get("loss_qvalue").backward();
  EXPECT_TRUE(all_have_grad(*nets.q1));
  EXPECT_TRUE(all_have_grad(*nets.q2));
  EXPECT_TRUE(has_no_gradient(*nets.value));
  EXPECT_TRUE(has_no_gradient(*nets.actor.actor));
  EXPECT_TRUE(untouched_by_autograd(loss->target_params("qvalue_network_0")));
}

TEST(IQLLossTest, OptimisationDecreasesEachTerm) {
  torch::manual_seed(1);
  IqlNets nets;
  auto loss = nets.loss(IQLLossOptions().expectile(0.7));
  const auto batch = random_batch(64, 3, 2);
  // Each term trained alone, the other networks fixed (no sampling: the losses are exact).
  auto train = [&](const std::string& term, const std::vector<torch::Tensor>& params) {
    return adam_steps(*loss, batch, {term}, params, 100, 1e-2);
  };
  const auto q_params = parameters_of(*nets.q1, *nets.q2);
  const auto q = train("loss_qvalue", q_params);
  EXPECT_LT(q.final, 0.5 * q.initial);
  const auto v = train("loss_value", nets.value->parameters());
  EXPECT_LT(v.final, 0.3 * v.initial);
  const auto actor = train("loss_actor", nets.actor.actor->parameters());
  EXPECT_LT(actor.final, actor.initial - 0.5);
}

TEST(IQLLossTest, TrainsFromATransitionDatasetPythonTensordictSaved) {
  // tensordict 0.4.0's td.memmap(path) of 4 transitions (observation [4, 5], action [4, 2],
  // next: observation, reward [4, 1] float64, done [4, 1]), through a memory-mapped replay
  // buffer, into an IQL update; "done" stands for "terminated", which the dataset lacks.
  torch::manual_seed(0);
  const auto data = TensorDict::load_memmap(
      tdrl::testing::test_data_dir() + "/memmap/python_tensordict_0_4/nested",
      tensordict::MemmapMode::kReadOnly);
  tensordict::testing::TempDir dir;
  replay::TensorDictReplayBuffer rb(
      std::make_shared<replay::LazyMemmapStorage>(4, (dir.path() / "rb").string()));
  rb.extend(data);
  const TensorDict batch = rb.sample(4);
  TanhNormalActor actor = make_tanh_normal_actor(5, 2);
  auto q1 = make_critic(5, 2, {16});
  auto q2 = make_critic(5, 2, {16});
  modules::ValueOperator value{modules::MLP(modules::MLPOptions(5, 1).num_cells({16}))};
  IQLLoss loss(actor.actor, std::vector<modules::ValueOperator>{q1, q2}, value);
  loss.set_keys({{"terminated", NestedKey{"next", "done"}}});
  torch::optim::Adam optimizer(loss.parameters(), torch::optim::AdamOptions(1e-2));
  const double before = loss.forward(batch).get("loss_qvalue").item<double>();
  for (int step = 0; step < 50; ++step) {
    const TensorDict out = loss.forward(batch);
    optimizer.zero_grad();
    (out.get("loss_qvalue") + out.get("loss_value") + out.get("loss_actor")).backward();
    optimizer.step();
  }
  const double after = loss.forward(batch).get("loss_qvalue").item<double>();
  EXPECT_TRUE(std::isfinite(after));
  EXPECT_LT(after, before);
}

TEST(IQLLossTest, RejectsBadOptionsAndShapes) {
  IqlNets nets;
  EXPECT_THAT([&] { nets.loss(IQLLossOptions().expectile(1.0)); },
              ThrowsMessage<tensordict::ValueError>(HasSubstr("expectile is 1.0")));
  EXPECT_THAT(
      [&] {
        IQLLoss(nets.actor.actor, std::vector<modules::ValueOperator>{nets.q1, nets.q2}, nets.q1);
      },
      ThrowsMessage<tensordict::ValueError>(HasSubstr("is the value_network")));
  auto batch = random_batch(4, 3, 2);
  batch.set({"next", "reward"}, torch::zeros({4}));
  EXPECT_THAT([&] { nets.loss()->forward(batch); },
              ThrowsMessage<tensordict::ShapeError>(
                  HasSubstr("IQLLoss: TD target: reward has shape [4] but Q(s, a) has shape "
                            "[4, 1]")));
  EXPECT_FALSE(batch.contains("td_error"));
}

TEST(IQLLossTest, PrintsItsOptions) {
  IqlNets nets;
  std::ostringstream os;
  nets.loss()->pretty_print(os);
  EXPECT_THAT(os.str(), HasSubstr("IQLLoss(num_qvalue_nets=2, loss_function=smooth_l1, "
                                  "temperature=1, expectile=0.5, delay_qvalue=true"));
}

// ---- CQL -----------------------------------------------------------------------------------

std::shared_ptr<CQLLoss> hand_cql(const HandCase& c, CQLLossOptions options) {
  auto loss = std::make_shared<CQLLoss>(hand_actor().actor, hand_critics(c), options);
  loss->make_value_estimator(ValueEstimatorType::kTD0, ValueEstimatorOptions().gamma(c.gamma));
  return loss;
}

TEST(CQLLossTest, HandWorkedCaseWithKnownDrawsMatchesThePlainFormula) {
  HandCase c;
  const int64_t b = static_cast<int64_t>(c.s.size()), r = 2;
  const double alpha = 0.5, temperature = 2.0, weight = 3.0;
  auto loss = hand_cql(c, CQLLossOptions()
                              .alpha_init(alpha)
                              .num_random(r)
                              .temperature(temperature)
                              .min_q_weight(weight));
  // The loss draws, in order: the actor's rsample at s, the backup action at s', the uniform
  // actions, the policy actions at s and at s'.
  torch::manual_seed(11);
  const auto eps_actor = to_vector(torch::randn({b, 1}));
  const auto eps_backup = to_vector(torch::randn({b, 1}));
  const auto uniform = to_vector(torch::rand({r, b, 1}));
  const auto eps_current = to_vector(torch::randn({r, b, 1}));
  const auto eps_next = to_vector(torch::randn({r, b, 1}));
  torch::manual_seed(11);
  const auto out = loss->forward(c.batch());

  double loss_actor = 0, loss_alpha = 0, loss_qvalue = 0, loss_cql = 0;
  std::vector<double> pred_mean(2, 0.0), lse_mean(2, 0.0);
  for (int64_t i = 0; i < b; ++i) {
    const auto [action, log_prob] = c.sample(c.s[i], eps_actor[i]);
    loss_actor += (alpha * log_prob - c.min_q(c.s[i], action)) / b;
    loss_alpha += -std::log(alpha) * (log_prob - 1.0) / b;
    const double next_action = c.sample(c.s_next[i], eps_backup[i]).first;
    const double y = c.r[i] + c.gamma * (c.term[i] ? 0.0 : 1.0) * c.min_q(c.s_next[i], next_action);
    for (size_t q = 0; q < 2; ++q) {
      const double pred = c.qs[q](c.s[i], c.a[i]);
      loss_qvalue += huber(pred - y) / b;
      std::vector<double> cat;
      for (int64_t k = 0; k < r; ++k) {  // uniform actions on [-1, 1]: density 1/2
        cat.push_back((c.qs[q](c.s[i], uniform[k * b + i] * 2 - 1) - std::log(0.5)) / temperature);
      }
      for (int64_t k = 0; k < r; ++k) {  // actions of pi(.|s'), valued at s
        const auto [na, nlp] = c.sample(c.s_next[i], eps_next[k * b + i]);
        cat.push_back((c.qs[q](c.s[i], na) - nlp) / temperature);
      }
      for (int64_t k = 0; k < r; ++k) {  // actions of pi(.|s)
        const auto [ca, clp] = c.sample(c.s[i], eps_current[k * b + i]);
        cat.push_back((c.qs[q](c.s[i], ca) - clp) / temperature);
      }
      lse_mean[q] += logsumexp(cat) / b;
      pred_mean[q] += pred / b;
    }
  }
  for (size_t q = 0; q < 2; ++q) loss_cql += (lse_mean[q] * temperature - pred_mean[q]) * weight;
  EXPECT_NEAR(out.get("loss_actor").item<double>(), loss_actor, 1e-4);
  EXPECT_NEAR(out.get("loss_alpha").item<double>(), loss_alpha, 1e-4);
  EXPECT_NEAR(out.get("loss_qvalue").item<double>(), loss_qvalue, 1e-4);
  EXPECT_NEAR(out.get("loss_cql").item<double>(), loss_cql, 1e-3);
  EXPECT_FALSE(out.contains("loss_alpha_prime"));
}

TEST(CQLLossTest, MaxQBackupWithOneSampleIsTheSampledBackup) {
  HandCase c;
  auto sampled = hand_cql(c, CQLLossOptions().num_random(1));
  auto max_backup = hand_cql(c, CQLLossOptions().num_random(1).max_q_backup(true));
  torch::manual_seed(3);
  const double a = sampled->forward(c.batch()).get("loss_qvalue").item<double>();
  torch::manual_seed(3);
  const double b = max_backup->forward(c.batch()).get("loss_qvalue").item<double>();
  EXPECT_NEAR(a, b, 1e-6);
}

using CqlNets = TanhActorTwinCritics<CQLLoss, CQLLossOptions>;

TEST(CQLLossTest, PenaltyTrainsOnlyTheCriticsAndAlphaPrimeOnlyItself) {
  torch::manual_seed(4);
  CqlNets nets;
  auto loss = nets.loss(CQLLossOptions().with_lagrange(true).lagrange_thresh(1.0));
  const auto batch = random_batch(6, 3, 2);
  auto out = loss->forward(batch);
  out.get("loss_cql").backward();
  EXPECT_TRUE(all_have_grad(*nets.q1));
  EXPECT_TRUE(all_have_grad(*nets.q2));
  EXPECT_TRUE(has_no_gradient(*nets.actor.actor));
  EXPECT_FALSE(loss->log_alpha_prime().grad().defined());
  EXPECT_FALSE(loss->log_alpha().grad().defined());
  clear_grads(*loss);
  out = loss->forward(batch);
  out.get("loss_alpha_prime").backward();
  EXPECT_TRUE(loss->log_alpha_prime().grad().defined());
  EXPECT_TRUE(has_no_gradient(*nets.q1));
  EXPECT_TRUE(has_no_gradient(*nets.actor.actor));
  clear_grads(*loss);
  loss->forward(batch).get("loss_actor").backward();
  EXPECT_TRUE(all_have_grad(*nets.actor.actor));
  EXPECT_TRUE(has_no_gradient(*nets.q1));
  EXPECT_TRUE(untouched_by_autograd(loss->target_params("qvalue_network_1")));
}

TEST(CQLLossTest, OptimisationDecreasesTheCriticObjective) {
  torch::manual_seed(5);
  CqlNets nets;
  auto loss = nets.loss(CQLLossOptions().num_random(4));
  const auto batch = random_batch(64, 3, 2);
  // The objective under one fixed set of draws, before and after training.
  auto objective = [&] {
    torch::manual_seed(123);
    auto out = loss->forward(batch);
    return (out.get("loss_qvalue") + out.get("loss_cql")).item<double>();
  };
  const double before = objective();
  const auto params = parameters_of(*nets.q1, *nets.q2);
  torch::optim::Adam optimizer(params, torch::optim::AdamOptions(1e-2));
  for (int step = 0; step < 100; ++step) {
    optimizer.zero_grad();
    auto out = loss->forward(batch);
    (out.get("loss_qvalue") + out.get("loss_cql")).backward();
    optimizer.step();
  }
  EXPECT_LT(objective(), before - 0.5);
}

TEST(CQLLossTest, RejectsBadOptions) {
  CqlNets nets;
  EXPECT_THAT([&] { nets.loss(CQLLossOptions().num_random(0)); },
              ThrowsMessage<tensordict::ValueError>(HasSubstr("num_random is 0")));
  EXPECT_THAT([&] { nets.loss(CQLLossOptions().temperature(0.0)); },
              ThrowsMessage<tensordict::ValueError>(HasSubstr("temperature is 0")));
  EXPECT_THAT([&] { nets.loss(CQLLossOptions().loss_function("huber")); },
              ThrowsMessage<tensordict::ValueError>(HasSubstr("huber")));
}

TEST(CQLLossTest, PrintsItsOptions) {
  CqlNets nets;
  std::ostringstream os;
  nets.loss()->pretty_print(os);
  EXPECT_THAT(os.str(), HasSubstr("CQLLoss(num_qvalue_nets=2, loss_function=smooth_l1, "
                                  "min_q_weight=1, temperature=1, num_random=10, "
                                  "max_q_backup=false, deterministic_backup=true, "
                                  "with_lagrange=false"));
}

}  // namespace
}  // namespace tdrl::losses
