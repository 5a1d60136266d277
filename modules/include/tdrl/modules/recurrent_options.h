#pragma once

/// RecurrentModuleOptions, the options of LSTMModule and GRUModule (recurrent.h): apart from the
/// modules, so that a config section can hold them without LibTorch's nn headers.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <torch/arg.h>

#include <tensordict/fields.h>
#include <tensordict/nested_key.h>

namespace tdrl::modules {

using tensordict::NestedKey;

/// The recurrent cores by name: "lstm" (LSTMModule), "gru" (GRUModule).
const std::vector<std::string>& recurrent_core_names();

/// Options of LSTMModule and GRUModule. Names follow TorchRL's.
/// Example: `RecurrentModuleOptions(64, 128).in_key("embed").out_key("embed")`
struct RecurrentModuleOptions {
  RecurrentModuleOptions(int64_t input_size, int64_t hidden_size)
      : input_size_(input_size), hidden_size_(hidden_size) {}
  /// Features of the input entry (its last dim), >= 1.
  TORCH_ARG(int64_t, input_size);
  /// Features of the hidden state and of the output, >= 1.
  TORCH_ARG(int64_t, hidden_size);
  /// Stacked layers, >= 1. Default 1.
  TORCH_ARG(int64_t, num_layers) = 1;
  /// Biases in the cells. Default true.
  TORCH_ARG(bool, bias) = true;
  /// The input entry: `[*B, input_size]` a step, `[*B, T, input_size]` in sequence mode.
  /// Default "embed".
  TORCH_ARG(NestedKey, in_key) = NestedKey("embed");
  /// The output entry (the last layer's hidden state): `[*B, hidden_size]` / `[*B, T,
  /// hidden_size]`. Default "embed" (the output replaces the embedding, as in TorchRL's
  /// recurrent examples).
  TORCH_ARG(NestedKey, out_key) = NestedKey("embed");
  /// The hidden-state entries, `[*B, num_layers, hidden_size]` each: LSTM (h, c), GRU (h).
  /// Empty (default): LSTM {"recurrent_state_h", "recurrent_state_c"}, GRU
  /// {"recurrent_state"}.
  TORCH_ARG(std::vector<NestedKey>, hidden_keys);
  /// The bool entry marking a trajectory's first step (InitTracker writes it), `[*B, 1]` or
  /// `[*B]` (`[*B, T(, 1)]` in sequence mode): the state is zero there. Default "is_init".
  TORCH_ARG(NestedKey, is_init_key) = NestedKey("is_init");
  /// Sequence mode only: a bool entry `[*B, T]` or `[*B, T, 1]` marking the valid steps of
  /// padded sequences (split_trajectories' ("collector", "mask")); a padded step keeps the
  /// state and outputs zeros. Default none: every step is valid.
  TORCH_ARG(std::optional<NestedKey>, mask_key);
  /// Start in sequence mode (see RecurrentModuleImpl). Default false: step mode.
  TORCH_ARG(bool, recurrent_mode) = false;
  /// Sequence mode: write the state after every step under ("next", <hidden key>) (default
  /// true). False (what a loss that reads only the outputs wants): each stretch of the
  /// sequence without a reset runs through LibTorch's fused LSTM/GRU call (oneDNN on the CPU,
  /// cuDNN on a GPU; one host read of is_init per call to find the stretches), and ("next",
  /// <hidden key>) holds the final state at the last step and zeros before it, as TorchRL's
  /// recurrent mode. Ignored with a mask_key (padded steps need the step loop).
  TORCH_ARG(bool, sequence_states) = true;

 public:
  /// The settings a config chooses for a recurrent core: hidden_size and num_layers. The input
  /// size and the keys are the caller's, per network.
  void fields(tensordict::fields::FieldVisitor& v) {
    v("hidden_size", hidden_size_, tensordict::fields::at_least(1),
      "features of the recurrent core's hidden state and output");
    v("num_layers", num_layers_, tensordict::fields::at_least(1),
      "stacked layers of the recurrent core");
  }
};

}  // namespace tdrl::modules
