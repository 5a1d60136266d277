// Non-tensor entries: strings, numbers, bools and custom values, under indexing, shape ops,
// stacking and printing (README: data["non-tensor"] = "a string!").

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <ostream>

#include <tensordict/tensordict.h>

#include "support/tensordict_fixtures.h"

namespace {

using namespace tensordict::testing;

struct Gains {
  double kp;
  double kd;
  bool operator==(const Gains& other) const { return kp == other.kp && kd == other.kd; }
};

struct Labelled {
  std::string label;
  bool operator==(const Labelled& other) const { return label == other.label; }
};
std::ostream& operator<<(std::ostream& os, const Labelled& l) {
  return os << "Labelled<" << l.label << ">";
}

struct Opaque {
  int id;
};

std::vector<std::string> strings_of(const NonTensorData& nt) {
  std::vector<std::string> out;
  for (const auto& v : nt.tolist()) out.push_back(v.get<std::string>());
  return out;
}

TensorDict with_string(const std::string& s) {
  return TensorDict({{"obs", torch::zeros({3, 2})}, {"s", s}}, {3});
}

// ---- set and read -----------------------------------------------------------------------------

TEST(NonTensorTest, StringIsStoredAndReadBack) {
  // README: data["non-tensor"] = "a string!"; assert data["non-tensor"] == "a string!".
  TensorDict td({{"a-tensor", torch::randn({1, 2})}}, {1, 2});
  td.set("non-tensor", "a string!");
  EXPECT_EQ(td.get_non_tensor<std::string>("non-tensor"), "a string!");
  EXPECT_EQ(td.get_non_tensor("non-tensor").batch_size(), (BatchSize{1, 2}));
}

TEST(NonTensorTest, ConstructorAcceptsNonTensorDataItems) {
  TensorDict td({{"x", torch::zeros({2})}, {"seed", NonTensorData(AnyValue(7))}}, {2});
  EXPECT_EQ(td.get_non_tensor<int64_t>("seed"), 7);
  EXPECT_EQ(td.get_non_tensor("seed").batch_size(), BatchSize{2});
}

TEST(NonTensorTest, IntegerIsStoredAsInt64AndConvertsToOtherArithmeticTypes) {
  TensorDict td;
  td.set_non_tensor("steps", 42);
  auto nt = td.get_non_tensor("steps");
  EXPECT_TRUE(nt.value().type() == typeid(int64_t));
  EXPECT_EQ(nt.value<int64_t>(), 42);
  EXPECT_EQ(td.get_non_tensor<int>("steps"), 42);
  EXPECT_DOUBLE_EQ(td.get_non_tensor<double>("steps"), 42.0);
}

TEST(NonTensorTest, FloatingValueIsStoredAsDouble) {
  TensorDict td;
  td.set_non_tensor("gamma", 0.5f);
  EXPECT_TRUE(td.get_non_tensor("gamma").value().type() == typeid(double));
  EXPECT_DOUBLE_EQ(td.get_non_tensor<double>("gamma"), 0.5);
}

TEST(NonTensorTest, BoolIsStoredAsBool) {
  TensorDict td;
  td.set_non_tensor("flag", true);
  EXPECT_TRUE(td.get_non_tensor("flag").value().type() == typeid(bool));
  EXPECT_TRUE(td.get_non_tensor<bool>("flag"));
}

TEST(NonTensorTest, CustomStructIsStoredAndReadBack) {
  TensorDict td({{"x", torch::zeros({2})}}, {2});
  td.set_non_tensor("gains", Gains{1.5, 0.25});
  Gains g = td.get_non_tensor<Gains>("gains");
  EXPECT_DOUBLE_EQ(g.kp, 1.5);
  EXPECT_DOUBLE_EQ(g.kd, 0.25);
}

TEST(NonTensorTest, ReadingAsAnotherTypeThrowsTypeErrorNamingBothTypes) {
  TensorDict td({{"s", "text"}});
  EXPECT_THAT(
      [&] { td.get_non_tensor<int64_t>("s"); },
      ThrowsMessage<TypeError>(AllOf(HasSubstr("std::"), HasSubstr("string"), HasSubstr("long"))));
}

TEST(NonTensorTest, GetOnNonTensorEntryThrowsTypeErrorPointingToGetNonTensor) {
  TensorDict td({{"s", "text"}});
  EXPECT_THAT([&] { td.get("s"); }, ThrowsMessage<TypeError>(HasSubstr("get_non_tensor")));
}

TEST(NonTensorTest, GetNonTensorOnTensorThrowsTypeError) {
  TensorDict td({{"t", torch::zeros({})}});
  EXPECT_THROW(td.get_non_tensor("t"), TypeError);
}

TEST(NonTensorTest, NestedKeyHoldsNonTensorData) {
  TensorDict td({{"obs", torch::zeros({2})}}, {2});
  td.set_non_tensor({"info", "task"}, std::string("reach"));
  EXPECT_EQ(td.get_non_tensor<std::string>({"info", "task"}), "reach");
  EXPECT_EQ(td.get_tensordict("info").batch_size(), BatchSize{2});
}

TEST(NonTensorTest, OverwritingNonTensorWithTensorReplacesIt) {
  TensorDict td({{"s", "text"}}, {});
  td.set("s", torch::ones({}));
  EXPECT_EQ(td.get("s").item<float>(), 1.0f);
}

// ---- AnyValue normalisation and equality ------------------------------------------------------

TEST(AnyValueTest, LiteralsAndVariablesOfOneKindCompareEqual) {
  EXPECT_EQ(AnyValue(3), AnyValue(int64_t{3}));
  EXPECT_EQ(AnyValue(static_cast<unsigned char>(3)), AnyValue(3L));
  EXPECT_EQ(AnyValue("x"), AnyValue(std::string("x")));
  EXPECT_EQ(AnyValue(0.5f), AnyValue(0.5));
}

TEST(AnyValueTest, DifferentTypesAreNotEqual) {
  EXPECT_NE(AnyValue(1), AnyValue(1.0));
  EXPECT_NE(AnyValue(true), AnyValue(1));
  EXPECT_NE(AnyValue("1"), AnyValue(1));
}

TEST(AnyValueTest, TypeWithoutEqualityIsEqualOnlyToTheSameStoredObject) {
  AnyValue a(Opaque{1});
  AnyValue copy = a;
  EXPECT_EQ(a, copy);
  EXPECT_NE(a, AnyValue(Opaque{1}));
}

TEST(AnyValueTest, GetIfReturnsNullForAnotherType) {
  AnyValue v(std::string("x"));
  EXPECT_EQ(v.get_if<int64_t>(), nullptr);
  ASSERT_NE(v.get_if<std::string>(), nullptr);
  EXPECT_EQ(*v.get_if<std::string>(), "x");
}

TEST(AnyValueTest, ToStringUsesTheStreamOperatorOrTheTypeName) {
  EXPECT_EQ(AnyValue(7).to_string(), "7");
  EXPECT_EQ(AnyValue(true).to_string(), "True");
  EXPECT_EQ(AnyValue(Labelled{"x"}).to_string(), "Labelled<x>");
  EXPECT_THAT(AnyValue(Opaque{1}).to_string(), HasSubstr("Opaque"));
}

// ---- NonTensorData ------------------------------------------------------------------------------

TEST(NonTensorDataTest, UniformDataListsItsValueOncePerElement) {
  NonTensorData nt(AnyValue(std::string("a")), {2, 3});
  EXPECT_TRUE(nt.is_uniform());
  EXPECT_EQ(nt.tolist().size(), 6u);
  EXPECT_EQ(nt.value<std::string>(), "a");
}

TEST(NonTensorDataTest, PerElementDataReadsPositionsIntoThePool) {
  auto nt = NonTensorData::per_element({AnyValue(std::string("a")), AnyValue(std::string("b"))},
                                       torch::tensor({1, 0, 1}, torch::kLong));
  EXPECT_FALSE(nt.is_uniform());
  EXPECT_EQ(nt.batch_size(), BatchSize{3});
  EXPECT_EQ(strings_of(nt), (std::vector<std::string>{"b", "a", "b"}));
}

TEST(NonTensorDataTest, PerElementDataWithEqualValuesHasASharedValue) {
  auto nt =
      NonTensorData::per_element({AnyValue(1), AnyValue(1)}, torch::tensor({0, 1}, torch::kLong));
  EXPECT_EQ(nt.value<int64_t>(), 1);
}

TEST(NonTensorDataTest, PerElementRejectsPositionsOutsideThePool) {
  EXPECT_THROW(NonTensorData::per_element({AnyValue(1)}, torch::tensor({0, 1}, torch::kLong)),
               ValueError);
}

TEST(NonTensorDataTest, EqualityComparesEveryElement) {
  NonTensorData uniform(AnyValue(std::string("a")), {2});
  auto per =
      NonTensorData::per_element({AnyValue(std::string("a"))}, torch::zeros({2}, torch::kLong));
  EXPECT_TRUE(uniform == per);
  EXPECT_FALSE(uniform == NonTensorData(AnyValue(std::string("b")), {2}));
  EXPECT_FALSE(uniform == NonTensorData(AnyValue(std::string("a")), {3}));
}

// ---- Indexing and shape operations --------------------------------------------------------------

TEST(NonTensorTest, IntegerIndexKeepsTheValueWithTheSmallerBatch) {
  TensorDict row = with_string("hello").index({0});
  EXPECT_EQ(row.get_non_tensor<std::string>("s"), "hello");
  EXPECT_EQ(row.get_non_tensor("s").batch_size(), BatchSize{});
}

TEST(NonTensorTest, SliceKeepsTheValueWithTheSlicedBatch) {
  TensorDict part = with_string("hello").index({Slice(1, None)});
  EXPECT_EQ(part.get_non_tensor<std::string>("s"), "hello");
  EXPECT_EQ(part.get_non_tensor("s").batch_size(), BatchSize{2});
}

TEST(NonTensorTest, MaskKeepsTheValue) {
  TensorDict part = with_string("hello").index({torch::tensor({true, false, true})});
  EXPECT_EQ(part.batch_size(), BatchSize{2});
  EXPECT_EQ(part.get_non_tensor<std::string>("s"), "hello");
}

TEST(NonTensorTest, ReshapeAndUnsqueezeKeepTheValue) {
  TensorDict td({{"x", torch::zeros({4})}, {"s", "v"}}, {4});
  TensorDict reshaped = td.reshape({2, 2});
  EXPECT_EQ(reshaped.get_non_tensor<std::string>("s"), "v");
  EXPECT_EQ(reshaped.get_non_tensor("s").batch_size(), (BatchSize{2, 2}));
  TensorDict unsqueezed = td.unsqueeze(0);
  EXPECT_EQ(unsqueezed.get_non_tensor("s").batch_size(), (BatchSize{1, 4}));
  EXPECT_EQ(unsqueezed.get_non_tensor<std::string>("s"), "v");
}

TEST(NonTensorTest, CloneAndApplyKeepNonTensorEntries) {
  TensorDict td = with_string("hello");
  EXPECT_EQ(td.clone().get_non_tensor<std::string>("s"), "hello");
  TensorDict doubled = td.apply([](const torch::Tensor& t) { return t * 2; });
  EXPECT_EQ(doubled.get_non_tensor<std::string>("s"), "hello");
}

TEST(NonTensorTest, ReductionsDropNonTensorEntries) {
  TensorDict summed = with_string("hello").sum();
  EXPECT_FALSE(summed.contains("s"));
  EXPECT_TRUE(summed.contains("obs"));
}

// ---- Stacking -----------------------------------------------------------------------------------

TEST(NonTensorTest, StackingEqualValuesGivesOneUniformValue) {
  auto stacked = tensordict::stack({with_string("same"), with_string("same")}, 0);
  auto nt = stacked.get_non_tensor("s");
  EXPECT_TRUE(nt.is_uniform());
  EXPECT_EQ(nt.batch_size(), (BatchSize{2, 3}));
  EXPECT_EQ(stacked.get_non_tensor<std::string>("s"), "same");
}

TEST(NonTensorTest, StackingUnequalValuesGivesPerElementValues) {
  auto stacked = tensordict::stack({with_string("a"), with_string("b")}, 0);
  auto nt = stacked.get_non_tensor("s");
  EXPECT_FALSE(nt.is_uniform());
  EXPECT_EQ(nt.batch_size(), (BatchSize{2, 3}));
  EXPECT_EQ(strings_of(nt), (std::vector<std::string>{"a", "a", "a", "b", "b", "b"}));
}

TEST(NonTensorTest, SharedValueOfUnequalStackThrowsTypeError) {
  auto stacked = tensordict::stack({with_string("a"), with_string("b")}, 0);
  EXPECT_THROW(stacked.get_non_tensor<std::string>("s"), TypeError);
}

TEST(NonTensorTest, StackingAlongAnInnerDimInterleavesValues) {
  auto stacked = tensordict::stack({with_string("a"), with_string("b")}, 1);
  EXPECT_EQ(stacked.batch_size(), (BatchSize{3, 2}));
  EXPECT_EQ(strings_of(stacked.get_non_tensor("s")),
            (std::vector<std::string>{"a", "b", "a", "b", "a", "b"}));
}

TEST(NonTensorTest, IndexingAPerElementStackPicksTheElementsValues) {
  TensorDict dense = tensordict::stack({with_string("a"), with_string("b")}, 0).contiguous();
  EXPECT_EQ(dense.index({1}).get_non_tensor<std::string>("s"), "b");
  EXPECT_EQ(dense.index({0, 2}).get_non_tensor<std::string>("s"), "a");
  TensorDict column = dense.index({Slice(), 0});
  EXPECT_EQ(strings_of(column.get_non_tensor("s")), (std::vector<std::string>{"a", "b"}));
}

TEST(NonTensorTest, IndexTensorGathersPerElementValues) {
  TensorDict dense = tensordict::stack({with_string("a"), with_string("b")}, 0).contiguous();
  TensorDict picked = dense.index({torch::tensor({1, 0, 1})});
  EXPECT_EQ(picked.batch_size(), (BatchSize{3, 3}));
  auto values = strings_of(picked.get_non_tensor("s"));
  EXPECT_EQ(values[0], "b");
  EXPECT_EQ(values[3], "a");
  EXPECT_EQ(values[6], "b");
}

TEST(NonTensorTest, ReshapingPerElementDataMovesValuesWithTheirRows) {
  TensorDict dense = tensordict::stack({with_string("a"), with_string("b")}, 0).contiguous();
  TensorDict flat = dense.reshape({6});
  EXPECT_EQ(strings_of(flat.get_non_tensor("s")),
            (std::vector<std::string>{"a", "a", "a", "b", "b", "b"}));
  TensorDict swapped = dense.transpose(0, 1);
  EXPECT_EQ(strings_of(swapped.get_non_tensor("s")),
            (std::vector<std::string>{"a", "b", "a", "b", "a", "b"}));
}

TEST(NonTensorTest, StackingCustomStructsComparesWithTheirEquality) {
  TensorDict a, b, c;
  a.set_non_tensor("gains", Gains{1.0, 2.0});
  b.set_non_tensor("gains", Gains{1.0, 2.0});
  c.set_non_tensor("gains", Gains{3.0, 2.0});
  EXPECT_TRUE(tensordict::stack({a, b}, 0).get_non_tensor("gains").is_uniform());
  auto mixed = tensordict::stack({a, c}, 0).get_non_tensor("gains").tolist();
  ASSERT_EQ(mixed.size(), 2u);
  EXPECT_DOUBLE_EQ(mixed[1].get<Gains>().kp, 3.0);
}

TEST(NonTensorTest, CatOfEqualValuesStaysUniformAndOfUnequalBecomesPerElement) {
  TensorDict same = tensordict::cat({with_string("a"), with_string("a")}, 0);
  EXPECT_TRUE(same.get_non_tensor("s").is_uniform());
  EXPECT_EQ(same.get_non_tensor("s").batch_size(), BatchSize{6});
  TensorDict mixed = tensordict::cat({with_string("a"), with_string("b")}, 0);
  EXPECT_EQ(strings_of(mixed.get_non_tensor("s")),
            (std::vector<std::string>{"a", "a", "a", "b", "b", "b"}));
}

TEST(NonTensorTest, IndexPutOfAnotherValueMakesTheEntryPerElement) {
  TensorDict td = with_string("a");
  td.index_put_({1}, TensorDict({{"s", "b"}}, {}));
  EXPECT_EQ(strings_of(td.get_non_tensor("s")), (std::vector<std::string>{"a", "b", "a"}));
}

TEST(NonTensorTest, IndexPutOfTheSameValueKeepsTheEntryUniform) {
  TensorDict td = with_string("a");
  td.index_put_({1}, TensorDict({{"s", "a"}}, {}));
  EXPECT_TRUE(td.get_non_tensor("s").is_uniform());
}

// ---- Printing -----------------------------------------------------------------------------------

TEST(NonTensorTest, UniformValuePrintsAsNonTensorDataInTheRepr) {
  std::string repr = with_string("hello").to_string();
  EXPECT_THAT(repr,
              HasSubstr("s: NonTensorData(data=hello, batch_size=torch.Size([3]), device=None)"));
  EXPECT_THAT(repr, HasSubstr("obs: Tensor("));
}

TEST(NonTensorTest, PerElementValuesPrintAsNonTensorStackWithNestedLists) {
  TensorDict dense = tensordict::stack({with_string("a"), with_string("b")}, 0).contiguous();
  std::string repr = dense.to_string();
  EXPECT_THAT(repr, HasSubstr("s: NonTensorStack("));
  EXPECT_THAT(repr, HasSubstr("[[a, a, a], [b, b, b]]"));
  EXPECT_THAT(repr, HasSubstr("batch_size=torch.Size([2, 3])"));
}

TEST(NonTensorTest, NumbersBoolsAndCustomValuesPrintWithTheirStreamOperator) {
  TensorDict td;
  td.set_non_tensor("steps", 42);
  td.set_non_tensor("flag", false);
  td.set_non_tensor("label", Labelled{"pole"});
  td.set_non_tensor("opaque", Opaque{3});
  std::string repr = td.to_string();
  EXPECT_THAT(repr, HasSubstr("steps: NonTensorData(data=42,"));
  EXPECT_THAT(repr, HasSubstr("flag: NonTensorData(data=False,"));
  EXPECT_THAT(repr, HasSubstr("label: NonTensorData(data=Labelled<pole>,"));
  EXPECT_THAT(repr, HasSubstr("opaque: NonTensorData(data=<"));
  EXPECT_THAT(repr, HasSubstr("Opaque>"));
}

TEST(NonTensorTest, NestedNonTensorPrintsInsideTheNestedBlock) {
  TensorDict td({{"info", {{"task", "reach"}}}}, {});
  std::string repr = td.to_string();
  EXPECT_THAT(repr, HasSubstr("info: TensorDict("));
  EXPECT_THAT(repr, HasSubstr("        task: NonTensorData(data=reach"));
  EXPECT_THAT(repr, Not(HasSubstr("NonTensorStack")));
}

}  // namespace
