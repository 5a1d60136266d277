#include <tensordict/nn/module_ptr.h>

#include <memory>
#include <type_traits>
#include <vector>

#include <gtest/gtest.h>

#include <torch/torch.h>

#include <tensordict/nn/probabilistic.h>
#include <tensordict/nn/tensordict_module.h>
#include <tensordict/nn/tensordict_sequential.h>

namespace tensordict::nn {
namespace {

using ModuleBasePtr = ModulePtr<TensorDictModuleBase>;

// Only modules of the right type convert: never a raw pointer (no accidental ownership), nor a
// module of another type, nor a vector of those.
static_assert(std::is_convertible_v<TensorDictModule, ModuleBasePtr>);
static_assert(std::is_convertible_v<std::shared_ptr<TensorDictModuleImpl>, ModuleBasePtr>);
static_assert(!std::is_convertible_v<TensorDictModuleImpl*, ModuleBasePtr>);
static_assert(!std::is_convertible_v<torch::nn::Linear, ModuleBasePtr>);
static_assert(
    !std::is_convertible_v<TensorDictModule, ModulePtr<ProbabilisticTensorDictSequentialImpl>>);
static_assert(
    !std::is_convertible_v<std::vector<torch::nn::Linear>, ModulePtrList<TensorDictModuleBase>>);

TensorDictModule linear_module() {
  return TensorDictModule(torch::nn::Linear(3, 2),
                          TensorDictModuleOptions().in_keys({"obs"}).out_keys({"out"}));
}

// What a function taking a ModulePtr sees of its argument.
TensorDictModuleBase* address_of(ModuleBasePtr module) { return module.get(); }

TEST(ModulePtrTest, AHolderAndItsSharedPtrGiveTheSameModule) {
  TensorDictModule module = linear_module();
  EXPECT_EQ(address_of(module), module.ptr().get());
  EXPECT_EQ(address_of(module.ptr()), module.ptr().get());
  // Sharing, not copying: the holder's module now has two more owners.
  const ModuleBasePtr a = module;
  const ModuleBasePtr b = module.ptr();
  EXPECT_EQ(module.ptr().use_count(), 3);
  EXPECT_EQ(a, b);
}

TEST(ModulePtrTest, NullAndAnEmptyHolderGiveANullPointer) {
  EXPECT_EQ(address_of(nullptr), nullptr);
  EXPECT_EQ(address_of(ModuleBasePtr()), nullptr);
  // LibTorch's ptr() would throw "Accessing empty ModuleHolder"; the callee reports it instead.
  EXPECT_EQ(address_of(TensorDictModule(nullptr)), nullptr);
}

TEST(ModulePtrTest, ConvertsToAPointerToABaseAndToAPlainSharedPtr) {
  TensorDictSequential sequential(linear_module());
  const ModulePtr<TensorDictSequentialImpl> derived = sequential;
  const ModuleBasePtr base = derived;
  const std::shared_ptr<torch::nn::Module> plain = base;
  EXPECT_EQ(base.get(), sequential.ptr().get());
  EXPECT_EQ(plain.get(), static_cast<torch::nn::Module*>(sequential.ptr().get()));
}

TEST(ModulePtrListTest, ABracedListTakesHoldersAndSharedPtrsInOrder) {
  TensorDictModule first = linear_module();
  TensorDictModule second = linear_module();
  const ModulePtrList<TensorDictModuleBase> list = {first, second.ptr(), nullptr};
  ASSERT_EQ(list.size(), 3u);
  EXPECT_EQ(list[0].get(), first.ptr().get());
  EXPECT_EQ(list[1].get(), second.ptr().get());
  EXPECT_EQ(list[2], nullptr);
}

TEST(ModulePtrListTest, AVectorOfHoldersOrOfSharedPtrsConverts) {
  const std::vector<TensorDictModule> holders = {linear_module(), linear_module()};
  const ModulePtrList<TensorDictModuleBase> from_holders = holders;
  ASSERT_EQ(from_holders.size(), 2u);
  EXPECT_EQ(from_holders[0].get(), holders[0].ptr().get());
  EXPECT_EQ(from_holders[1].get(), holders[1].ptr().get());

  const std::vector<std::shared_ptr<TensorDictModuleImpl>> pointers = {holders[1].ptr()};
  const ModulePtrList<TensorDictModuleBase> from_pointers = pointers;
  ASSERT_EQ(from_pointers.size(), 1u);
  EXPECT_EQ(from_pointers[0].get(), holders[1].ptr().get());

  EXPECT_TRUE(ModulePtrList<TensorDictModuleBase>().empty());
}

}  // namespace
}  // namespace tensordict::nn
