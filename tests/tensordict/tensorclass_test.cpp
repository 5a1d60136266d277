// Typed tensorclasses (README: "TensorClass"): declared fields, typed getters and setters,
// every TensorDict operation returning the class, stack/cat, memmap, and Python's repr.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <sstream>
#include <string>
#include <type_traits>
#include <vector>

#include <tensordict/tensordict.h>

#include "support/temp_dir.h"
#include "support/tensordict_fixtures.h"

namespace {

using namespace tensordict::testing;
using tensordict::FieldKind;
using tensordict::TensorClass;

// The README's MyData.
class MyData : public TensorClass<MyData> {
 public:
  TENSORDICT_FIELD(torch::Tensor, image);
  TENSORDICT_FIELD(torch::Tensor, mask);
  TENSORDICT_FIELD(torch::Tensor, label);

  /// The masked pixels of every channel, one row per batch element: [*batch, -1].
  torch::Tensor mask_image() const {
    BatchSize shape = batch_size();
    shape.push_back(-1);
    return image().index({mask().expand_as(image())}).view(shape);
  }
  /// The rows whose label is `l`.
  MyData select_label(int64_t l) const { return index({label() == l}); }
};

// A nested tensorclass, a non-tensor field and a free-form TensorDict field.
class Observation : public TensorClass<Observation> {
 public:
  TENSORDICT_FIELD(torch::Tensor, pixels);
  TENSORDICT_FIELD(torch::Tensor, velocity);
};

class Step : public TensorClass<Step> {
 public:
  TENSORDICT_FIELD(Observation, obs);
  TENSORDICT_FIELD(torch::Tensor, reward);
  TENSORDICT_FIELD(std::string, task);
  TENSORDICT_FIELD(int64_t, seed);
  TENSORDICT_FIELD(TensorDict, info);
};

// Fields declared in a private section count as fields too.
class Secret : public TensorClass<Secret> {
 public:
  torch::Tensor doubled() const { return x() * 2; }

