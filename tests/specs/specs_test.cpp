// The leaf specs: sampling, membership, checks with their messages, projection, expansion,
// conversions between index and one-hot forms, printing and equality.

#include <tdrl/specs/tensor_spec.h>

#include <cstdint>
#include <sstream>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <torch/cuda.h>

#include <tensordict/errors.h>

#include "support/seeded.h"
#include "support/test_names.h"

namespace tdrl::specs {
namespace {

using namespace tdrl::testing::names;

using tdrl::testing::seeded;

// One spec of every kind, with several dtypes and batch dims.
std::vector<TensorSpecPtr> every_kind() {
  return {
      std::make_shared<Unbounded>(Shape{2, 3}),
      std::make_shared<Unbounded>(Shape{4}, UnboundedOptions().dtype(torch::kInt32)),
      std::make_shared<Bounded>(BoundedOptions().low(-1.0).high(1.0).shape({2, 3})),
      std::make_shared<Bounded>(BoundedOptions()
                                    .low(torch::tensor({0, -5}))
                                    .high(torch::tensor({3, 5}))
                                    .dtype(torch::kInt64)),
      std::make_shared<Categorical>(4, CategoricalOptions().shape({5})),
      std::make_shared<OneHot>(4, OneHotOptions().shape({3, 4})),
      std::make_shared<OneHot>(3, OneHotOptions().dtype(torch::kBool)),
      std::make_shared<Binary>(3),
      std::make_shared<Binary>(BinaryOptions().shape({2, 2}).dtype(torch::kBool)),
      std::make_shared<MultiCategorical>(Shape{3, 2, 5}),
  };
}

std::shared_ptr<Bounded> unit_box(Shape shape) {
  return std::make_shared<Bounded>(BoundedOptions().low(-1.0).high(1.0).shape(std::move(shape)));
}

// ---- Every kind -------------------------------------------------------------------------------

TEST(TensorSpecTest, RandIsInTheSpecForEveryKind) {
  torch::Generator gen = seeded(0);
  for (const auto& spec : every_kind()) {
    SCOPED_TRACE(spec->to_string());
    for (int i = 0; i < 20; ++i) {
      const torch::Tensor r = spec->rand(gen);
      EXPECT_EQ(r.sizes().vec(), spec->shape());
      EXPECT_EQ(r.scalar_type(), spec->dtype());
      EXPECT_EQ(r.device(), spec->device());
      EXPECT_TRUE(spec->is_in(r));
    }
  }
}

TEST(TensorSpecTest, RandIsDeterministicForAFixedGenerator) {
  for (const auto& spec : every_kind()) {
    SCOPED_TRACE(spec->to_string());
    torch::Generator a = seeded(7);
    torch::Generator b = seeded(7);
    for (int i = 0; i < 3; ++i) EXPECT_TRUE(torch::equal(spec->rand(a), spec->rand(b)));
  }
  const auto box = unit_box({100});
  torch::Generator a = seeded(1);
  torch::Generator b = seeded(2);
  EXPECT_FALSE(torch::equal(box->rand(a), box->rand(b)));
}

TEST(TensorSpecTest, ZeroIsZerosOfTheSpecShapeAndDtypeForEveryKind) {
  for (const auto& spec : every_kind()) {
    SCOPED_TRACE(spec->to_string());
    const torch::Tensor z = spec->zero();
    EXPECT_EQ(z.sizes().vec(), spec->shape());
    EXPECT_EQ(z.scalar_type(), spec->dtype());
    EXPECT_FALSE(z.to(torch::kFloat64).any().item<bool>());
  }
}

TEST(TensorSpecTest, ProjectOfAnyValueIsInTheSpecForEveryKind) {
  torch::manual_seed(3);
  for (const auto& spec : every_kind()) {
    SCOPED_TRACE(spec->to_string());
    Shape shape{5};
    shape.insert(shape.end(), spec->shape().begin(), spec->shape().end());
    const torch::Tensor wild = torch::randn(shape, torch::kFloat64) * 10;
    EXPECT_TRUE(spec->is_in(spec->project(wild)));
  }
}

// ---- Shapes and dtypes ------------------------------------------------------------------------

TEST(TensorSpecTest, IsInAcceptsExtraLeadingBatchDims) {
  const auto box = unit_box({3});
  EXPECT_TRUE(box->is_in(torch::zeros({4, 2, 3})));
  EXPECT_TRUE(Categorical(5).is_in(torch::tensor({0, 4, 2})));
}

TEST(TensorSpecTest, IsInRejectsAWrongShape) {
  const auto box = unit_box({3});
  EXPECT_FALSE(box->is_in(torch::zeros({4})));
  EXPECT_FALSE(box->is_in(torch::zeros({3, 1})));
  EXPECT_FALSE(box->is_in(torch::zeros({})));
}

TEST(TensorSpecTest, IsInRejectsAWrongDtype) {
  EXPECT_FALSE(unit_box({3})->is_in(torch::zeros({3}, torch::kFloat64)));
  EXPECT_FALSE(Categorical(4).is_in(torch::tensor(1, torch::kInt32)));
  EXPECT_FALSE(OneHot(2).is_in(torch::tensor({0.0, 1.0})));
}

TEST(TensorSpecTest, IsInRejectsAnUndefinedTensor) {
  EXPECT_FALSE(Unbounded().is_in(torch::Tensor()));
}

TEST(TensorSpecTest, AssertIsInNamesTheKeyPathAndBothShapes) {
  const auto box = unit_box({3});
  EXPECT_THAT([&] { box->assert_is_in(torch::zeros({4}), "('next', 'observation')"); },
              ThrowsMessage<ShapeError>(AllOf(
                  HasSubstr("TensorSpec::assert_is_in"), HasSubstr("('next', 'observation')"),
                  HasSubstr("has shape [4]"), HasSubstr("BoundedContinuous spec has shape [3]"))));
}

TEST(TensorSpecTest, AssertIsInNamesTheKeyPathAndBothDtypes) {
  const auto box = unit_box({3});
  EXPECT_THAT(
      [&] { box->assert_is_in(torch::zeros({3}, torch::kFloat64), "'action'"); },
      ThrowsMessage<TypeError>(AllOf(HasSubstr("'action'"), HasSubstr("has dtype torch.float64"),
                                     HasSubstr("expects torch.float32"))));
}

TEST(TensorSpecTest, AssertIsInNamesTheFirstInvalidElementAndTheBounds) {
  const auto box = unit_box({3});
  EXPECT_THAT(
      [&] {
        box->assert_is_in(torch::tensor({0.5f, 2.5f, -3.0f}), "'action'");
      },
      ThrowsMessage<ValueError>(
          AllOf(HasSubstr("value at key 'action'"), HasSubstr("element [1] is 2.5"),
                HasSubstr("outside [low, high] = [-1, 1]"), HasSubstr("project()"))));
}

TEST(TensorSpecTest, AssertIsInWithoutKeyPathSaysValueAndPassesValidValues) {
  const auto box = unit_box({2});
  EXPECT_THAT([&] { box->assert_is_in(torch::zeros({3})); },
              ThrowsMessage<ShapeError>(HasSubstr("assert_is_in: value has shape [3]")));
  EXPECT_NO_THROW(box->assert_is_in(torch::tensor({-1.0f, 1.0f}), "'action'"));
}

TEST(TensorSpecTest, ProjectDoesNotModifyItsInput) {
  const auto box = unit_box({3});
  const torch::Tensor value = torch::tensor({-2.0f, 0.0f, 2.0f});
  const torch::Tensor before = value.clone();
  const torch::Tensor projected = box->project(value);
  EXPECT_TRUE(torch::equal(value, before));
  projected.fill_(0.5);
  EXPECT_TRUE(torch::equal(value, before));
  const torch::Tensor unbounded_projection = Unbounded(Shape{3}).project(value);
  unbounded_projection.fill_(9);
  EXPECT_TRUE(torch::equal(value, before));
}

TEST(TensorSpecTest, ProjectRejectsAWrongShape) {
  EXPECT_THAT(
      [] {
        OneHot(3).project(torch::zeros({2, 4}));
      },
      ThrowsMessage<ShapeError>(AllOf(HasSubstr("TensorSpec::project"),
                                      HasSubstr("has shape [2, 4]"),
                                      HasSubstr("trailing dims must equal [3]"))));
}

// ---- expand, to, clone --------------------------------------------------------------------------

TEST(TensorSpecTest, ExpandPrependsBatchDims) {
  const auto box = std::make_shared<Bounded>(
      BoundedOptions().low(torch::tensor({0.0, -2.0})).high(torch::tensor({1.0, 2.0})));
  const TensorSpecPtr expanded = box->expand({4, 2});
  EXPECT_EQ(expanded->shape(), Shape({4, 2}));
  const auto& bounded = dynamic_cast<const Bounded&>(*expanded);
  EXPECT_TRUE(torch::equal(bounded.high()[3], torch::tensor({1.0f, 2.0f})));
  torch::Generator gen = seeded(0);
  const torch::Tensor r = expanded->rand(gen);
  EXPECT_EQ(r.sizes(), c10::IntArrayRef({4, 2}));
  EXPECT_TRUE(expanded->is_in(r));
  EXPECT_EQ(box->shape(), Shape({2}));
}

TEST(TensorSpecTest, ExpandRejectsAShapeThatDoesNotEndWithTheSpecShape) {
  const OneHot spec(3);
  EXPECT_THAT(
      [&] {
        spec.expand({4, 2});
      },
      ThrowsMessage<ShapeError>(AllOf(HasSubstr("TensorSpec::expand"),
                                      HasSubstr("new shape [4, 2]"),
                                      HasSubstr("OneHot spec's shape [3]"))));
  EXPECT_THAT([&] { spec.expand({-1, 3}); }, ThrowsMessage<ValueError>(HasSubstr("negative size")));
}

TEST(TensorSpecTest, ToCpuAndCloneGiveEqualSpecs) {
  const auto box = unit_box({3});
  EXPECT_EQ(*box->to(torch::kCPU), *box);
  EXPECT_EQ(*box->clone(), *box);
  EXPECT_EQ(*Categorical(4).clone(), Categorical(4));
}

TEST(TensorSpecTest, CloneCopiesTheBounds) {
  const auto box = unit_box({3});
  const auto copy = std::dynamic_pointer_cast<Bounded>(box->clone());
  ASSERT_NE(copy, nullptr);
  copy->high().fill_(5.0);
  EXPECT_TRUE((box->high() == 1.0).all().item<bool>());
}

TEST(TensorSpecTest, ToMovesTheSpecAndItsValues_CUDA) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device";
  const torch::Device cuda(torch::kCUDA, 0);
  const TensorSpecPtr box = unit_box({3})->to(cuda);
  EXPECT_EQ(box->device(), cuda);
  EXPECT_EQ(dynamic_cast<const Bounded&>(*box).low().device(), cuda);
  torch::Generator gen = seeded(0);
  const torch::Tensor r = box->rand(gen);
  EXPECT_EQ(r.device(), cuda);
  EXPECT_TRUE(box->is_in(r));
  EXPECT_EQ(Categorical(4).to(cuda)->rand().device(), cuda);
}

// ---- Unbounded ----------------------------------------------------------------------------------

TEST(UnboundedTest, IsInRejectsNaNButAcceptsInfinity) {
  const Unbounded spec(Shape{3});
  EXPECT_TRUE(spec.is_in(torch::tensor({1.0f, INFINITY, -INFINITY})));
  EXPECT_FALSE(spec.is_in(torch::tensor({1.0f, NAN, 0.0f})));
}

TEST(UnboundedTest, AssertIsInNamesTheNaNElement) {
  const Unbounded spec(Shape{3});
  EXPECT_THAT(
      [&] {
        spec.assert_is_in(torch::tensor({1.0f, 2.0f, NAN}), "'observation'");
      },
      ThrowsMessage<ValueError>(AllOf(HasSubstr("'observation'"), HasSubstr("UnboundedContinuous"),
                                      HasSubstr("element [2] is nan"))));
}

TEST(UnboundedTest, FloatRandIsStandardNormal) {
  torch::Generator gen = seeded(11);
  const torch::Tensor r = Unbounded(Shape{20000}).rand(gen);
  EXPECT_NEAR(r.mean().item<double>(), 0.0, 0.04);
  EXPECT_NEAR(r.std().item<double>(), 1.0, 0.04);
}

TEST(UnboundedTest, IntegerDtypeIsDiscreteAndAcceptsAnyInteger) {
  const Unbounded spec(Shape{2}, UnboundedOptions().dtype(torch::kInt64));
  EXPECT_EQ(spec.type_name(), "UnboundedDiscrete");
  EXPECT_EQ(spec.domain(), "discrete");
  EXPECT_TRUE(spec.is_in(torch::tensor({INT64_MIN, INT64_MAX})));
  EXPECT_EQ(Unbounded().domain(), "continuous");
}

TEST(UnboundedTest, ProjectCastsToTheSpecDtype) {
  const Unbounded spec(Shape{2}, UnboundedOptions().dtype(torch::kFloat64));
  const torch::Tensor p = spec.project(torch::tensor({1, 2}));
  EXPECT_EQ(p.scalar_type(), torch::kFloat64);
  EXPECT_TRUE(torch::equal(p, torch::tensor({1.0, 2.0}, torch::kFloat64)));
}

// ---- Bounded ------------------------------------------------------------------------------------

TEST(BoundedTest, RejectsLowAboveHighNamingTheIndex) {
  EXPECT_THAT(
      [] {
        Bounded(BoundedOptions().low(torch::tensor({0.0, 2.0})).high(torch::tensor({1.0, 1.0})));
      },
      ThrowsMessage<ValueError>(
          AllOf(HasSubstr("low > high at index [1]"), HasSubstr("low 2, high 1"))));
}

TEST(BoundedTest, RejectsMissingOrNonFiniteBounds) {
  EXPECT_THAT([] { Bounded(BoundedOptions().low(0.0)); },
              ThrowsMessage<ValueError>(HasSubstr("low and high are required")));
  EXPECT_THAT([] { Bounded(BoundedOptions().low(0.0).high(INFINITY)); },
              ThrowsMessage<ValueError>(AllOf(HasSubstr("high is inf"), HasSubstr("Unbounded"))));
}

TEST(BoundedTest, RejectsBoundsThatDoNotBroadcastToTheShape) {
  EXPECT_THAT([] { Bounded(BoundedOptions().low(torch::zeros({2})).high(1.0).shape({3})); },
              ThrowsMessage<ShapeError>(
                  AllOf(HasSubstr("low of shape [2]"), HasSubstr("spec's shape [3]"))));
  EXPECT_THAT([] { Bounded(BoundedOptions().low(torch::zeros({2})).high(torch::ones({3}))); },
              ThrowsMessage<ShapeError>(HasSubstr("do not broadcast together")));
}

TEST(BoundedTest, ScalarBoundsBroadcastToTheShape) {
  const auto box = unit_box({2, 3});
  EXPECT_EQ(box->low().sizes(), c10::IntArrayRef({2, 3}));
  EXPECT_TRUE((box->low() == -1.0).all().item<bool>());
  EXPECT_EQ(box->high().scalar_type(), torch::kFloat32);
  EXPECT_EQ(box->type_name(), "BoundedContinuous");
}

TEST(BoundedTest, ContinuousRandStaysWithinPerDimBounds) {
  const Bounded box(
      BoundedOptions().low(torch::tensor({0.0, 10.0})).high(torch::tensor({0.5, 11.0})));
  torch::Generator gen = seeded(4);
  const torch::Tensor r = box.expand({1000, 2})->rand(gen);
  EXPECT_TRUE((r.select(1, 0) >= 0).all().item<bool>());
  EXPECT_TRUE((r.select(1, 0) <= 0.5).all().item<bool>());
  EXPECT_TRUE((r.select(1, 1) >= 10).all().item<bool>());
  EXPECT_NEAR(r.select(1, 1).mean().item<double>(), 10.5, 0.05);
}

TEST(BoundedTest, IntegerRandCoversBothBoundsInclusive) {
  const Bounded spec(BoundedOptions().low(0.0).high(2.0).shape({600}).dtype(torch::kInt64));
  torch::Generator gen = seeded(5);
  const torch::Tensor counts = torch::bincount(spec.rand(gen));
  ASSERT_EQ(counts.size(0), 3);
  EXPECT_TRUE((counts > 150).all().item<bool>());
  EXPECT_EQ(spec.type_name(), "BoundedDiscrete");
}

TEST(BoundedTest, IsInRejectsOutOfBoundsAndNaN) {
  const auto box = unit_box({2});
  EXPECT_TRUE(box->is_in(torch::tensor({-1.0f, 1.0f})));
  EXPECT_FALSE(box->is_in(torch::tensor({-1.5f, 0.0f})));
  EXPECT_FALSE(box->is_in(torch::tensor({0.0f, NAN})));
}

TEST(BoundedTest, ProjectClampsToTheBox) {
  const auto box = unit_box({3});
  EXPECT_TRUE(torch::equal(box->project(torch::tensor({-3.0f, 0.25f, 7.0f})),
                           torch::tensor({-1.0f, 0.25f, 1.0f})));
}

TEST(BoundedTest, IntegerProjectRoundsThenClamps) {
  const Bounded spec(BoundedOptions().low(0.0).high(5.0).shape({4}).dtype(torch::kInt32));
  const torch::Tensor p = spec.project(torch::tensor({-2.0, 2.4, 2.6, 9.0}));
  EXPECT_EQ(p.scalar_type(), torch::kInt32);
  EXPECT_TRUE(torch::equal(p, torch::tensor({0, 2, 3, 5}, torch::kInt32)));
}

TEST(BoundedTest, IntegerDtypeRejectsFractionalBoundsAndBoolIsRejected) {
  EXPECT_THAT(
      [] { Bounded(BoundedOptions().low(0.5).high(2.0).dtype(torch::kInt64)); },
      ThrowsMessage<ValueError>(AllOf(HasSubstr("low is 0.5"), HasSubstr("not an integer"))));
  EXPECT_THAT([] { Bounded(BoundedOptions().low(0.0).high(1.0).dtype(torch::kBool)); },
              ThrowsMessage<TypeError>(HasSubstr("use Binary")));
}

// ---- Categorical --------------------------------------------------------------------------------

TEST(CategoricalTest, IsInRejectsIndicesOutsideZeroToN) {
  const Categorical spec(4, CategoricalOptions().shape({3}));
  EXPECT_TRUE(spec.is_in(torch::tensor({0, 3, 2})));
  EXPECT_FALSE(spec.is_in(torch::tensor({0, 4, 2})));
  EXPECT_FALSE(spec.is_in(torch::tensor({-1, 0, 0})));
  EXPECT_THAT(
      [&] {
        spec.assert_is_in(torch::tensor({0, 4, 2}), "'action'");
      },
      ThrowsMessage<ValueError>(
          AllOf(HasSubstr("element [1] is 4"), HasSubstr("outside [0, n) = [0, 4)"))));
}

TEST(CategoricalTest, ProjectRoundsAndClampsToValidIndices) {
  const Categorical spec(4, CategoricalOptions().shape({4}));
  EXPECT_TRUE(torch::equal(spec.project(torch::tensor({-3.0, 1.4, 2.6, 10.0})),
                           torch::tensor({0, 1, 3, 3})));
}

TEST(CategoricalTest, RandCoversEveryClass) {
  const Categorical spec(5, CategoricalOptions().shape({1000}));
  torch::Generator gen = seeded(6);
  const torch::Tensor counts = torch::bincount(spec.rand(gen), {}, 5);
  EXPECT_TRUE((counts > 150).all().item<bool>());
}

TEST(CategoricalTest, OneHotRoundTripRestoresTheIndices) {
  const Categorical spec(4, CategoricalOptions().shape({3}));
  const torch::Tensor index = torch::tensor({{2, 0, 3}, {1, 1, 0}});
  const torch::Tensor one_hot = spec.to_one_hot(index);
  EXPECT_EQ(one_hot.sizes(), c10::IntArrayRef({2, 3, 4}));
  EXPECT_TRUE(torch::equal(one_hot[0][0], torch::tensor({0, 0, 1, 0})));
  const auto one_hot_spec = spec.to_one_hot_spec();
  EXPECT_TRUE(one_hot_spec->is_in(one_hot));
  EXPECT_TRUE(torch::equal(one_hot_spec->to_categorical(one_hot), index));
}

TEST(CategoricalTest, ToOneHotSpecAppendsN) {
  const Categorical spec(4, CategoricalOptions().shape({2}));
  const auto one_hot = spec.to_one_hot_spec();
  EXPECT_EQ(one_hot->shape(), Shape({2, 4}));
  EXPECT_EQ(one_hot->n(), 4);
  EXPECT_EQ(*one_hot->to_categorical_spec(), spec);
}

TEST(CategoricalTest, ToOneHotRejectsAnIndexOutOfRange) {
  EXPECT_THAT([] { Categorical(3).to_one_hot(torch::tensor(3)); },
              ThrowsMessage<ValueError>(
                  AllOf(HasSubstr("Categorical::to_one_hot"), HasSubstr("element [] is 3"))));
}

TEST(CategoricalTest, RejectsNonPositiveNAndNonIntegerDtypes) {
  EXPECT_THAT([] { Categorical(0); }, ThrowsMessage<ValueError>(HasSubstr("n is 0")));
  EXPECT_THAT([] { Categorical(3, CategoricalOptions().dtype(torch::kFloat32)); },
              ThrowsMessage<TypeError>(HasSubstr("torch.float32 is not an integer dtype")));
}

// ---- OneHot -------------------------------------------------------------------------------------

TEST(OneHotTest, IsInRejectsVectorsWithoutExactlyOneOne) {
  const OneHot spec(3);
  EXPECT_TRUE(spec.is_in(torch::tensor({0, 1, 0})));
  EXPECT_FALSE(spec.is_in(torch::tensor({0, 1, 1})));
  EXPECT_FALSE(spec.is_in(torch::tensor({0, 0, 0})));
  EXPECT_FALSE(spec.is_in(torch::tensor({0, 2, 0})));
  EXPECT_FALSE(spec.is_in(torch::tensor({-1, 1, 1})));
}

TEST(OneHotTest, AssertIsInNamesTheInvalidVector) {
  const OneHot spec(3);
  EXPECT_THAT(
      [&] {
        spec.assert_is_in(torch::tensor({{0, 1, 0}, {1, 1, 0}}), "'action'");
      },
      ThrowsMessage<ValueError>(AllOf(HasSubstr("'action'"), HasSubstr("vector [1] is [1, 1, 0]"),
                                      HasSubstr("not one-hot"))));
}

TEST(OneHotTest, ProjectTakesTheArgmax) {
  const OneHot spec(3, OneHotOptions().dtype(torch::kBool));
  const torch::Tensor p = spec.project(torch::tensor({{0.2, 0.9, -1.0}, {3.0, 3.0, 0.0}}));
  EXPECT_TRUE(torch::equal(p, torch::tensor({{false, true, false}, {true, false, false}})));
}

TEST(OneHotTest, ToCategoricalRejectsAnInvalidVector) {
  EXPECT_THAT(
      [] {
        OneHot(2).to_categorical(torch::tensor({1, 1}));
      },
      ThrowsMessage<ValueError>(
          AllOf(HasSubstr("OneHot::to_categorical"), HasSubstr("vector [] is [1, 1]"))));
}

TEST(OneHotTest, RejectsAShapeWhoseLastDimIsNotN) {
  EXPECT_THAT([] { OneHot(3, OneHotOptions().shape({4})); },
              ThrowsMessage<ShapeError>(AllOf(HasSubstr("shape [4] must end with n = 3"))));
  EXPECT_THAT([] { OneHot(3, OneHotOptions().dtype(torch::kFloat32)); },
              ThrowsMessage<TypeError>(HasSubstr("not an integer or bool dtype")));
}

// ---- Binary -------------------------------------------------------------------------------------

TEST(BinaryTest, IsInRejectsValuesOtherThanZeroAndOne) {
  const Binary spec(3);
  EXPECT_EQ(spec.dtype(), torch::kInt8);
  EXPECT_TRUE(spec.is_in(torch::tensor({0, 1, 1}, torch::kInt8)));
  EXPECT_FALSE(spec.is_in(torch::tensor({0, 2, 1}, torch::kInt8)));
  EXPECT_THAT(
      [&] {
        spec.assert_is_in(torch::tensor({0, 2, 1}, torch::kInt8), "'flags'");
      },
      ThrowsMessage<ValueError>(AllOf(HasSubstr("element [1] is 2"), HasSubstr("0 or 1"))));
}

TEST(BinaryTest, ProjectThresholdsAtOneHalf) {
  const Binary spec(4, BinaryOptions().dtype(torch::kFloat32));
  EXPECT_TRUE(torch::equal(spec.project(torch::tensor({0.2, 0.5, 0.51, 7.0})),
                           torch::tensor({0.0f, 0.0f, 1.0f, 1.0f})));
}

TEST(BinaryTest, ShapeConstructorTakesNFromTheLastDim) {
  const Binary spec(BinaryOptions().shape({4, 3}));
  EXPECT_EQ(spec.n(), 3);
  EXPECT_EQ(spec.shape(), Shape({4, 3}));
  EXPECT_THAT([] { Binary{BinaryOptions()}; },
              ThrowsMessage<ShapeError>(HasSubstr("a shape is required")));
  EXPECT_THAT(
      [] {
        Binary(3, BinaryOptions().shape({4, 2}));
      },
      ThrowsMessage<ShapeError>(HasSubstr("must end with n = 3")));
}

// ---- MultiCategorical ---------------------------------------------------------------------------

TEST(MultiCategoricalTest, IsInChecksEachPositionAgainstItsCount) {
  const MultiCategorical spec(Shape{3, 2});
  EXPECT_TRUE(spec.is_in(torch::tensor({{2, 1}, {0, 0}})));
  EXPECT_FALSE(spec.is_in(torch::tensor({1, 2})));
  EXPECT_THAT(
      [&] {
        spec.assert_is_in(torch::tensor({{0, 0}, {1, 2}}), "'action'");
      },
      ThrowsMessage<ValueError>(
          AllOf(HasSubstr("element [1, 1] is 2"), HasSubstr("outside [0, nvec[1]) = [0, 2)"))));
}

TEST(MultiCategoricalTest, ProjectClampsEachPosition) {
  const MultiCategorical spec(Shape{3, 2});
  EXPECT_TRUE(torch::equal(spec.project(torch::tensor({{5.0, 5.0}, {-1.0, 0.6}})),
                           torch::tensor({{2, 1}, {0, 1}})));
}

TEST(MultiCategoricalTest, RandCoversEachPositionsRange) {
  const auto spec = MultiCategorical(Shape{2, 4}).expand({500, 2});
  torch::Generator gen = seeded(8);
  const torch::Tensor r = spec->rand(gen);
  EXPECT_TRUE(torch::equal(std::get<0>(r.max(0)), torch::tensor({1, 3})));
  EXPECT_TRUE(torch::equal(std::get<0>(r.min(0)), torch::tensor({0, 0})));
}

TEST(MultiCategoricalTest, RejectsABadNvecOrShape) {
  EXPECT_THAT([] { MultiCategorical(Shape{}); },
              ThrowsMessage<ValueError>(HasSubstr("nvec is empty")));
  EXPECT_THAT(
      [] {
        MultiCategorical(Shape{3, 0});
      },
      ThrowsMessage<ValueError>(HasSubstr("nvec[1] is 0")));
  EXPECT_THAT(
      [] {
        MultiCategorical(Shape{3, 2}, MultiCategoricalOptions().shape({3}));
      },
      ThrowsMessage<ShapeError>(HasSubstr("must end with nvec.size() = 2")));
}

// ---- Printing -----------------------------------------------------------------------------------

TEST(SpecPrintingTest, BoundedPrintsLikeTorchRL) {
  EXPECT_EQ(unit_box({3})->to_string(),
            "BoundedContinuous(\n"
            "    shape=torch.Size([3]),\n"
            "    space=ContinuousBox(\n"
            "        low=Tensor(shape=torch.Size([3]), device=cpu, dtype=torch.float32, "
            "contiguous=True),\n"
            "        high=Tensor(shape=torch.Size([3]), device=cpu, dtype=torch.float32, "
            "contiguous=True)),\n"
            "    device=cpu,\n"
            "    dtype=torch.float32,\n"
            "    domain=continuous)");
}

TEST(SpecPrintingTest, UnboundedPrintsWithoutASpace) {
  EXPECT_EQ(Unbounded(Shape{4, 1}, UnboundedOptions().dtype(torch::kInt64)).to_string(),
            "UnboundedDiscrete(\n"
            "    shape=torch.Size([4, 1]),\n"
            "    space=None,\n"
            "    device=cpu,\n"
            "    dtype=torch.int64,\n"
            "    domain=discrete)");
}

TEST(SpecPrintingTest, CategoricalOneHotAndBinaryPrintTheirBox) {
  EXPECT_EQ(Categorical(4).to_string(),
            "Categorical(\n"
            "    shape=torch.Size([]),\n"
            "    space=CategoricalBox(n=4),\n"
            "    device=cpu,\n"
            "    dtype=torch.int64,\n"
            "    domain=discrete)");
  EXPECT_EQ(OneHot(2, OneHotOptions().dtype(torch::kBool)).to_string(),
            "OneHot(\n"
            "    shape=torch.Size([2]),\n"
            "    space=CategoricalBox(n=2),\n"
            "    device=cpu,\n"
            "    dtype=torch.bool,\n"
            "    domain=discrete)");
  EXPECT_EQ(Binary(3).to_string(),
            "Binary(\n"
            "    shape=torch.Size([3]),\n"
            "    space=CategoricalBox(n=2),\n"
            "    device=cpu,\n"
            "    dtype=torch.int8,\n"
            "    domain=discrete)");
}

TEST(SpecPrintingTest, MultiCategoricalPrintsABoxListAndStreamsToString) {
  const MultiCategorical spec(Shape{3, 2});
  EXPECT_EQ(spec.to_string(),
            "MultiCategorical(\n"
            "    shape=torch.Size([2]),\n"
            "    space=BoxList(boxes=[CategoricalBox(n=3), CategoricalBox(n=2)]),\n"
            "    device=cpu,\n"
            "    dtype=torch.int64,\n"
            "    domain=discrete)");
  EXPECT_EQ(printed(spec), spec.to_string());
}

// ---- Equality -----------------------------------------------------------------------------------

TEST(SpecEqualityTest, SpecsBuiltAlikeCompareEqual) {
  EXPECT_EQ(*unit_box({3}), *unit_box({3}));
  EXPECT_EQ(OneHot(4), OneHot(4));
  EXPECT_EQ(MultiCategorical(Shape{2, 3}), MultiCategorical(Shape{2, 3}));
  EXPECT_EQ(Binary(2), Binary(BinaryOptions().shape({2})));
}

TEST(SpecEqualityTest, KindShapeDtypeOrParametersMakeSpecsDiffer) {
  EXPECT_NE(Categorical(4), Categorical(5));
  EXPECT_NE(Categorical(4), Categorical(4, CategoricalOptions().shape({1})));
  EXPECT_NE(Categorical(4), Categorical(4, CategoricalOptions().dtype(torch::kInt32)));
  EXPECT_NE(Unbounded(Shape{4}), static_cast<const TensorSpec&>(*unit_box({4})));
  EXPECT_NE(*unit_box({3}), Bounded(BoundedOptions().low(-1.0).high(2.0).shape({3})));
  EXPECT_NE(MultiCategorical(Shape{2, 3}), MultiCategorical(Shape{3, 2}));
  EXPECT_NE(Unbounded(Shape{3}), Unbounded(Shape{3}, UnboundedOptions().device(torch::kCUDA)));
}

}  // namespace
}  // namespace tdrl::specs

namespace tdrl::specs {
namespace {

TEST(TensorSpecTest, AssertIsInNamesTheFirstInvalidElementWhenSeveralAreInvalid) {
  Bounded spec(BoundedOptions().low(-1.0).high(1.0).shape({2, 1}).dtype(torch::kFloat32));
  EXPECT_THAT(
      [&] {
        spec.assert_is_in(torch::full({2, 1}, 3.0f), "action");
      },
      ThrowsMessage<tensordict::ValueError>(::testing::HasSubstr("[0, 0]")));
}

}  // namespace
}  // namespace tdrl::specs