 private:
  TENSORDICT_FIELD(torch::Tensor, x);
};

namespace inner_ns {
class Named : public TensorClass<Named> {
 public:
  TENSORDICT_FIELD(torch::Tensor, a);
};
}  // namespace inner_ns

// The README's data: images randn [100, 3, side, side], labels randint(10) [100], one bernoulli
// mask [1, side, side] expanded to every image.
MyData readme_data(int64_t side) {
  torch::manual_seed(0);
  auto images = torch::randn({100, 3, side, side});
  auto label = torch::randint(10, {100});
  auto mask =
      torch::zeros({1, side, side}, torch::kBool).bernoulli_(0.5).expand({100, 1, side, side});
  return MyData::make({{"image", images}, {"mask", mask}, {"label", label}}, {100});
}

Step make_step(int64_t n) {
  torch::manual_seed(1);
  auto obs = Observation::make(
      {{"pixels", torch::randn({n, 2, 2})}, {"velocity", torch::randn({n, 3})}}, {n});
  return Step::make({{"obs", obs},
                     {"reward", torch::randn({n, 1})},
                     {"task", "walk"},
                     {"seed", 7},
                     {"info", TensorDict({{"t", torch::zeros({n})}}, {n})}},
                    {n});
}

std::string printed(const MyData& data) {
  std::ostringstream os;
  os << data;
  return os.str();
}

// ---- Construction ---------------------------------------------------------------------------

TEST(TensorClassTest, MakeStoresEveryFieldWithTheGivenBatchSize) {
  MyData data = readme_data(8);
  EXPECT_EQ(data.batch_size(), (BatchSize{100}));
  EXPECT_EQ(shape_of(data.image()), (Shape{100, 3, 8, 8}));
  EXPECT_EQ(shape_of(data.mask()), (Shape{100, 1, 8, 8}));
  EXPECT_EQ(shape_of(data.label()), (Shape{100}));
  EXPECT_EQ(data.ndim(), 1);
  EXPECT_EQ(data.numel(), 100);
  EXPECT_FALSE(data.device().has_value());
  // Stored in declaration order, whatever order make was given.
  EXPECT_THAT(data.tensordict().keys(),
              ElementsAre(NestedKey("image"), NestedKey("mask"), NestedKey("label")));
}

TEST(TensorClassTest, FieldNamesAreListedInDeclarationOrder) {
  EXPECT_THAT(MyData::field_names(), ElementsAre("image", "mask", "label"));
  EXPECT_THAT(Step::field_names(), ElementsAre("obs", "reward", "task", "seed", "info"));
  const auto& spec = Step::spec();
  EXPECT_EQ(spec.fields[0].kind, FieldKind::kTensorClass);
  EXPECT_EQ(spec.fields[1].kind, FieldKind::kTensor);
  EXPECT_EQ(spec.fields[2].kind, FieldKind::kNonTensor);
  EXPECT_EQ(spec.fields[4].kind, FieldKind::kTensorDict);
}

TEST(TensorClassTest, FieldsDeclaredPrivateAreFieldsToo) {
  auto s = Secret::make({{"x", torch::ones({2})}}, {2});
  EXPECT_THAT(Secret::field_names(), ElementsAre("x"));
  EXPECT_TRUE(torch::equal(s.doubled(), torch::full({2}, 2.0)));
}

TEST(TensorClassTest, ClassNameIsTheUnqualifiedCppName) {
  EXPECT_EQ(MyData::class_name(), "MyData");
  EXPECT_EQ(inner_ns::Named::class_name(), "Named");
}

TEST(TensorClassTest, MakeRejectsMissingFieldListingTheDeclaredFields) {
  auto call = [] {
    MyData::make({{"image", torch::zeros({2, 3})}, {"label", torch::zeros({2})}}, {2});
  };
  EXPECT_THAT(call, ThrowsMessage<KeyError>(
                        AllOf(HasSubstr("MyData::make"), HasSubstr("missing field ['mask']"),
                              HasSubstr("MyData declares ['image', 'mask', 'label']"))));
}

TEST(TensorClassTest, MakeRejectsUnknownFieldListingTheDeclaredFields) {
  auto call = [] {
    MyData::make({{"image", torch::zeros({2})},
                  {"mask", torch::zeros({2})},
                  {"label", torch::zeros({2})},
                  {"labels", torch::zeros({2})}},
                 {2});
  };
  // Closest first: "label" is one edit away from "labels".
  EXPECT_THAT(call, ThrowsMessage<KeyError>(AllOf(HasSubstr("unknown field 'labels'"),
                                                  HasSubstr("MyData declares ['label', "))));
}

TEST(TensorClassTest, MakeRejectsFieldGivenTwice) {
  auto call = [] {
    MyData::make({{"image", torch::zeros({2})},
                  {"image", torch::zeros({2})},
                  {"mask", torch::zeros({2})},
                  {"label", torch::zeros({2})}},
                 {2});
  };
  EXPECT_THAT(call, ThrowsMessage<ValueError>(HasSubstr("field 'image' is given twice")));
}

TEST(TensorClassTest, MakeRejectsValueOfTheWrongKind) {
  auto call = [] {
    MyData::make({{"image", torch::zeros({2})}, {"mask", torch::zeros({2})}, {"label", "one"}},
                 {2});
  };
  EXPECT_THAT(call, ThrowsMessage<TypeError>(HasSubstr(
                        "field 'label' is declared torch::Tensor but holds non-tensor data")));
}

TEST(TensorClassTest, MakeRejectsNonTensorValueOfTheWrongType) {
  auto call = [] {
    Step::make({{"obs", Observation::make(
                            {{"pixels", torch::zeros({2})}, {"velocity", torch::zeros({2})}}, {2})},
                {"reward", torch::zeros({2})},
                {"task", 3},
                {"seed", 7},
                {"info", TensorDict::empty({2})}},
               {2});
  };
  EXPECT_THAT(call, ThrowsMessage<TypeError>(AllOf(
                        HasSubstr("field 'task' is declared std::string"), HasSubstr("long"))));
}

TEST(TensorClassTest, MakeRejectsValueWhoseLeadingDimsDifferFromBatchSize) {
  auto call = [] {
    MyData::make({{"image", torch::zeros({3, 3})},
                  {"mask", torch::zeros({2})},
                  {"label", torch::zeros({2})}},
                 {2});
  };
  EXPECT_THAT(call, ThrowsMessage<ShapeError>(AllOf(HasSubstr("MyData::make"), HasSubstr("'image'"),
                                                    HasSubstr("[3, 3]"), HasSubstr("[2]"))));
}

TEST(TensorClassTest, DefaultConstructedInstanceHoldsNoFields) {
  MyData empty;
  EXPECT_TRUE(empty.tensordict().keys().empty());
  EXPECT_THROW(empty.image(), KeyError);
  empty = readme_data(8);  // a placeholder to assign to
  EXPECT_EQ(empty.batch_size(), (BatchSize{100}));
}

// ---- README example -------------------------------------------------------------------------

TEST(TensorClassTest, SelectLabelKeepsOnlyMatchingRows) {
  MyData data = readme_data(8);
  const int64_t ones = (data.label() == 1).sum().item<int64_t>();
  ASSERT_GT(ones, 0);
  MyData selected = data.select_label(1);
  EXPECT_EQ(selected.batch_size(), (BatchSize{ones}));
  EXPECT_EQ(shape_of(selected.image()), (Shape{ones, 3, 8, 8}));
  EXPECT_EQ(shape_of(selected.mask()), (Shape{ones, 1, 8, 8}));
  EXPECT_EQ(shape_of(selected.label()), (Shape{ones}));
  EXPECT_TRUE((selected.label() == 1).all().item<bool>());
  EXPECT_TRUE(torch::equal(selected.image(), data.image().index({data.label() == 1})));
}

TEST(TensorClassTest, MaskImageKeepsMaskedPixelsOfEveryChannelAtReadmeSize) {
  MyData data = readme_data(64);
  const int64_t true_pixels = data.mask().index({0}).sum().item<int64_t>();
  ASSERT_GT(true_pixels, 0);
  EXPECT_EQ(shape_of(data.mask_image()), (Shape{100, 3 * true_pixels}));
}

TEST(TensorClassTest, ReshapeAppliesToEveryFieldAndReturnsTheClass) {
  MyData data = readme_data(8);
  MyData r = data.reshape({10, 10});
  EXPECT_EQ(r.batch_size(), (BatchSize{10, 10}));
  EXPECT_EQ(shape_of(r.image()), (Shape{10, 10, 3, 8, 8}));
  EXPECT_EQ(shape_of(r.mask()), (Shape{10, 10, 1, 8, 8}));
  EXPECT_EQ(shape_of(r.label()), (Shape{10, 10}));
  EXPECT_EQ(shape_of(r.mask_image()), (Shape{10, 10, data.mask_image().size(1)}));
}

// Golden strings keep one printed line per source line.
// clang-format off
TEST(TensorClassTest, PrintsPythonTensorclassReprWithFieldsSorted) {
  // The README's `print(data.select_label(1))`, eleven rows.
  auto data = MyData::make({{"image", torch::zeros({11, 3, 64, 64})},
                            {"mask", torch::zeros({11, 1, 64, 64}, torch::kBool)},
                            {"label", torch::ones({11}, torch::kLong)}},
                           {11});
  const std::string expected =
      "MyData(\n"
      "    image=Tensor(shape=torch.Size([11, 3, 64, 64]), device=cpu, dtype=torch.float32, is_shared=False),\n"
      "    label=Tensor(shape=torch.Size([11]), device=cpu, dtype=torch.int64, is_shared=False),\n"
      "    mask=Tensor(shape=torch.Size([11, 1, 64, 64]), device=cpu, dtype=torch.bool, is_shared=False),\n"
      "    batch_size=torch.Size([11]),\n"
      "    device=None,\n"
      "    is_shared=False)";
  EXPECT_EQ(data.to_string(), expected);
  EXPECT_EQ(printed(data), expected);
}

TEST(TensorClassTest, PrintsReshapedReadmeData) {
  MyData data = readme_data(64).reshape({10, 10});
  const std::string expected =
      "MyData(\n"
      "    image=Tensor(shape=torch.Size([10, 10, 3, 64, 64]), device=cpu, dtype=torch.float32, is_shared=False),\n"
      "    label=Tensor(shape=torch.Size([10, 10]), device=cpu, dtype=torch.int64, is_shared=False),\n"
      "    mask=Tensor(shape=torch.Size([10, 10, 1, 64, 64]), device=cpu, dtype=torch.bool, is_shared=False),\n"
      "    batch_size=torch.Size([10, 10]),\n"
      "    device=None,\n"
      "    is_shared=False)";
  EXPECT_EQ(printed(data), expected);
}

TEST(TensorClassTest, PrintsNestedFieldsIndentedAndNonTensorFieldsLast) {
  auto obs = Observation::make({{"pixels", torch::zeros({4, 2, 2})}, {"velocity", torch::zeros({4, 3})}}, {4});
  auto step = Step::make({{"obs", obs},
                          {"reward", torch::zeros({4, 1})},
                          {"task", "walk"},
                          {"seed", 7},
                          {"info", TensorDict({{"t", torch::zeros({4}, torch::kLong)}}, {4})}},
                         {4});
  const std::string expected =
      "Step(\n"
      "    info=TensorDict(\n"
      "        fields={\n"
      "            t: Tensor(shape=torch.Size([4]), device=cpu, dtype=torch.int64, is_shared=False)},\n"
      "        batch_size=torch.Size([4]),\n"
      "        device=None,\n"
      "        is_shared=False),\n"
      "    obs=Observation(\n"
      "        pixels=Tensor(shape=torch.Size([4, 2, 2]), device=cpu, dtype=torch.float32, is_shared=False),\n"
      "        velocity=Tensor(shape=torch.Size([4, 3]), device=cpu, dtype=torch.float32, is_shared=False),\n"
      "        batch_size=torch.Size([4]),\n"
      "        device=None,\n"
      "        is_shared=False),\n"
      "    reward=Tensor(shape=torch.Size([4, 1]), device=cpu, dtype=torch.float32, is_shared=False),\n"
      "    task='walk',\n"
      "    seed=7,\n"
      "    batch_size=torch.Size([4]),\n"
      "    device=None,\n"
      "    is_shared=False)";
  EXPECT_EQ(step.to_string(), expected);
}

TEST(TensorClassTest, PrintsLazyStackWithoutStackingAndMinusOneWhereShapesDiffer) {
  auto a = Secret::make({{"x", torch::zeros({2, 3})}}, {2});
  auto b = Secret::make({{"x", torch::zeros({2, 4})}}, {2});
  const std::string expected =
      "Secret(\n"
      "    x=Tensor(shape=torch.Size([2, 2, -1]), device=cpu, dtype=torch.float32, is_shared=False),\n"
      "    batch_size=torch.Size([2, 2]),\n"
      "    device=None,\n"
      "    is_shared=False)";
  EXPECT_EQ(tensordict::stack({a, b}).to_string(), expected);
}
// clang-format on

// ---- Typed access -----------------------------------------------------------------------------

TEST(TensorClassTest, GettersAliasTheStoredTensors) {
  MyData data = readme_data(8);
  EXPECT_TRUE(data.image().is_same(data.tensordict().get("image")));
  data.label().fill_(3);
  EXPECT_TRUE((data.tensordict().get("label") == 3).all().item<bool>());
}

TEST(TensorClassTest, SetterReplacesTheFieldInEveryAlias) {
  MyData data = readme_data(8);
  MyData alias = data;
  auto labels = torch::full({100}, 4, torch::kLong);
  const MyData& returned = data.set_label(labels);
  EXPECT_TRUE(returned.is_same(data));
  EXPECT_TRUE(alias.label().is_same(labels));
}

TEST(TensorClassTest, SetterRejectsValueWhoseLeadingDimsDifferFromBatchSize) {
  MyData data = readme_data(8);
  auto before = data.image();
  auto call = [&] { data.set_image(torch::zeros({5, 3, 8, 8})); };
  EXPECT_THAT(call,
              ThrowsMessage<ShapeError>(AllOf(HasSubstr("MyData::set_image"),
                                              HasSubstr("[5, 3, 8, 8]"), HasSubstr("[100]"))));
  EXPECT_TRUE(data.image().is_same(before));
}

TEST(TensorClassTest, NestedTensorClassFieldReturnsTheNestedClass) {
  Step step = make_step(4);
  Observation obs = step.obs();
  EXPECT_EQ(obs.batch_size(), (BatchSize{4}));
  EXPECT_EQ(shape_of(obs.pixels()), (Shape{4, 2, 2}));
  // Aliased: a write through the nested instance shows in the parent.
  obs.set_velocity(torch::ones({4, 3}));
  EXPECT_TRUE(torch::equal(step.tensordict().get({"obs", "velocity"}), torch::ones({4, 3})));
  // Indexing the parent indexes the nested fields.
  EXPECT_EQ(shape_of(step.index({Slice(1, 3)}).obs().pixels()), (Shape{2, 2, 2}));
}

TEST(TensorClassTest, NestedFieldSetterChecksTheBatchSize) {
  Step step = make_step(4);
  auto wrong = Observation::make(
      {{"pixels", torch::zeros({3, 2, 2})}, {"velocity", torch::zeros({3, 3})}}, {3});
  EXPECT_THAT([&] { step.set_obs(wrong); },
              ThrowsMessage<ShapeError>(
                  AllOf(HasSubstr("Step::set_obs"), HasSubstr("[3]"), HasSubstr("[4]"))));
}

TEST(TensorClassTest, NestedTensorClassFieldRejectsUnknownNestedKeys) {
  auto call = [] {
    Step::make(
        {{"obs", TensorDict({{"pixels", torch::zeros({2})}, {"speed", torch::zeros({2})}}, {2})},
         {"reward", torch::zeros({2})},
         {"task", "walk"},
         {"seed", 1},
         {"info", TensorDict::empty({2})}},
        {2});
  };
  EXPECT_THAT(call, ThrowsMessage<KeyError>(AllOf(HasSubstr("unknown field 'speed' in field 'obs'"),
                                                  HasSubstr("Observation declares"))));
}

TEST(TensorClassTest, NonTensorFieldsAreStoredAsNonTensorData) {
  Step step = make_step(4);
  EXPECT_EQ(step.task(), "walk");
  EXPECT_EQ(step.seed(), 7);
  EXPECT_EQ(step.tensordict().get_non_tensor<std::string>("task"), "walk");
  // Indexing and reshaping keep them.
  EXPECT_EQ(step.index({0}).task(), "walk");
  EXPECT_EQ(step.reshape({2, 2}).seed(), 7);
  step.set_task("run");
  EXPECT_EQ(step.task(), "run");
}

TEST(TensorClassTest, StackingUnequalNonTensorValuesKeepsOneValuePerElement) {
  Step a = make_step(2);
  Step b = make_step(2);
  b.set_task("run");
  Step s = tensordict::stack({a, b});
  EXPECT_THROW(s.task(), TypeError);  // the elements hold different values
  EXPECT_EQ(s.index({1, 0}).task(), "run");
  EXPECT_THAT(s.to_string(), HasSubstr("task=[['walk', 'walk'], ['run', 'run']],"));
}

TEST(TensorClassTest, TensorDictFieldTakesAnyKeys) {
  Step step = make_step(4);
  step.info().set("extra", torch::zeros({4, 2}));
  EXPECT_TRUE(step.tensordict().contains({"info", "extra"}));
}

// ---- The underlying TensorDict
// --------------------------------------------------------------------

TEST(TensorClassTest, TensordictAliasesAndToTensordictCopies) {
  MyData data = readme_data(8);
  EXPECT_TRUE(data.tensordict().get("image").is_same(data.image()));
  TensorDict copy = data.to_tensordict();
  copy.get("label").fill_(-1);
  EXPECT_FALSE((data.label() == -1).any().item<bool>());
}

TEST(TensorClassTest, FromTensorDictAliasesAValidTensorDict) {
  TensorDict td(
      {{"image", torch::zeros({2, 3})}, {"mask", torch::zeros({2})}, {"label", torch::zeros({2})}},
      {2});
  MyData data = MyData::from_tensordict(td);
  EXPECT_TRUE(data.tensordict().is_same(td));
}

TEST(TensorClassTest, FromTensorDictRejectsMissingFieldAndWrongKind) {
  TensorDict missing({{"image", torch::zeros({2, 3})}, {"mask", torch::zeros({2})}}, {2});
  EXPECT_THAT([&] { MyData::from_tensordict(missing); },
              ThrowsMessage<KeyError>(AllOf(HasSubstr("MyData::from_tensordict"),
                                            HasSubstr("missing field ['label']"))));
  TensorDict wrong({{"image", torch::zeros({2, 3})},
                    {"mask", torch::zeros({2})},
                    {"label", {{"x", torch::zeros({2})}}}},
                   {2});
  EXPECT_THAT([&] { MyData::from_tensordict(wrong); },
              ThrowsMessage<TypeError>(
                  HasSubstr("field 'label' is declared torch::Tensor but holds a TensorDict")));
}

TEST(TensorClassTest, UpdateFromTensorDictRejectsKeysThatAreNotFields) {
  MyData data = readme_data(8);
  auto before = data.label();
  TensorDict other({{"label", torch::zeros({100}, torch::kLong)}, {"depth", torch::zeros({100})}},
                   {100});
  EXPECT_THAT([&] { data.update(other); },
              ThrowsMessage<KeyError>(
                  AllOf(HasSubstr("MyData::update"), HasSubstr("unknown field 'depth'"))));
  EXPECT_TRUE(data.label().is_same(before));  // nothing written
  data.update(other, UpdateOptions{false, {"label"}});
  EXPECT_TRUE((data.label() == 0).all().item<bool>());
}

TEST(TensorClassTest, UpdateFromAnotherInstanceWritesItsFields) {
  MyData data = readme_data(8);
  MyData other = data.clone();
  other.label().fill_(9);
  data.update(other);
  EXPECT_TRUE((data.label() == 9).all().item<bool>());
}

// ---- Indexing -----------------------------------------------------------------------------------

TEST(TensorClassTest, IndexWithAnIntDropsTheBatchDim) {
  MyData data = readme_data(8);
  MyData row = data.index({3});
  EXPECT_EQ(row.batch_size(), BatchSize{});
  EXPECT_EQ(shape_of(row.image()), (Shape{3, 8, 8}));
  EXPECT_TRUE(torch::equal(row.image(), data.image()[3]));
}

TEST(TensorClassTest, IndexWithASliceReturnsViews) {
  MyData data = readme_data(8);
  MyData rows = data.index({Slice(10, 20)});
  EXPECT_EQ(rows.batch_size(), (BatchSize{10}));
  rows.label().fill_(-5);
  EXPECT_TRUE((data.label().slice(0, 10, 20) == -5).all().item<bool>());
  // The ArrayRef overload gives the same.
  std::vector<tensordict::TensorIndex> index;
  index.emplace_back(Slice(10, 20));
  EXPECT_EQ(data.index(index).batch_size(), (BatchSize{10}));
}

TEST(TensorClassTest, IndexWithAMaskGathersTheSelectedRows) {
  MyData data = readme_data(8);
  auto mask = torch::zeros({100}, torch::kBool);
  mask.index_put_({Slice(0, 100, 4)}, true);
  MyData picked = data.index({mask});
  EXPECT_EQ(picked.batch_size(), (BatchSize{25}));
  EXPECT_TRUE(torch::equal(picked.label(), data.label().slice(0, 0, 100, 4)));
}

TEST(TensorClassTest, GetSubTensordictWritesThroughToTheParent) {
  MyData data = readme_data(8);
  MyData view = data.get_sub_tensordict({torch::tensor({1, 5})});
  EXPECT_TRUE(view.is_sub_tensordict());
  view.set_label(torch::tensor({-1, -2}));
  EXPECT_EQ(data.label()[5].item<int64_t>(), -2);
}

// In-place writes need a mask that is not expanded: its rows share one memory location.
TEST(TensorClassTest, IndexPutWritesAnInstanceIntoARegion) {
  MyData data = readme_data(8).contiguous();
  MyData rows = data.index({Slice(0, 2)}).clone();
  rows.label().fill_(42);
  data.index_put_({Slice(50, 52)}, rows);
  EXPECT_TRUE((data.label().slice(0, 50, 52) == 42).all().item<bool>());
  data.index_put_({0}, 0);
  EXPECT_EQ(data.label()[0].item<int64_t>(), 0);
}

// ---- Shape operations ---------------------------------------------------------------------------

TEST(TensorClassTest, ShapeOperationsReturnTheClass) {
  MyData data = readme_data(8).reshape({10, 10});
  EXPECT_EQ(data.view({100}).batch_size(), (BatchSize{100}));
  EXPECT_EQ(data.flatten().batch_size(), (BatchSize{100}));
  EXPECT_EQ(data.flatten().unflatten(0, {4, 25}).batch_size(), (BatchSize{4, 25}));
  EXPECT_EQ(shape_of(data.permute({1, 0}).label()), (Shape{10, 10}));
  EXPECT_TRUE(torch::equal(data.transpose(0, 1).label(), data.label().t()));
  EXPECT_EQ(data.unsqueeze(0).batch_size(), (BatchSize{1, 10, 10}));
  EXPECT_EQ(data.unsqueeze(0).squeeze(0).batch_size(), (BatchSize{10, 10}));
  EXPECT_EQ(shape_of(data.index({0}).expand({3, 10}).image()), (Shape{3, 10, 3, 8, 8}));
  EXPECT_TRUE(data.transpose(0, 1).contiguous().image().is_contiguous());
}

TEST(TensorClassTest, UnbindSplitAndChunkReturnInstances) {
  MyData data = readme_data(8);
  std::vector<MyData> rows = data.index({Slice(0, 3)}).unbind(0);
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(rows[2].label().item<int64_t>(), data.label()[2].item<int64_t>());
  std::vector<MyData> pieces = data.split(30);
  ASSERT_EQ(pieces.size(), 4u);
  EXPECT_EQ(pieces[3].batch_size(), (BatchSize{10}));
  EXPECT_EQ(data.split(std::vector<int64_t>{60, 40})[1].batch_size(), (BatchSize{40}));
  EXPECT_EQ(data.chunk(4)[0].batch_size(), (BatchSize{25}));
}

// ---- Stack and cat
// --------------------------------------------------------------------------------

TEST(TensorClassTest, StackReturnsTheClassAndKeepsTheMembers) {
  MyData a = readme_data(8);
  MyData b = a.clone();
  MyData s = tensordict::stack({a, b});
  EXPECT_TRUE(s.is_lazy_stack());
  EXPECT_EQ(s.batch_size(), (BatchSize{2, 100}));
  EXPECT_EQ(shape_of(s.image()), (Shape{2, 100, 3, 8, 8}));
  EXPECT_TRUE(s.index({0}).is_same(a));
  MyData along1 = tensordict::stack(std::vector<MyData>{a, b}, 1);
  EXPECT_EQ(along1.batch_size(), (BatchSize{100, 2}));
}

TEST(TensorClassTest, StackedInstanceWritesThroughToTheMembers) {
  MyData a = readme_data(8);
  MyData b = a.clone();
  MyData s = tensordict::stack({a, b});
  s.set_label(torch::zeros({2, 100}, torch::kLong));
  EXPECT_TRUE((b.label() == 0).all().item<bool>());
}

TEST(TensorClassTest, CatReturnsADenseInstance) {
  MyData a = readme_data(8);
  MyData c = tensordict::cat({a, a.index({Slice(0, 10)})});
  EXPECT_FALSE(c.is_lazy_stack());
  EXPECT_EQ(c.batch_size(), (BatchSize{110}));
  EXPECT_EQ(shape_of(c.mask()), (Shape{110, 1, 8, 8}));
  EXPECT_EQ(tensordict::cat(std::vector<MyData>{a, a}, 0).batch_size(), (BatchSize{200}));
}

TEST(TensorClassTest, StackOfPlainTensorDictsStillReturnsALazyStackedTensorDict) {
  auto s = tensordict::stack({tutorial_td(), tutorial_td()});
  static_assert(std::is_same<decltype(s), tensordict::LazyStackedTensorDict>::value,
                "overload taken");
  EXPECT_EQ(s.batch_size(), (BatchSize{2, 3, 4}));
}

// ---- Whole-instance operations ------------------------------------------------------------------

TEST(TensorClassTest, CopiesAliasAndCloneIsIndependent) {
  MyData data = readme_data(8);
  MyData alias = data;
  MyData copy = data.clone();
  EXPECT_TRUE(alias.is_same(data));
  EXPECT_FALSE(copy.is_same(data));
  EXPECT_TRUE(copy.allclose(data));
  copy.image().zero_();
  EXPECT_FALSE(torch::equal(copy.image(), data.image()));
  EXPECT_TRUE(data.clone(false).image().is_same(data.image()));
}

TEST(TensorClassTest, ToDtypeCastsEveryTensor) {
  MyData data = readme_data(8);
  MyData doubles = data.to(torch::kFloat64);
  EXPECT_EQ(doubles.image().scalar_type(), torch::kFloat64);
  EXPECT_EQ(doubles.label().scalar_type(), torch::kFloat64);
  EXPECT_TRUE(torch::allclose(doubles.image(), data.image().to(torch::kFloat64)));
  EXPECT_EQ(data.image().scalar_type(), torch::kFloat32);  // unchanged
}

TEST(TensorClassTest, ToDeviceRequiresThatDevice) {
  MyData data = readme_data(8);
  MyData on_cpu = data.to(torch::Device(torch::kCPU));
  ASSERT_TRUE(on_cpu.device().has_value());
  EXPECT_EQ(*on_cpu.device(), torch::Device(torch::kCPU));
}

TEST(TensorClassTest, DetachDropsTheGraph) {
  Secret s = Secret::make({{"x", torch::ones({2}, torch::requires_grad())}}, {2});
  EXPECT_FALSE(s.detach().tensordict().get("x").requires_grad());
}

TEST(TensorClassTest, ApplyMapsEveryTensorAndKeepsNonTensorFields) {
  Step step = make_step(4);
  Step doubled = step.apply([](const torch::Tensor& t) { return t * 2; });
  EXPECT_TRUE(torch::allclose(doubled.reward(), step.reward() * 2));
  EXPECT_TRUE(torch::allclose(doubled.obs().pixels(), step.obs().pixels() * 2));
  EXPECT_EQ(doubled.task(), "walk");
  Step summed =
      step.apply(step, [](const torch::Tensor& x, const torch::Tensor& y) { return x + y; });
  EXPECT_TRUE(torch::allclose(summed.reward(), step.reward() * 2));
}

TEST(TensorClassTest, ApplyThatDropsAFieldThrowsKeyError) {
  MyData data = readme_data(8);
  auto drop_bools = [](const torch::Tensor& t) {
    return t.scalar_type() == torch::kBool ? torch::Tensor() : t;
  };
  EXPECT_THAT([&] { data.apply(drop_bools); },
              ThrowsMessage<KeyError>(
                  AllOf(HasSubstr("MyData::apply"), HasSubstr("missing field ['mask']"))));
}

TEST(TensorClassTest, ApplyInPlaceWritesEveryTensor) {
  MyData data = readme_data(8).contiguous();
  auto image = data.image();
  data.apply_(
      [](const torch::Tensor& t) { return t.scalar_type() == torch::kFloat ? t.abs() : t; });
  EXPECT_TRUE(data.image().is_same(image));
  EXPECT_TRUE((image >= 0).all().item<bool>());
}

TEST(TensorClassTest, MaskedFillAndWhereActOnEveryField) {
  MyData data = readme_data(8);
  auto rows = torch::zeros({100}, torch::kBool);
  rows[0] = true;
  MyData filled = data.masked_fill(rows, 0);
  EXPECT_EQ(filled.label()[0].item<int64_t>(), 0);
  EXPECT_TRUE(torch::equal(filled.image().slice(0, 1), data.image().slice(0, 1)));
  MyData chosen = data.where(rows, filled.index_put_({0}, 0).fill_(-1));
  EXPECT_TRUE(torch::equal(chosen.label().slice(0, 0, 1), data.label().slice(0, 0, 1)));
  EXPECT_EQ(chosen.label()[1].item<int64_t>(), -1);
}

// ---- Persistence
// ----------------------------------------------------------------------------------

TEST(TensorClassTest, MemmapRoundTripLoadsTheSameClass) {
  TempDir dir;
  MyData data = readme_data(8);
  MyData expected = data.clone();
  data.memmap_(dir / "data");
  EXPECT_TRUE(data.is_memmap());
  MyData loaded = MyData::load_memmap(dir / "data");
  EXPECT_TRUE(loaded.is_memmap());
  EXPECT_EQ(loaded.batch_size(), (BatchSize{100}));
  EXPECT_TRUE(torch::equal(loaded.image(), expected.image()));
  EXPECT_TRUE(torch::equal(loaded.mask(), expected.mask()));
  EXPECT_TRUE(torch::equal(loaded.label(), expected.label()));
  // Writes to the loaded instance reach the files.
  loaded.label().fill_(8);
  EXPECT_TRUE((MyData::load(dir / "data").label() == 8).all().item<bool>());
}

TEST(TensorClassTest, MemmapRoundTripKeepsNestedAndNonTensorFields) {
  TempDir dir;
  Step step = make_step(4);
  Step mapped = step.memmap(dir / "step");
  EXPECT_FALSE(step.is_memmap());
  Step loaded = Step::load_memmap(dir / "step");
  EXPECT_EQ(loaded.task(), "walk");
  EXPECT_EQ(loaded.seed(), 7);
  EXPECT_TRUE(torch::equal(loaded.obs().velocity(), step.obs().velocity()));
  EXPECT_TRUE(loaded.allclose(mapped));
}

TEST(TensorClassTest, MemmapLikeAllocatesZeroedFieldsOfTheSameShape) {
  TempDir dir;
  MyData data = readme_data(8);
  MyData like = data.memmap_like(dir / "like");
  EXPECT_TRUE(like.is_memmap());
  EXPECT_EQ(shape_of(like.image()), (Shape{100, 3, 8, 8}));
  EXPECT_TRUE((like.label() == 0).all().item<bool>());
}

TEST(TensorClassTest, LoadMemmapOfAFolderWithOtherFieldsThrowsKeyError) {
  TempDir dir;
  tutorial_td().save(dir / "other");
  EXPECT_THAT([&] { MyData::load_memmap(dir / "other"); },
              ThrowsMessage<KeyError>(
                  AllOf(HasSubstr("MyData::load_memmap"), HasSubstr("unknown field 'a'"))));
}

}  // namespace
